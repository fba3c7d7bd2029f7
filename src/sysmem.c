#include "sysmem.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memcg.h"

uint64_t sysmem_cgroup_limit(void)
{
	uint64_t lim;

	return memcg_usage(&lim, NULL) ? UINT64_MAX : lim;
}

static uint64_t meminfo(const char *key)
{
	char line[256], fmt[64];
	unsigned long long kib = 0;
	FILE *f = fopen("/proc/meminfo", "re");

	snprintf(fmt, sizeof(fmt), "%s: %%llu kB", key);
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, fmt, &kib) == 1)
			break;
	if (f)
		fclose(f);
	return (uint64_t)kib << 10;
}

uint64_t sysmem_total(void)
{
	return meminfo("MemTotal");
}

uint64_t sysmem_available(void)
{
	uint64_t avail = meminfo("MemAvailable"), limit, used;

	if (memcg_usage(&limit, &used))
		return avail;
	if (used >= limit)
		return 0;
	return limit - used < avail ? limit - used : avail;
}

#include "sysmem.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int read_u64_file(const char *path, uint64_t *out)
{
	char buf[64] = "";
	FILE *f = fopen(path, "re");

	if (!f)
		return -errno;
	if (!fgets(buf, sizeof(buf), f))
		buf[0] = 0;
	fclose(f);
	if (!strncmp(buf, "max", 3))
		*out = UINT64_MAX;
	else
		*out = strtoull(buf, NULL, 10);
	return 0;
}

/* The smallest value of a memory-controller file of our cgroup: v1_name
 * under the v1 memory hierarchy, v2_name under the unified one; UINT64_MAX
 * when there is none (or only absurd values, as v1 reports for no limit). */
static uint64_t cgroup_min(const char *v1_name, const char *v2_name)
{
	char line[512], path[700];
	uint64_t min = UINT64_MAX, v = 0;
	FILE *f = fopen("/proc/self/cgroup", "re");

	while (f && fgets(line, sizeof(line), f)) {
		char *rel = strrchr(line, ':');

		if (!rel)
			continue;
		rel[strcspn(rel, "\n")] = 0;
		if (strstr(line, ":memory:"))
			snprintf(path, sizeof(path), "/sys/fs/cgroup/memory%s/%s", rel + 1, v1_name);
		else if (!strncmp(line, "0::", 3))
			snprintf(path, sizeof(path), "/sys/fs/cgroup%s/%s", rel + 1, v2_name);
		else
			continue;
		if (!read_u64_file(path, &v) && v < min && v < (1ull << 60))
			min = v;
	}
	if (f)
		fclose(f);
	return min;
}

uint64_t sysmem_cgroup_limit(void)
{
	return cgroup_min("memory.limit_in_bytes", "memory.max");
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
	uint64_t avail = meminfo("MemAvailable");
	uint64_t limit = sysmem_cgroup_limit(), used;

	if (limit == UINT64_MAX)
		return avail;
	used = cgroup_min("memory.usage_in_bytes", "memory.current");
	if (used == UINT64_MAX)
		return avail;
	if (used >= limit)
		return 0;
	return limit - used < avail ? limit - used : avail;
}

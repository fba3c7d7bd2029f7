/* cpuload: /proc/loadavg's "running/total" field, cached. */
#include "cpuload.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include "procfile.h"

#define SAMPLE_NS 10000000ull /* 10 ms: a read of /proc/loadavg costs a few us */

static uint64_t sampled_at; /* relaxed atomics: a stale answer only delays a decision */
static int contended;
static int loadavg = -1; /* kept open, read with pread at 0; -2: cannot be; acquire/release */
static long ncpu = 1;     /* set before loadavg */

int cpuload_open(void)
{
	int fd, none = -1;

	if ((fd = __atomic_load_n(&loadavg, __ATOMIC_ACQUIRE)) != -1)
		return fd >= 0 ? 0 : -ENOENT; /* not again: each try would make a descriptor */
	ncpu = sysconf(_SC_NPROCESSORS_ONLN); /* reads /sys: here, not at a sample */
	if (ncpu < 1)
		ncpu = 1;
	fd = open("/proc/loadavg", O_RDONLY | O_CLOEXEC);
	if (!__atomic_compare_exchange_n(&loadavg, &none, fd < 0 ? -2 : fd, false, __ATOMIC_ACQ_REL,
					 __ATOMIC_ACQUIRE) && fd >= 0)
		close(fd); /* another thread's came first */
	return fd < 0 ? -errno : 0;
}

static long running_threads(void)
{
	char buf[128], *p = buf;

	if (cpuload_open() || procfile_pread(__atomic_load_n(&loadavg, __ATOMIC_ACQUIRE), buf, sizeof(buf)) <= 0)
		return -1;
	for (int field = 0; field < 3 && p; field++) { /* skip the three load averages */
		while (*p && *p != ' ')
			p++;
		while (*p == ' ')
			p++;
	}
	return p && *p ? strtol(p, NULL, 10) : -1;
}

bool cpuload_contended(uint64_t now)
{
	if (now - __atomic_load_n(&sampled_at, __ATOMIC_RELAXED) >= SAMPLE_NS) {
		long run = running_threads();

		__atomic_store_n(&contended, run > ncpu + 1, __ATOMIC_RELAXED);
		__atomic_store_n(&sampled_at, now, __ATOMIC_RELAXED);
	}
	return __atomic_load_n(&contended, __ATOMIC_RELAXED);
}

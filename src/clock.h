/* clock: monotonic time in nanoseconds, for timeouts, back-offs and the
 * latency counters; one definition for the memnode, the client and the
 * preloaded runtime (safe there: no malloc, no lock). */
#ifndef COMEX_CLOCK_H
#define COMEX_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

#endif

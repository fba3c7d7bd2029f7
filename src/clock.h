/* clock: monotonic time in nanoseconds (and seconds, for the operator
 * tools' pacing) and a sleep; one definition for the memnode, the client, the
 * tools and the preloaded runtime (safe there: no malloc, no lock). */
#ifndef COMEX_CLOCK_H
#define COMEX_CLOCK_H

#include <errno.h>
#include <stdint.h>
#include <time.h>

static inline uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Monotonic seconds. */
static inline double now_s(void) { return (double)now_ns() / 1e9; }

/* Sleeps s seconds, resuming after signals that do not end the process. */
static inline void sleep_s(double s)
{
	struct timespec ts = { (time_t)s, (long)((s - (double)(time_t)s) * 1e9) };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

#endif

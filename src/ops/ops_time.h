/* ops_time: the clock and sleep the operator tools (top, status) pace their
 * samples with. */
#ifndef COMEX_OPS_TIME_H
#define COMEX_OPS_TIME_H

#include <errno.h>
#include <time.h>

/* Monotonic seconds. */
static inline double ops_now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Sleeps s seconds, resuming after signals that do not end the process. */
static inline void ops_sleep_s(double s)
{
	struct timespec ts = { (time_t)s, (long)((s - (double)(time_t)s) * 1e9) };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

#endif

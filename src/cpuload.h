/* cpuload: whether this machine has more runnable threads than CPUs, so
 * that busy-polling would take a CPU from someone who needs it (and lose
 * it to the scheduler anyway). Sampled from /proc/loadavg at most once per
 * 10 ms; safe in the preloaded runtime (no malloc, no stdio). */
#ifndef COMEX_CPULOAD_H
#define COMEX_CPULOAD_H

#include <stdbool.h>
#include <stdint.h>

/* now: CLOCK_MONOTONIC ns. True when more threads are runnable than CPUs
 * plus one (the poller itself, or its peer, may be one of them). */
bool cpuload_contended(uint64_t now);
/* Opens /proc/loadavg for good (the first cpuload_contended does
 * otherwise): the preloaded runtime calls it as it starts, so that its
 * descriptor is made as the runtime's (rtfd.h) and no sample makes one in
 * the program's table. 0 or -errno. */
int cpuload_open(void);

#endif

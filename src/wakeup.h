/* wakeup: the scheduling class of the threads a fault waits on (the fault
 * handler, which also waits for the memnode's reply, and the memnode's
 * serving thread), so that on a busy machine they run as soon as they are
 * woken instead of after a CPU-bound neighbour's time slice (issue 21;
 * docs/PAGER.md P43). */
#ifndef COMEX_WAKEUP_H
#define COMEX_WAKEUP_H

#include <stdbool.h>

/* Applies option sched ("normal", "slice" or "fifo") to the calling
 * thread; 0, or -EINVAL for an unknown mode. fifo: the thread sleeps at
 * SCHED_FIFO priority 1, so that its wake-up preempts whatever runs, and
 * busy-polls at normal priority, so that it never keeps a CPU from anyone
 * (wakeup_sleeping); without the privilege (CAP_SYS_NICE or RLIMIT_RTPRIO)
 * it falls back to slice. slice: a 100 us EEVDF time slice (Linux 6.12+;
 * before, normal), which lets a woken thread preempt sooner. Logged once. */
int wakeup_apply(const char *mode);
/* The calling thread is about to sleep (true) or to busy-poll (false):
 * with fifo, its class follows (a system call when it changes, else none). */
void wakeup_sleeping(bool sleeping);

#endif

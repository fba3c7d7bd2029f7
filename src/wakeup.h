/* wakeup: the scheduling class of the threads a fault waits on (the fault
 * handler, which also waits for the memnode's reply, and the memnode's
 * serving thread), so that on a busy machine they run as soon as they are
 * woken instead of after a CPU-bound neighbour's time slice (issue 21;
 * docs/DECISIONS.md D36). */
#ifndef COMEX_WAKEUP_H
#define COMEX_WAKEUP_H

#include <stdbool.h>
#include <stdint.h>

/* Option sched's values, in its order. */
enum wakeup_mode { WAKEUP_NORMAL, WAKEUP_SLICE, WAKEUP_FIFO };

/* Applies option sched to the calling thread. fifo: while the
 * thread's own wake-ups wait for a CPU (a CPU-bound neighbour, the
 * program's own threads on every core), it runs SCHED_FIFO at priority 1,
 * so that its wake-up preempts them, and does not busy-poll; otherwise it
 * runs at normal priority and polls as before (wakeup_sleeping). Without
 * the privilege (CAP_SYS_NICE or RLIMIT_RTPRIO) fifo falls back to slice:
 * a 100 us EEVDF time slice (Linux 6.12+; before, normal), which lets a
 * woken thread preempt sooner. Logged once. */
void wakeup_apply(enum wakeup_mode mode);
/* The calling thread is about to sleep, at now (ns): with fifo, its class
 * follows its own waits (a look every 10 ms, a system call when it changes). */
void wakeup_sleeping(uint64_t now);
/* Whether the calling thread may busy-poll now: a CPU is free for it
 * (cpuload), and it does not run SCHED_FIFO. */
bool wakeup_may_poll(uint64_t now);
/* on: the calling thread's busy-polls (tp_run's spin) yield its CPU between
 * two polls, so that a thread woken on its core (a fault handler, another
 * memnode's serving thread) runs at once instead of after the poller's time
 * slice; the memnode's serving thread asks for it (docs/DECISIONS.md D81). */
void wakeup_poll_yields(bool on);
/* Between two polls of a busy-polling thread: yields if it asked to. */
void wakeup_between_polls(void);

#endif

/* pollcore: which memnode of this host busy-polls on which core (D8, D83).
 * At most POLLCORE_SHARE per core, never core 0; a holder that stops running
 * (SIGSTOP, a hang, a starved CPU) hands its claim on to a memnode that runs,
 * within POLLCORE_STALE_MS, and finds out that it lost it on its next tick. */
#ifndef COMEX_POLLCORE_H
#define COMEX_POLLCORE_H

#include <stdbool.h>
#include <stdint.h>

/* The claim file, one word per core, in this directory (shared by every
 * memnode of the host). */
#define POLLCORE_DIR "/dev/shm"
/* A holder renews its claim every tick; a claim not renewed for
 * POLLCORE_STALE_MS is free. The stale time is 5 ticks: a running holder
 * that was preempted for a time slice or two keeps its core. */
#define POLLCORE_TICK_NS 20000000ull
#define POLLCORE_STALE_MS 100u
/* Pollers that may share a core. A polling memnode yields between polls
 * (D81), so two on one core alternate and each sees a request within a few
 * microseconds, where a sleeping one needs a cross-core wake-up (~25 us
 * here). A core's second claim is taken only when every core has a first. */
#define POLLCORE_SHARE 2

struct pollcore;

/* Opens the claim file in dir (the first tick claims). -errno when the file
 * cannot be opened or mapped (the caller then never polls). */
int pollcore_open(const char *dir, struct pollcore **out);
/* Call at least every POLLCORE_TICK_NS, with now_ns(): renews this process's
 * claim, or claims a free or stale one. True while it holds one (the calling
 * thread is then pinned to its core). */
bool pollcore_tick(struct pollcore *pc, uint64_t now);
/* Gives the core back (at once free for another memnode) and unmaps. */
void pollcore_close(struct pollcore *pc);

#endif

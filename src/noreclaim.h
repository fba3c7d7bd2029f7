/* noreclaim: keeps a process that sits on the kernel's reclaim path (the
 * comex swap daemon, a memnode serving it on the same host) from needing
 * reclaim to make progress: its memory locked, an I/O flusher, never the
 * OOM killer's choice (docs/DECISIONS.md D56). */
#ifndef COMEX_NORECLAIM_H
#define COMEX_NORECLAIM_H

/* mlockall(MCL_CURRENT | MCL_FUTURE), PR_SET_IO_FLUSHER, oom_score_adj
 * -1000, for the calling process. Each failure is a warning naming who
 * (the process's role, for the message) and how to fix it; returns the
 * number of steps that failed (0: all three in force). Children created by
 * fork keep the I/O flusher flag and the OOM score, not the memory lock. */
int noreclaim_enter(const char *who);

#endif

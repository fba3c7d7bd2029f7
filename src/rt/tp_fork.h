/* tp_fork: UCX in a forked child. UCX keeps one asynchronous-event thread
 * per process, and a forked child inherits its bookkeeping but not the
 * thread: a new UCX connection made in the child would register its events
 * with the parent's thread (an epoll set the two processes share) and never
 * complete. This gives the child a thread of its own (docs/DECISIONS.md D46). */
#ifndef COMEX_TP_FORK_H
#define COMEX_TP_FORK_H

/* In a forked child, before its first UCX call (the parent's UCX objects
 * are never used or closed there). 0; -ENOENT when UCX is not loaded;
 * -ENOTSUP when this UCX's async method tables are not the layout known
 * here (then the child must not use UCX). */
int tp_fork_child(void);

#endif

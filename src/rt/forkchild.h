/* forkchild: a forked child served lazily (issue 9 item 8, DECISIONS.md D45).
 * With UFFD_FEATURE_EVENT_FORK the child's memory stays registered, to a
 * descriptor the parent's handler reads: the parent serves the child's faults
 * from a snapshot of its page table at fork time, whose frames it neither
 * frees nor rewrites until the child's address space is gone. */
#ifndef COMEX_RT_FORKCHILD_H
#define COMEX_RT_FORKCHILD_H

#include <linux/userfaultfd.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* Parent, fork preparation, under the pager lock with eviction off and the
 * write buffers settled: snapshots the page table for the coming child.
 * -EBUSY when too many children are served already (the caller brings every
 * page home instead, as without lazy fork). */
int forkchild_prepare(void);
/* After fork, with its result. In the child (0): this process is a lazy
 * child (when the fork was prepared lazily; never when the parent is a
 * forked child that has not taken over, which prepares no fork), and the
 * parent's other children and lazy state are not its own. In the parent:
 * a failed fork's snapshot is dropped, a child's pid tells its exit. */
void forkchild_after_fork(pid_t pid);
/* The parent is exiting: every child still served gets all its remaining
 * pages now (a daemon's parent exits right after fork), then is let go. */
void forkchild_complete_all(void);
/* A UFFD_EVENT_FORK read from descriptor from_fd (no lock needed): the new
 * descriptor serves the pending snapshot's child (from the parent's own
 * descriptor), or is closed (a grandchild: its parent brought every page home
 * before forking, so nothing is missing there that must not read as zero). */
void forkchild_event(int from_fd, const struct uffd_msg *m);
/* Adds the children's descriptors to a poll set; returns how many (a hint:
 * a number may be closed meanwhile; forkchild_serve rereads under the lock). */
int forkchild_pollfds(struct pollfd *set, int room);
/* Takes the pager lock, reads and serves every pending message of the
 * children, and forgets those whose address space is gone (exit, exec) when
 * reap. */
void forkchild_serve(bool reap);
/* While a child may still read frames of the parent's snapshot, a frame is
 * released only later, and never rewritten in place: true when frame (node,
 * pfn) was kept for later so (the caller neither releases nor reuses it). */
bool forkchild_defer(unsigned node, uint32_t pfn);
/* Child side: page idx of the inherited table is discarded (it must read as
 * zero from now on, never as the snapshot's copy). */
void forkchild_discarded(uint64_t idx);
bool forkchild_is_lazy_child(void);
/* Child side, on a thread of its own: waits up to ms for this child to own
 * all its memory (a lazy child: its parent handed it every page; otherwise:
 * the parent that forked it is gone; *pidfd, -1 at first, keeps the
 * parent's pidfd between calls). 1 when it does, 0 not yet, -1 when that
 * cannot be known. */
int forkchild_wait_own(pid_t parent, int ms, int *pidfd);
/* Before an exec (and at start-up): this process no longer depends on the
 * parent that served it, nor dies with it. */
void forkchild_forget_parent(void);

#endif

/* replica: the extra copies of evicted pages (option replicas 2-3), each on
 * a memnode the page has no other copy on. The page table holds a page's
 * first copy; the others live in the write buffer's aux words while the page
 * is buffered, then in a side table while it has frames (REMOTE, CLEAN).
 * Everything here runs under the pager lock, except replica_failover. */
#ifndef COMEX_RT_REPLICA_H
#define COMEX_RT_REPLICA_H

#include <stdbool.h>
#include <stdint.h>

struct wbuf;

/* The side table, when pager_opt(OPT_REPLICAS) > 1 (none otherwise). */
int replica_init(void);
/* Pages may have a copy elsewhere (replicas 2-3, or backup-dir): a read or
 * write late on one memnode is given up and served by the others (hedged:
 * client_read_hedged, client_write_wait_hedged). */
bool replica_hedging(void);
/* A write to node is not started when node is steered around (suspect)
 * and the pages have other copies: -EAGAIN (counted in writes_hedged);
 * else 0. The copies missing are made again later. */
int replica_skip_write(unsigned node);
/* Eviction just added a page to primary node n0's buffer wb: frames for its
 * extra copies (fewer when fewer memnodes have room: re-replicated later). */
void replica_place(unsigned n0, struct wbuf *wb);
/* n0's buffer is being written: starts the writes of its extra copies. */
void replica_flush(unsigned n0, struct wbuf *wb);
/* Waits for those writes and retires every page of wb, given the primary
 * write's status: a page with at least one confirmed copy is REMOTE there,
 * a page with none comes back into the program. */
void replica_settle(unsigned n0, struct wbuf *wb, int err);
/* Page idx's content changed or was discarded: its extra copies' frames go
 * back. replica_move: an mremap moved the page from one index to another. */
void replica_drop(uint64_t idx);
void replica_move(uint64_t from, uint64_t to);
/* Reads count pages (first, first + step, ...) into dst from copies not on
 * node bad, each checked against its hash; 0, or -EIO if one has none left.
 * round < 0: plain reads; else hedged ones in that round (client.h), and
 * -ETIME if a page's other copies were there but late. May run without the
 * pager lock (the caller re-checks the entries). */
int replica_failover(unsigned bad, uint64_t first, uint64_t step, uint32_t count, char *dst, int round);
/* Node d fails (failed) or leaves: nothing in the write buffers refers to it
 * afterwards; replica_unref then undoes page i's references to frames
 * [lo, hi) of d; true if any. A leaving d's copy is first written to another
 * memnode with room; else (or when d failed) it is dropped, a first copy
 * there replaced by an extra one, and re-replication makes it again. */
void replica_forget(unsigned d, bool failed);
bool replica_unref(uint64_t i, unsigned d, bool failed, uint32_t lo, uint64_t hi);
/* Membership thread, every tick: pages with fewer copies than replicas get
 * new ones on memnodes that have room and are not in unusable (a bit per
 * node: failed, leaving, suspect: a repair never waits on a stuck memnode
 * with the pager lock held) (pages_rereplicated). */
void replica_repair(uint64_t unusable);

#endif

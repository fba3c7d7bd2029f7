/* replica: a copy's location is one word, LOC_VALID | node << 32 | pfn.
 * Extra copies of a page in the write buffer of its primary node n0 are
 * written when that buffer is (replica_flush), from the same data, in runs
 * of consecutive frames: their frames come from one cursor per (n0, target)
 * pair, so the copies of consecutive slots sit in consecutive frames. The
 * primary and the extra writes are in flight together; the page leaves
 * PTE_WBUF only when all have been answered (replica_settle).
 *
 * A page has fewer copies than replicas when a memnode failed, left, had
 * no room or refused a write: `degraded` is set and the membership thread
 * makes new copies (replica_repair), one page at a time under the pager
 * lock, yielding to faults, as migrate.c moves pages. */
#include "replica.h"

#include <errno.h>
#include <sched.h>
#include <string.h>

#include "backup.h"
#include "client.h"
#include "log.h"
#include "pager_impl.h"
#include "proto.h"
#include "rtmem.h"
#include "transport.h"
#include "uffd.h"
#include "wbuf.h"

#define LOC_VALID (1ull << 63)
#define EXTRA_MAX 2          /* replicas is at most 3 */
#define OPS 16               /* extra-copy writes in flight per buffer; more go synchronously */
#define REPAIR_BATCH 32      /* pages re-replicated per hold of the pager lock */
#define REPAIR_RETRY_NS 1000000000ull /* a repair that found no room is tried again after 1 s */

static unsigned extra;       /* replicas - 1 */
static uint64_t *tab;        /* extra words per page of the region */
static struct { uint32_t pfn, left; } cur[OPT_MEMNODE_MAX][OPT_MEMNODE_MAX]; /* [primary][target] */
static struct sec_op { struct tp_op op; unsigned node; uint32_t slot, count, k; } ops[OPT_MEMNODE_MAX][OPS];
static unsigned nops[OPT_MEMNODE_MAX];
static bool degraded;        /* some page may have fewer copies than replicas (atomic) */
static char *repair_buf;     /* one page on its way to a new copy */

static uint64_t loc(unsigned node, uint32_t pfn) { return LOC_VALID | (uint64_t)node << 32 | pfn; }
static unsigned loc_node(uint64_t l) { return (unsigned)(l >> 32) & 0xff; }
static uint32_t loc_pfn(uint64_t l) { return (uint32_t)l; }
static uint64_t *copies(uint64_t idx) { return tab + idx * extra; }
static void set_degraded(void) { __atomic_store_n(&degraded, true, __ATOMIC_RELAXED); }

int replica_init(void)
{
	extra = pager_opt(OPT_REPLICAS) > 1 ? pager_opt(OPT_REPLICAS) - 1 : 0;
	if (!extra)
		return 0;
	tab = rt_alloc(P.c.npages * extra * sizeof(uint64_t));
	repair_buf = rt_alloc(PAGE_SIZE);
	return tab && repair_buf ? 0 : -ENOMEM;
}

bool replica_hedging(void)
{
	return extra || backup_on();
}

int replica_skip_write(unsigned node)
{
	if (!replica_hedging() || !(client_avoided(P.c.client) >> node & 1))
		return 0;
	STAT_ADD(P.c.stats, writes_hedged, 1);
	return -EAGAIN;
}

/* A copy that can be made again later (past the writes in flight, a
 * repair, a move): hedged, and counted when given up on a late memnode. */
static int copy_write(unsigned t, uint32_t pfn, uint32_t count, const char *src)
{
	int err = client_write_hedged(P.c.client, t, pfn, count, src);

	if (err == -ETIME)
		STAT_ADD(P.c.stats, writes_hedged, 1);
	return err;
}

/* One frame on t for a copy of a page whose first copy is on n0. */
static int take(unsigned n0, unsigned t, uint32_t *pfn_out)
{
	uint32_t pfn, count;

	if (!cur[n0][t].left) {
		if (client_alloc(P.c.client, t, pager_opt(OPT_FLUSH_RUN), &pfn, &count))
			return -ENOSPC;
		cur[n0][t].pfn = pfn;
		cur[n0][t].left = count;
	}
	*pfn_out = cur[n0][t].pfn++;
	cur[n0][t].left--;
	STAT_ADD(P.c.stats, frames_held[t], 1);
	return 0;
}

void replica_place(unsigned n0, struct wbuf *wb)
{
	uint32_t pfn0, count;
	const void *data;
	uint64_t *aux;
	unsigned k = 0;

	uint64_t avoid = 1ull << n0;
	unsigned t;

	if (!extra)
		return;
	wbuf_run(wb, &pfn0, &count, &data);
	aux = wbuf_aux(wb, count - 1);
	while (k < extra && !client_copy_target(P.c.client, avoid, &t, NULL)) {
		uint32_t pfn;

		avoid |= 1ull << t; /* taken, or full */
		if (!take(n0, t, &pfn))
			aux[k++] = loc(t, pfn);
	}
	if (k < extra)
		set_degraded();
}

/* The writes of copies k of slots [slot, +count) failed: their frames go back. */
static void run_failed(struct wbuf *wb, uint32_t k, uint32_t slot, uint32_t count)
{
	for (uint32_t i = slot; i < slot + count; i++) {
		uint64_t *a = &wbuf_aux(wb, i)[k];

		if (*a & LOC_VALID)
			pager_release_frame(loc_node(*a), loc_pfn(*a));
		*a = 0;
	}
	set_degraded();
}

static void write_run(unsigned n0, struct wbuf *wb, uint32_t k, uint32_t slot, uint32_t count, const char *data)
{
	uint64_t a = wbuf_aux(wb, slot)[k];
	const char *src = data + ((size_t)slot << PAGE_SHIFT);
	int err = replica_skip_write(loc_node(a)); /* late lately: this copy is made again later */

	if (err) {
		run_failed(wb, k, slot, count);
		return;
	}
	if (nops[n0] < OPS) {
		struct sec_op *o = &ops[n0][nops[n0]];

		err = client_write_start(P.c.client, loc_node(a), loc_pfn(a), count, src, true, &o->op);
		if (!err) {
			o->node = loc_node(a);
			o->slot = slot;
			o->count = count;
			o->k = k;
			nops[n0]++;
			return;
		}
	} else { /* past OPS: now */
		err = copy_write(loc_node(a), loc_pfn(a), count, src);
	}
	if (err)
		run_failed(wb, k, slot, count);
	else
		STAT_ADD(P.c.stats, bytes_written, (uint64_t)count << PAGE_SHIFT);
}

void replica_flush(unsigned n0, struct wbuf *wb)
{
	uint32_t pfn, count;
	const void *data;

	if (!extra)
		return;
	wbuf_run(wb, &pfn, &count, &data);
	nops[n0] = 0;
	for (uint32_t k = 0; k < extra; k++) {
		for (uint32_t i = 0; i < count;) {
			uint64_t a = wbuf_aux(wb, i)[k];
			uint32_t m = 1;

			if (!(a & LOC_VALID)) {
				i++;
				continue;
			}
			while (i + m < count && wbuf_aux(wb, i + m)[k] == a + m)
				m++;
			write_run(n0, wb, k, i, m, data);
			i += m;
		}
	}
}

/* Waits for every extra-copy write of n0's buffer in flight. */
static void wait_ops(unsigned n0, struct wbuf *wb)
{
	for (unsigned j = 0; j < nops[n0]; j++) {
		struct sec_op *o = &ops[n0][j];

		int err = client_write_wait_hedged(P.c.client, o->node, &o->op);

		if (err == -ETIME)
			STAT_ADD(P.c.stats, writes_hedged, 1);
		if (err)
			run_failed(wb, o->k, o->slot, o->count);
		else
			STAT_ADD(P.c.stats, bytes_written, (uint64_t)o->count << PAGE_SHIFT);
	}
	nops[n0] = 0;
}

/* A page whose every copy failed to be written: back into the program. */
static void come_home(uint64_t idx, const char *src)
{
	int err = uffd_copy(P.c.uffd, page_addr(idx), src, PAGE_SIZE, 0, NULL);

	if (err)
		pager_die("cannot map home a page no memnode took", (uintptr_t)page_addr(idx), err);
	pager_became_resident(idx, PTE_DIRTY, 0, 0);
}

static void retire_slot(unsigned n0, uint32_t pfn, uint64_t idx, const uint64_t *aux, bool ok, const char *src)
{
	uint64_t l[EXTRA_MAX + 1];
	unsigned n = 0;

	if (ok)
		l[n++] = loc(n0, pfn);
	else
		pager_release_frame(n0, pfn);
	for (unsigned k = 0; k < extra; k++)
		if (aux[k] & LOC_VALID)
			l[n++] = aux[k];
	if (!n) {
		come_home(idx, src);
		return;
	}
	pte_put(idx, pte_make(pte_at(idx), PTE_REMOTE, loc_node(l[0]), loc_pfn(l[0])));
	for (unsigned k = 0; k < extra; k++)
		copies(idx)[k] = k + 1 < n ? l[k + 1] : 0;
	if (n < pager_opt(OPT_REPLICAS))
		set_degraded();
}

void replica_settle(unsigned n0, struct wbuf *wb, int err)
{
	uint32_t pfn, count;
	const void *data;

	wait_ops(n0, wb);
	wbuf_run(wb, &pfn, &count, &data);
	for (uint32_t i = 0; i < count; i++) {
		const uint64_t *aux = wbuf_aux(wb, i);
		uint64_t idx;
		bool cancelled;

		wbuf_entry(wb, i, &idx, &cancelled);
		if (!cancelled) {
			retire_slot(n0, pfn + i, idx, aux, !err, (const char *)data + ((size_t)i << PAGE_SHIFT));
			continue;
		}
		pager_release_frame(n0, pfn + i);
		for (unsigned k = 0; k < extra; k++)
			if (aux[k] & LOC_VALID)
				pager_release_frame(loc_node(aux[k]), loc_pfn(aux[k]));
	}
}

void replica_drop(uint64_t idx)
{
	if (!extra)
		return;
	for (unsigned k = 0; k < extra; k++) {
		uint64_t a = copies(idx)[k];

		if (a & LOC_VALID)
			pager_release_frame(loc_node(a), loc_pfn(a));
		copies(idx)[k] = 0;
	}
}

void replica_move(uint64_t from, uint64_t to)
{
	if (!extra)
		return;
	memcpy(copies(to), copies(from), extra * sizeof(uint64_t));
	memset(copies(from), 0, extra * sizeof(uint64_t));
}

/* A failover's read: plain (round < 0) or hedged in that round
 * (client_read_hedged; with last, in round 0, client_read_last: not steered
 * around a slow memnode, there being no faster copy left to go to); one
 * late or steered away sets *late. */
static int copy_read(unsigned node, uint32_t pfn, uint32_t count, char *dst, int round, bool last, bool *late)
{
	int err = round < 0 ? client_read(P.c.client, node, pfn, count, dst)
		  : !round && last ? client_read_last(P.c.client, node, pfn, count, dst)
				   : client_read_hedged(P.c.client, node, pfn, count, dst, (unsigned)round);

	if (err == -ETIME || err == -EAGAIN)
		*late = true;
	return err;
}

/* Page i into dst from one of the n copies at l, checked. In round 0 a
 * copy refused at once (its memnode suspect or slow: steered to a faster
 * one) is read after all as a last one (client_read_last) once no other
 * served: a slow copy is read, not the next round waited out on a stopped
 * memnode (D85); a suspect one refuses again at once. */
static bool read_from(uint64_t i, const uint64_t *l, unsigned n, char *dst, int round, bool *late)
{
	unsigned steered = 0;

	for (unsigned k = 0; k < n; k++) {
		int err = copy_read(loc_node(l[k]), loc_pfn(l[k]), 1, dst, round, false, late);

		if (!err && pagesum_eq(pagesum_of(dst), sum_at(i)))
			return true;
		steered |= (unsigned)(err == -EAGAIN) << k;
	}
	for (unsigned k = 0; k < n; k++)
		if ((steered >> k & 1) && !copy_read(loc_node(l[k]), loc_pfn(l[k]), 1, dst, round, true, late) &&
		    pagesum_eq(pagesum_of(dst), sum_at(i)))
			return true;
	return false;
}

/* Page i's valid extra copies into l (at most extra); how many. */
static unsigned extras_of(uint64_t i, uint64_t *l)
{
	unsigned n = 0;

	for (unsigned k = 0; k < extra; k++) {
		uint64_t a = __atomic_load_n(&copies(i)[k], __ATOMIC_RELAXED);

		if (a & LOC_VALID)
			l[n++] = a;
	}
	return n;
}

/* Page i from one of its extra copies into dst, checked; false if none. */
static bool read_copy(uint64_t i, char *dst, int round, bool *late)
{
	uint64_t l[EXTRA_MAX];

	return read_from(i, l, extras_of(i, l), dst, round, late);
}

/* Page i from a copy not on node bad: its first copy, if the membership
 * thread has meanwhile put an extra one in the failed one's place (the read
 * may have run without the pager lock), else an extra one. */
static bool read_other(unsigned bad, uint64_t i, char *dst, int round, bool *late)
{
	pte_t e = pte_at(i);
	uint64_t l[EXTRA_MAX + 1];
	unsigned n = 0;

	if ((pte_state(e) == PTE_REMOTE || pte_state(e) == PTE_CLEAN) && pte_node(e) != bad)
		l[n++] = loc(pte_node(e), pte_pfn(e));
	n += extras_of(i, l + n);
	return read_from(i, l, n, dst, round, late);
}

/* The copy of page i not on bad that a batch reads: its first copy, else
 * its first extra one; 0 if it has none. */
static uint64_t other_loc(unsigned bad, uint64_t i)
{
	pte_t e = pte_at(i);

	if ((pte_state(e) == PTE_REMOTE || pte_state(e) == PTE_CLEAN) && pte_node(e) != bad)
		return loc(pte_node(e), pte_pfn(e));
	for (unsigned k = 0; k < extra; k++) {
		uint64_t a = __atomic_load_n(&copies(i)[k], __ATOMIC_RELAXED);

		if ((a & LOC_VALID) && loc_node(a) != bad)
			return a;
	}
	return 0;
}

/* Pages k.. of the failover whose other copies sit in consecutive frames
 * of one memnode (copies of consecutive evictions do: one cursor per pair
 * of memnodes), read with one transfer into p and checked page by page.
 * The pages taken (0: none could be read together). */
static uint32_t read_batch(unsigned bad, uint64_t first, uint64_t step, uint32_t k, uint32_t count, char *p,
			   int round, bool *late)
{
	uint64_t l = extra ? other_loc(bad, first + k * step) : 0;
	uint32_t m = 1;

	if (!l)
		return 0;
	while (k + m < count && m < PROTO_MAX_RW_FRAMES && other_loc(bad, first + (k + m) * step) == l + m)
		m++;
	if (m == 1 || copy_read(loc_node(l), loc_pfn(l), m, p, round, extra == 1, late)) /* replicas 2: the one other */
		return 0;
	for (uint32_t j = 0; j < m; j++) {
		uint64_t i = first + (k + j) * step;
		char *q = p + ((size_t)j << PAGE_SHIFT);

		if (!pagesum_eq(pagesum_of(q), sum_at(i)) && !read_other(bad, i, q, round, late) && !backup_read(i, q))
			return j; /* the rest one at a time, which fails on this one */
	}
	return m;
}

int replica_failover(unsigned bad, uint64_t first, uint64_t step, uint32_t count, char *dst, int round)
{
	bool late = false;
	uint32_t m;

	if (!extra && !backup_on())
		return -EIO;
	for (uint32_t k = 0; k < count; k += m) {
		uint64_t i = first + k * step;
		char *p = dst + ((size_t)k << PAGE_SHIFT);

		if ((m = read_batch(bad, first, step, k, count, p, round, &late)))
			continue;
		m = 1;
		if (!(extra && read_other(bad, i, p, round, &late)) && !backup_read(i, p))
			return late ? -ETIME : -EIO;
	}
	STAT_ADD(P.c.stats, pages_failed_over, count);
	return 0;
}

/* Page i into repair_buf, checked: from node/pfn, else from an extra copy;
 * round as copy_read's. A repair reads hedged (round 0): it never waits on
 * a memnode that is late or suspect (a later pass tries again), but reads
 * node/pfn from a slow one as a last copy (client_read_last). */
static bool read_any(unsigned node, uint32_t pfn, uint64_t i, int round)
{
	bool late = false;
	int err = copy_read(node, pfn, 1, repair_buf, round, true, &late);

	if (!err && pagesum_eq(pagesum_of(repair_buf), sum_at(i)))
		return true;
	return read_copy(i, repair_buf, round, &late);
}

/* The aux words of wb that name d are cleared; with release their frames
 * go back (d is alive, or the copy is somewhere else). */
static void clear_aux(struct wbuf *wb, unsigned d, bool all)
{
	uint32_t pfn, count;
	const void *data;

	if (!wb)
		return;
	wbuf_run(wb, &pfn, &count, &data);
	for (uint32_t i = 0; i < count; i++)
		for (unsigned k = 0; k < extra; k++) {
			uint64_t *a = &wbuf_aux(wb, i)[k];

			if (!(*a & LOC_VALID) || (!all && loc_node(*a) != d))
				continue;
			if (all)
				pager_release_frame(loc_node(*a), loc_pfn(*a));
			*a = 0;
		}
}

void replica_forget(unsigned d, bool failed)
{
	if (!extra)
		return;
	set_degraded();
	for (unsigned n = 0; n < P.nnodes; n++) {
		if (cur[n][d].left && !failed)
			client_release(P.c.client, d, cur[n][d].pfn, cur[n][d].left);
		if (cur[d][n].left) /* frames on n for d's buffers: d takes no new pages */
			client_release(P.c.client, n, cur[d][n].pfn, cur[d][n].left);
		cur[n][d].left = cur[d][n].left = 0;
	}
	if (!failed) { /* leaving: every buffered copy there is written, then undone by replica_unref */
		reclaim_flush_all();
		return;
	}
	log_info("memnode %u out of use (failed or drained): the other copies of its pages take their place, and "
		 "copies are made again on the other memnodes where there is room", d);
	/* d's own buffers come home (migrate.c): their extra copies are given up,
	 * once the writes in flight from them are over */
	wait_ops(d, P.wb_out[d] ? P.wb_out[d] : P.wb[d]);
	clear_aux(P.wb[d], d, true);
	clear_aux(P.wb_out[d], d, true);
	for (unsigned n = 0; n < P.nnodes; n++) {
		if (n == d)
			continue;
		clear_aux(P.wb[n], d, false);
		clear_aux(P.wb_out[n], d, false);
	}
}

/* ---- re-replication ---- */

static bool holds(uint64_t i, unsigned t)
{
	if (pte_node(pte_at(i)) == t)
		return true;
	for (unsigned k = 0; k < extra; k++)
		if ((copies(i)[k] & LOC_VALID) && loc_node(copies(i)[k]) == t)
			return true;
	return false;
}

/* A frame for a new copy of page i on a usable memnode that holds none. */
static bool new_frame(uint64_t i, uint64_t unusable, unsigned *t_out, uint32_t *pfn_out)
{
	uint64_t avoid = unusable;
	unsigned t;

	for (unsigned a = 0; a < P.nnodes; a++)
		avoid |= (uint64_t)holds(i, a) << a;
	while (!client_copy_target(P.c.client, avoid, &t, NULL)) {
		uint32_t got;

		avoid |= 1ull << t;
		if (client_alloc(P.c.client, t, 1, pfn_out, &got))
			continue;
		STAT_ADD(P.c.stats, frames_held[t], 1);
		*t_out = t;
		return true;
	}
	return false;
}

/* Page i gets one copy it lacks; false when it still lacks some (no usable
 * memnode with room, none of its copies readable, or a write failed). */
static bool repair_page(uint64_t i, uint64_t unusable, unsigned *made)
{
	pte_t e = pte_at(i);
	uint64_t *c = copies(i);
	unsigned have = 1, free_k = extra, t;
	uint32_t pfn;

	if (pte_state(e) != PTE_REMOTE && pte_state(e) != PTE_CLEAN)
		return true;
	for (unsigned k = 0; k < extra; k++) {
		if (c[k] & LOC_VALID)
			have++;
		else if (free_k == extra)
			free_k = k;
	}
	if (have >= pager_opt(OPT_REPLICAS))
		return true;
	if (!new_frame(i, unusable, &t, &pfn))
		return false; /* read nothing: no memnode can take it now */
	if (!read_any(pte_node(e), pte_pfn(e), i, 0) || copy_write(t, pfn, 1, repair_buf)) {
		pager_release_frame(t, pfn);
		return false; /* a memnode is failing or late: a later pass tries again */
	}
	c[free_k] = loc(t, pfn);
	STAT_ADD(P.c.stats, pages_rereplicated, 1);
	STAT_ADD(P.c.stats, bytes_written, PAGE_SIZE);
	(*made)++;
	return have + 1 >= pager_opt(OPT_REPLICAS);
}

/* ---- a leaving memnode's copies ---- */

/* The copy of page i at l (on a leaving memnode d, still alive) is written
 * to another memnode first, so a drain or a shrink never leaves a page with
 * fewer copies than it had: a failure during or after the move loses
 * nothing. False when no other memnode has room or a transfer failed: the
 * caller drops the copy and re-replication makes it later. */
static bool move_copy(uint64_t i, unsigned d, uint64_t l, uint64_t *to)
{
	unsigned t;
	uint32_t pfn;

	if (!new_frame(i, 1ull << d, &t, &pfn))
		return false;
	if (!read_any(loc_node(l), loc_pfn(l), i, -1) || copy_write(t, pfn, 1, repair_buf)) {
		pager_release_frame(t, pfn);
		return false;
	}
	STAT_ADD(P.c.stats, pages_migrated, 1);
	STAT_ADD(P.c.stats, bytes_written, PAGE_SIZE);
	*to = loc(t, pfn);
	return true;
}

static bool in_range(uint64_t l, unsigned d, uint32_t lo, uint64_t hi)
{
	return (l & LOC_VALID) && loc_node(l) == d && loc_pfn(l) >= lo && loc_pfn(l) < hi;
}

bool replica_unref(uint64_t i, unsigned d, bool failed, uint32_t lo, uint64_t hi)
{
	pte_t e = pte_at(i);
	uint64_t *c, keep[EXTRA_MAX] = { 0 }, to;
	unsigned n = 0;
	bool did = false, dropped = false;

	if (!extra || (pte_state(e) != PTE_REMOTE && pte_state(e) != PTE_CLEAN))
		return false;
	c = copies(i);
	for (unsigned k = 0; k < extra; k++) {
		if (!in_range(c[k], d, lo, hi)) {
			if (c[k] & LOC_VALID)
				keep[n++] = c[k];
			continue;
		}
		if (!failed && move_copy(i, d, c[k], &to))
			keep[n++] = to;
		else
			dropped = true;
		if (!failed)
			pager_release_frame(d, loc_pfn(c[k]));
		did = true;
	}
	if (in_range(loc(pte_node(e), pte_pfn(e)), d, lo, hi)) {
		if (!failed && move_copy(i, d, loc(d, pte_pfn(e)), &to)) {
			pager_release_frame(d, pte_pfn(e));
			pte_put(i, pte_make(e, pte_state(e), loc_node(to), loc_pfn(to)));
			did = true;
		} else if (n) {
			/* an extra copy takes the first one's place */
			if (!failed)
				pager_release_frame(d, pte_pfn(e));
			pte_put(i, pte_make(e, pte_state(e), loc_node(keep[0]), loc_pfn(keep[0])));
			memmove(keep, keep + 1, (EXTRA_MAX - 1) * sizeof(keep[0]));
			keep[EXTRA_MAX - 1] = 0;
			if (failed) /* served from another copy from now on */
				STAT_ADD(P.c.stats, pages_failed_over, 1);
			did = dropped = true;
		}
	}
	if (did)
		memcpy(c, keep, extra * sizeof(uint64_t));
	if (dropped)
		set_degraded();
	return did;
}

void replica_repair(uint64_t unusable)
{
	static uint64_t not_before;
	uint64_t now = now_ns(), made = 0;
	bool lacking = false;

	if (!extra || now < not_before || !__atomic_exchange_n(&degraded, false, __ATOMIC_RELAXED))
		return;
	pager_lock("re-replicating pages");
	for (int area = 0; area < 2; area++) {
		for (uint64_t i = area ? P.c.heap_pages : 0; i < (area ? P.map_hi : P.heap_hi); i++) {
			unsigned m = 0;

			lacking |= !repair_page(i, unusable, &m);
			made += m;
			if ((i & 4095) == 4095 || (m && made % REPAIR_BATCH == 0))
				pager_yield_to_faults("re-replicating pages");
		}
	}
	pager_unlock();
	if (made && !lacking)
		log_info("re-replicated: %llu page copies made again, every page has its %u copies",
			 (unsigned long long)made, (unsigned)pager_opt(OPT_REPLICAS));
	else if (made)
		log_info("%llu page copies made again; some pages still lack copies (no memnode has room)",
			 (unsigned long long)made);
	if (lacking) {
		set_degraded();
		not_before = now_ns() + REPAIR_RETRY_NS;
	}
}

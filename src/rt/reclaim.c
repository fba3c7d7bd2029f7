/* reclaim: eviction, in the fault path when it must (direct reclaim) and on
 * the reclaimer thread otherwise, which keeps resident pages between two
 * watermarks under the budget so that a fault rarely waits for an eviction.
 *
 * Two ways to take a victim out of the program, chosen at start-up:
 * - asynchronous (Linux 6.8+): UFFDIO_MOVE takes every victim out of the
 *   program in one atomic step per run (no copy, no TLB shootdown per
 *   page). A program thread that touches the page afterwards takes a
 *   missing-page fault and waits for the pager lock. Whether a clean victim
 *   was written since it came back is decided by its content hash alone,
 *   which must still equal its remote copy's (D21); the kernel's written
 *   bits are not asked (a PAGEMAP_SCAN per run cost 0.7 us a victim, D20).
 * - synchronous: UFFDIO_WRITEPROTECT (writers now wait for the handler),
 *   a copy through /proc/self/mem, MADV_DONTNEED.
 * Dirty victims go to their memnode's write buffer; clean ones keep their
 * frame and are dropped; all-zero ones become untouched again. */
#include <errno.h>
#include <sched.h>
#include <string.h>
#include <sys/mman.h>

#include "backup.h"
#include "budget.h"
#include "client.h"
#include "evict.h"
#include "forkchild.h"
#include "log.h"
#include "pagemap.h"
#include "pager_impl.h"
#include "placement.h"
#include "replica.h"
#include "rtmem.h"
#include "transport.h"
#include "uffd.h"
#include "wbuf.h"
#include "os.h"

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

/* ---- frames and write buffers ---- */

/* Placement chooses a node per 4 MiB of frames (one ALLOC chunk at the
 * default replenish-order): pages evicted together stay in consecutive frames
 * of one node, so a prefetch window rarely straddles two nodes (per 64-frame
 * run, p2c doubled the remote faults of a sequential program). */
#define PLACE_FRAMES 1024u

/* The node placement chooses for the next PLACE_FRAMES frames (hash: always
 * the preferred one; p2c, weighted: from the room the memnodes' replies said). */
static unsigned place_run(void)
{
	uint64_t room[OPT_MEMNODE_MAX];

	if (pager_opt(OPT_PLACEMENT) == PLACEMENT_HASH)
		return P.preferred;
	client_room(P.c.client, room, P.nnodes);
	return placement_pick(pager_opt(OPT_PLACEMENT), P.preferred, room, P.nnodes, &P.rng);
}

/* One frame for an evicted page, from placement's node or, when that one
 * is full or failed, the next (COMEX Fig. 4). -ENOSPC when all are full. */
#define FULL_BACKOFF_NS 100000000ull /* 100 ms: a full pool is asked again after this */

static bool pools_full(void) { return P.full_until && now_ns() < P.full_until; }

static int take_frame(unsigned *node_out, uint32_t *pfn_out)
{
	if (pools_full())
		return -ENOSPC;
	if (!P.cur_left) {
		unsigned was = P.cur;

		P.cur = place_run();
		P.cur_left = PLACE_FRAMES;
		/* the frames the client keeps ahead for the node we leave would sit
		 * idle there, counted as used, until placement comes back */
		if (P.cur != was && pager_opt(OPT_PLACEMENT) != PLACEMENT_HASH)
			client_trim(P.c.client, was);
	}
	for (unsigned a = 0; a < P.nnodes; a++) {
		unsigned n = placement_choice(P.cur, a, P.nnodes);
		uint32_t pfn, count;

		if (!P.cursor[n].left) {
			if (client_alloc(P.c.client, n, pager_opt(OPT_FLUSH_RUN), &pfn, &count))
				continue;
			P.cursor[n].pfn = pfn;
			P.cursor[n].left = count;
		}
		*node_out = n;
		*pfn_out = P.cursor[n].pfn++;
		STAT_ADD(P.c.stats, frames_held[n], 1);
		P.cursor[n].left--;
		P.cur_left--;
		return 0;
	}
	P.full_until = now_ns() + FULL_BACKOFF_NS;
	return -ENOSPC;
}

/* The write of wb's pages failed: they exist nowhere else. */
static void write_failed(const struct wbuf *wb, int err)
{
	uint32_t pfn, count;
	const void *data;

	wbuf_run(wb, &pfn, &count, &data);
	pager_die("a memnode failed while taking evicted pages that exist nowhere else", (uintptr_t)data, err);
}

/* The pages of a write the memnode confirmed (err 0) become remote;
 * cancelled ones (faulted back or discarded meanwhile) give their frame
 * back. With replicas, replica.c decides per page from all its copies. */
static void retire(unsigned node, struct wbuf *wb, int err)
{
	uint32_t pfn, count;
	const void *data;

	wbuf_run(wb, &pfn, &count, &data);
	backup_wait(wb); /* its pages stay here until the backup file has them */
	if (pager_opt(OPT_REPLICAS) > 1 || backup_on())
		replica_settle(node, wb, err);
	else if (err)
		write_failed(wb, err);
	for (uint32_t i = 0; i < count && pager_opt(OPT_REPLICAS) == 1 && !backup_on(); i++) {
		uint64_t idx;
		bool cancelled;

		wbuf_entry(wb, i, &idx, &cancelled);
		if (cancelled)
			pager_release_frame(node, pfn + i);
		else
			pte_put(idx, pte_make(pte_at(idx), PTE_REMOTE, node, pfn + i));
	}
	wbuf_clear(wb);
	STAT_ADD(P.c.stats, pages_written, count);
	STAT_ADD(P.c.stats, bytes_written, (uint64_t)count << PAGE_SHIFT);
	STAT_ADD(P.c.stats, remote_writes, 1);
}

/* Waits for node's write in flight, if any, and retires its pages. */
static void settle(unsigned node)
{
	int err;

	if (!P.wb_busy[node])
		return;
	err = replica_hedging() ? client_write_wait_hedged(P.c.client, node, &P.wb_op[node])
				: client_write_wait(P.c.client, node, &P.wb_op[node]);
	if (err == -ETIME) /* late: the pages' other copies stand in (replica_settle) */
		STAT_ADD(P.c.stats, writes_hedged, 1);
	P.wb_busy[node] = false;
	retire(node, P.wb_out[node], err);
}

/* Write-back overlaps eviction (issue 9 item 3): a node's full buffer goes
 * out while the other one fills, and its pages stay readable there
 * (PTE_WBUF) until the memnode confirmed them. The write before must be
 * confirmed first; with one buffer (write-behind off, or wbuf-pages 1) it
 * is written synchronously. */
static void flush(unsigned node)
{
	struct wbuf *wb = P.wb[node];
	uint32_t pfn, count;
	const void *data;
	int err;

	wbuf_run(wb, &pfn, &count, &data);
	if (!count)
		return;
	if (!P.wb_out[node]) {
		replica_flush(node, wb);
		backup_submit(wb);
		retire(node, wb, replica_skip_write(node) ?: client_write(P.c.client, node, pfn, count, data));
		return;
	}
	settle(node);
	P.wb[node] = P.wb_out[node];
	P.wb_out[node] = wb;
	if ((err = replica_skip_write(node) ?: client_write_start(P.c.client, node, pfn, count, data, replica_hedging(),
									   &P.wb_op[node]))) {
		if (pager_opt(OPT_REPLICAS) == 1 && !backup_on())
			write_failed(wb, err);
		P.wb_op[node] = (struct tp_op){ .done = true, .status = err }; /* settle() sees it */
	}
	replica_flush(node, wb);
	backup_submit(wb);
	P.wb_busy[node] = true;
}

uint32_t reclaim_flush_node(unsigned node)
{
	uint32_t pfn, held = 0, count;
	const void *data;

	wbuf_run(P.wb[node], &pfn, &held, &data);
	if (P.wb_busy[node]) {
		wbuf_run(P.wb_out[node], &pfn, &count, &data);
		held += count;
	}
	flush(node);
	settle(node);
	return held;
}

void reclaim_flush_all(void)
{
	for (unsigned n = 0; n < P.nnodes; n++)
		reclaim_flush_node(n);
}

/* write-behind: two write buffers per node, half the pages each, so that
 * one fills while the other's write is in flight; else one. */
int reclaim_add_node(unsigned node)
{
	bool two = pager_opt(OPT_WRITE_BEHIND) && pager_opt(OPT_WBUF_PAGES) >= 2;
	uint32_t aux = pager_opt(OPT_REPLICAS) - 1; /* extra copies' locations (replica.c) */
	int err = wbuf_create(two ? pager_opt(OPT_WBUF_PAGES) / 2 : pager_opt(OPT_WBUF_PAGES), pager_opt(OPT_FLUSH_RUN), aux, &P.wb[node]);

	if (!err && two)
		err = wbuf_create(pager_opt(OPT_WBUF_PAGES) / 2, pager_opt(OPT_FLUSH_RUN), aux, &P.wb_out[node]);
	return err;
}

void *reclaim_wbuf_take(unsigned node, uint64_t idx)
{
	void *src = wbuf_find(P.wb[node], idx, true);

	return src || !P.wb_out[node] ? src : wbuf_find(P.wb_out[node], idx, true);
}

/* ---- victims ---- */

static bool page_is_zero(const void *p)
{
	const uint64_t *w = p;

	for (size_t i = 0; i < PAGE_SIZE / 8; i++)
		if (w[i])
			return false;
	return true;
}

/* Applies fn to each maximal run of consecutive indices among v[0..n) whose
 * entry passes keep (which may be NULL for all) and whose protection and
 * lock are the same (a run lies in one kernel mapping: UFFDIO_MOVE and
 * UFFDIO_COPY work within one). */
static int for_runs(const uint64_t *v, uint32_t n, bool (*keep)(uint64_t),
		    int (*fn)(uint64_t first, uint32_t len))
{
	for (uint32_t i = 0; i < n;) {
		uint32_t j = i;
		int err;

		if (keep && !keep(v[i])) {
			i++;
			continue;
		}
		while (j + 1 < n && v[j + 1] == v[j] + 1 && !((pte_at(v[j + 1]) ^ pte_at(v[j])) & PTE_ATTRS) &&
		       (!keep || keep(v[j + 1])))
			j++;
		if ((err = fn(v[i], j - i + 1)))
			return err;
		i = j + 1;
	}
	return 0;
}

/* A victim with no victim beside it in the address space (v sorted). */
static bool isolated(const uint64_t *v, uint32_t n, uint32_t i)
{
	return !(i > 0 && v[i - 1] + 1 == v[i]) && !(i + 1 < n && v[i + 1] == v[i] + 1);
}

/* keep-frames rewrites a page into its own frame so that a run of pages
 * stays a run of frames for the prefetcher (D24). A page without a
 * neighbour among the victims has no such run to keep, and its frame would
 * cut the write buffer's run of consecutive frames: one write each, every
 * one waited for (D25). It takes a fresh frame, and its old one is freed. */
static bool breaks_run(uint64_t idx, bool alone)
{
	pte_t e = pte_at(idx);

	return alone && (e & PTE_KEEP) && wbuf_must_flush_before(P.wb[pte_node(e)], pte_pfn(e));
}

/* A dirty victim whose content is at src and hashes to sum: into a write
 * buffer (the hash kept for the page's return), or untouched again when
 * all-zero. False when every memnode is full: the caller keeps the page
 * resident. alone: no other victim beside it (isolated). */
static bool evict_dirty(uint64_t idx, const char *src, pagesum_t sum, bool alone)
{
	pte_t e = pte_at(idx);
	unsigned node;
	uint32_t pfn;

	if (page_is_zero(src)) {
		if (e & PTE_KEEP)
			pager_release_frame(pte_node(e), pte_pfn(e));
		pte_put(idx, pte_set_state(e & ~PTE_KEEP, PTE_EMPTY));
		STAT_ADD(P.c.stats, pages_dropped_zero, 1);
		return true;
	}
	if ((e & PTE_KEEP) && forkchild_defer(pte_node(e), pte_pfn(e))) {
		e &= ~PTE_KEEP; /* a forked child may still read the old content */
		pte_put(idx, e);
	}
	if (breaks_run(idx, alone)) {
		pager_release_frame(pte_node(e), pte_pfn(e));
		e &= ~PTE_KEEP;
		pte_put(idx, e);
		STAT_ADD(P.c.stats, frames_renewed, 1);
	}
	if (e & PTE_KEEP) {
		node = pte_node(e);
		pfn = pte_pfn(e);
	} else if (take_frame(&node, &pfn)) {
		if (!P.full_warned)
			log_warn("every memnode is full: keeping pages resident beyond the local budget");
		P.full_warned = true;
		return false;
	}
	if (wbuf_must_flush_before(P.wb[node], pfn))
		flush(node);
	memcpy(wbuf_add(P.wb[node], idx, pfn), src, PAGE_SIZE);
	replica_place(node, P.wb[node]);
	sum_put(idx, sum);
	pte_put(idx, pte_make(pte_at(idx), PTE_WBUF, node, pfn));
	if (wbuf_ready(P.wb[node]))
		flush(node);
	return true;
}

/* A victim equal to its remote copy leaves without a rewrite: the frame it
 * holds is its copy again. written: the pager knows it was written since it
 * came back (a write fault, without wp-async), and put back to what it was
 * (D21). */
static void drop_clean(uint64_t idx, bool written)
{
	pte_put(idx, pte_set_state(pte_at(idx) & ~PTE_KEEP, PTE_REMOTE));
	STAT_ADD(P.c.stats, pages_dropped_clean, 1);
	if (written)
		STAT_ADD(P.c.stats, pages_written_unchanged, 1);
}

/* A dirty victim that still owns its frame (keep-frames) and hashes as the
 * frame's content: written back to what it was (a write fault on a page
 * that came back, then the value restored), so it is clean after all (D21).
 * Not with replicas or a backup file: its extra copies and its backup were
 * dropped when it was written. */
static bool unchanged_keep(uint64_t idx, pagesum_t sum)
{
	if (!(pte_at(idx) & PTE_KEEP) || pager_opt(OPT_REPLICAS) > 1 || backup_on() || !pagesum_eq(sum, sum_at(idx)))
		return false;
	drop_clean(idx, true);
	return true;
}

/* A victim that stays (write buffers full, or the kernel would not move it):
 * back into the ring with its generation, still resident. */
static void keep_resident(uint64_t idx)
{
	evict_push(P.ev, &P.tab, idx, pte_gen(pte_at(idx)));
}

/* ---- synchronous mode ---- */

static bool is_dirty(uint64_t idx) { return pte_state(pte_at(idx)) == PTE_DIRTY; }
static bool is_gone(uint64_t idx) { return !pte_resident(pte_at(idx)); }

static int protect_run(uint64_t first, uint32_t len)
{
	int err = uffd_wp(P.c.uffd, page_addr(first), (size_t)len << PAGE_SHIFT, 1);

	if (err)
		pager_die("cannot write-protect pages to evict them", (uintptr_t)page_addr(first), err);
	return 0;
}

static int drop_run(uint64_t first, uint32_t len)
{
	int err = raw_madvise(page_addr(first), (size_t)len << PAGE_SHIFT, MADV_DONTNEED);

	if (err)
		pager_die("cannot drop evicted pages", (uintptr_t)page_addr(first), err);
	return 0;
}

/* Copies pages [first, +len) to scratch from slot pos on, through
 * /proc/self/mem (which reads pages whatever their protection). */
static void copy_to_scratch(uint32_t pos, uint64_t first, uint32_t len)
{
	size_t bytes = (size_t)len << PAGE_SHIFT;
	ssize_t r = pread(P.memfd, P.scratch + ((size_t)pos << PAGE_SHIFT), bytes, (off_t)(uintptr_t)page_addr(first));

	if (r != (ssize_t)bytes)
		pager_die("cannot read pages to evict through /proc/self/mem", (uintptr_t)page_addr(first),
			  r < 0 ? -errno : -EIO);
}

/* Copies the dirty victims' contents (write-protected, so stable) into
 * scratch, one pread per run. */
static uint32_t copy_pos;
static int copy_run(uint64_t first, uint32_t len)
{
	copy_to_scratch(copy_pos, first, len);
	copy_pos += len;
	return 0;
}

static uint32_t evict_sync(const uint64_t *v, uint32_t n)
{
	uint32_t gone = 0, k = 0;

	for_runs(v, n, is_dirty, protect_run);
	copy_pos = 0;
	for_runs(v, n, is_dirty, copy_run);
	for (uint32_t i = 0; i < n; i++) {
		pte_t e = pte_at(v[i]);

		if (pte_state(e) == PTE_CLEAN) {
			drop_clean(v[i], false);
			gone++;
		} else {
			const char *src = P.scratch + ((size_t)k++ << PAGE_SHIFT);
			pagesum_t sum = pagesum_of(src);

			if (unchanged_keep(v[i], sum) || evict_dirty(v[i], src, sum, isolated(v, n, i))) {
				gone++;
				continue;
			}
			uffd_wp(P.c.uffd, page_addr(v[i]), PAGE_SIZE, 0);
			keep_resident(v[i]);
		}
	}
	for_runs(v, n, is_gone, drop_run);
	return gone;
}

/* ---- asynchronous mode ---- */

/* Per victim of the batch being evicted: parked (its content in a parking
 * slot), copied (not moved: the victim is still mapped) and, from bit 3,
 * its protection (which parking area). */
enum { PARKED = 1, COPIED = 4, PROT_SHIFT = 3 };
static uint8_t park_state[MAX_BATCH];
static uint32_t park_base;            /* victims of the batch before the current run */
static unsigned areas_used;           /* bit per parking area this batch put pages in */

/* Slot i of the parking area for protection prot (PROT_* bits). UFFDIO_MOVE
 * moves a page only between mappings of the same protection, so there is
 * one area per protection (D43); it refuses pages of mappings without
 * PROT_WRITE at all: those are copied into the read-write area instead. */
#define PROT_RW (PROT_READ | PROT_WRITE)
static char *slot(unsigned prot, uint32_t i)
{
	return P.park + (((size_t)prot * MAX_BATCH + i) << PAGE_SHIFT);
}

/* Pages from slot park_base + done on that a move put into the parking
 * area without counting them. Linux 6.18 does that: when one step of a
 * UFFDIO_MOVE had to be retried (-EAGAIN: the page's entry changed under
 * the move, as it does for a page other threads are writing) and the retry
 * succeeded, the stale error stops the count from advancing, the next step
 * finds the page just moved at its destination and the call fails with
 * -EEXIST (or -EAGAIN after earlier progress). The slots of this run were
 * empty before it (each batch empties what it used) and only this run moves
 * into them, so a page found there is the victim's, moved. */
static uint32_t moved_uncounted(unsigned prot, uint64_t first, uint32_t done, uint32_t len)
{
	size_t n;
	int err = pagemap_mapped_prefix(P.pmfd, slot(prot, park_base + done), len - done, &n);

	if (err)
		pager_die("cannot learn which pages a move took out", (uintptr_t)page_addr(first + done), err);
	if (n)
		STAT_ADD(P.c.stats, pages_moved_uncounted, n);
	return (uint32_t)n;
}

static uint8_t parked(unsigned prot) { return (uint8_t)(PARKED | prot << PROT_SHIFT); }

/* A run of victims whose mapping is not writable: the program cannot
 * change them while the pager lock is held (mprotect takes it, prot.c), so
 * a copy through /proc/self/mem (which reads PROT_NONE pages too) into
 * scratch, which stays populated (1.2 us per page here, where copying into
 * an emptied parking slot cost 9 us: a page allocated, zeroed and freed
 * each time), is their content; evicted, they are dropped afterwards. The
 * kernel confirms each mapping is not writable first (prot_copyable); pages
 * of one that is stay resident this round and move the next. */
static int copy_out_run(uint64_t first, uint32_t len, unsigned prot)
{
	uint32_t done = 0, k;

	while (done < len && (k = prot_copyable(first + done, len - done))) {
		copy_to_scratch(park_base + done, first + done, k);
		for (uint32_t i = done; i < done + k; i++)
			park_state[park_base + i] = parked(prot) | COPIED;
		done += k;
	}
	for (uint32_t i = done; i < len; i++)
		park_state[park_base + i] = 0; /* stays resident */
	if (done < len)
		STAT_ADD(P.c.stats, pages_unmovable, len - done);
	park_base += len;
	return 0;
}

/* Scans and moves one run of victims (v[park_base..+len), indices
 * first..first+len) into the parking area of their protection (copies
 * them when it is not writable). A page the kernel refuses to move (shared
 * with a forked child: -EBUSY; in a mapping other than the pager recorded,
 * e.g. changed by a raw mprotect: -EINVAL; changing under every try:
 * -EAGAIN) stays where it is. */
static int park_run(uint64_t first, uint32_t len)
{
	uint32_t done = 0, busy_tried = 0, again = 0, lim = len;
	unsigned prot = pte_prot(pte_at(first));
	int err;

	if (!(prot & PROT_WRITE))
		return copy_out_run(first, len, prot);
	areas_used |= 1u << prot;
	while (done < len) {
		uint32_t want = len - done < lim ? len - done : lim;
		size_t moved = 0;
		uint32_t k;

		err = uffd_move(P.c.uffd, slot(prot, park_base + done), page_addr(first + done),
				(size_t)want << PAGE_SHIFT, &moved);
		k = (uint32_t)(moved >> PAGE_SHIFT);
		if (err && !k)
			k = moved_uncounted(prot, first, done, done + want);
		if (k)
			busy_tried = again = 0, lim = len;
		for (uint32_t i = 0; i < k; i++, done++)
			park_state[park_base + done] = parked(prot);
		if (!err || k)
			continue;
		if (err != -EBUSY && err != -EINVAL && err != -EAGAIN)
			pager_die("cannot move pages out to evict them", (uintptr_t)page_addr(first + done), err);
		if (err == -EAGAIN && again++ < 3)
			continue;
		/* -EINVAL over several pages: the run may cross a boundary between
		 * kernel mappings (a madvise or mprotect made one that the pager
		 * does not see as an attribute): try the first half */
		if (err == -EINVAL && want > 1) {
			lim = want / 2;
			continue;
		}
		/* -EBUSY: the page is not exclusively ours (a fork shared it, and a
		 * page only read since stays marked shared even after the child
		 * is gone). A write fault that changes nothing makes it ours
		 * again (a copy while a child still shares it), then it moves. */
		if (err == -EBUSY && !busy_tried++ &&
		    !raw_madvise(page_addr(first + done), PAGE_SIZE, MADV_POPULATE_WRITE)) {
			STAT_ADD(P.c.stats, pages_unshared, 1);
			continue;
		}
		busy_tried = again = 0, lim = len;
		park_state[park_base + done++] = 0; /* stays resident */
		STAT_ADD(P.c.stats, pages_unmovable, 1);
	}
	park_base += len;
	return 0;
}

/* An unchanged clean page whose frame continues the run its memnode's write
 * buffer is collecting (write-fill): rewritten there, the same bytes, rather
 * than dropped, so the dirty pages around it go out in one write instead of
 * one each (D26). Not with replicas: its extra copies would need frames of
 * their own for nothing. */
static bool fills_gap(pte_t e)
{
	struct wbuf *wb = P.wb[pte_node(e)];
	uint32_t first, count;
	const void *data;

	if (!pager_opt(OPT_WRITE_FILL) || !pager_opt(OPT_KEEP_FRAMES) || pager_opt(OPT_REPLICAS) > 1)
		return false;
	wbuf_run(wb, &first, &count, &data);
	return count && !wbuf_must_flush_before(wb, pte_pfn(e));
}

/* A parked victim: still equal to its remote copy (clean: dropped), or
 * dirty (written back). Equal by content, written or not: a write that put
 * back what was there (a count up and down again, GNU sort
 * putting a newline in place of a line's NUL to write it out and back)
 * leaves the remote copy valid, and a rewrite would cost a frame and a
 * transfer for nothing. The hash is 128 bits (pagesum.h); only the program
 * could craft a collision, and only against its own memory. */
static bool evict_parked(uint64_t idx, const char *src, bool alone)
{
	pte_t e = pte_at(idx);
	pagesum_t sum = pagesum_of(src);

	if (pte_state(e) == PTE_CLEAN) {
		bool same = pagesum_eq(sum, sum_at(idx));

		if (same && !fills_gap(e)) {
			drop_clean(idx, false);
			return true;
		}
		if (same)
			STAT_ADD(P.c.stats, pages_written_fill, 1);
		else
			STAT_ADD(P.c.stats, pages_written_clean, 1);
		replica_drop(idx);
		if (pager_opt(OPT_KEEP_FRAMES)) {
			pte_put(idx, pte_set_state(e, PTE_DIRTY) | PTE_KEEP);
		} else {
			pager_release_frame(pte_node(e), pte_pfn(e));
			pte_put(idx, pte_set_state(e, PTE_DIRTY));
		}
	} else if (unchanged_keep(idx, sum)) {
		return true;
	}
	return evict_dirty(idx, src, sum, alone);
}

/* Puts a parked page back (every memnode full): it was the program's, it
 * must stay the program's. */
static void unpark(uint64_t idx, char *src)
{
	size_t moved, back = 0;
	int err = uffd_move(P.c.uffd, page_addr(idx), src, PAGE_SIZE, &moved);

	/* a failed move may have moved it all the same (see moved_uncounted) */
	if (err && !pagemap_mapped_prefix(P.pmfd, page_addr(idx), 1, &back) && back)
		err = 0;
	if (err)
		err = uffd_copy(P.c.uffd, page_addr(idx), src, PAGE_SIZE, 0, NULL);
	if (err)
		pager_die("cannot put back a page that could not be evicted", (uintptr_t)page_addr(idx), err);
	pte_put(idx, pte_set_state(pte_at(idx), PTE_DIRTY));
	keep_resident(idx);
}

static uint32_t evict_async(const uint64_t *v, uint32_t n)
{
	uint64_t drop[MAX_BATCH];
	uint32_t gone = 0, ndrop = 0;
	int err;

	park_base = 0;
	areas_used = 0;
	for_runs(v, n, NULL, park_run);
	for (uint32_t i = 0; i < n; i++) {
		uint8_t st = park_state[i];
		char *src = st & COPIED ? P.scratch + ((size_t)i << PAGE_SHIFT) : slot(st >> PROT_SHIFT, i);

		if (!(st & PARKED)) {
			keep_resident(v[i]);
		} else if (evict_parked(v[i], src, isolated(v, n, i))) {
			gone++;
			if (st & COPIED) /* still mapped until dropped below */
				drop[ndrop++] = v[i];
		} else if (st & COPIED) {
			keep_resident(v[i]); /* never left */
		} else {
			unpark(v[i], src);
		}
	}
	for_runs(drop, ndrop, NULL, drop_run);
	STAT_ADD(P.c.stats, pages_copied_out, ndrop);
	/* empty again for the next batch's moves (UFFDIO_MOVE needs none) */
	for (unsigned prot = 0; prot < 8; prot++)
		if ((areas_used & 1u << prot) && (err = raw_madvise(slot(prot, 0), (size_t)n << PAGE_SHIFT, MADV_DONTNEED)))
			pager_die("cannot empty the eviction parking area", (uintptr_t)slot(prot, 0), err);
	return gone;
}

/* Evicts victims v[0..n); returns the number of pages that left residency. */
static uint32_t evict_victims(const uint64_t *v, uint32_t n)
{
	uint64_t t0 = now_ns();
	uint32_t gone = P.c.async ? evict_async(v, n) : evict_sync(v, n);

	pager_set_resident(-(int64_t)gone);
	STAT_ADD(P.c.stats, pages_evicted, gone);
	STAT_ADD(P.c.stats, ns_evict, now_ns() - t0);
	return gone;
}

/* Evicts up to one batch; returns the number of pages that left residency. */
static uint32_t evict_batch(void)
{
	uint64_t v[MAX_BATCH];
	uint32_t n = evict_pick(P.ev, &P.tab, pager_opt(OPT_EVICT_BATCH), v);

	return n ? evict_victims(v, n) : 0;
}

/* Not while a fork is being prepared or a tool holds every page home, nor
 * while every memnode is full, nor while the program has locked all its
 * memory (mlockall). */
static bool may_evict(void)
{
	return !__atomic_load_n(&P.no_evict, __ATOMIC_ACQUIRE) && !__atomic_load_n(&P.home_hold, __ATOMIC_ACQUIRE) &&
	       !__atomic_load_n(&P.locked_all, __ATOMIC_ACQUIRE) && !pools_full();
}

/* MADV_PAGEOUT: the program says these pages are cold; they leave now. */
void reclaim_range(uint64_t lo, uint64_t hi)
{
	uint64_t v[MAX_BATCH];
	uint32_t n = 0;

	for (uint64_t i = lo; i < hi && may_evict(); i++) {
		pte_t e = pte_at(i);

		if (pte_resident(e) && !(e & PTE_LOCKED))
			v[n++] = i;
		if (n == MAX_BATCH || (n && i + 1 == hi)) {
			evict_victims(v, n);
			n = 0;
		}
	}
}

/* Every fault served over the budget is counted (budget_overshoots): all
 * memnodes full, or victims the kernel would not move (pages shared with a
 * forked child). A fork being prepared, or a tool holding pages home,
 * brings pages home on purpose and is not counted. */
void reclaim_make_room(uint64_t k)
{
	bool forking = __atomic_load_n(&P.no_evict, __ATOMIC_ACQUIRE) || __atomic_load_n(&P.home_hold, __ATOMIC_ACQUIRE);

	budget_follow();
	if (P.resident + k <= P.budget || forking)
		return;
	if (may_evict()) {
		STAT_ADD(P.c.stats, direct_reclaims, 1);
		while (P.resident + k > P.budget && may_evict())
			if (!evict_batch())
				break;
	}
	if (P.resident + k > P.budget)
		STAT_ADD(P.c.stats, budget_overshoots, 1);
}

/* ---- the reclaimer thread ---- */

static bool below_low(void) { return P.resident + P.low_free > P.budget; }

void reclaim_poke(void)
{
	if (pager_opt(OPT_RECLAIMER) && below_low() && may_evict())
		pthread_cond_signal(&P.reclaim_wake);
}

/* Evicts, one batch per hold of the lock so that faults get in between,
 * until high_free pages are free under the budget. */
void *pager_reclaimer(void *arg)
{
	(void)arg;
	pager_lock("reclaim");
	for (;;) {
		while (!below_low() || !may_evict())
			pager_cond_wait(&P.reclaim_wake, "reclaim");
		while (P.resident + P.high_free > P.budget && may_evict()) {
			if (!evict_batch())
				break;
			/* a mutex is not fair: hand it to the waiting fault handlers
			 * before the next batch, or faults starve behind reclaim */
			pager_unlock();
			while (__atomic_load_n(&P.fault_waiters, __ATOMIC_ACQUIRE))
				sched_yield();
			pager_lock("reclaim");
		}
	}
	return NULL;
}

/* Watermarks: the reclaimer starts below low_free free pages and stops at
 * high_free = 2 x low_free. low_free is 1/32 of the budget (a 3 % band
 * wastes little of a small budget) but at least two batches, so that a burst
 * of prefetch-mapped runs finds room without a direct reclaim. */
int reclaim_init(void)
{
	uint64_t low = P.c.budget_pages / 32;

	if (low < 2ull * pager_opt(OPT_EVICT_BATCH))
		low = 2ull * pager_opt(OPT_EVICT_BATCH);
	P.low_free = low;
	P.high_free = 2 * low;
	/* copies of victims: every one in synchronous mode, those of mappings
	 * UFFDIO_MOVE refuses in asynchronous mode */
	P.scratch = rt_alloc((size_t)MAX_BATCH << PAGE_SHIFT);
	if (!P.scratch)
		return -ENOMEM;
	if (!P.c.async)
		return 0;
	P.park = rt_alloc((size_t)8 * MAX_BATCH << PAGE_SHIFT);
	if (!P.park)
		return -ENOMEM;
	for (unsigned prot = 0; prot < 8; prot++)
		if (prot != PROT_RW && os_mprotect(slot(prot, 0), (size_t)MAX_BATCH << PAGE_SHIFT, prot))
			return -errno;
	return uffd_register(P.c.uffd, P.park, (size_t)8 * MAX_BATCH << PAGE_SHIFT, false);
}

/* migrate: moving every page off a leaving memnode d, or off a range of its
 * frames that its host wants back (SHRINK), under the pager lock one slice
 * of the page table at a time (faults get the lock in between); and
 * forgetting a failed one (its pages are lost, at the end of this file).
 * A page refers to d in one of four ways, each undone here:
 *   PTE_WBUF on d        the write buffers are flushed first: it becomes REMOTE
 *   PTE_REMOTE on d      read (one read per run of consecutive frames), hash
 *                        checked, written to another memnode, entry updated,
 *                        old frame released; or, when no other memnode has
 *                        room, mapped home writable (over the budget if it must:
 *                        budget_overshoots, one warning)
 *   PTE_CLEAN on d       resident: the frame is released, the page is DIRTY
 *                        (rewritten elsewhere at its next eviction)
 *   PTE_DIRTY + KEEP     the frame is released, KEEP cleared
 * No new reference to d appears meanwhile: client_alloc() refuses d once it
 * has said EVICT, and the pager's open run of frames on d is given back
 * first. A reference can only move (mremap), so passes repeat until one
 * finds none; then DONE. */
#include "migrate.h"

#include <errno.h>
#include <sched.h>

#include "backup.h"
#include "client.h"
#include "log.h"
#include "pager_impl.h"
#include "placement.h"
#include "replica.h"
#include "rtmem.h"
#include "uffd.h"
#include "wbuf.h"

#define SLICE 4096          /* page-table entries examined per hold of the pager lock */
#define SLICE_COPIES 64     /* the same when each may cost a copy's read and write (replicas) */
#define RUN_MAX 64          /* pages moved with one read and one write */
#define RANGE_PASSES 8      /* passes over the page table for one SHRINK at most */

static char *buf;           /* RUN_MAX pages: a run between its read and its write */
static uint64_t moved;      /* pages moved off the node being drained */
static bool home_warned;
/* The frames on d being vacated: all of them for a departure or a failure,
 * [lo, hi) for a SHRINK. */
static uint32_t frames_lo;
static uint64_t frames_hi;

static bool in_range(uint32_t pfn)
{
	return pfn >= frames_lo && pfn < frames_hi;
}

static bool on_node(pte_t e, unsigned d)
{
	return pte_node(e) == d && (pte_has_frame(e) || (pte_state(e) == PTE_DIRTY && (e & PTE_KEEP))) &&
	       in_range(pte_pfn(e));
}

static void check_sum(uint64_t idx, const char *copy)
{
	if (pagesum_eq(pagesum_of(copy), sum_at(idx)))
		return;
	STAT_ADD(P.c.stats, pages_corrupt, 1);
	pager_die("a page read from a leaving memnode changed (checksum mismatch)", (uintptr_t)page_addr(idx), -EIO);
}

/* Pages [idx, idx + n) come home from buf + off pages (no memnode has room). */
static void bring_home(uint64_t idx, uint32_t n, uint32_t off, unsigned d)
{
	reclaim_make_room(n);
	for (uint32_t k = 0; k < n; k++) {
		uint64_t i = idx + k;
		uint32_t old = pte_pfn(pte_at(i));
		int err = uffd_copy(P.c.uffd, page_addr(i), buf + ((size_t)(off + k) << PAGE_SHIFT), PAGE_SIZE, 0, NULL);

		if (err == -EAGAIN)
			continue; /* the address space is changing: the next pass tries again */
		if (err)
			pager_die("cannot map home a page from a leaving memnode", (uintptr_t)page_addr(i), err);
		pager_became_resident(i, PTE_DIRTY, 0, 0);
		pager_release_frame(d, old);
		STAT_ADD(P.c.stats, pages_migrated_home, 1);
		moved++;
	}
}

/* Writes n pages of buf (from off) for [idx, idx + n) to another memnode, as
 * many as one allocation gives; returns how many went (0: none has room). */
static uint32_t place_elsewhere(uint64_t idx, uint32_t n, uint32_t off, unsigned d)
{
	for (unsigned a = 0; a < P.nnodes; a++) {
		unsigned t = placement_choice(P.preferred, a, P.nnodes);
		uint32_t pfn, got;
		int err;

		if (t == d || client_alloc(P.c.client, t, n, &pfn, &got))
			continue;
		err = client_write_hedged(P.c.client, t, pfn, got, buf + ((size_t)off << PAGE_SHIFT));
		if (err == -ETIME)
			STAT_ADD(P.c.stats, writes_hedged, 1);
		if (err) { /* t failed or stalls meanwhile (logged by the client): try the next one */
			client_release(P.c.client, t, pfn, got);
			continue;
		}
		for (uint32_t k = 0; k < got; k++) {
			uint64_t i = idx + k;

			pager_release_frame(d, pte_pfn(pte_at(i)));
			pte_put(i, pte_make(pte_at(i), PTE_REMOTE, t, pfn + k));
		}
		STAT_ADD(P.c.stats, pages_migrated, got);
		STAT_ADD(P.c.stats, bytes_written, (uint64_t)got << PAGE_SHIFT);
		moved += got;
		return got;
	}
	return 0;
}

/* Moves the run of remote pages on d that starts at idx (consecutive pages
 * in consecutive frames); returns its length. */
static uint32_t move_run(uint64_t idx, uint64_t end, unsigned d)
{
	uint32_t n = 1, done = 0;
	int err;

	while (n < RUN_MAX && idx + n < end && pte_state(pte_at(idx + n)) == PTE_REMOTE &&
	       pte_node(pte_at(idx + n)) == d && pte_pfn(pte_at(idx + n)) == pte_pfn(pte_at(idx)) + n &&
	       in_range(pte_pfn(pte_at(idx)) + n))
		n++;
	err = client_read(P.c.client, d, pte_pfn(pte_at(idx)), n, buf);
	if (err)
		pager_die("a leaving memnode failed before its pages were moved", (uintptr_t)page_addr(idx), err);
	for (uint32_t k = 0; k < n; k++)
		check_sum(idx + k, buf + ((size_t)k << PAGE_SHIFT));
	STAT_ADD(P.c.stats, bytes_read, (uint64_t)n << PAGE_SHIFT);
	while (done < n) {
		uint32_t got = place_elsewhere(idx + done, n - done, done, d);

		if (!got) {
			if (!home_warned)
				log_warn("no other memnode has room for pages of a leaving memnode: bringing them home, "
					 "beyond the local budget if need be");
			home_warned = true;
			bring_home(idx + done, n - done, done, d);
			break;
		}
		done += got;
	}
	return n;
}

static uint64_t lost; /* pages marked lost by the current forget pass */

/* d failed: its frames are gone with it (nothing to release, nothing to
 * read). Resident pages only lose their copy there; remote ones are lost. */
static void forget_ref(uint64_t i, unsigned d)
{
	pte_t e = pte_at(i);

	switch (pte_state(e)) {
	case PTE_REMOTE:
		pte_put(i, pte_set_state(e, PTE_LOST));
		lost++;
		break;
	case PTE_CLEAN:
		pte_put(i, pte_set_state(e, PTE_DIRTY));
		if (!P.c.async && uffd_wp(P.c.uffd, page_addr(i), PAGE_SIZE, 0))
			pager_die("cannot unprotect a page of a failed memnode", (uintptr_t)page_addr(i), -EIO);
		break;
	case PTE_DIRTY:
		pte_put(i, e & ~PTE_KEEP);
		break;
	default: /* WBUF: the write buffer was taken home before the pass */
		(void)d;
		break;
	}
}

/* Undoes every reference to d in [lo, hi); returns how many it found. With
 * failed, d is gone (forget_ref), else it is leaving and alive. */
static uint64_t clear_slice(uint64_t lo, uint64_t hi, unsigned d, bool failed)
{
	uint64_t found = 0;

	for (uint64_t i = lo; i < hi; i++) {
		pte_t e;

		/* extra copies there dropped, or one took the first's place */
		if (replica_unref(i, d, failed, frames_lo, frames_hi))
			found++;
		e = pte_at(i);
		if (!on_node(e, d))
			continue;
		found++;
		if (failed) {
			forget_ref(i, d);
			continue;
		}
		switch (pte_state(e)) {
		case PTE_WBUF:
			reclaim_flush_all(); /* now REMOTE on d: this entry again */
			i--;
			break;
		case PTE_REMOTE:
			i += move_run(i, hi, d) - 1;
			break;
		case PTE_CLEAN:
			pager_release_frame(d, pte_pfn(e));
			pte_put(i, pte_set_state(e, PTE_DIRTY));
			/* without WP_ASYNC a write to a protected page is our fault to serve,
			 * and the fault path serves only CLEAN ones */
			if (!P.c.async && uffd_wp(P.c.uffd, page_addr(i), PAGE_SIZE, 0))
				pager_die("cannot unprotect a page of a leaving memnode", (uintptr_t)page_addr(i), -EIO);
			break;
		default: /* DIRTY + KEEP */
			pager_release_frame(d, pte_pfn(e));
			pte_put(i, e & ~PTE_KEEP);
			break;
		}
	}
	return found;
}

/* One pass over the used parts of the heap and the mmap area. */
static uint64_t pass(unsigned d, bool failed)
{
	uint64_t found = 0, slice = pager_opt(OPT_REPLICAS) > 1 && !failed ? SLICE_COPIES : SLICE;

	for (int area = 0; area < 2; area++) {
		uint64_t lo = area ? P.c.heap_pages : 0;

		for (uint64_t i = lo; i < (area ? P.map_hi : P.heap_hi); i += slice) {
			uint64_t hi = area ? P.map_hi : P.heap_hi;

			found += clear_slice(i, i + slice < hi ? i + slice : hi, d, failed);
			pager_yield_to_faults("moving pages off a memnode");
		}
	}
	return found;
}

void migrate_off(unsigned d)
{
	uint64_t found;
	int err;

	moved = 0;
	frames_lo = 0, frames_hi = UINT64_MAX;
	pager_lock("moving pages off a memnode");
	if (P.cursor[d].left) /* the open run of frames there */
		client_release(P.c.client, d, P.cursor[d].pfn, P.cursor[d].left);
	P.cursor[d].left = 0;
	replica_forget(d, false);
	/* A page evicted into d's write buffer while the lock was yielded (a
	 * page that kept its frame there) and faulted back before the pass came
	 * to it leaves a cancelled entry that no page refers to; its frame goes
	 * back only when that buffer is retired, and d takes no new pages that
	 * would flush it. So each pass ends by flushing d's buffers, and another
	 * pass follows while they held anything. */
	do
		found = pass(d, false) + reclaim_flush_node(d);
	while (found);
	pager_unlock();
	err = client_done(P.c.client, d, moved);
	if (err) {
		errno = -err;
		log_error("memnode %u: our pages are moved off it but DONE failed: %m", d);
		return;
	}
	STAT_ADD(P.c.stats, memnodes_drained, 1);
}

void migrate_range(unsigned d, uint32_t pfn, uint32_t count)
{
	uint64_t home0 = P.c.stats->pages_migrated_home, moved0 = P.c.stats->pages_migrated, copies;
	int err;

	moved = 0;
	frames_lo = pfn, frames_hi = (uint64_t)pfn + count;
	pager_lock("moving pages off a shrinking memnode");
	/* nothing new lands in the range: the memnode refuses ALLOCs while it
	 * shrinks, and the frames we hold there unused go back now */
	if (P.cursor[d].left)
		client_release(P.c.client, d, P.cursor[d].pfn, P.cursor[d].left);
	P.cursor[d].left = 0;
	client_trim(P.c.client, d);
	replica_forget(d, false);
	/* bounded: once the memnode ends its shrink, evictions may land in the
	 * range again, and chasing them would never end */
	for (int k = 0; k < RANGE_PASSES && pass(d, false); k++)
		;
	pager_unlock();
	/* pages_migrated counts the runs moved here and the replicas' copies
	 * moved by replica_unref; only the former are in moved */
	copies = P.c.stats->pages_migrated - moved0 - (moved - (P.c.stats->pages_migrated_home - home0));
	err = client_flush(P.c.client);
	if (err) {
		errno = -err;
		log_warn("memnode %u: %llu pages moved off frames %u-%u, but giving the frames back failed: %m", d,
			 (unsigned long long)moved, pfn, pfn + count - 1);
		return;
	}
	log_info("memnode %u: %llu pages moved off frames %u-%u (%llu of them home), %llu copies of "
		 "replicated pages moved; frames given back", d, (unsigned long long)moved, pfn, pfn + count - 1,
		 (unsigned long long)(P.c.stats->pages_migrated_home - home0), (unsigned long long)copies);
}

/* The pages in a write buffer of d never left (or d never confirmed them):
 * they go back into the program. */
static void take_wbuf_home(unsigned d, struct wbuf *wb)
{
	uint32_t pfn, count;
	const void *data;

	wbuf_run(wb, &pfn, &count, &data);
	for (uint32_t k = 0; k < count; k++) {
		uint64_t idx;
		bool cancelled;
		int err;

		wbuf_entry(wb, k, &idx, &cancelled);
		if (cancelled || pte_state(pte_at(idx)) != PTE_WBUF || pte_node(pte_at(idx)) != d)
			continue;
		err = uffd_copy(P.c.uffd, page_addr(idx), (const char *)data + ((size_t)k << PAGE_SHIFT), PAGE_SIZE, 0, NULL);
		if (err)
			pager_die("cannot map home a page buffered for a failed memnode", (uintptr_t)page_addr(idx), err);
		pager_became_resident(idx, PTE_DIRTY, 0, 0);
	}
	wbuf_clear(wb);
}

void migrate_forget(unsigned d)
{
	pager_lock("moving pages off a memnode");
	frames_lo = 0, frames_hi = UINT64_MAX;
	lost = 0;
	P.cursor[d].left = 0;
	P.epoch[d]++;
	replica_forget(d, true);
	backup_wait(P.wb_out[d]);
	take_wbuf_home(d, P.wb[d]);
	if (P.wb_out[d]) { /* write-behind: the write in flight died with d */
		take_wbuf_home(d, P.wb_out[d]);
		P.wb_busy[d] = false;
	}
	pass(d, true);
	if (lost) {
		STAT_ADD(P.c.stats, pages_lost, lost);
		if (backup_on())
			log_warn("memnode %u failed holding %llu pages that exist nowhere else but in the backup file: "
				 "they are read from there when touched", d, (unsigned long long)lost);
		else
			log_error("memnode %u failed holding %llu pages that exist nowhere else: the program stops if "
				  "it touches one", d, (unsigned long long)lost);
	}
	pager_unlock();
}

int migrate_init(void)
{
	buf = rt_alloc((size_t)RUN_MAX << PAGE_SHIFT);
	return buf ? 0 : -ENOMEM;
}

/* fault: the fault path (COMEX §4.4 on userfaultfd). In this order: a
 * never-used page is zero-filled over a window of neighbours; a page in a
 * write buffer is copied back from there; a page in the read buffer from
 * there; otherwise one remote read fetches it with the neighbours the
 * prefetch policy asks for, and they are mapped at once. Every page that
 * comes back from a memnode is checked against the hash taken when it left.
 * A page that comes back for a read is mapped write-protected: in async
 * mode the kernel lets the first write through on its own and eviction
 * learns of it; otherwise that write is a write-protect fault here. */
#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <pthread.h>
#include <string.h>

#include "backup.h"
#include "client.h"
#include "forkchild.h"
#include "listener.h"
#include "log.h"
#include "ranges.h"
#include "os.h"
#include "wakeup.h"
#include "pager_impl.h"
#include "prefetch.h"
#include "probe.h"
#include "rtmem.h"
#include "rbuf.h"
#include "replica.h"
#include "uffd.h"
#include "wbuf.h"

#define MAX_HANDLERS 64
static unsigned nhandlers; /* started (atomic) */
/* Per handler thread, for the watchdog: when it started on its current
 * batch (ns, 0 when idle) and the address it is serving. Relaxed atomics. */
static struct { uint64_t since; uintptr_t addr; } busy[MAX_HANDLERS];
static int reading;        /* handlers of this process in their loop (atomic; a futex word) */
/* This thread is a fault handler (pager_run); unpinned: the single handler
 * (fault-handlers one) or the shared one (listener), the only ones that read
 * a plan without the pager lock (D28): a pinned one, or a program thread
 * bringing a page home, keeps it. */
static __thread bool on_handler __attribute__((tls_model("initial-exec")));
static __thread bool unpinned __attribute__((tls_model("initial-exec")));

/* The page reads as zero: discarded, or never touched since it was mapped
 * (a free entry in the heap arena, or in the mmap area inside [mlo, mhi),
 * a run the program has mapped: D50). */
static bool zero_eligible(uint64_t idx, pte_t e, uint64_t mlo, uint64_t mhi)
{
	unsigned s = pte_state(e);

	return s == PTE_EMPTY || (s == PTE_FREE && (in_heap(idx) || (idx >= mlo && idx < mhi)));
}

/* Page i may join a zero fill of pages with attributes attrs (one
 * UFFDIO_ZEROPAGE fills one kernel mapping: not past a change of
 * protection or lock, D43). */
static bool zero_joins(uint64_t i, pte_t attrs, uint64_t mlo, uint64_t mhi)
{
	pte_t e = pte_at(i);

	return zero_eligible(i, e, mlo, mhi) && (e & PTE_ATTRS) == attrs;
}

/* The run of mapped pages around idx, [*lo, *hi) (empty if idx is not
 * mapped). Caller holds the pager lock (ranges). */
static void mapped_span(uint64_t idx, uint64_t *lo, uint64_t *hi)
{
	*lo = *hi = 0;
	if (!in_heap(idx) && !ranges_taken_span(P.ranges, idx - P.c.heap_pages, lo, hi)) {
		*lo += P.c.heap_pages;
		*hi += P.c.heap_pages;
	}
}

/* Pages one zero fill may map: zero-fill-window, or 2 MiB while the budget
 * has room for 8 such windows. First touch of memory that fits then costs
 * one userfaultfd round trip per 2 MiB instead of per 256 KiB (the kernel
 * maps its shared zero page, so untouched pages of the window cost no
 * memory; each first write then takes an ordinary kernel fault, as it would
 * without comex). */
#define ZERO_WINDOW_ROOMY 512

static uint64_t zero_window(void)
{
	uint64_t w = pager_opt(OPT_ZERO_WINDOW);

	if (w < ZERO_WINDOW_ROOMY && P.resident + 8 * ZERO_WINDOW_ROOMY <= P.budget)
		return ZERO_WINDOW_ROOMY;
	return w ? w : 1; /* 0 is read as 1: the page itself */
}

/* First touches that begin where an earlier zero fill ended are a stream
 * (a program filling an array): such a window is populated with real zeroed
 * pages by one UFFDIO_COPY from a never-written source (whose PTEs all map
 * the kernel's zero page, so the copy reads from cache), and the program
 * then writes them without a fault at all. Measured per page filled: 1.2 us,
 * against 1.7 without comex and 1.9 for a zero-page window whose every page
 * the first write must copy away from (DECISIONS.md D29). Other first touches
 * get the zero page: no memory until written. */
#define ZERO_STREAMS 4
static uint64_t zero_end[ZERO_STREAMS]; /* where recent zero fills ended, a ring */
static unsigned zero_next;
static const char *zero_src;            /* ZERO_WINDOW_ROOMY pages, never written */

/* The recent zero fill that ended where a first touch at idx begins, or -1. */
static int zero_stream_at(uint64_t idx)
{
	for (unsigned i = 0; i < ZERO_STREAMS; i++)
		if (zero_end[i] == idx && idx)
			return (int)i;
	return -1;
}

static bool zero_continues(uint64_t lo, uint64_t hi)
{
	int i = zero_stream_at(lo);

	if (i < 0) {
		zero_end[zero_next++ % ZERO_STREAMS] = hi;
		return false;
	}
	zero_end[i] = hi;
	return true;
}

static int zero_map(uint64_t lo, uint64_t hi, size_t *done)
{
	size_t len = (hi - lo) << PAGE_SHIFT;
	bool stream = zero_continues(lo, hi);

	if (stream && !zero_src)
		zero_src = rt_alloc(ZERO_WINDOW_ROOMY << PAGE_SHIFT);
	if (!stream || !zero_src || hi - lo > ZERO_WINDOW_ROOMY)
		return uffd_zero(P.c.uffd, page_addr(lo), len, done);
	STAT_ADD(P.c.stats, pages_zero_populated, hi - lo);
	return uffd_copy(P.c.uffd, page_addr(lo), zero_src, len, 0, done);
}

/* A first touch that continues none gets at most one table leaf of
 * neighbours (64 KiB): a program touching pages far apart (a sparse
 * reservation, a hash table) then costs a leaf of table and of budget per
 * page, not a window's worth (D51); a stream widens from the next fault. */
#define ZERO_WINDOW_ALONE (1u << PAGETAB_LEAF_SHIFT)

static void zero_fill(uint64_t idx, uint64_t t0)
{
	uint64_t w = zero_window(), lo = idx, hi = idx + 1, wlo, whi, mlo, mhi;
	pte_t attrs = pte_at(idx) & PTE_ATTRS;
	size_t done;
	int err;

	if (w > ZERO_WINDOW_ALONE && zero_stream_at(idx) < 0)
		w = ZERO_WINDOW_ALONE;
	wlo = idx - idx % w;
	whi = wlo + w;
	mapped_span(idx, &mlo, &mhi);

	if (whi > P.c.npages)
		whi = P.c.npages;
	if (whi > P.c.heap_pages && idx < P.c.heap_pages)
		whi = P.c.heap_pages;
	while (lo > wlo && zero_joins(lo - 1, attrs, mlo, mhi))
		lo--;
	while (hi < whi && zero_joins(hi, attrs, mlo, mhi))
		hi++;
	/* a window may stop part way (-EAGAIN): what it mapped is resident */
	err = zero_map(lo, hi, &done);
	hi = lo + (done >> PAGE_SHIFT);
	for (uint64_t i = lo; i < hi; i++)
		pager_became_resident(i, PTE_DIRTY, 0, 0);
	if (err && (idx < lo || idx >= hi) && !(err = uffd_zero(P.c.uffd, page_addr(idx), PAGE_SIZE, &done)))
		pager_became_resident(idx, PTE_DIRTY, 0, 0);
	if (err && err != -EAGAIN && err != -EEXIST)
		pager_die("cannot zero-fill a page", (uintptr_t)page_addr(idx), err);
	if (err) /* not ours to map now: the thread retries */
		uffd_wake(P.c.uffd, page_addr(idx), PAGE_SIZE);
	STAT_ADD(P.c.stats, faults_zero, 1);
	STAT_ADD(P.c.stats, ns_zero, now_ns() - t0);
}

/* Maps a copy of page idx; clean pages stay write-protected to catch writes. */
static void install(uint64_t idx, const void *src, bool clean, unsigned node, uint32_t pfn)
{
	int err = uffd_copy(P.c.uffd, page_addr(idx), src, PAGE_SIZE, clean, NULL);

	if (err == -EAGAIN) { /* the address space is changing: let the thread retry */
		uffd_wake(P.c.uffd, page_addr(idx), PAGE_SIZE);
		return;
	}
	if (err)
		pager_die("cannot install a page", (uintptr_t)page_addr(idx), err);
	pager_became_resident(idx, clean ? PTE_CLEAN : PTE_DIRTY, node, pfn);
}

static bool remote_on(pte_t e, unsigned node) { return pte_state(e) == PTE_REMOTE && pte_node(e) == node; }

/* b's frame is the one after a's, both remote on node: one read fetches both. */
static bool frame_follows(pte_t a, pte_t b, unsigned node)
{
	return remote_on(a, node) && remote_on(b, node) && pte_pfn(b) == pte_pfn(a) + 1;
}

/* Every page that comes back is checked against the hash taken when it
 * left (at src); a changed one is read again into copy from another copy
 * of it, if it has one. False: src is good; true: copy holds the page. */
static bool check_sum(uint64_t i, const char *src, char *copy)
{
	if (pagesum_eq(pagesum_of(src), sum_at(i)))
		return false;
	STAT_ADD(P.c.stats, pages_corrupt, 1);
	if (!replica_failover(pte_node(pte_at(i)), i, 1, 1, copy, -1))
		return true;
	pager_die("a page came back from its memnode changed (checksum mismatch)", (uintptr_t)page_addr(i), -EIO);
}

/* A hedged read of the run and, while it and the pages' other copies are
 * all late, both again, each round with twice the patience (without the
 * lock, once: the locked reread decides). A page with no other copy has
 * its memnode waited for, under the lock. */
static int read_hedged(unsigned node, uint32_t pfn, uint32_t count, void *dst, uint64_t idx, uint64_t step,
		       bool locked)
{
	int err = client_read_hedged(P.c.client, node, pfn, count, dst, 0);

	for (unsigned r = 0; err == -ETIME || err == -EAGAIN;) { /* late, or its memnode suspect or slow */
		if (err == -EAGAIN) /* not sent: steered to another copy at once */
			STAT_ADD(P.c.stats, reads_steered, 1);
		else /* sent, waited for until late, and now read again elsewhere */
			STAT_ADD(P.c.stats, reads_hedged, 1);
		err = replica_failover(node, idx, step, count, dst, (int)r); /* in runs */
		if (err != -ETIME || !locked)
			break;
		err = client_read_hedged(P.c.client, node, pfn, count, dst, ++r);
	}
	if (err == -EIO && locked)
		err = client_read(P.c.client, node, pfn, count, dst);
	return err;
}

/* One read of count frames from pfn on node into dst, for pages idx,
 * idx + step, ..., counted; with fail_over (under the pager lock only: the
 * frames may be gone) one that failed is read from the pages' other copies. */
static int read_counted(unsigned node, uint32_t pfn, uint32_t count, void *dst, uint64_t idx, uint64_t step,
			bool fail_over)
{
	uint64_t t0 = now_ns();
	int err = replica_hedging() ? read_hedged(node, pfn, count, dst, idx, step, fail_over)
				  : client_read(P.c.client, node, pfn, count, dst);

	if (err && err != -ETIME && err != -EAGAIN && fail_over)
		err = replica_failover(node, idx, step, count, dst, -1);
	STAT_ADD(P.c.stats, ns_read, now_ns() - t0);
	if (err)
		return err;
	STAT_ADD(P.c.stats, remote_reads, 1);
	STAT_ADD(P.c.stats, bytes_read, (uint64_t)count << PAGE_SHIFT);
	return 0;
}

/* read_counted with failover; a failure stops the program naming page idx,
 * whose only copy that was. */
static void remote_read(unsigned node, uint32_t pfn, uint32_t count, void *dst, uint64_t idx, uint64_t step)
{
	int err = read_counted(node, pfn, count, dst, idx, step, true);

	if (err)
		pager_die("a memnode failed while reading back a page that exists nowhere else",
			  (uintptr_t)page_addr(idx), err);
}

/* Installs a page that came back from node/pfn. A write fault would take a
 * write-protect fault right after (and dirty the page anyway), so then the
 * page is mapped writable at once and its frame released. */
static void install_remote(uint64_t idx, const void *src, bool write, unsigned node, uint32_t pfn)
{
	install(idx, src, !write, node, pfn);
	rbuf_drop(P.rb, idx);
	if (write && pte_resident(pte_at(idx))) {
		if (pager_opt(OPT_KEEP_FRAMES))
			pte_put(idx, pte_at(idx) | PTE_KEEP);
		else
			pager_release_frame(node, pfn);
		pte_put(idx, pte_at(idx) | PTE_REF);
	}
}

/* Maps the n pages from idx a clean (write-protected, frames kept) from
 * src. UFFDIO_COPY may stop part way (-EAGAIN while the address space
 * changes): the pages it did map are resident, the rest stay remote and
 * fault on their own. */
static void map_clean(uint64_t a, uint64_t n, const char *src)
{
	size_t done = 0;

	if (!n)
		return;
	uffd_copy(P.c.uffd, page_addr(a), src, n << PAGE_SHIFT, 1, &done);
	for (uint64_t i = a; i < a + (done >> PAGE_SHIFT); i++) {
		pte_t e = pte_at(i);

		pager_became_resident(i, PTE_CLEAN, pte_node(e), pte_pfn(e));
	}
	STAT_ADD(P.c.stats, pages_prefetch_mapped, done >> PAGE_SHIFT);
}

/* ---- remote faults: one path for every prefetch policy (prefetch.h) ---- */

static char *landing;    /* prefetch-window pages: where a plan's reads land (no read buffer) */
static char *land;       /* this plan's: the landing area or idx's read-buffer slot */
static uint64_t plan_lo; /* page plan_lo + k * step lands at land + k pages */
static uint64_t step;

static const char *in_place[PREFETCH_MAX_WINDOW]; /* by plan slot: the page in the pool's mapping, or NULL */
/* A remote fault's plan is in progress (futex word, 1 or 0; set and
 * cleared under the pager lock). The statics above are that plan's, and a
 * handler reading it without the lock (D28) leaves them in use meanwhile:
 * whoever then takes the lock and would start a plan of its own sleeps
 * first (wait_plan), without the lock, until the clear. A sleeper counts
 * itself in plan_waiters before it looks (both sequentially consistent,
 * as is the clear and plan_end's look at the count), so the clear either
 * sees it and wakes it or comes before its look. */
static unsigned planning, plan_waiters;

static void plan_end(void)
{
	__atomic_store_n(&planning, 0, __ATOMIC_SEQ_CST);
	if (__atomic_load_n(&plan_waiters, __ATOMIC_SEQ_CST))
		os_futex_wake(&planning, INT_MAX);
}

static char *landed(uint64_t i) { return land + (((i - plan_lo) / step) << PAGE_SHIFT); }
static uint32_t slot_of(uint64_t i) { return (uint32_t)((i - plan_lo) / step); }
/* Where page i of the plan is to be copied from: in place, or where it landed. */
static const char *source(uint64_t i) { return in_place[slot_of(i)] ? in_place[slot_of(i)] : landed(i); }

static bool readable(uint64_t i, unsigned node)
{
	return i < P.c.npages && remote_on(pte_at(i), node);
}

/* A run of consecutive frames on the plan's lattice, pages a..b inclusive,
 * the first in frame pfn. */
struct run { uint64_t a, b; uint32_t pfn; };

/* The frames of run r: its pages on the plan's lattice. */
static uint32_t run_count(const struct run *r) { return (uint32_t)((r->b - r->a) / step + 1); }

/* Notes run a..b in runs[*n] and marks its pages planned in ok[]. */
static void plan_run(uint64_t a, uint64_t b, bool *ok, struct run *runs, unsigned *n)
{
	runs[(*n)++] = (struct run){ a, b, pte_pfn(pte_at(a)) };
	for (uint64_t i = a; i <= b; i += step)
		ok[(i - plan_lo) / step] = true;
}

/* Pages i < j (both on the lattice) are both remote on node, in
 * consecutive frames: one read fetches both. */
static bool next_frame(uint64_t i, uint64_t j, unsigned node)
{
	return i < P.c.npages && j < P.c.npages && frame_follows(pte_at(i), pte_at(j), node);
}

/* The reads for the pages of [lo, hi) on the plan's lattice that are remote
 * on idx's node: idx's run of consecutive frames first, then the other runs,
 * at most max_reads in all; marks their pages in ok[] by lattice position.
 * Returns the number of runs. */
static unsigned plan_reads(uint64_t idx, uint64_t lo, uint64_t hi, uint32_t max_reads, bool *ok, struct run *runs)
{
	unsigned node = pte_node(pte_at(idx)), n = 0;
	uint64_t a = idx, b = idx;

	while (a >= lo + step && next_frame(a - step, a, node))
		a -= step;
	while (b + step < hi && next_frame(b, b + step, node))
		b += step;
	plan_run(a, b, ok, runs, &n);
	for (a = lo; a < hi && n < max_reads; a = b + step) {
		b = a;
		if (ok[(a - plan_lo) / step] || !readable(a, node))
			continue;
		while (b + step < hi && !ok[(b + step - plan_lo) / step] && next_frame(b, b + step, node))
			b += step;
		plan_run(a, b, ok, runs, &n);
	}
	return n;
}

/* Takes the fork events out of a batch (they need no lock: the forking
 * thread holds it and waits for them to be read); returns what is left. */
static unsigned take_events(struct uffd_msg *msg, unsigned n)
{
	unsigned k = 0;

	for (unsigned i = 0; i < n; i++) {
		if (msg[i].event == UFFD_EVENT_FORK)
			forkchild_event(P.c.uffd, &msg[i]);
		else
			msg[k++] = msg[i];
	}
	return k;
}

/* While a fork holds the lock, its UFFD_EVENT_FORK may be behind the batch
 * already read: read on. A fault that does not fit in the batch is woken
 * unanswered, and its thread faults again later. */
static unsigned read_more(struct uffd_msg *msg, unsigned n, unsigned cap)
{
	struct uffd_msg extra[4];
	ssize_t r;

	if (n < cap && (r = read(P.c.uffd, msg + n, (cap - n) * sizeof(msg[0]))) > 0)
		return n + take_events(msg + n, (unsigned)(r / (ssize_t)sizeof(msg[0])));
	if (n < cap || (r = read(P.c.uffd, extra, sizeof(extra))) <= 0)
		return n;
	for (unsigned i = 0; i < r / sizeof(extra[0]); i++) {
		if (extra[i].event == UFFD_EVENT_FORK)
			forkchild_event(P.c.uffd, &extra[i]);
		else if (extra[i].event == UFFD_EVENT_PAGEFAULT)
			uffd_wake(P.c.uffd, (void *)(uintptr_t)(extra[i].arg.pagefault.address & ~(PAGE_SIZE - 1)),
				  PAGE_SIZE);
	}
	return n;
}

/* The lock for a handler, which never waits blindly while a fork holds
 * it: that fork waits for a handler to read its event. Faults read
 * meanwhile join the batch msg[*n..cap) (or are woken unanswered). */
static void lock_batch(struct uffd_msg *msg, unsigned *n, unsigned cap)
{
	while (!pager_lock_within("a batch of faults", 1000000))
		if (__atomic_load_n(&P.forking, __ATOMIC_ACQUIRE))
			*n = read_more(msg, *n, cap);
}

/* All the runs asked for at once (client_read_runs): one round trip, and
 * one wake-up of a sleeping memnode, for the window. done[r]: run r is
 * read and counted; a run that is not (late, its memnode suspect, a
 * failure) is then read alone, with the failover that allows. */
_Static_assert(PREFETCH_MAX_READS <= CLIENT_MAX_RUNS, "a plan's reads must fit in one client_read_runs");
static void read_at_once(const struct run *runs, unsigned n, unsigned node, bool *done)
{
	struct client_run cr[PREFETCH_MAX_READS];
	int status[PREFETCH_MAX_READS];
	uint64_t t0 = now_ns(), reads = 0, bytes = 0;

	for (unsigned r = 0; r < n; r++)
		cr[r] = (struct client_run){ runs[r].pfn, run_count(&runs[r]), landed(runs[r].a) };
	if (client_read_runs(P.c.client, node, cr, n, replica_hedging(), status))
		return;
	for (unsigned r = 0; r < n; r++) {
		done[r] = !status[r];
		reads += done[r];
		bytes += done[r] ? (uint64_t)cr[r].count << PAGE_SHIFT : 0;
	}
	STAT_ADD(P.c.stats, ns_read, now_ns() - t0);
	STAT_ADD(P.c.stats, remote_reads, reads);
	STAT_ADD(P.c.stats, bytes_read, bytes);
}

/* The planned reads into the landing area. With failed (no pager lock: an
 * unpinned handler, item 5 of issue 9, so interposed calls of other threads
 * do not wait for the memnode) a read that fails is only noted: a discard may
 * have released its frames meanwhile, and the memnode then refuses frames
 * we no longer hold. The recheck under the lock decides (reread_failed). */
static void read_runs(const struct run *runs, unsigned n, unsigned node, bool *failed)
{
	bool done[PREFETCH_MAX_READS] = { 0 };

	if (n > 1)
		read_at_once(runs, n, node, done);
	for (unsigned r = 0; r < n; r++) {
		uint32_t count = run_count(&runs[r]);

		if (done[r])
			continue;
		if (failed)
			failed[r] = read_counted(node, runs[r].pfn, count, landed(runs[r].a), runs[r].a, step, false) != 0;
		else
			remote_read(node, runs[r].pfn, count, landed(runs[r].a), runs[r].a, step);
	}
}

/* Under the lock again: the pages of a failed unlocked read whose entries
 * did not change still own their frames, so a read of each now either
 * works or is a real failure (failover, else the program stops). */
static void reread_failed(const struct run *runs, unsigned n, unsigned node, const bool *failed, const bool *ok)
{
	for (unsigned r = 0; r < n; r++)
		for (uint64_t a = runs[r].a; failed[r] && a <= runs[r].b; a += step)
			if (ok[(a - plan_lo) / step])
				remote_read(node, pte_pfn(pte_at(a)), 1, landed(a), a, 1);
}

/* The plan's runs where they can be read in place (the embedded memnode's
 * pool, mapped: D38), each page's address in in_place[] by slot; counted
 * as reads. False (in_place[] cleared): at least one run must be read. */
static bool find_in_place(const struct run *runs, unsigned n, unsigned node, uint32_t slots)
{
	uint64_t bytes = 0;

	for (unsigned r = 0; r < n; r++) {
		uint32_t count = run_count(&runs[r]);
		const char *at = client_frames_at(P.c.client, node, runs[r].pfn, count);

		if (!at) {
			memset(in_place, 0, slots * sizeof(in_place[0]));
			return false;
		}
		for (uint32_t j = 0; j < count; j++)
			in_place[slot_of(runs[r].a) + j] = at + ((size_t)j << PAGE_SHIFT);
		bytes += (uint64_t)count << PAGE_SHIFT;
	}
	STAT_ADD(P.c.stats, remote_reads, n);
	STAT_ADD(P.c.stats, bytes_read, bytes);
	return true;
}

/* Reads the plan's pages, without the pager lock on an unpinned handler
 * (fault-handlers one, or the shared one). An entry that changed meanwhile
 * (the page was unmapped, discarded, remapped or brought home by a fork)
 * makes its copy worthless: its slot is dropped from ok[]. Frames are freed
 * only when their entry changes, so an unchanged entry proves the copy read
 * is the page's. */
static void fetch_plan(uint64_t idx, const struct prefetch_plan *pl, bool *ok, uint32_t slots)
{
	struct run runs[PREFETCH_MAX_READS];
	pte_t seen[PREFETCH_MAX_WINDOW];
	unsigned node = pte_node(pte_at(idx)), n = plan_reads(idx, pl->lo, pl->hi, pl->reads, ok, runs);
	bool unlock = unpinned;
	bool failed[PREFETCH_MAX_READS] = { 0 };

	if (!P.rb && find_in_place(runs, n, node, slots))
		return;
	if (!unlock) {
		read_runs(runs, n, node, NULL);
		return;
	}
	for (uint32_t k = 0; k < slots; k++)
		seen[k] = pte_at(plan_lo + k * step);
	__atomic_fetch_add(&P.reading_unlocked, 1, __ATOMIC_ACQUIRE);
	STAT_ADD(P.c.stats, plans_unlocked, 1);
	pager_unlock();
	read_runs(runs, n, node, failed);
	__atomic_fetch_sub(&P.reading_unlocked, 1, __ATOMIC_RELEASE);
	lock_batch(NULL, &(unsigned){ 0 }, 0);
	for (uint32_t k = 0; k < slots; k++)
		if (ok[k] && pte_at(plan_lo + k * step) != seen[k])
			ok[k] = false;
	reread_failed(runs, n, node, failed, ok);
}

/* Maps the fetched neighbours clean, each run of consecutive pages with
 * one UFFDIO_COPY. */
static void map_fetched(uint64_t idx, const bool *ok, uint32_t slots)
{
	for (uint32_t k = 0; k < slots;) {
		uint64_t a = plan_lo + k * step;
		uint32_t m = 1;

		if (!ok[k] || a == idx) {
			k++;
			continue;
		}
		while (step == 1 && k + m < slots && ok[k + m] && a + m != idx &&
		       source(a + m) == source(a) + ((size_t)m << PAGE_SHIFT))
			m++;
		k += m;
		map_clean(a, m, source(a)); /* m > 1 only with step 1, from one source */
	}
}

static void note_probes(void)
{
	uint64_t used, wasted;

	probe_counts(&used, &wasted);
	__atomic_store_n(&P.c.stats->prefetch_probes_used, used, __ATOMIC_RELAXED);
	__atomic_store_n(&P.c.stats->prefetch_probes_wasted, wasted, __ATOMIC_RELAXED);
}

/* One fetched neighbour of some plans stays unmapped, its copy kept as a
 * probe (probe.h); it is then not mapped with the others. */
static void keep_probe(uint64_t idx, bool *ok, uint32_t slots)
{
	uint32_t k;

	if (!probe_pick(slots, (uint32_t)((idx - plan_lo) / step),
			__atomic_load_n(&P.c.stats->pages_evicted, __ATOMIC_RELAXED),
			__atomic_load_n(&P.budget, __ATOMIC_RELAXED), &k) || !ok[k])
		return;
	probe_keep(plan_lo + k * step, pte_at(plan_lo + k * step), source(plan_lo + k * step));
	ok[k] = false;
}

/* A remote fault: the policy's plan is read (into the landing area, or
 * with the read-buffer policy into idx's slot there) and checked; idx is
 * installed, writable on a write fault (its frame released), and without a
 * read buffer the neighbours are mapped at once, clean, so they never
 * fault; with one they wait there for their own faults. */
static void fetch_remote(uint64_t idx, bool write)
{
	struct prefetch_plan pl;
	bool ok[PREFETCH_MAX_WINDOW] = { 0 };
	uint64_t hits, wasted;
	uint32_t slots;
	pte_t e;

	__atomic_store_n(&planning, 1, __ATOMIC_RELAXED); /* others see it only under the lock */
	prefetch_fault(P.pf, idx, &pl);
	step = (uint64_t)(pl.stride < 0 ? -pl.stride : pl.stride);
	plan_lo = pl.lo;
	if (pl.hi > P.c.npages)
		pl.hi = P.c.npages;
	slots = (uint32_t)((pl.hi - pl.lo + step - 1) / step);
	land = P.rb ? rbuf_slot(P.rb, idx) : landing; /* a slot holds the aligned window from plan_lo */
	reclaim_make_room(P.rb ? 1 : slots);
	memset(in_place, 0, slots * sizeof(in_place[0]));
	fetch_plan(idx, &pl, ok, slots);
	if (!ok[(idx - plan_lo) / step]) { /* settled while we read: let the thread retry */
		uffd_wake(P.c.uffd, page_addr(idx), PAGE_SIZE);
		plan_end();
		return;
	}
	for (uint32_t k = 0; k < slots; k++) {
		uint64_t a = plan_lo + k * step;

		if (!ok[k])
			continue;
		if (check_sum(a, source(a), landed(a)))
			in_place[k] = NULL; /* read again from another copy, into the landing area */
		if (P.rb)
			rbuf_mark(P.rb, a);
	}
	e = pte_at(idx);
	install_remote(idx, source(idx), write, pte_node(e), pte_pfn(e));
	if (!P.rb && pte_resident(pte_at(idx))) {
		keep_probe(idx, ok, slots);
		map_fetched(idx, ok, slots);
	}
	prefetch_counters(P.pf, &hits, &wasted);
	__atomic_store_n(&P.c.stats->prefetch_hits, hits, __ATOMIC_RELAXED);
	__atomic_store_n(&P.c.stats->prefetch_wasted, wasted, __ATOMIC_RELAXED);
	note_probes();
	plan_end();
}

/* Under the lock: lets go of it while another thread's plan is in progress
 * (its handler reads without the lock), so that this one's does not take
 * that plan's landing area and statics. It sleeps rather than yields: a
 * pinned handler under --sched fifo yielding in a loop could keep the
 * reader off its CPU. Page states must be read after. */
static void wait_plan(void)
{
	while (__atomic_load_n(&planning, __ATOMIC_RELAXED)) {
		STAT_ADD(P.c.stats, plan_waits, 1);
		pager_unlock();
		__atomic_fetch_add(&plan_waiters, 1, __ATOMIC_SEQ_CST);
		while (__atomic_load_n(&planning, __ATOMIC_SEQ_CST))
			os_futex_wait(&planning, 1, NULL);
		__atomic_fetch_sub(&plan_waiters, 1, __ATOMIC_RELAXED);
		if (on_handler)
			lock_batch(NULL, &(unsigned){ 0 }, 0);
		else
			pager_lock("a page brought home by the pager");
	}
}

int fault_init(void)
{
	/* a forked child taking over: its parent's handlers are not here (one
	 * caught mid-batch by the fork would look stuck to the watchdog) */
	nhandlers = 0;
	reading = 0;
	/* the parent's handler's plan at the fork, and its waiters */
	__atomic_store_n(&planning, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&plan_waiters, 0, __ATOMIC_RELAXED);
	memset(busy, 0, sizeof(busy));
	if (P.c.prefetch_policy != PREFETCH_READ_BUFFER &&
	    !(landing = rt_alloc((size_t)pager_opt(OPT_PREFETCH) << PAGE_SHIFT)))
		return -ENOMEM;
	int err = prefetch_create(P.c.prefetch_policy, pager_opt(OPT_PREFETCH), &P.pf);

	return err || P.c.prefetch_policy == PREFETCH_READ_BUFFER ? err : probe_init(P.pf);
}

static char lost_page[PAGE_SIZE] __attribute__((aligned(PAGE_SIZE)));

static void fault_missing(uint64_t idx, bool write)
{
	uint64_t t0 = now_ns();
	unsigned s0;
	pte_t e;
	const void *src;

	wait_plan();
	s0 = pte_state(pte_at(idx));
	reclaim_make_room(s0 == PTE_FREE || s0 == PTE_EMPTY ? zero_window() : 1);
	e = pte_at(idx);
	switch (pte_state(e)) {
	case PTE_FREE:
	case PTE_EMPTY:
		zero_fill(idx, t0);
		return;
	case PTE_WBUF:
		src = reclaim_wbuf_take(pte_node(e), idx);
		if (!src)
			pager_die("internal error: page missing from its write buffer", (uintptr_t)page_addr(idx), -EIO);
		install(idx, src, false, 0, 0);
		STAT_ADD(P.c.stats, faults_wbuf_hit, 1);
		STAT_ADD(P.c.stats, ns_wbuf_hit, now_ns() - t0);
		return;
	case PTE_REMOTE:
		/* a read buffer's copy, or without one a probe's (probe.h) */
		if ((src = P.rb ? rbuf_lookup(P.rb, idx) : probe_take(idx, e, sum_at(idx)))) {
			if (!P.rb)
				note_probes();
			install_remote(idx, src, write, pte_node(e), pte_pfn(e));
			STAT_ADD(P.c.stats, faults_rbuf_hit, 1);
			STAT_ADD(P.c.stats, ns_rbuf_hit, now_ns() - t0);
			return;
		}
		fetch_remote(idx, write);
		STAT_ADD(P.c.stats, faults_remote, 1);
		stats_remote_fault(P.c.stats, now_ns() - t0);
		return;
	case PTE_LOST: /* from the backup file, if it has the page (its memnode's copy is gone) */
		if (backup_read(idx, lost_page)) {
			install(idx, lost_page, false, 0, 0);
			return;
		}
		pager_die("this page's only copy was on a memnode that failed", (uintptr_t)page_addr(idx), -EIO);
	default: /* resident already (another thread's fault served it) */
		uffd_wake(P.c.uffd, page_addr(idx), PAGE_SIZE);
		STAT_ADD(P.c.stats, faults_spurious, 1);
	}
}

/* A write to a clean page: its remote copy goes stale, so release the frame. */
static void fault_wp(uint64_t idx)
{
	pte_t e = pte_at(idx);
	int err;

	STAT_ADD(P.c.stats, faults_wp, 1);
	if (pte_state(e) != PTE_CLEAN) {
		uffd_wake(P.c.uffd, page_addr(idx), PAGE_SIZE);
		return;
	}
	if (pager_opt(OPT_KEEP_FRAMES)) {
		e |= PTE_KEEP;
	} else {
		pager_release_frame(pte_node(e), pte_pfn(e));
	}
	replica_drop(idx);
	pte_put(idx, pte_set_state(e, PTE_DIRTY) | PTE_REF);
	err = uffd_wp(P.c.uffd, page_addr(idx), PAGE_SIZE, 0);
	if (err)
		pager_die("cannot unprotect a written page", (uintptr_t)page_addr(idx), err);
}

static void handle(const struct uffd_msg *m, unsigned h)
{
	uint64_t wedge = pager_opt(OPT_TEST_WEDGE_AFTER), drop = wedge ? 0 : pager_opt(OPT_TEST_DROP_AFTER);
	uintptr_t a = m->arg.pagefault.address & ~(PAGE_SIZE - 1);
	uint64_t idx;

	if (m->event != UFFD_EVENT_PAGEFAULT)
		return;
	if (a < (uintptr_t)P.c.base || a >= (uintptr_t)page_addr(P.c.npages)) {
		uffd_wake(P.c.uffd, (void *)a, PAGE_SIZE);
		return;
	}
	if (drop && P.faults >= drop)
		return; /* test hook: a fault read and never answered */
	__atomic_store_n(&busy[h].addr, a, __ATOMIC_RELAXED);
	idx = (a - (uintptr_t)P.c.base) >> PAGE_SHIFT;
	if (m->arg.pagefault.flags & UFFD_PAGEFAULT_FLAG_WP)
		fault_wp(idx);
	else
		fault_missing(idx, m->arg.pagefault.flags & UFFD_PAGEFAULT_FLAG_WRITE);
	if (wedge | drop)
		P.faults++;
	if (wedge && P.faults >= wedge)
		for (;;) /* test hook: wedge while holding the batch, for the watchdog */
			pause();
}

/* Waits up to ms for faults of the program or of its forked children
 * (whose are served here). Children gone (exit, exec) are forgotten at
 * least every REAP_NS while any lives, so that frames thaw. */
#define REAP_NS 100000000ull
static void wait_for_faults(int ms, uint64_t now)
{
	static uint64_t reaped;
	struct pollfd set[1 + 16] = { { .fd = P.c.uffd, .events = POLLIN } };
	int n = 1 + forkchild_pollfds(set + 1, 16), r;
	bool ready = false;

	if (n == 1 && !ms)
		return;
	r = poll(set, (nfds_t)n, ms);
	for (int i = 1; i < n && r > 0; i++)
		ready |= set[i].revents != 0;
	if (!ready && !(n > 1 && now - reaped > REAP_NS))
		return;
	forkchild_serve(now - reaped > REAP_NS);
	reaped = now - reaped > REAP_NS ? now : reaped;
}

/* Whether a handler other than h is serving a batch now */
static bool other_serving(unsigned h)
{
	unsigned n = __atomic_load_n(&nhandlers, __ATOMIC_RELAXED);

	for (unsigned i = 0; i < n && i < MAX_HANDLERS; i++)
		if (i != h && __atomic_load_n(&busy[i].since, __ATOMIC_RELAXED))
			return true;
	return false;
}

/* A pinned handler woken for a fault that another handler took: every
 * handler wakes for every fault, and the one on a busy CPU (preempting a
 * neighbour) sometimes reads it before the one on the faulting thread's CPU.
 * Left alone, the faulting thread's CPU then goes idle and halts, and the
 * answer must wake a halted vCPU (~25-40 us here, D37). So the loser keeps
 * its CPU awake, yielding to whatever becomes runnable there (the answered
 * thread), while the other handler serves, at most LOSER_SPIN_NS. It never
 * spins on a CPU that someone else wants (cpuload) nor in SCHED_FIFO. */
#define LOSER_SPIN_NS 100000ull

static void keep_awake(unsigned h, uint64_t now)
{
	uint64_t t = now;

	while (other_serving(h) && t - now < LOSER_SPIN_NS && wakeup_may_poll(t)) {
		sched_yield();
		t = now_ns();
	}
}

/* A handler pinned to a CPU sleeps in poll() between faults: a thread that
 * faults on its CPU then wakes it there, without an inter-processor
 * interrupt (~25 us on this VM), and never busy-polls. The other
 * polling handlers wake too and usually find nothing (the local one reads
 * first); while the main thread faults only its CPU's handler polls, while
 * several threads fault only the shared one (listener). An unpinned handler
 * (cpu < 0: fault-handlers one, or LISTENER_SHARED) busy-polls spin_ns after
 * each batch instead; the shared one spins so even when the listener has
 * just handed polling to a CPU, and serves the main thread's faults that
 * come within it (as measured, bench/results/handlers-ab/shared), then
 * sleeps. woken: the last read followed a wake-up from poll. */
void pager_run(int cpu)
{
	unsigned h = __atomic_fetch_add(&nhandlers, 1, __ATOMIC_RELAXED) % MAX_HANDLERS;
	uint64_t spin = cpu < 0 ? pager_opt(OPT_HANDLER_SPIN) : 0, idle_since = now_ns();
	bool listens = cpu >= 0 || cpu == LISTENER_SHARED; /* the listener says when it polls */
	struct uffd_msg msg[64];
	bool woken = false;

	on_handler = true;
	unpinned = cpu < 0;
	if (cpu == LISTENER_SHARED)
		listener_started(cpu);
	if (cpu >= 0) {
		cpu_set_t set;

		CPU_ZERO(&set);
		CPU_SET(cpu, &set);
		if (pthread_setaffinity_np(pthread_self(), sizeof(set), &set))
			log_warn("cannot pin the fault handler to CPU %d; it serves faults from anywhere", cpu);
		else
			listener_started(cpu);
	}
	/* this thread made its first heap call when it started (its C
	 * library's arena): from here on it reads a fork's event without
	 * waiting for the arenas that fork holds */
	__atomic_fetch_add(&reading, 1, __ATOMIC_RELEASE);
	os_futex_wake(&reading, INT_MAX);
	for (;;) {
		/* A parked pinned handler reads nothing, not even a fault that woke
		 * its poll(): it would serve it holding the pager lock through the
		 * read, and then every fault pending after it, while the shared
		 * handler waited for the lock (mt over TCP: ~1 200 such batches a
		 * run, 2-3 s of handler time; D32). The shared handler does read
		 * after each wait: if the CPU polling alone cannot run its handler
		 * (a real-time thread there), it serves the fault and the listener
		 * follows the main thread, within listener_wait's 100 ms. */
		if (cpu >= 0 && !listener_polls(cpu)) {
			woken = false;
			listener_wait(cpu);
			continue;
		}
		ssize_t r = read(P.c.uffd, msg, sizeof(msg));
		unsigned n = r > 0 ? take_events(msg, (unsigned)(r / (ssize_t)sizeof(msg[0]))) : 0;

		if (n) {
			/* before the lock: a lock holder that never lets go (a program
			 * thread faulting inside the pager) is a wedge the watchdog sees */
			__atomic_store_n(&busy[h].addr, (uintptr_t)msg[0].arg.pagefault.address, __ATOMIC_RELAXED);
			__atomic_store_n(&busy[h].since, now_ns(), __ATOMIC_RELAXED);
			__atomic_fetch_add(&P.fault_waiters, 1, __ATOMIC_RELEASE);
			lock_batch(msg, &n, sizeof(msg) / sizeof(msg[0]));
			__atomic_fetch_sub(&P.fault_waiters, 1, __ATOMIC_RELEASE);
			for (unsigned i = 0; i < n; i++)
				handle(&msg[i], h);
			if (listens)
				listener_follow(msg[n - 1].arg.pagefault.feat.ptid);
			reclaim_poke();
			__atomic_store_n(&busy[h].since, 0, __ATOMIC_RELAXED);
			pager_unlock();
			idle_since = now_ns();
			woken = false; /* it served this wake-up: nothing to keep awake for */
			continue;
		}
		if (r < 0 && errno != EAGAIN && errno != EINTR)
			pager_die("reading faults from userfaultfd failed", 0, -errno);
		if (r > 0)
			continue; /* only fork events */
		uint64_t now = now_ns();

		if (cpu >= 0 && woken) {
			woken = false;
			keep_awake(h, now);
			continue;
		}

		/* Spinning yields, not pauses: the thread whose fault was just
		 * answered is often woken onto this CPU, and a pausing handler
		 * kept it waiting there until the spin ended or the scheduler
		 * preempted it (D33) */
		if (now - idle_since < spin && wakeup_may_poll(now)) {
			wait_for_faults(0, now);
			if (pager_opt(OPT_HANDLER_YIELD))
				sched_yield();
			else
				cpu_relax();
			continue;
		}
		wakeup_sleeping(now);
		if (listens && !listener_polls(cpu)) {
			listener_wait(cpu);
			continue;
		}
		wait_for_faults(1000, now);
		woken = true;
	}
}

void pager_wait_handlers(int n)
{
	int seen;

	while ((seen = __atomic_load_n(&reading, __ATOMIC_ACQUIRE)) < n)
		os_futex_wait(&reading, (unsigned)seen, NULL);
}

uint64_t pager_stuck_ns(uint64_t now, uintptr_t *addr_out)
{
	uint64_t worst = 0;

	for (unsigned h = 0; h < MAX_HANDLERS && h < __atomic_load_n(&nhandlers, __ATOMIC_RELAXED); h++) {
		uint64_t since = __atomic_load_n(&busy[h].since, __ATOMIC_RELAXED);

		if (since && now > since && now - since > worst) {
			worst = now - since;
			*addr_out = __atomic_load_n(&busy[h].addr, __ATOMIC_RELAXED);
		}
	}
	return worst;
}

void fault_fetch(uint64_t idx, unsigned state)
{
	wait_plan();
	if (pte_state(pte_at(idx)) == state)
		fault_missing(idx, false);
}

/* pager: fault handling, eviction and the region's bookkeeping.
 *
 * Concurrency: one lock. The handler thread takes it for each batch of fault
 * messages; interposed mmap-family calls take it from program threads. Code
 * holding it never touches a page that could be missing (that fault would
 * wait for the lock forever): page contents are moved by the kernel
 * (UFFDIO_COPY, pread of /proc/self/mem) or come from runtime buffers.
 *
 * Page life cycle: EMPTY -zero fill-> DIRTY -evict-> WBUF -flush-> REMOTE
 * -fault-> CLEAN (write-protected, keeps its frame) -write-> DIRTY (frame
 * released); CLEAN -evict-> REMOTE without rewriting. */
#include "pager.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#ifndef MREMAP_DONTUNMAP
#define MREMAP_DONTUNMAP 4
#endif
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "client.h"
#include "evict.h"
#include "log.h"
#include "placement.h"
#include "pte.h"
#include "ranges.h"
#include "rbuf.h"
#include "rtmem.h"
#include "stats.h"
#include "uffd.h"
#include "wbuf.h"

#define MAX_NODES STATS_MAX_NODES
#define MAX_BATCH 256

enum { FORK_PREPARE, FORK_PARENT, FORK_CHILD };

/* Remote runs remembered to tell a stream from scattered faults: a few, so
 * that several threads (or interleaved arrays) each keep their stream. */
#define STREAM_RUNS 8

static struct pager {
	pthread_mutex_t lock;
	struct pager_config c;
	pte_t *pt;
	struct ranges *ranges;        /* the mmap area: [heap_pages, npages) */
	struct rbuf *rb;
	struct wbuf *wb[MAX_NODES];
	struct evict *ev;
	unsigned nnodes, preferred;
	struct { uint32_t pfn, left; } cursor[MAX_NODES];
	uint64_t resident, heap_hi, map_hi;
	int memfd;                    /* /proc/self/mem: reads pages whatever their protection */
	int no_evict;                 /* set while preparing a fork */
	bool detached;                /* forked child: no uffd, no memnodes */
	bool full_warned;
	uint64_t faults;
	uint64_t busy_since;          /* ns; 0 when idle (atomic) */
	uintptr_t busy_addr;
	char *scratch;                /* MAX_BATCH pages for eviction copies */
	uint64_t run_lo[STREAM_RUNS], run_hi[STREAM_RUNS]; /* recent remote runs, a ring */
	unsigned run_next;
} P = { .lock = PTHREAD_MUTEX_INITIALIZER, .memfd = -1 };

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static char *page_addr(uint64_t idx) { return P.c.base + (idx << PAGE_SHIFT); }

static bool in_heap(uint64_t idx) { return idx < P.c.heap_pages; }

static int raw_madvise(void *addr, size_t len, int advice)
{
	return syscall(SYS_madvise, addr, len, advice) ? -errno : 0;
}

/* The program cannot go on correctly: say why and stop it now. SIGKILL,
 * because the program's own handlers could touch memory nobody can serve. */
static void __attribute__((noreturn)) die(const char *what, uintptr_t addr, int err)
{
	errno = -err;
	log_error("%s (page %#lx): %m; stopping the program, its memory can no longer be served",
		  what, (unsigned long)addr);
	kill(getpid(), SIGKILL);
	_exit(137);
}

static void set_resident(int64_t delta)
{
	P.resident += (uint64_t)delta;
	__atomic_store_n(&P.c.stats->resident_bytes, P.resident << PAGE_SHIFT, __ATOMIC_RELAXED);
	if ((P.resident << PAGE_SHIFT) > P.c.stats->resident_peak_bytes)
		__atomic_store_n(&P.c.stats->resident_peak_bytes, P.resident << PAGE_SHIFT, __ATOMIC_RELAXED);
}

/* Page idx just became resident: new generation, into the eviction ring. */
static void became_resident(uint64_t idx, unsigned state, unsigned node, uint32_t pfn)
{
	pte_t e = P.pt[idx];
	unsigned gen = (pte_gen(e) + 1) & PTE_GEN_MASK;

	e = (e & ~((PTE_GEN_MASK << PTE_GEN_SHIFT) | PTE_REF)) | ((pte_t)gen << PTE_GEN_SHIFT);
	P.pt[idx] = pte_make(e, state, node, pfn);
	evict_push(P.ev, P.pt, idx, gen);
	set_resident(1);
	if (in_heap(idx) && idx >= P.heap_hi)
		P.heap_hi = idx + 1;
	else if (!in_heap(idx) && idx >= P.map_hi)
		P.map_hi = idx + 1;
}

static void release_frame(unsigned node, uint32_t pfn)
{
	if (!client_release(P.c.client, node, pfn, 1))
		STAT_ADD(P.c.stats, frames_released, 1);
}

/* ---- frames and write buffers ---- */

/* One frame for an evicted page, from the preferred node or, when that one
 * is full or failed, the next (COMEX Fig. 4). -ENOSPC when all are full. */
static int take_frame(unsigned *node_out, uint32_t *pfn_out)
{
	for (unsigned a = 0; a < P.nnodes; a++) {
		unsigned n = placement_choice(P.preferred, a, P.nnodes);
		uint32_t pfn, count;

		if (!P.cursor[n].left) {
			if (client_alloc(P.c.client, n, P.c.flush_run, &pfn, &count))
				continue;
			P.cursor[n].pfn = pfn;
			P.cursor[n].left = count;
		}
		*node_out = n;
		*pfn_out = P.cursor[n].pfn++;
		P.cursor[n].left--;
		return 0;
	}
	return -ENOSPC;
}

static void flush(unsigned node)
{
	struct wbuf *wb = P.wb[node];
	uint32_t pfn, count;
	const void *data;
	int err;

	wbuf_run(wb, &pfn, &count, &data);
	if (!count)
		return;
	err = client_write(P.c.client, node, pfn, count, data);
	if (err)
		die("a memnode failed while taking evicted pages that exist nowhere else",
		    (uintptr_t)data, err);
	for (uint32_t i = 0; i < count; i++) {
		uint64_t idx;
		bool cancelled;

		wbuf_entry(wb, i, &idx, &cancelled);
		if (cancelled)
			release_frame(node, pfn + i);
		else
			P.pt[idx] = pte_make(P.pt[idx], PTE_REMOTE, node, pfn + i);
	}
	wbuf_clear(wb);
	STAT_ADD(P.c.stats, pages_written, count);
	STAT_ADD(P.c.stats, bytes_written, (uint64_t)count << PAGE_SHIFT);
	STAT_ADD(P.c.stats, remote_writes, 1);
}

static void flush_all(void)
{
	for (unsigned n = 0; n < P.nnodes; n++)
		flush(n);
}

/* ---- eviction ---- */

static bool page_is_zero(const void *p)
{
	const uint64_t *w = p;

	for (size_t i = 0; i < PAGE_SIZE / 8; i++)
		if (w[i])
			return false;
	return true;
}

/* Applies fn to each maximal run of consecutive indices among v[0..n) whose
 * entry passes keep (which may be NULL for all). */
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
		while (j + 1 < n && v[j + 1] == v[j] + 1 && (!keep || keep(v[j + 1])))
			j++;
		if ((err = fn(v[i], j - i + 1)))
			return err;
		i = j + 1;
	}
	return 0;
}

static bool is_dirty(uint64_t idx) { return pte_state(P.pt[idx]) == PTE_DIRTY; }
static bool is_gone(uint64_t idx) { return !pte_resident(P.pt[idx]); }

static int protect_run(uint64_t first, uint32_t len)
{
	int err = uffd_wp(P.c.uffd, page_addr(first), (size_t)len << PAGE_SHIFT, 1);

	if (err)
		die("cannot write-protect pages to evict them", (uintptr_t)page_addr(first), err);
	return 0;
}

static int drop_run(uint64_t first, uint32_t len)
{
	int err = raw_madvise(page_addr(first), (size_t)len << PAGE_SHIFT, MADV_DONTNEED);

	if (err)
		die("cannot drop evicted pages", (uintptr_t)page_addr(first), err);
	return 0;
}

/* Copies the dirty victims' contents (write-protected, so stable) into
 * scratch, one pread per run. */
static uint32_t copy_pos;
static int copy_run(uint64_t first, uint32_t len)
{
	size_t bytes = (size_t)len << PAGE_SHIFT;
	ssize_t r = pread(P.memfd, P.scratch + ((size_t)copy_pos << PAGE_SHIFT), bytes,
			  (off_t)(uintptr_t)page_addr(first));

	if (r != (ssize_t)bytes)
		die("cannot read pages to evict through /proc/self/mem", (uintptr_t)page_addr(first),
		    r < 0 ? -errno : -EIO);
	copy_pos += len;
	return 0;
}

/* A dirty victim whose copy is at src: into a write buffer, or back to
 * resident (unprotected) when every memnode is full. */
static bool evict_dirty(uint64_t idx, const char *src)
{
	unsigned node;
	uint32_t pfn;

	if (page_is_zero(src)) {
		if (P.pt[idx] & PTE_KEEP)
			release_frame(pte_node(P.pt[idx]), pte_pfn(P.pt[idx]));
		P.pt[idx] = pte_set_state(P.pt[idx] & ~PTE_KEEP, PTE_EMPTY);
		STAT_ADD(P.c.stats, pages_dropped_zero, 1);
		return true;
	}
	if (P.pt[idx] & PTE_KEEP) {
		node = pte_node(P.pt[idx]);
		pfn = pte_pfn(P.pt[idx]);
	} else if (take_frame(&node, &pfn)) {
		if (!P.full_warned)
			log_warn("every memnode is full: keeping pages resident beyond the local budget");
		P.full_warned = true;
		uffd_wp(P.c.uffd, page_addr(idx), PAGE_SIZE, 0);
		STAT_ADD(P.c.stats, budget_overshoots, 1);
		return false;
	}
	if (wbuf_must_flush_before(P.wb[node], pfn))
		flush(node);
	memcpy(wbuf_add(P.wb[node], idx, pfn), src, PAGE_SIZE);
	P.pt[idx] = pte_make(P.pt[idx], PTE_WBUF, node, pfn);
	if (wbuf_ready(P.wb[node]))
		flush(node);
	return true;
}

/* Evicts up to one batch; returns the number of pages that left residency. */
static uint32_t evict_batch(void)
{
	uint64_t v[MAX_BATCH], t0 = now_ns();
	uint32_t n = evict_pick(P.ev, P.pt, P.c.evict_batch, v), gone = 0, k = 0;

	if (!n)
		return 0;
	for_runs(v, n, is_dirty, protect_run);
	copy_pos = 0;
	for_runs(v, n, is_dirty, copy_run);
	for (uint32_t i = 0; i < n; i++) {
		pte_t e = P.pt[v[i]];

		if (pte_state(e) == PTE_CLEAN) {
			P.pt[v[i]] = pte_set_state(e, PTE_REMOTE);
			STAT_ADD(P.c.stats, pages_dropped_clean, 1);
			gone++;
		} else if (evict_dirty(v[i], P.scratch + ((size_t)k++ << PAGE_SHIFT))) {
			gone++;
		}
	}
	for_runs(v, n, is_gone, drop_run);
	set_resident(-(int64_t)gone);
	STAT_ADD(P.c.stats, pages_evicted, gone);
	STAT_ADD(P.c.stats, ns_evict, now_ns() - t0);
	return gone;
}

/* Evicts until k more pages fit in the budget (or nothing more can go). */
static void make_room(uint64_t k)
{
	while (P.resident + k > P.c.budget_pages && !__atomic_load_n(&P.no_evict, __ATOMIC_ACQUIRE))
		if (!evict_batch())
			break;
}

/* The faulting threads run again (UFFDIO_COPY woke them): one batch of
 * eviction now overlaps with them and leaves room for the next fault. */
static void evict_ahead(void)
{
	if (P.c.evict_ahead && P.resident + P.c.evict_ahead > P.c.budget_pages &&
	    !__atomic_load_n(&P.no_evict, __ATOMIC_ACQUIRE))
		evict_batch();
}

/* ---- faults ---- */

static bool zero_eligible(uint64_t idx)
{
	unsigned s = pte_state(P.pt[idx]);

	return s == PTE_EMPTY || (s == PTE_FREE && in_heap(idx));
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
	if (P.c.zero_window < ZERO_WINDOW_ROOMY && P.resident + 8 * ZERO_WINDOW_ROOMY <= P.c.budget_pages)
		return ZERO_WINDOW_ROOMY;
	return P.c.zero_window;
}

static void zero_fill(uint64_t idx, uint64_t t0)
{
	uint64_t w = zero_window(), lo = idx, hi = idx + 1;
	uint64_t wlo = idx - idx % w, whi = wlo + w;
	int err;

	if (whi > P.c.npages)
		whi = P.c.npages;
	if (whi > P.c.heap_pages && idx < P.c.heap_pages)
		whi = P.c.heap_pages;
	while (lo > wlo && zero_eligible(lo - 1))
		lo--;
	while (hi < whi && zero_eligible(hi))
		hi++;
	err = uffd_zero(P.c.uffd, page_addr(lo), (hi - lo) << PAGE_SHIFT);
	if (err && hi - lo > 1) {
		lo = idx;
		hi = idx + 1;
		err = uffd_zero(P.c.uffd, page_addr(lo), PAGE_SIZE);
	}
	if (err == -EAGAIN) {
		uffd_wake(P.c.uffd, page_addr(idx), PAGE_SIZE);
		return;
	}
	if (err && err != -EEXIST)
		die("cannot zero-fill a page", (uintptr_t)page_addr(idx), err);
	if (err == -EEXIST)
		uffd_wake(P.c.uffd, page_addr(idx), PAGE_SIZE);
	for (uint64_t i = lo; i < hi; i++)
		became_resident(i, PTE_DIRTY, 0, 0);
	STAT_ADD(P.c.stats, faults_zero, 1);
	STAT_ADD(P.c.stats, ns_zero, now_ns() - t0);
}

/* Maps a copy of page idx; clean pages stay write-protected to catch writes. */
static void install(uint64_t idx, const void *src, bool clean, unsigned node, uint32_t pfn)
{
	int err = uffd_copy(P.c.uffd, page_addr(idx), src, PAGE_SIZE, clean);

	if (err == -EAGAIN) { /* the address space is changing: let the thread retry */
		uffd_wake(P.c.uffd, page_addr(idx), PAGE_SIZE);
		return;
	}
	if (err)
		die("cannot install a page", (uintptr_t)page_addr(idx), err);
	became_resident(idx, clean ? PTE_CLEAN : PTE_DIRTY, node, pfn);
}

/* The run of pages around idx, within its aligned prefetch window, that sit
 * in consecutive frames of idx's node: what one remote read can fetch. */
static void run_bounds(uint64_t idx, uint64_t *lo_out, uint64_t *hi_out)
{
	uint64_t w = P.c.prefetch, wlo = idx - idx % w, lo = idx, hi = idx + 1;
	unsigned node = pte_node(P.pt[idx]);

	while (lo > wlo && pte_state(P.pt[lo - 1]) == PTE_REMOTE && pte_node(P.pt[lo - 1]) == node &&
	       pte_pfn(P.pt[lo - 1]) + 1 == pte_pfn(P.pt[lo]))
		lo--;
	while (hi < wlo + w && hi < P.c.npages && pte_state(P.pt[hi]) == PTE_REMOTE &&
	       pte_node(P.pt[hi]) == node && pte_pfn(P.pt[hi]) == pte_pfn(P.pt[hi - 1]) + 1)
		hi++;
	*lo_out = lo;
	*hi_out = hi;
}

/* One remote read of [lo, hi) (COMEX §4.4) into idx's read-buffer slot. */
static char *fetch(uint64_t idx, uint64_t lo, uint64_t hi)
{
	uint64_t wlo = idx - idx % P.c.prefetch;
	char *slot = rbuf_slot(P.rb, idx);
	int err = client_read(P.c.client, pte_node(P.pt[idx]), pte_pfn(P.pt[lo]), (uint32_t)(hi - lo),
			      slot + ((lo - wlo) << PAGE_SHIFT));

	if (err)
		die("a memnode failed while reading back a page that exists nowhere else",
		    (uintptr_t)page_addr(idx), err);
	for (uint64_t i = lo; i < hi; i++)
		rbuf_mark(P.rb, i);
	STAT_ADD(P.c.stats, remote_reads, 1);
	STAT_ADD(P.c.stats, bytes_read, (hi - lo) << PAGE_SHIFT);
	return slot - (wlo << PAGE_SHIFT); /* + (i << PAGE_SHIFT) is page i's copy */
}

/* Installs a page that came back from node/pfn. A write fault would take a
 * write-protect fault right after (and dirty the page anyway), so then the
 * page is mapped writable at once and its frame released. */
static void install_remote(uint64_t idx, const void *src, bool write, unsigned node, uint32_t pfn)
{
	install(idx, src, !write, node, pfn);
	rbuf_drop(P.rb, idx);
	if (write && pte_resident(P.pt[idx])) {
		if (P.c.keep_frames)
			P.pt[idx] |= PTE_KEEP;
		else
			release_frame(node, pfn);
		P.pt[idx] |= PTE_REF;
	}
}

/* True when idx is within a prefetch window of a recently fetched run: the
 * program walks through memory, so the neighbours of this fault are likely
 * needed soon. Records the window either way. */
static bool continues_stream(uint64_t idx)
{
	uint64_t w = P.c.prefetch, wlo = idx - idx % w;
	bool hit = false;

	for (unsigned i = 0; i < STREAM_RUNS && !hit; i++)
		hit = P.run_hi[i] && idx + w >= P.run_lo[i] && idx < P.run_hi[i] + w;
	P.run_lo[P.run_next] = wlo;
	P.run_hi[P.run_next] = wlo + w;
	P.run_next = (P.run_next + 1) % STREAM_RUNS;
	return hit;
}

/* Maps [a, b) from base clean (write-protected, frames kept); a failure
 * (-EAGAIN while the address space changes) leaves the pages in the read
 * buffer, where their own faults find them. */
static void map_neighbours(uint64_t a, uint64_t b, const char *base)
{
	if (a == b || uffd_copy(P.c.uffd, page_addr(a), base + (a << PAGE_SHIFT), (b - a) << PAGE_SHIFT, 1))
		return;
	for (uint64_t i = a; i < b; i++) {
		became_resident(i, PTE_CLEAN, pte_node(P.pt[i]), pte_pfn(P.pt[i]));
		rbuf_drop(P.rb, i);
	}
	STAT_ADD(P.c.stats, pages_prefetch_mapped, b - a);
}

/* A read-buffer miss. With prefetch-map, a fault that continues a stream
 * (or any fault, without prefetch-stream) fetches its run and maps the
 * neighbours at once, clean, so they never fault; a scattered fault reads
 * just its page: 4 KiB instead of 64, and no neighbours that would push
 * useful pages out. Without prefetch-map (COMEX) the run lands in the read
 * buffer and the neighbours wait there for their own faults. idx itself is
 * mapped writable on a write fault (its frame released), its neighbours
 * never are: they were not written. */
static void fetch_and_map(uint64_t idx, bool write)
{
	bool map_all = P.c.prefetch_map && (!P.c.prefetch_stream || continues_stream(idx));
	unsigned node = pte_node(P.pt[idx]);
	uint32_t pfn = pte_pfn(P.pt[idx]);
	uint64_t lo = idx, hi = idx + 1;
	char *base;

	if (map_all || !P.c.prefetch_map) {
		make_room(map_all ? P.c.prefetch : 1);
		run_bounds(idx, &lo, &hi);
	}
	base = fetch(idx, lo, hi);
	install_remote(idx, base + (idx << PAGE_SHIFT), write, node, pfn);
	if (!map_all || !pte_resident(P.pt[idx]))
		return;
	map_neighbours(lo, idx, base);
	map_neighbours(idx + 1, hi, base);
}

static void fault_missing(uint64_t idx, bool write)
{
	uint64_t t0 = now_ns();
	pte_t e;
	const void *src;

	make_room(zero_eligible(idx) ? zero_window() : 1);
	e = P.pt[idx];
	switch (pte_state(e)) {
	case PTE_FREE:
	case PTE_EMPTY:
		zero_fill(idx, t0);
		return;
	case PTE_WBUF:
		src = wbuf_find(P.wb[pte_node(e)], idx, true);
		if (!src)
			die("internal error: page missing from its write buffer", (uintptr_t)page_addr(idx), -EIO);
		install(idx, src, false, 0, 0);
		STAT_ADD(P.c.stats, faults_wbuf_hit, 1);
		STAT_ADD(P.c.stats, ns_wbuf_hit, now_ns() - t0);
		return;
	case PTE_REMOTE:
		if ((src = rbuf_lookup(P.rb, idx))) {
			install_remote(idx, src, write, pte_node(e), pte_pfn(e));
			STAT_ADD(P.c.stats, faults_rbuf_hit, 1);
			STAT_ADD(P.c.stats, ns_rbuf_hit, now_ns() - t0);
			return;
		}
		fetch_and_map(idx, write);
		STAT_ADD(P.c.stats, faults_remote, 1);
		STAT_ADD(P.c.stats, ns_remote, now_ns() - t0);
		return;
	default: /* resident already (another thread's fault served it) */
		uffd_wake(P.c.uffd, page_addr(idx), PAGE_SIZE);
		STAT_ADD(P.c.stats, faults_spurious, 1);
	}
}

/* A write to a clean page: its remote copy goes stale, so release the frame. */
static void fault_wp(uint64_t idx)
{
	pte_t e = P.pt[idx];
	int err;

	STAT_ADD(P.c.stats, faults_wp, 1);
	if (pte_state(e) != PTE_CLEAN) {
		uffd_wake(P.c.uffd, page_addr(idx), PAGE_SIZE);
		return;
	}
	if (P.c.keep_frames) {
		e |= PTE_KEEP;
	} else {
		release_frame(pte_node(e), pte_pfn(e));
	}
	P.pt[idx] = pte_set_state(e, PTE_DIRTY) | PTE_REF;
	err = uffd_wp(P.c.uffd, page_addr(idx), PAGE_SIZE, 0);
	if (err)
		die("cannot unprotect a written page", (uintptr_t)page_addr(idx), err);
}

static void handle(const struct uffd_msg *m)
{
	uintptr_t a = m->arg.pagefault.address & ~(PAGE_SIZE - 1);
	uint64_t idx;

	if (m->event != UFFD_EVENT_PAGEFAULT)
		return;
	if (a < (uintptr_t)P.c.base || a >= (uintptr_t)page_addr(P.c.npages)) {
		uffd_wake(P.c.uffd, (void *)a, PAGE_SIZE);
		return;
	}
	__atomic_store_n(&P.busy_addr, a, __ATOMIC_RELAXED);
	idx = (a - (uintptr_t)P.c.base) >> PAGE_SHIFT;
	if (m->arg.pagefault.flags & UFFD_PAGEFAULT_FLAG_WP)
		fault_wp(idx);
	else
		fault_missing(idx, m->arg.pagefault.flags & UFFD_PAGEFAULT_FLAG_WRITE);
	if (P.c.wedge_after && ++P.faults >= P.c.wedge_after)
		for (;;) /* test hook: wedge while holding the batch, for the watchdog */
			pause();
}

void pager_run(void)
{
	struct uffd_msg msg[64];
	uint64_t idle_since = now_ns();

	for (;;) {
		ssize_t r = read(P.c.uffd, msg, sizeof(msg));

		if (r > 0) {
			/* before the lock: a lock holder that never lets go (a program
			 * thread faulting inside the pager) is a wedge the watchdog sees */
			__atomic_store_n(&P.busy_addr, (uintptr_t)msg[0].arg.pagefault.address, __ATOMIC_RELAXED);
			__atomic_store_n(&P.busy_since, now_ns(), __ATOMIC_RELAXED);
			pthread_mutex_lock(&P.lock);
			for (ssize_t i = 0; i < r / (ssize_t)sizeof(msg[0]); i++)
				handle(&msg[i]);
			evict_ahead();
			__atomic_store_n(&P.busy_since, 0, __ATOMIC_RELAXED);
			pthread_mutex_unlock(&P.lock);
			idle_since = now_ns();
			continue;
		}
		if (r < 0 && errno != EAGAIN && errno != EINTR)
			die("reading faults from userfaultfd failed", 0, -errno);
		if (now_ns() - idle_since < P.c.spin_ns) {
			__builtin_ia32_pause();
			continue;
		}
		struct pollfd pfd = { .fd = P.c.uffd, .events = POLLIN };
		poll(&pfd, 1, 1000);
	}
}

uint64_t pager_stuck_ns(uint64_t now, uintptr_t *addr_out)
{
	uint64_t since = __atomic_load_n(&P.busy_since, __ATOMIC_RELAXED);

	*addr_out = __atomic_load_n(&P.busy_addr, __ATOMIC_RELAXED);
	return since && now > since ? now - since : 0;
}

/* Pages the allocator touched before the region was registered are resident
 * without ever having faulted: account for them. */
#define ADOPT_SCAN (1ull << 18) /* pages: the first GiB of the heap */
static void adopt(uint64_t lo, uint64_t hi)
{
	unsigned char *vec = rt_alloc(hi - lo);

	if (!vec || syscall(SYS_mincore, page_addr(lo), (hi - lo) << PAGE_SHIFT, vec))
		log_warn("cannot find pages touched before start-up (%m); they stay outside the budget");
	else
		for (uint64_t i = lo; i < hi; i++)
			if (vec[i - lo] & 1)
				became_resident(i, PTE_DIRTY, 0, 0);
	rt_free(vec, hi - lo);
}

int pager_init(const struct pager_config *cfg)
{
	int err;

	P.c = *cfg;
	if (P.c.evict_batch > MAX_BATCH)
		P.c.evict_batch = MAX_BATCH;
	if (!P.c.zero_window)
		P.c.zero_window = 1;
	P.pt = rt_alloc(cfg->npages * sizeof(pte_t));
	P.scratch = rt_alloc((size_t)MAX_BATCH << PAGE_SHIFT);
	if (!P.pt || !P.scratch)
		return -ENOMEM;
	if ((err = ranges_create(cfg->npages - cfg->heap_pages, &P.ranges)) ||
	    (err = rbuf_create(cfg->rbuf_pages, cfg->prefetch, &P.rb)) ||
	    (err = evict_create(2 * cfg->budget_pages + 4096, cfg->clock, &P.ev)))
		return err;
	P.nnodes = client_nodes(cfg->client);
	if (P.nnodes > MAX_NODES)
		P.nnodes = MAX_NODES;
	for (unsigned n = 0; n < P.nnodes; n++)
		if ((err = wbuf_create(cfg->wbuf_pages, cfg->flush_run, &P.wb[n])))
			return err;
	P.preferred = placement_preferred(placement_local_nid(), (uint32_t)getpid(), P.nnodes);
	P.memfd = open("/proc/self/mem", O_RDONLY | O_CLOEXEC);
	if (P.memfd < 0) {
		log_error("cannot open /proc/self/mem to copy pages out: %m");
		return -errno;
	}
	if ((err = uffd_register(cfg->uffd, cfg->base, cfg->npages << PAGE_SHIFT)))
		return err;
	adopt(0, cfg->heap_pages < ADOPT_SCAN ? cfg->heap_pages : ADOPT_SCAN);
	cfg->stats->rbuf_bytes = rbuf_bytes(P.rb);
	cfg->stats->wbuf_bytes = (uint64_t)P.nnodes * cfg->wbuf_pages * PAGE_SIZE;
	return 0;
}

/* ---- the interposed mmap family ---- */

static bool in_region(const void *addr, size_t len)
{
	return (const char *)addr >= P.c.base && len <= (P.c.npages << PAGE_SHIFT) &&
	       (const char *)addr + len <= page_addr(P.c.npages);
}

/* Forgets pages [lo, hi): frames released, buffers cancelled, local pages
 * dropped; they read as zero afterwards (state to, EMPTY or FREE). */
static void forget(uint64_t lo, uint64_t hi, unsigned to)
{
	int64_t res = 0;

	for (uint64_t i = lo; i < hi; i++) {
		pte_t e = P.pt[i];

		if (P.detached) {
			P.pt[i] = pte_set_state(e, to);
			continue;
		}
		switch (pte_state(e)) {
		case PTE_CLEAN:
			res--;
			/* fall through */
		case PTE_REMOTE:
			release_frame(pte_node(e), pte_pfn(e));
			rbuf_drop(P.rb, i);
			break;
		case PTE_DIRTY:
			if (e & PTE_KEEP)
				release_frame(pte_node(e), pte_pfn(e));
			res--;
			break;
		case PTE_WBUF:
			wbuf_find(P.wb[pte_node(e)], i, true);
			break;
		}
		if (pte_state(e) != PTE_FREE && pte_state(e) != PTE_EMPTY)
			STAT_ADD(P.c.stats, pages_discarded, 1);
		P.pt[i] = pte_make(e, to, 0, 0);
	}
	if (!P.detached)
		set_resident(res);
	raw_madvise(page_addr(lo), (hi - lo) << PAGE_SHIFT, MADV_DONTNEED);
}

static uint64_t page_of(const void *addr) { return (uint64_t)((const char *)addr - P.c.base) >> PAGE_SHIFT; }
static uint64_t npages_of(size_t len) { return (len + PAGE_SIZE - 1) >> PAGE_SHIFT; }

static int set_prot(void *addr, size_t len, int prot)
{
	if (prot == (PROT_READ | PROT_WRITE))
		return 0;
	return syscall(SYS_mprotect, addr, len, prot) ? -errno : 0;
}

int pager_mmap(size_t len, int prot, void **out)
{
	uint64_t n = npages_of(len), start;
	int err;

	pthread_mutex_lock(&P.lock);
	err = ranges_alloc(P.ranges, n, &start);
	if (!err) {
		start += P.c.heap_pages;
		forget(start, start + n, PTE_EMPTY);
		err = set_prot(page_addr(start), n << PAGE_SHIFT, prot);
		if (err)
			ranges_free(P.ranges, start - P.c.heap_pages, n);
	}
	pthread_mutex_unlock(&P.lock);
	if (!err)
		*out = page_addr(start);
	return err;
}

/* MAP_FIXED anonymous over the region: fresh zero pages, without replacing
 * the registered mapping (which would lose userfaultfd coverage). */
int pager_mmap_fixed(void *addr, size_t len, int prot)
{
	uint64_t lo = page_of(addr), n = npages_of(len);
	int err;

	if (!in_region(addr, len) || ((uintptr_t)addr & (PAGE_SIZE - 1)))
		return -EINVAL;
	pthread_mutex_lock(&P.lock);
	if (lo >= P.c.heap_pages)
		ranges_claim(P.ranges, lo - P.c.heap_pages, n); /* MAP_FIXED replaces what was there */
	forget(lo, lo + n, PTE_EMPTY);
	err = syscall(SYS_mprotect, addr, n << PAGE_SHIFT, prot) ? -errno : 0;
	pthread_mutex_unlock(&P.lock);
	return err;
}

int pager_munmap(void *addr, size_t len)
{
	uint64_t lo = page_of(addr), n = npages_of(len);

	if (!in_region(addr, len) || ((uintptr_t)addr & (PAGE_SIZE - 1)))
		return -EINVAL;
	if (lo < P.c.heap_pages) /* the allocator's arena is never unmapped, only discarded */
		return pager_discard(addr, len);
	pthread_mutex_lock(&P.lock);
	forget(lo, lo + n, PTE_FREE);
	syscall(SYS_mprotect, addr, n << PAGE_SHIFT, PROT_READ | PROT_WRITE);
	for (uint64_t i = lo; i < lo + n; i++) /* pages already free are skipped */
		ranges_free(P.ranges, i - P.c.heap_pages, 1);
	pthread_mutex_unlock(&P.lock);
	return 0;
}

int pager_discard(void *addr, size_t len)
{
	uint64_t lo = page_of(addr), n = npages_of(len);

	if (!in_region(addr, len) || ((uintptr_t)addr & (PAGE_SIZE - 1)))
		return -EINVAL;
	pthread_mutex_lock(&P.lock);
	forget(lo, lo + n, PTE_EMPTY);
	pthread_mutex_unlock(&P.lock);
	return 0;
}

/* Moves page entries and resident contents from [from, +n) to [to, +n). */
static int move_pages(uint64_t from, uint64_t to, uint64_t n)
{
	for (uint64_t i = 0; i < n; i++) {
		pte_t e = P.pt[from + i];
		unsigned s = pte_state(e);
		int err;

		if (s == PTE_DIRTY || s == PTE_CLEAN) {
			if (!P.detached) {
				err = uffd_copy(P.c.uffd, page_addr(to + i), page_addr(from + i), PAGE_SIZE, s == PTE_CLEAN);
				if (err)
					return err;
				became_resident(to + i, s, pte_node(e), pte_pfn(e));
				P.pt[to + i] |= e & PTE_KEEP; /* the frame moves with the page */
				set_resident(-1);
			} else {
				memcpy(page_addr(to + i), page_addr(from + i), PAGE_SIZE);
				P.pt[to + i] = e;
			}
		} else if (s == PTE_REMOTE) {
			rbuf_drop(P.rb, from + i);
			P.pt[to + i] = pte_make(P.pt[to + i], PTE_REMOTE, pte_node(e), pte_pfn(e));
		} else {
			P.pt[to + i] = pte_set_state(P.pt[to + i], PTE_EMPTY);
		}
		P.pt[from + i] = pte_make(e, PTE_EMPTY, 0, 0);
	}
	return 0;
}

/* Moves [lo, +on) to [start, +nn) (nn may be shorter: the tail is dropped);
 * the source is unmapped, or with MREMAP_DONTUNMAP left mapped and empty. */
static int move_range(uint64_t lo, uint64_t on, uint64_t start, uint64_t nn, int flags)
{
	uint64_t keep = nn < on ? nn : on;
	int err;

	forget(start, start + nn, PTE_EMPTY);
	/* the kernel gives the moved range its old protection; we track none and
	 * assume read-write, the only kind the malloc family and programs move */
	syscall(SYS_mprotect, page_addr(start), nn << PAGE_SHIFT, PROT_READ | PROT_WRITE);
	flush_all(); /* no page of the old range may sit in a write buffer under its old index */
	if ((err = move_pages(lo, start, keep)))
		return err;
	if (flags & MREMAP_DONTUNMAP) { /* stays mapped, reads zero like a fresh mapping */
		forget(lo, lo + on, PTE_EMPTY);
		return 0;
	}
	forget(lo, lo + on, PTE_FREE);
	for (uint64_t i = lo; i < lo + on; i++)
		ranges_free(P.ranges, i - P.c.heap_pages, 1);
	return 0;
}

/* mremap(2) semantics inside the mmap area: shrink or grow in place, else move
 * (MREMAP_MAYMOVE) to a free range or to newaddr (MREMAP_FIXED, which replaces
 * whatever was mapped there). */
static int remap_locked(uint64_t lo, uint64_t on, uint64_t nn, int flags, void *newaddr, void **out)
{
	uint64_t start;
	int err;

	if ((flags & (MREMAP_FIXED | MREMAP_DONTUNMAP)) && !(flags & MREMAP_MAYMOVE))
		return -EINVAL;
	/* without MREMAP_FIXED, newaddr is only a hint (Linux ≥ 6.x checks its alignment) */
	if (((flags & MREMAP_DONTUNMAP) && nn != on) || ((uintptr_t)newaddr & (PAGE_SIZE - 1)))
		return -EINVAL;
	if (flags & MREMAP_FIXED) {
		start = page_of(newaddr);
		if (!in_region(newaddr, nn << PAGE_SHIFT) ||
		    start < P.c.heap_pages || (start < lo + on && lo < start + nn))
			return -EINVAL;
		if ((err = ranges_claim(P.ranges, start - P.c.heap_pages, nn)))
			return err;
	} else if (flags & MREMAP_DONTUNMAP) {
		if ((err = ranges_alloc(P.ranges, nn, &start)))
			return err;
		start += P.c.heap_pages;
	} else if (nn <= on) {
		if (nn < on) {
			forget(lo + nn, lo + on, PTE_FREE);
			for (uint64_t i = lo + nn; i < lo + on; i++)
				ranges_free(P.ranges, i - P.c.heap_pages, 1);
		}
		*out = page_addr(lo);
		return 0;
	} else if (!ranges_take(P.ranges, lo + on - P.c.heap_pages, nn - on)) {
		forget(lo + on, lo + nn, PTE_EMPTY);
		*out = page_addr(lo);
		return 0;
	} else if (!(flags & MREMAP_MAYMOVE)) {
		return -ENOMEM;
	} else if ((err = ranges_alloc(P.ranges, nn, &start))) {
		return err;
	} else {
		start += P.c.heap_pages;
	}
	if ((err = move_range(lo, on, start, nn, flags)))
		return err;
	*out = page_addr(start);
	return 0;
}

int pager_mremap(void *old, size_t oldlen, size_t newlen, int flags, void *newaddr, void **out)
{
	uint64_t lo = page_of(old);
	int err;

	if (!in_region(old, oldlen) || lo < P.c.heap_pages || ((uintptr_t)old & (PAGE_SIZE - 1)) || !newlen)
		return -EINVAL;
	pthread_mutex_lock(&P.lock);
	err = remap_locked(lo, npages_of(oldlen), npages_of(newlen), flags, newaddr, out);
	pthread_mutex_unlock(&P.lock);
	return err;
}

/* ---- fork ---- */

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22
#endif

/* Faults in every page that is not resident from this (program) thread with
 * MADV_POPULATE_READ, which the handler serves like any read fault (a read of
 * /proc/self/mem would not wait for userfaultfd). Eviction is off meanwhile. */
static bool bring_home(uint64_t lo, uint64_t hi, bool read)
{
	bool any = false;

	for (uint64_t i = lo; i < hi; i++) {
		unsigned s = pte_state(__atomic_load_n(&P.pt[i], __ATOMIC_RELAXED));

		if (s != PTE_REMOTE && s != PTE_WBUF)
			continue;
		any = true;
		if (read && raw_madvise(page_addr(i), PAGE_SIZE, MADV_POPULATE_READ))
			(void)*(volatile char *)page_addr(i); /* kernel without POPULATE_READ */
	}
	return any;
}

static bool any_away(bool read)
{
	bool heap = bring_home(0, P.heap_hi, read);

	return bring_home(P.c.heap_pages, P.map_hi, read) || heap;
}

void pager_fork(int phase)
{
	if (P.detached || !P.pt)
		return;
	switch (phase) {
	case FORK_PREPARE:
		__atomic_store_n(&P.no_evict, 1, __ATOMIC_RELEASE);
		for (;;) {
			any_away(true);
			pthread_mutex_lock(&P.lock);
			if (!any_away(false))
				break;
			pthread_mutex_unlock(&P.lock);
		}
		return;
	case FORK_PARENT:
		__atomic_store_n(&P.no_evict, 0, __ATOMIC_RELEASE);
		pthread_mutex_unlock(&P.lock);
		return;
	case FORK_CHILD:
		P.detached = true;
		pthread_mutex_init(&P.lock, NULL);
		close(P.c.uffd);
		return;
	}
}

/* pager: the page table and the region's bookkeeping: start-up, the
 * interposed mmap family (mmap, munmap, mremap, MADV_DONTNEED) and fork.
 * The fault path is in fault.c, eviction in reclaim.c.
 *
 * Concurrency: one lock. The handler thread takes it for each batch of fault
 * messages, the reclaimer for each batch of victims; interposed mmap-family
 * calls take it from program threads. Code holding it never touches a page
 * that could be missing (that fault would wait for the lock forever): page
 * contents are moved by the kernel (UFFDIO_COPY, UFFDIO_MOVE, pread of
 * /proc/self/mem) or come from runtime buffers.
 *
 * Page life cycle: EMPTY -zero fill-> DIRTY -evict-> WBUF -flush-> REMOTE
 * -fault-> CLEAN (write-protected, keeps its frame) -write-> DIRTY (frame
 * released; in async mode the kernel lets the write through, and eviction
 * compares the content with the remote copy's hash); CLEAN -evict-> REMOTE
 * without rewriting. */
#include "pager.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <string.h>
#include <sys/mman.h>
#ifndef MREMAP_DONTUNMAP
#define MREMAP_DONTUNMAP 4
#endif
#include <sys/syscall.h>
#include <unistd.h>

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22
#endif

#include "backup.h"
#include "client.h"
#include "evict.h"
#include "foreign.h"
#include "forkchild.h"
#include "log.h"
#include "pagemap.h"
#include "pager_impl.h"
#include "placement.h"
#include "ranges.h"
#include "prefetch.h"
#include "rbuf.h"
#include "replica.h"
#include "rtmem.h"
#include "os.h"
#include "uffd.h"
#include "wbuf.h"

struct pager P = {
	.lock = PTHREAD_MUTEX_INITIALIZER, .reclaim_wake = PTHREAD_COND_INITIALIZER,
	.memfd = -1, .pmfd = -1, .mapsfd = -1,
};


/* The program cannot go on correctly: say why and stop it now. SIGKILL,
 * because the program's own handlers could touch memory nobody can serve. */
void __attribute__((noreturn)) pager_die(const char *what, uintptr_t addr, int err)
{
	errno = -err;
	log_error("%s (page %#lx): %m; stopping the program, its memory can no longer be served",
		  what, (unsigned long)addr);
	kill(getpid(), SIGKILL);
	_exit(137);
}

void pager_set_resident(int64_t delta)
{
	P.resident += (uint64_t)delta;
	__atomic_store_n(&P.c.stats->resident_bytes, P.resident << PAGE_SHIFT, __ATOMIC_RELAXED);
	if ((P.resident << PAGE_SHIFT) > P.c.stats->resident_peak_bytes)
		__atomic_store_n(&P.c.stats->resident_peak_bytes, P.resident << PAGE_SHIFT, __ATOMIC_RELAXED);
}

/* Page idx just became resident: new generation, into the eviction ring. */
void pager_became_resident(uint64_t idx, unsigned state, unsigned node, uint32_t pfn)
{
	pte_t e = pte_at(idx);
	unsigned gen = (pte_gen(e) + 1) & PTE_GEN_MASK;

	e = (e & ~((PTE_GEN_MASK << PTE_GEN_SHIFT) | PTE_REF)) | ((pte_t)gen << PTE_GEN_SHIFT);
	pte_put(idx, pte_make(e, state, node, pfn));
	if (state == PTE_DIRTY) /* written, or about to be: no extra copy stays valid */
		replica_drop(idx);
	evict_push(P.ev, &P.tab, idx, gen);
	pager_set_resident(1);
	pager_raise_hi(idx, idx + 1);
}

void pager_release_frame(unsigned node, uint32_t pfn)
{
	if (forkchild_defer(node, pfn)) /* a forked child may still read it */
		return;
	if (!client_release(P.c.client, node, pfn, 1)) {
		STAT_ADD(P.c.stats, frames_released, 1);
		__atomic_fetch_sub(&P.c.stats->frames_held[node], 1, __ATOMIC_RELAXED);
	}
}



/* Pages resident in memory without ever having faulted (the allocator's,
 * touched before the region was registered; a reattached child's, which
 * all came home): into the page table as dirty, and counted. The present
 * runs come from PAGEMAP_SCAN, which skips the unpopulated page tables of
 * a sparse heap (mincore over the first GiB cost every process about a
 * fifth of a millisecond to start: docs/DECISIONS.md D80); mincore where
 * the kernel lacks it. */
#define ADOPT_SCAN (1ull << 18) /* pages: mincore at start-up looks at the first GiB of the heap */
static void adopt_run(uintptr_t lo, uintptr_t hi, void *arg)
{
	(void)arg;
	for (uint64_t i = ((char *)lo - P.c.base) >> PAGE_SHIFT; i < (uint64_t)((char *)hi - P.c.base) >> PAGE_SHIFT; i++)
		if (pte_state(pte_at(i)) != PTE_FOREIGN)
			pager_became_resident(i, PTE_DIRTY, 0, 0);
}

static void adopt(uint64_t lo, uint64_t hi)
{
	unsigned char *vec;

	if (hi <= lo || (P.pmfd >= 0 && !pagemap_present(P.pmfd, (uintptr_t)page_addr(lo), (uintptr_t)page_addr(hi),
							  adopt_run, NULL)))
		return;
	vec = rt_alloc(hi - lo);
	if (!vec || os_mincore(page_addr(lo), (hi - lo) << PAGE_SHIFT, vec))
		log_warn("cannot find pages touched before start-up (%m); they stay outside the budget");
	else
		for (uint64_t i = lo; i < hi; i++)
			if (vec[i - lo] & 1)
				adopt_run((uintptr_t)page_addr(i), (uintptr_t)page_addr(i + 1), NULL);
	rt_free(vec, hi - lo);
}

/* What pager_init and pager_reattach share: the buffers, the memnodes'
 * write buffers, the descriptors, the registration of the region. */
static int start(const struct pager_config *cfg)
{
	int err;

	P.c = *cfg;
	P.budget = cfg->budget_pages;
	cfg->stats->budget_bytes = cfg->budget_pages << PAGE_SHIFT;
	if ((cfg->prefetch_policy == PREFETCH_READ_BUFFER &&
	     (err = rbuf_create(cfg->rbuf_pages, (uint32_t)pager_opt(OPT_PREFETCH), &P.rb))) ||
	    (err = evict_create(2 * cfg->budget_pages + 4096, pager_opt(OPT_EVICT_POLICY) == EVICT_CLOCK, &P.ev)))
		return err;
	P.nnodes = client_nodes(cfg->client); /* at most OPT_MEMNODE_MAX: the client refuses more */
	for (unsigned n = 0; n < P.nnodes; n++)
		if ((err = reclaim_add_node(n)))
			return err;
	P.preferred = placement_preferred(placement_local_nid(), (uint32_t)getpid(), P.nnodes);
	P.cur = P.preferred;
	P.rng = now_ns() ^ ((uint64_t)getpid() << 32) ^ 0x9e3779b97f4a7c15ull;
	cfg->stats->preferred_node = P.preferred; /* where first copies go while it has room */
	P.memfd = open("/proc/self/mem", O_RDONLY | O_CLOEXEC);
	if (P.memfd < 0) {
		log_error("cannot open /proc/self/mem to copy pages out: %m");
		return -errno;
	}
	/* pagemap: which pages a failed move took out anyway (async eviction),
	 * and the budget measures what lies outside the region. maps:
	 * which mappings are writable. Both name this process, so each process
	 * opens its own, and here, before the program runs or while a child's
	 * own descriptors are held back (an open as it runs could take a number
	 * the program is about to get: D47). */
	if ((err = pagemap_open(&P.pmfd)) && cfg->async)
		return err;
	P.mapsfd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
	if ((err = uffd_register(cfg->uffd, cfg->base, cfg->npages << PAGE_SHIFT, true)) ||
	    (err = reclaim_init()) || (err = fault_init()) || (err = replica_init()) ||
	    (err = backup_init(opt_str(cfg->opts, OPT_BACKUP_DIR))))
		return err;
	cfg->stats->rbuf_bytes = rbuf_bytes(P.rb);
	cfg->stats->wbuf_bytes = (uint64_t)P.nnodes * pager_opt(OPT_WBUF_PAGES) * PAGE_SIZE;
	return 0;
}

int pager_init(const struct pager_config *cfg)
{
	int err;

	if ((err = pagetab_init(&P.tab, cfg->npages)) || (err = ranges_create(cfg->npages - cfg->heap_pages, &P.ranges)) || (err = start(cfg)))
		return err;
	adopt(0, P.pmfd >= 0 || cfg->heap_pages < ADOPT_SCAN ? cfg->heap_pages : ADOPT_SCAN);
	return 0;
}

/* Every page that had a copy elsewhere or was resident is now here or was
 * discarded: no frame, no eviction-ring entry; what is mapped where
 * (handed out, foreign) and the protections stay. */
static void forget_locations(uint64_t lo, uint64_t hi)
{
	for (uint64_t i = lo; i < hi; i++) {
		pte_t e = pte_at(i);
		unsigned s = pte_state(e);

		if (s != PTE_FREE && s != PTE_FOREIGN && s != PTE_EMPTY)
			pte_put(i, pte_make(e, PTE_EMPTY, 0, 0) & ~PTE_KEEP);
	}
}

/* Under the lock, which program threads may wait for meanwhile: every
 * field after it starts anew but the tables and what they describe. */
int pager_reattach(const struct pager_config *cfg)
{
	struct pager fresh = {
		.memfd = -1, .pmfd = -1, .mapsfd = -1, .tab = P.tab, .ranges = P.ranges, .heap_hi = P.heap_hi,
		.map_hi = P.map_hi, .locked = P.locked, .locked_all = P.locked_all, .wipe_on_fork = P.wipe_on_fork,
	};
	int parents[] = { P.memfd, P.pmfd, P.mapsfd }; /* copies of the parent's, naming the parent */
	size_t at = offsetof(struct pager, c);
	int err;

	pager_lock("a forked child taking over its memory");
	for (size_t i = 0; i < sizeof(parents) / sizeof(parents[0]); i++)
		if (parents[i] >= 0)
			close(parents[i]);
	memcpy((char *)&P + at, (char *)&fresh + at, sizeof(P) - at);
	pthread_cond_init(&P.reclaim_wake, NULL); /* a copy of the parent's, whose waiters are not here */
	forget_locations(0, P.heap_hi);
	forget_locations(cfg->heap_pages, P.map_hi);
	if (!(err = start(cfg))) {
		adopt(0, P.heap_hi);
		adopt(cfg->heap_pages, P.map_hi);
	}
	pager_unlock();
	return err;
}

void pager_fit(void)
{
	pager_lock("fitting the budget");
	reclaim_make_room(0);
	pager_unlock();
}

/* ---- the interposed mmap family ---- */

static bool in_region(const void *addr, size_t len)
{
	return (const char *)addr >= P.c.base && len <= (P.c.npages << PAGE_SHIFT) &&
	       (const char *)addr + len <= page_addr(P.c.npages);
}

/* Forgets the entries of pages [lo, hi): frames released, buffers
 * cancelled, resident pages no longer counted; state to (EMPTY, FREE or
 * FOREIGN). The pages themselves are the caller's to drop. */
void pager_forget_entries(uint64_t lo, uint64_t hi, unsigned to)
{
	int64_t res = 0;
	uint64_t unlocked = 0;

	for (uint64_t i = lo; i < hi; i++) {
		pte_t e = pte_at(i);

		/* a free page reads as zero once mapped: left as it is, so that
		 * mapping or unmapping a huge range writes no table page (D50) */
		if (pte_state(e) == PTE_FREE && (to == PTE_EMPTY || (to == PTE_FREE && !(e & PTE_ATTRS))))
			continue;
		if (P.detached) {
			if (pte_state(e) == PTE_REMOTE || pte_state(e) == PTE_WBUF || pte_state(e) == PTE_LOST)
				forkchild_discarded(i); /* never the parent's snapshot copy again */
			pte_put(i, pte_set_state(e, to));
			continue;
		}
		switch (pte_state(e)) {
		case PTE_CLEAN:
			res--;
			/* fall through */
		case PTE_REMOTE:
			pager_release_frame(pte_node(e), pte_pfn(e));
			replica_drop(i);
			rbuf_drop(P.rb, i);
			break;
		case PTE_DIRTY:
			if (e & PTE_KEEP)
				pager_release_frame(pte_node(e), pte_pfn(e));
			res--;
			break;
		case PTE_WBUF:
			reclaim_wbuf_take(pte_node(e), i);
			break;
		}
		if (pte_state(e) != PTE_FREE && pte_state(e) != PTE_EMPTY && pte_state(e) != PTE_FOREIGN)
			STAT_ADD(P.c.stats, pages_discarded, 1);
		if (to == PTE_FREE || to == PTE_FOREIGN) { /* unmapped: its protection and lock go with it */
			unlocked += !!(e & PTE_LOCKED);
			e &= ~PTE_ATTRS;
		}
		pte_put(i, pte_make(e, to, 0, 0));
	}
	if (!P.detached) {
		prot_count_locked(-(int64_t)unlocked);
		pager_set_resident(res);
	}
}

/* Forgets pages [lo, hi) (none of them foreign) and drops them: they read
 * as zero afterwards. */
static void forget(uint64_t lo, uint64_t hi, unsigned to)
{
	pager_forget_entries(lo, hi, to);
	prot_discard(lo, hi);
}

static uint64_t page_of(const void *addr) { return (uint64_t)((const char *)addr - P.c.base) >> PAGE_SHIFT; }
static uint64_t npages_of(size_t len) { return (len + PAGE_SIZE - 1) >> PAGE_SHIFT; }

/* A new mapping [lo, +n) gets prot (free pages are read-write already),
 * and is not locked (unless by mmap's flags, after this). */
static int set_prot(uint64_t lo, uint64_t n, int prot, bool always)
{
	uint64_t unlocked = 0;

	if ((always || prot != (PROT_READ | PROT_WRITE)) &&
	    os_mprotect(page_addr(lo), n << PAGE_SHIFT, prot))
		return -errno;
	for (uint64_t i = lo; i < lo + n; i++) {
		pte_t old = pte_at(i), e = pte_set_prot(old & ~PTE_LOCKED, (unsigned)prot & 7);

		unlocked += !!(old & PTE_LOCKED);
		if (e != old) /* unchanged entries are not written: D50 */
			pte_put(i, e);
	}
	prot_count_locked(-(int64_t)unlocked);
	return 0;
}

bool pager_fits(size_t len)
{
	return __atomic_load_n(&P.resident, __ATOMIC_RELAXED) + npages_of(len) + P.low_free <= __atomic_load_n(&P.budget, __ATOMIC_RELAXED);
}

int pager_mmap(size_t len, int prot, void **out)
{
	uint64_t n = npages_of(len), start;
	int err;

	pager_lock("mmap");
	err = ranges_alloc(P.ranges, n, &start);
	if (!err) {
		start += P.c.heap_pages; /* free in ranges: PTE_FREE, no attributes (D50) */
		err = set_prot(start, n, prot, false);
		if (err)
			ranges_free(P.ranges, start - P.c.heap_pages, n);
	}
	pager_unlock();
	if (!err)
		*out = page_addr(start);
	return err;
}

int pager_outside(size_t len)
{
	static int warned;

	STAT_ADD(P.c.stats, bytes_mapped_outside, len);
	if (!__atomic_exchange_n(&warned, 1, __ATOMIC_RELAXED))
		log_warn("a mapping of %zu MiB finds no room in the managed region (option region, %llu MiB of which "
			 "%llu MiB are free for mappings): the kernel maps it, unmanaged, outside the budget "
			 "(bytes_mapped_outside counts every such mapping); a larger region manages it", len >> 20,
			 (unsigned long long)(P.c.npages >> 8), (unsigned long long)(ranges_free_pages(P.ranges) >> 8));
	return 0;
}

/* MAP_FIXED anonymous over the region: fresh zero pages, without replacing
 * the registered mapping (which would lose userfaultfd coverage); foreign
 * mappings there are replaced by managed memory again. With noreplace
 * (MAP_FIXED_NOREPLACE) only pages the program has not mapped: -EEXIST
 * otherwise, as the kernel says. */
int pager_mmap_fixed(void *addr, size_t len, int prot, bool noreplace)
{
	uint64_t lo = page_of(addr), n = npages_of(len);
	int err;

	if (!in_region(addr, len) || ((uintptr_t)addr & (PAGE_SIZE - 1)))
		return -EINVAL;
	pager_lock("mmap MAP_FIXED");
	if (noreplace && (lo < P.c.heap_pages || ranges_take(P.ranges, lo - P.c.heap_pages, n))) {
		pager_unlock();
		return -EEXIST; /* something of the program's is mapped there */
	}
	err = foreign_return(lo, lo + n);
	if (!err && lo >= P.c.heap_pages)
		err = ranges_claim(P.ranges, lo - P.c.heap_pages, n); /* MAP_FIXED replaces what was there */
	if (!err) {
		forget(lo, lo + n, PTE_EMPTY);
		err = set_prot(lo, n, prot, true);
	}
	pager_unlock();
	return err;
}

/* Unmaps the managed pages [lo, hi) of the mmap area: they become free.
 * (The allocator's arena is never unmapped, only discarded.) */
static int unmap_managed(uint64_t lo, uint64_t hi)
{
	if (lo < P.c.heap_pages) {
		forget(lo, hi, PTE_EMPTY);
		return 0;
	}
	forget(lo, hi, PTE_FREE);
	os_mprotect(page_addr(lo), (hi - lo) << PAGE_SHIFT, PROT_READ | PROT_WRITE);
	/* its table leaves are reused (D50, D51); a dropped entry reads 0, and
	 * a stale eviction item that matches it only names a candidate */
	pagetab_drop(&P.tab, lo, hi);
	return ranges_release(P.ranges, lo - P.c.heap_pages, hi - lo);
}

/* Foreign runs go back to the kernel's view of an unmapped range: the
 * region's reservation, managed and free again. */
static int unmap_run(uint64_t lo, uint64_t hi, bool foreign, void *arg)
{
	(void)arg;
	return foreign ? foreign_return(lo, hi) : unmap_managed(lo, hi);
}

int pager_munmap(void *addr, size_t len)
{
	uint64_t lo = page_of(addr), n = npages_of(len);
	int err;

	if (!in_region(addr, len) || ((uintptr_t)addr & (PAGE_SIZE - 1)))
		return -EINVAL;
	pager_lock("munmap");
	err = foreign_runs(lo, lo + n, unmap_run, NULL);
	pager_unlock();
	return err;
}

/* madvise of the managed pages: the discarding kinds forget them, the
 * huge-page hints are ignored (faults are per 4 KiB page), anything else
 * goes to the kernel. Foreign pages get exactly what the program asked. */
static bool any_locked(uint64_t lo, uint64_t hi)
{
	for (uint64_t i = lo; i < hi; i++)
		if (pte_at(i) & PTE_LOCKED)
			return true;
	return false;
}

static int advise_run(uint64_t lo, uint64_t hi, bool foreign, void *arg)
{
	int advice = *(int *)arg;

	if (!foreign) {
		switch (advice) {
		case MADV_DONTNEED:
		case MADV_FREE:
		case MADV_REMOVE:
			if (any_locked(lo, hi))
				return -EINVAL; /* as the kernel says for a locked mapping */
			forget(lo, hi, PTE_EMPTY);
			return 0;
		case MADV_HUGEPAGE:
		case MADV_NOHUGEPAGE:
			return 0;
		case MADV_COLD: /* no second chance: first in line at the next eviction */
			for (uint64_t i = lo; i < hi; i++)
				pte_put(i, pte_at(i) & ~PTE_REF);
			return 0;
		case MADV_PAGEOUT:
			reclaim_range(lo, hi);
			return 0;
		}
	}
	return raw_madvise(page_addr(lo), (hi - lo) << PAGE_SHIFT, advice);
}

int pager_madvise(void *addr, size_t len, int advice)
{
	uint64_t lo = page_of(addr), n = npages_of(len);
	int err;

	if (!in_region(addr, len) || ((uintptr_t)addr & (PAGE_SIZE - 1)))
		return -EINVAL;
	pager_lock("madvise");
	err = foreign_runs(lo, lo + n, advise_run, &advice);
	pager_unlock();
	return err;
}

/* Where resident page idx can be read from: itself, or (its mapping not
 * readable) a copy in bounce made through /proc/self/mem. */
static const char *readable_copy(uint64_t idx, char *bounce)
{
	if (pte_prot(pte_at(idx)) & PROT_READ)
		return page_addr(idx);
	if (pread(P.memfd, bounce, PAGE_SIZE, (off_t)(uintptr_t)page_addr(idx)) != (ssize_t)PAGE_SIZE)
		return page_addr(idx); /* then UFFDIO_COPY fails with EFAULT, and so does mremap */
	return bounce;
}

/* The moved pages [to, +n) get the protections and locks their sources
 * had (from, +on: the part beyond on, grown, those of the source's first
 * page). A locked part is locked on fault: its pages are resident already,
 * and populating under the pager lock would wait for itself. */
static void move_prot(uint64_t from, uint64_t on, uint64_t to, uint64_t n)
{
	for (uint64_t i = 0; i < n;) {
		pte_t a = pte_at(from + (i < on ? i : 0)) & PTE_ATTRS;
		unsigned prot = pte_prot(a);
		uint64_t j = i + 1;

		while (j < n && (pte_at(from + (j < on ? j : 0)) & PTE_ATTRS) == a)
			j++;
		set_prot(to + i, j - i, (int)prot, prot != (PROT_READ | PROT_WRITE));
		if (a & PTE_LOCKED) {
			for (uint64_t k = to + i; k < to + j; k++)
				pte_put(k, pte_at(k) | PTE_LOCKED);
			prot_count_locked((int64_t)(j - i));
			os_mlock2(page_addr(to + i), (j - i) << PAGE_SHIFT, MLOCK_ONFAULT);
		}
		i = j;
	}
}

/* Moves page entries and resident contents from [from, +n) to [to, +n). */
static int move_pages(uint64_t from, uint64_t to, uint64_t n)
{
	char bounce[PAGE_SIZE] __attribute__((aligned(64)));

	for (uint64_t i = 0; i < n; i++) {
		pte_t e = pte_at(from + i);
		unsigned s = pte_state(e);
		int err;

		if (P.detached && forkchild_is_lazy_child() && (s == PTE_REMOTE || s == PTE_WBUF)) {
			/* the parent serves it at its old address only: fetch it there */
			raw_madvise(page_addr(from + i), PAGE_SIZE, MADV_POPULATE_READ);
			s = PTE_DIRTY;
			e = pte_set_state(e, s);
		}
		if (s == PTE_DIRTY || s == PTE_CLEAN) {
			if (!P.detached) {
				err = uffd_copy(P.c.uffd, page_addr(to + i), readable_copy(from + i, bounce), PAGE_SIZE,
						s == PTE_CLEAN, NULL);
				if (err)
					return err;
				pager_became_resident(to + i, s, pte_node(e), pte_pfn(e));
				sum_put(to + i, sum_at(from + i));
				pte_put(to + i, pte_at(to + i) | (e & PTE_KEEP)); /* the frame moves with the page */
				replica_move(from + i, to + i);
				pager_set_resident(-1);
			} else {
				memcpy(page_addr(to + i), page_addr(from + i), PAGE_SIZE);
				pte_put(to + i, e);
			}
		} else if (s == PTE_REMOTE) {
			rbuf_drop(P.rb, from + i);
			sum_put(to + i, sum_at(from + i));
			pte_put(to + i, pte_make(pte_at(to + i), PTE_REMOTE, pte_node(e), pte_pfn(e)));
			replica_move(from + i, to + i);
		} else if (s == PTE_LOST) { /* still lost where it goes: never zero in silence */
			pte_put(to + i, pte_set_state(pte_at(to + i), PTE_LOST));
		} else {
			pte_put(to + i, pte_set_state(pte_at(to + i), PTE_EMPTY));
		}
		pte_put(from + i, pte_make(e, PTE_EMPTY, 0, 0));
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
	/* read-write while the pages are copied in; then, as the kernel does,
	 * the moved range gets its old protection */
	set_prot(start, nn, PROT_READ | PROT_WRITE, true);
	reclaim_flush_all(); /* no page of the old range may sit in a write buffer under its old index */
	if ((err = move_pages(lo, start, keep)))
		return err;
	move_prot(lo, on, start, nn);
	if (flags & MREMAP_DONTUNMAP) { /* stays mapped, reads zero like a fresh mapping */
		forget(lo, lo + on, PTE_EMPTY);
		return 0;
	}
	forget(lo, lo + on, PTE_FREE);
	pagetab_drop(&P.tab, lo, lo + on);
	return ranges_release(P.ranges, lo - P.c.heap_pages, on);
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
		if ((err = foreign_return(start, start + nn)) ||
		    (err = ranges_claim(P.ranges, start - P.c.heap_pages, nn)))
			return err;
	} else if (flags & MREMAP_DONTUNMAP) {
		if ((err = ranges_alloc(P.ranges, nn, &start)))
			return err;
		start += P.c.heap_pages;
	} else if (nn <= on) {
		if (nn < on)
			unmap_managed(lo + nn, lo + on);
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

/* A managed source is moved by the pager; a foreign one (or one outside the
 * region moved into it) by the kernel, with the bookkeeping of what it
 * unmapped and mapped (foreign.c). A source of both kinds can only shrink,
 * as the kernel's must lie in one mapping to grow or move. */
int pager_mremap(void *old, size_t oldlen, size_t newlen, int flags, void *newaddr, void **out)
{
	uint64_t lo = page_of(old), on = npages_of(oldlen), nn = npages_of(newlen);
	unsigned kinds;
	int err;

	if (((uintptr_t)old & (PAGE_SIZE - 1)) || !newlen)
		return -EINVAL;
	pager_lock("mremap");
	/* a source outside the region is the kernel's: only its target is in it */
	kinds = in_region(old, oldlen) ? foreign_kinds(lo, lo + on) : FOREIGN_ALL;
	if (kinds != FOREIGN_NONE && in_region(old, oldlen) && nn < on && !(flags & MREMAP_FIXED)) {
		/* shrinking in place unmaps the tail */
		if (!(err = foreign_runs(lo + nn, lo + on, unmap_run, NULL)))
			*out = old;
	} else if (kinds == FOREIGN_ALL) {
		err = foreign_mremap(old, oldlen, newlen, flags, newaddr, out);
	} else if (kinds == FOREIGN_NONE) {
		err = lo >= P.c.heap_pages ? remap_locked(lo, on, nn, flags, newaddr, out)
					   : -EINVAL; /* the allocator's arena is not moved */
	} else {
		err = -EFAULT; /* the kernel grows or moves one mapping only */
	}
	pager_unlock();
	return err;
}

uint64_t pager_lock_held_ns(uint64_t now, int *tid_out, const char **why_out)
{
	uint64_t since = __atomic_load_n(&P.held_since, __ATOMIC_ACQUIRE);

	if (!since || now <= since)
		return 0;
	*tid_out = P.held_tid;
	*why_out = P.held_why;
	return now - since;
}

/* ---- fork ---- */

/* Faults in every page that is not resident from this (program) thread with
 * MADV_POPULATE_READ, which the handler serves like any read fault (a read of
 * /proc/self/mem would not wait for userfaultfd). Eviction is off meanwhile. */
uint64_t pager_bring_home(uint64_t lo, uint64_t hi, bool read)
{
	uint64_t away = 0;

	for (uint64_t i = lo; i < hi; i++) {
		unsigned s = pte_state(pte_at(i));

		if (s != PTE_REMOTE && s != PTE_WBUF && s != PTE_LOST) /* a lost one stops the program here */
			continue;
		away++;
		if (!read)
			continue;
		if (!(pte_prot(pte_at(i)) & PROT_READ) && P.detached) {
			/* a lazy child (D45) has no memnode: its parent serves the
			 * fault, which must be let through for a moment */
			os_mprotect(page_addr(i), PAGE_SIZE, PROT_READ);
			raw_madvise(page_addr(i), PAGE_SIZE, MADV_POPULATE_READ);
			os_mprotect(page_addr(i), PAGE_SIZE, (int)pte_prot(pte_at(i)));
		} else if (!(pte_prot(pte_at(i)) & PROT_READ)) { /* no fault of ours can bring it: the pager does */
			pager_lock("bring a PROT_NONE page home");
			fault_fetch(i, s);
			pager_unlock();
		} else if (raw_madvise(page_addr(i), PAGE_SIZE, MADV_POPULATE_READ)) {
			(void)*(volatile char *)page_addr(i); /* kernel without POPULATE_READ */
		}
	}
	return away;
}

uint64_t pager_bring_all(bool read)
{
	return pager_bring_home(0, P.heap_hi, read) + pager_bring_home(P.c.heap_pages, P.map_hi, read);
}

/* Lazy (D45): the child is served from a snapshot, nothing comes home.
 * Eager (D45, lazy-fork off, too many children, or this process is itself a
 * lazy child, whose children the parent does not serve): every page comes
 * home first. The lock is held across fork either way; while the fork
 * waits for its UFFD_EVENT_FORK to be read, handlers read it without the
 * lock (P.forking). */
static void fork_prepare(void)
{
	__atomic_store_n(&P.no_evict, 1, __ATOMIC_RELEASE);
	if (pager_opt(OPT_LAZY_FORK) && !__atomic_load_n(&P.wipe_on_fork, __ATOMIC_ACQUIRE)) {
		pager_lock("fork");
		reclaim_flush_all(); /* no page of the snapshot may sit in a write buffer */
		if (!forkchild_prepare())
			goto forking;
		pager_unlock();
	}
	for (;;) {
		pager_bring_all(true);
		pager_lock("fork");
		if (!pager_bring_all(false))
			break;
		pager_unlock();
	}
forking:
	/* after this handler, the C library locks its malloc arenas for the
	 * fork: a handler inside UCX (which allocates) would then wait for
	 * them, never read the fork's event, and the fork would wait for it */
	while (__atomic_load_n(&P.reading_unlocked, __ATOMIC_ACQUIRE))
		sched_yield();
	__atomic_store_n(&P.forking, 1, __ATOMIC_RELEASE);
}

void pager_fork(enum fork_phase phase)
{
	if (!P.tab.top)
		return;
	/* A lazy child's children would find its remote pages missing: they
	 * come home first. Its child is then nobody's lazy child, whatever the
	 * copy of its parent's state says: it owns its memory once its parent
	 * is gone, and must not wait for (nor mark discards in) the byte map
	 * its grandparent shares with its parent, whose completion may never
	 * come (the parent may end before it is handed its pages). */
	if (P.detached) {
		if (phase == FORK_PREPARE && forkchild_is_lazy_child())
			pager_bring_all(true);
		else if (phase == FORK_CHILD)
			forkchild_after_fork(0);
		return;
	}
	switch (phase) {
	case FORK_PREPARE:
		fork_prepare();
		return;
	case FORK_PARENT:
		__atomic_store_n(&P.forking, 0, __ATOMIC_RELEASE);
		__atomic_store_n(&P.no_evict, 0, __ATOMIC_RELEASE);
		pager_unlock();
		return;
	case FORK_CHILD:
		forkchild_after_fork(0);
		P.detached = true;
		pthread_mutex_init(&P.lock, NULL);
		close(P.c.uffd);
		return;
	}
}

void pager_fork_result(pid_t pid)
{
	if (!P.detached && P.tab.top)
		forkchild_after_fork(pid);
}

/* A child must find a MADV_WIPEONFORK range zero, not the snapshot's
 * copy, and the pager keeps no per-page record of it: forks are eager from
 * now on (D45). */
void pager_wipe_on_fork(void)
{
	__atomic_store_n(&P.wipe_on_fork, true, __ATOMIC_RELEASE);
}

void pager_exit(void)
{
	if (!P.detached && P.tab.top)
		forkchild_complete_all();
}

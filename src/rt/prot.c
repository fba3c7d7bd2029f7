/* prot: protections and locks of the program's memory in the region.
 *
 * mprotect reaches the kernel under the pager lock, and the new protection
 * is written into the page table (pte.h). Eviction holds the same lock, so
 * a page it finds in a mapping without PROT_WRITE cannot become writable
 * while it is copied out (UFFDIO_MOVE moves only pages of writable mappings;
 * reclaim.c copies the others). A raw mprotect system call bypasses this:
 * such a page keeps the protection the pager knew, the kernel then refuses
 * to move it (-EINVAL) and it stays resident (pages_unmovable).
 *
 * Locked pages (mlock, mlock2, MAP_LOCKED) are marked PTE_LOCKED and never
 * picked as victims; mlockall stops eviction altogether until munlockall.
 * The kernel locks the region's pages on fault only (MCL_ONFAULT for
 * mlockall): populating the whole region, most of which the program has
 * not mapped, would fill it. mlockall(MCL_CURRENT) brings remote pages home
 * as a fork does. A locked mapping refuses MADV_DONTNEED, so discarding
 * pages of one (munmap, a new mapping over them) unlocks them first. */
#include "prot.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "evict.h"
#include "log.h"
#include "pager_impl.h"
#include "ranges.h"
#include "os.h"

/* The part of [addr, addr+len) inside the region, as page indices. */
static bool pages_of(const void *addr, size_t len, uint64_t *lo, uint64_t *hi)
{
	uintptr_t s = (uintptr_t)addr & ~(PAGE_SIZE - 1), e = (uintptr_t)addr + len;
	uintptr_t rs = (uintptr_t)P.c.base, re = (uintptr_t)page_addr(P.c.npages);

	if (!P.tab.top || P.detached)
		return false;
	s = s < rs ? rs : s;
	e = e > re ? re : e;
	if (s >= e)
		return false;
	*lo = (s - rs) >> PAGE_SHIFT;
	*hi = (e - rs + PAGE_SIZE - 1) >> PAGE_SHIFT;
	return true;
}

/* A page of the mmap area the program has not mapped: the kernel would say
 * ENOMEM for it. */
static bool any_unmapped(uint64_t lo, uint64_t hi)
{
	uint64_t s, n;

	if (hi <= P.c.heap_pages)
		return false;
	if (lo < P.c.heap_pages)
		lo = P.c.heap_pages;
	return !ranges_next_free(P.ranges, lo - P.c.heap_pages, &s, &n) && s < hi - P.c.heap_pages;
}

static void set_prot(uint64_t lo, uint64_t hi, int prot)
{
	for (uint64_t i = lo; i < hi; i++) {
		pte_t old = pte_at(i), e = pte_set_prot(old, (unsigned)prot & 7);

		if (pte_state(e) != PTE_FOREIGN && e != old) /* unchanged entries are not written: D50 */
			pte_put(i, e);
	}
}

/* True when this thread holds the pager lock already: a signal handler
 * (mprotect is async-signal-safe, and garbage collectors call it from
 * theirs) interrupted it inside an interposed call. Waiting would never end. */
static bool lock_is_mine(void)
{
	return __atomic_load_n(&P.held_since, __ATOMIC_ACQUIRE) && P.held_tid == os_gettid();
}

int prot_mprotect(void *addr, size_t len, int prot)
{
	uint64_t lo, hi;
	bool mine;
	int err = 0;

	if (!pages_of(addr, len, &lo, &hi))
		return os_mprotect(addr, len, prot) ? -errno : 0;
	mine = lock_is_mine();
	if (!mine)
		pager_lock("mprotect");
	if (any_unmapped(lo, hi))
		err = -ENOMEM;
	else if (os_mprotect(addr, len, prot))
		err = -errno;
	else
		set_prot(lo, hi, prot);
	if (!mine)
		pager_unlock();
	return err;
}

void prot_count_locked(int64_t delta)
{
	P.locked += (uint64_t)delta;
	__atomic_store_n(&P.c.stats->locked_bytes, P.locked << PAGE_SHIFT, __ATOMIC_RELAXED);
	if (P.locked > P.budget && !P.lock_warned) {
		P.lock_warned = true;
		log_warn("the program locked %llu MiB of memory, more than local-mem: locked pages are never "
			 "evicted, so the budget is exceeded", (unsigned long long)(P.locked >> 8));
	}
}

/* Marks [lo, hi) locked (on) or not; unlocked resident pages go back into
 * the eviction ring. Returns the pages that changed. */
static uint64_t mark_locked(uint64_t lo, uint64_t hi, bool on)
{
	uint64_t n = 0;

	for (uint64_t i = lo; i < hi; i++) {
		pte_t e = pte_at(i);

		if (pte_state(e) == PTE_FOREIGN || !(e & PTE_LOCKED) == !on)
			continue;
		pte_put(i, on ? e | PTE_LOCKED : e & ~PTE_LOCKED);
		if (!on && pte_resident(e))
			evict_push(P.ev, &P.tab, i, pte_gen(e));
		n++;
	}
	prot_count_locked(on ? (int64_t)n : -(int64_t)n);
	if (on && n) /* a locked entry that was never resident still counts for munlockall */
		pager_raise_hi(lo, hi);
	return n;
}

int prot_mlock(void *addr, size_t len, unsigned flags)
{
	uint64_t lo, hi;

	if (!pages_of(addr, len, &lo, &hi))
		return os_mlock2(addr, len, flags) ? -errno : 0;
	pager_lock("mlock");
	if (any_unmapped(lo, hi)) {
		pager_unlock();
		return -ENOMEM;
	}
	mark_locked(lo, hi, true); /* before the kernel faults them in: never a victim meanwhile */
	pager_unlock();
	/* populates (unless on fault): remote pages come home through the handler */
	if (os_mlock2(addr, len, flags)) {
		int err = -errno;

		pager_lock("mlock");
		mark_locked(lo, hi, false);
		pager_unlock();
		return err;
	}
	return 0;
}

int prot_munlock(void *addr, size_t len)
{
	uint64_t lo, hi;
	int err = os_munlock(addr, len) ? -errno : 0;

	if (err || !pages_of(addr, len, &lo, &hi))
		return err;
	pager_lock("munlock");
	mark_locked(lo, hi, false);
	pager_unlock();
	return 0;
}

int prot_mlockall(int flags)
{
	if (!P.tab.top || P.detached || !(flags & (MCL_CURRENT | MCL_FUTURE)))
		return os_mlockall(flags) ? -errno : 0;
	if (os_mlockall(flags | MCL_ONFAULT))
		return -errno;
	__atomic_store_n(&P.locked_all, 1, __ATOMIC_RELEASE);
	__atomic_store_n(&P.c.stats->locked_all, 1, __ATOMIC_RELAXED);
	if ((flags & MCL_CURRENT) && !(flags & MCL_ONFAULT)) {
		/* as the kernel would populate them: every page away comes home */
		for (;;) {
			pager_bring_all(true);
			pager_lock("mlockall");
			if (!pager_bring_all(false))
				break;
			pager_unlock();
		}
		pager_unlock();
	}
	log_info("the program locked all its memory (mlockall): nothing is evicted until munlockall");
	return 0;
}

int prot_munlockall(void)
{
	if (os_munlockall())
		return -errno;
	if (!P.tab.top || P.detached)
		return 0;
	pager_lock("munlockall");
	mark_locked(0, P.heap_hi, false);
	mark_locked(P.c.heap_pages, P.map_hi, false);
	__atomic_store_n(&P.locked_all, 0, __ATOMIC_RELEASE);
	__atomic_store_n(&P.c.stats->locked_all, 0, __ATOMIC_RELAXED);
	pager_unlock();
	return 0;
}

/* Discards [lo, hi) (MADV_DONTNEED), which a locked mapping refuses: such
 * pages are unlocked first, and locked again on fault if the program locked
 * all its memory for the future (their new mapping would be). */
int prot_discard(uint64_t lo, uint64_t hi)
{
	size_t len = (hi - lo) << PAGE_SHIFT;
	int err = raw_madvise(page_addr(lo), len, MADV_DONTNEED);

	if (err != -EINVAL)
		return err;
	os_munlock(page_addr(lo), len);
	err = raw_madvise(page_addr(lo), len, MADV_DONTNEED);
	if (__atomic_load_n(&P.locked_all, __ATOMIC_ACQUIRE))
		os_mlock2(page_addr(lo), len, MLOCK_ONFAULT);
	return err;
}

/* How many pages from idx (at most n) lie in one mapping without
 * PROT_WRITE, as the kernel says (PROCMAP_QUERY, Linux 6.11+): what
 * reclaim may copy out. 0 when that mapping is writable after all (an
 * mprotect system call that did not go through the C library): the pages'
 * recorded protection is corrected, and they move instead. Older kernels
 * cannot say: the recorded protection is believed (n). */
uint32_t prot_copyable(uint64_t idx, uint32_t n)
{
	static bool unknown;
	struct procmap_query q = { .size = sizeof(q), .query_addr = (uintptr_t)page_addr(idx) };
	uint64_t end;

	if (unknown || P.mapsfd < 0)
		return n;
	if (os_ioctl(P.mapsfd, PROCMAP_QUERY, &q)) {
		unknown = errno == ENOTTY;
		return unknown ? n : 0; /* else not copied this time */
	}
	end = q.vma_end <= (uintptr_t)page_addr(idx + n) ? (q.vma_end - (uintptr_t)P.c.base) >> PAGE_SHIFT : idx + n;
	if (!(q.vma_flags & PROCMAP_QUERY_VMA_WRITABLE))
		return (uint32_t)(end - idx);
	for (uint64_t i = idx; i < end; i++)
		pte_put(i, pte_set_prot(pte_at(i), (unsigned)q.vma_flags & 7)); /* PROCMAP_QUERY_VMA_* = PROT_* */
	return 0;
}

/* foreign: mappings the program places over the managed region that comex
 * does not manage (a file, a memfd, shared memory, anything but anonymous
 * private memory), as the kernel would place them (docs/DECISIONS.md D42).
 *
 * Such a mapping replaces the region's own mapping there, so the kernel
 * drops those pages and their userfaultfd registration with it; the pager
 * forgets them (frames released, write-buffer entries cancelled, resident
 * pages no longer counted) and marks them PTE_FOREIGN: taken in the mmap
 * area's bookkeeping, never faulted, evicted or advised by the pager. When
 * the program unmaps them (or maps anonymous private memory there again)
 * the region's own mapping is put back and registered again, and they are
 * managed as before. Everything here runs under the pager lock. */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>

#include "foreign.h"
#include "log.h"
#include "pager_impl.h"
#include "ranges.h"
#include "uffd.h"
#include "os.h"

#ifndef MREMAP_DONTUNMAP
#define MREMAP_DONTUNMAP 4
#endif

static bool is_foreign(uint64_t i) { return pte_state(pte_at(i)) == PTE_FOREIGN; }

unsigned foreign_kinds(uint64_t lo, uint64_t hi)
{
	unsigned n = 0;

	for (uint64_t i = lo; i < hi; i++)
		n += is_foreign(i);
	return !n ? FOREIGN_NONE : n == hi - lo ? FOREIGN_ALL : FOREIGN_MIXED;
}

int foreign_runs(uint64_t lo, uint64_t hi, int (*fn)(uint64_t lo, uint64_t hi, bool foreign, void *arg), void *arg)
{
	while (lo < hi) {
		bool f = is_foreign(lo);
		uint64_t end = lo + 1;
		int err;

		/* a run also ends where the heap arena ends: the two halves differ */
		while (end < hi && is_foreign(end) == f && in_heap(end) == in_heap(lo))
			end++;
		if ((err = fn(lo, end, f, arg)))
			return err;
		lo = end;
	}
	return 0;
}

/* Puts the region's own mapping back over [lo, hi) and registers it again;
 * the pages are free (never used) afterwards. With hole, the kernel has
 * already unmapped the range, and a mapping someone placed there since is
 * left alone (the pages then stay foreign). */
static int give_back(uint64_t lo, uint64_t hi, bool hole)
{
	size_t len = (hi - lo) << PAGE_SHIFT;
	long p = os_mmap(page_addr(lo), len, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | (hole ? MAP_FIXED_NOREPLACE : MAP_FIXED), -1, 0);
	int err;

	if (p == -1 || p != (long)(uintptr_t)page_addr(lo)) {
		err = p == -1 ? -errno : -EEXIST;
		if (p != -1)
			os_munmap((void *)p, len);
		log_error("cannot put the managed region back at %p+%zu after a foreign mapping left: %s; "
			  "those pages stay unmanaged", page_addr(lo), len, strerror(-err));
		return err;
	}
	raw_madvise(page_addr(lo), len, MADV_NOHUGEPAGE); /* 4 KiB granularity for faults */
	if (!P.detached && (err = uffd_register(P.c.uffd, page_addr(lo), len, true)))
		return err;
	pager_forget_entries(lo, hi, PTE_FREE);
	if (lo >= P.c.heap_pages && (err = ranges_free(P.ranges, lo - P.c.heap_pages, hi - lo)))
		return err;
	return 0;
}

static int give_back_run(uint64_t lo, uint64_t hi, bool foreign, void *hole)
{
	return foreign ? give_back(lo, hi, hole != NULL) : 0;
}

int foreign_return(uint64_t lo, uint64_t hi)
{
	return foreign_runs(lo, hi, give_back_run, NULL);
}

/* The part of [a, a+len) inside the region, as page indices; false if none. */
static bool clamp(const void *a, size_t len, uint64_t *lo, uint64_t *hi)
{
	uintptr_t s = (uintptr_t)a, e = s + len, rs = (uintptr_t)P.c.base, re = (uintptr_t)page_addr(P.c.npages);

	if (e > re)
		e = re;
	if (s < rs)
		s = rs;
	if (s >= e)
		return false;
	*lo = (s - rs) >> PAGE_SHIFT;
	*hi = (e - rs + PAGE_SIZE - 1) >> PAGE_SHIFT;
	return true;
}

/* The kernel has just placed a foreign mapping over [lo, hi) of the region. */
static int became_foreign(uint64_t lo, uint64_t hi)
{
	uint64_t a = lo < P.c.heap_pages ? P.c.heap_pages : lo;

	pager_forget_entries(lo, hi, PTE_FOREIGN);
	return a < hi ? ranges_claim(P.ranges, a - P.c.heap_pages, hi - a) : 0;
}

int foreign_map(void *addr, size_t len, int prot, int flags, int fd, off_t off, void **out)
{
	uint64_t lo, hi;
	bool taken = false;
	long p;
	int err = 0;

	if (((uintptr_t)addr & (PAGE_SIZE - 1)) || !clamp(addr, len, &lo, &hi))
		return -EINVAL;
	pager_lock("mmap of a file or shared memory");
	if (flags & MAP_FIXED_NOREPLACE) {
		/* the program's view: only free pages of the mmap area are unmapped */
		if (lo < P.c.heap_pages || (uintptr_t)addr + len > (uintptr_t)page_addr(P.c.npages) ||
		    ranges_take(P.ranges, lo - P.c.heap_pages, hi - lo))
			err = -EEXIST;
		taken = !err;
	}
	if (!err) {
		/* our own mapping is there: the kernel must replace it */
		p = os_mmap(addr, len, prot, (flags & ~MAP_FIXED_NOREPLACE) | MAP_FIXED, fd, off);
		if (p == -1) {
			err = -errno;
			if (taken)
				ranges_free(P.ranges, lo - P.c.heap_pages, hi - lo);
		} else {
			err = became_foreign(lo, hi);
			*out = (void *)p;
		}
	}
	pager_unlock();
	return err;
}

/* mremap of a foreign source (or of one outside the region into it) that
 * grows or moves: the kernel does it; the pager books what it unmapped (the
 * source, unless it stayed: in place or MREMAP_DONTUNMAP) and what it mapped
 * (the target, foreign). Growing in place over free pages of the mmap area
 * works as it would without comex: those pages are taken and unmapped first. */
int foreign_mremap(void *old, size_t oldlen, size_t newlen, int flags, void *newaddr, void **out)
{
	size_t on = (oldlen + PAGE_SIZE - 1) & ~(PAGE_SIZE - 1), nn = (newlen + PAGE_SIZE - 1) & ~(PAGE_SIZE - 1);
	char *o = old;
	uint64_t lo, hi, glo = 0, ghi = 0;
	bool grew = false;
	long r;
	int err = 0;

	if (!(flags & MREMAP_FIXED) && nn > on && clamp(o + on, nn - on, &glo, &ghi) &&
	    glo >= P.c.heap_pages && ghi - glo == (nn - on) >> PAGE_SHIFT &&
	    !ranges_take(P.ranges, glo - P.c.heap_pages, ghi - glo)) {
		os_munmap(page_addr(glo), (ghi - glo) << PAGE_SHIFT);
		grew = true;
	}
	r = os_mremap(old, oldlen, newlen, flags, newaddr);
	if (r == -1) {
		err = -errno;
		if (grew) {
			pager_forget_entries(glo, ghi, PTE_FOREIGN); /* give_back's precondition */
			give_back(glo, ghi, true);
		}
		return err;
	}
	if ((char *)r != o && !(flags & MREMAP_DONTUNMAP) && clamp(o, on, &lo, &hi))
		foreign_runs(lo, hi, give_back_run, (void *)1);
	if (grew && (char *)r != o) { /* moved after all: the pages taken are free again */
		pager_forget_entries(glo, ghi, PTE_FOREIGN);
		give_back(glo, ghi, true);
	}
	if (clamp((void *)r, nn, &lo, &hi))
		err = became_foreign(lo, hi);
	*out = (void *)r;
	return err;
}

/* The program registers [addr, +len) with a userfaultfd of its own (a
 * range has one userfaultfd at most): the pager lets go of it with its
 * data. Eviction pauses while its pages are brought home (faults from this
 * thread, outside the lock, as a fork does), then under the lock they are
 * forgotten (frames released), unregistered from the pager's descriptor and
 * marked foreign; the program's registration then sees them as the kernel
 * would. Unmapped later, they come back under management. */
int foreign_release_to_program(void *addr, size_t len)
{
	uint64_t lo, hi;
	int err;

	if (!clamp(addr, len, &lo, &hi) || P.detached)
		return 0;
	__atomic_store_n(&P.no_evict, 1, __ATOMIC_RELEASE);
	for (;;) {
		pager_bring_home(lo, hi, true);
		pager_lock("a userfaultfd registration of the program's");
		if (!pager_bring_home(lo, hi, false))
			break;
		pager_unlock();
	}
	err = uffd_unregister(P.c.uffd, page_addr(lo), (hi - lo) << PAGE_SHIFT);
	if (!err)
		err = became_foreign(lo, hi);
	__atomic_store_n(&P.no_evict, 0, __ATOMIC_RELEASE);
	pager_unlock();
	return err;
}

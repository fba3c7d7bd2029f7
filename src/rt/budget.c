/* budget: local-mem's bound is what the process may hold locally, the
 * runtime's tables and buffers included. What the process holds outside
 * the managed region is measured with PAGEMAP_SCAN (anonymous pages present,
 * not the shared zero page) every tick of the home thread and taken off the
 * budget of the program's pages, down to a floor; time spent at the floor
 * is counted and reported (docs/DECISIONS.md D50). */
#include "budget.h"

#include <errno.h>

#include "clock.h"
#include "log.h"
#include "memcg.h"
#include "pagemap.h"
#include "pager_impl.h"
#include "stats.h"

#define BUDGET_MIN_PAGES 1024 /* 4 MiB: a budget below it would evict on every fault */
#define ADDR_TOP 0x7ffffffff000ul /* the end of a 47-bit user address space (PAGEMAP_SCAN checks it) */

static void set_budget(uint64_t pages)
{
	__atomic_store_n(&P.budget, pages, __ATOMIC_RELAXED);
	__atomic_store_n(&P.c.stats->budget_bytes, pages << PAGE_SHIFT, __ATOMIC_RELAXED);
}

/* The read buffer and every write buffer, which local-mem holds beside the
 * budget of the program's pages */
static uint64_t buffer_pages(void)
{
	return P.c.rbuf_pages + (uint64_t)P.nnodes * pager_opt(OPT_WBUF_PAGES);
}

/* 20 ms: reading the cgroup's three files costs about 30 us here, so at
 * most 0.15 % of a faulting program's time, and in 20 ms the program's
 * memory outside the budget (stacks, page tables) grows far less than the
 * slack. The pager's own pages are bounded by the budget itself. */
#define FOLLOW_NS 20000000ull

/* The budget becomes what is resident plus the room the cgroup has left
 * (minus the reserve): all of a shortfall at once, half of a surplus, so
 * that several programs following one cgroup converge instead of each
 * taking the same room. Never above local-mem's bound (the limit at start). */
void budget_follow(void)
{
	uint64_t now, want;
	int64_t room, pages;
	int err;

	if (!P.c.follow || (now = now_ns()) - P.follow_at < FOLLOW_NS)
		return;
	P.follow_at = now;
	if ((err = memcg_room(&room)) == -ENOENT) /* the limit was lifted: up to local-mem's bound */
		room = (int64_t)((P.c.budget_pages << PAGE_SHIFT) + P.c.follow_reserve);
	else if (err) {
		errno = -err;
		log_warn("cannot read the memory cgroup's usage: %m; the budget stays at %llu MiB",
			 (unsigned long long)(P.budget >> (20 - PAGE_SHIFT)));
		P.c.follow = false;
		return;
	}
	pages = (room - (int64_t)P.c.follow_reserve) / (int64_t)PAGE_SIZE;
	pages = pages > 0 ? pages / 2 : pages;
	want = (int64_t)P.resident + pages < BUDGET_MIN_PAGES ? BUDGET_MIN_PAGES : (uint64_t)((int64_t)P.resident + pages);
	set_budget(want < P.c.budget_pages ? want : P.c.budget_pages);
	/* local-mem as comex top and the exporter show it: the budget and the buffers */
	__atomic_store_n(&P.c.stats->local_mem_bytes, (P.budget + buffer_pages()) << PAGE_SHIFT, __ATOMIC_RELAXED);
}

/* Anonymous bytes below and above the region; -errno (the kernel has no
 * PAGEMAP_SCAN, or no /proc) */
static int measure(uint64_t *bytes_out)
{
	uint64_t below, above;
	int err;

	if (P.pmfd < 0)
		return -EBADF;
	if ((err = pagemap_anon_bytes(P.pmfd, PAGE_SIZE, (uintptr_t)P.c.base, &below)) ||
	    (err = pagemap_anon_bytes(P.pmfd, (uintptr_t)page_addr(P.c.npages), ADDR_TOP, &above)))
		return err;
	*bytes_out = below + above;
	return 0;
}

/* The budget of the program's pages is local-mem (the budget and the
 * buffers) less what is outside: the buffers are outside too, once used.
 * Lowered at once, raised at once (eviction catches up through the
 * reclaimer); written without the pager lock: P.budget is a hint that
 * the fault path and the reclaimer read again on every check. */
void budget_count_outside(void)
{
	static bool off;
	static uint64_t last; /* ns: the previous measure */
	uint64_t now, bytes, out, local = P.c.budget_pages + buffer_pages(), want;
	int err;

	if (off || P.c.follow || P.detached)
		return;
	if ((err = measure(&bytes))) {
		errno = -err;
		log_info("cannot measure the memory outside the managed region (%m): it is not counted in the budget");
		off = true;
		return;
	}
	out = bytes >> PAGE_SHIFT;
	want = local > out + BUDGET_MIN_PAGES ? local - out : BUDGET_MIN_PAGES;
	if (want > P.c.budget_pages)
		want = P.c.budget_pages;
	__atomic_store_n(&P.c.stats->outside_anon_bytes, bytes, __ATOMIC_RELAXED);
	if (bytes > __atomic_load_n(&P.c.stats->outside_anon_peak_bytes, __ATOMIC_RELAXED))
		__atomic_store_n(&P.c.stats->outside_anon_peak_bytes, bytes, __ATOMIC_RELAXED);
	now = now_ns();
	if (local <= out + BUDGET_MIN_PAGES && last &&
	    !__atomic_fetch_add(&P.c.stats->budget_unkept_ms, (now - last) / 1000000, __ATOMIC_RELAXED))
		log_info("memory outside the managed region holds %llu MiB of local-mem's %llu MiB: the program's pages "
			 "keep the 4 MiB floor, and local-mem is not kept", (unsigned long long)(bytes >> 20),
			 (unsigned long long)(local >> (20 - PAGE_SHIFT)));
	last = now;
	if (want != __atomic_load_n(&P.budget, __ATOMIC_RELAXED)) {
		set_budget(want);
		reclaim_poke();
	}
}

void budget_report(void)
{
	const struct stats *s = P.c.stats;
	uint64_t local = P.c.budget_pages + buffer_pages();

	if (!s || !s->budget_unkept_ms)
		return;
	log_warn("local-mem (%llu MiB) was not kept for about %.1f s: memory outside the managed region (the "
		 "runtime's tables and buffers, UCX, mappings comex does not manage) reached %llu MiB, and the "
		 "program's pages kept their 4 MiB floor (outside_anon_peak_bytes in the counters)",
		 (unsigned long long)(local >> (20 - PAGE_SHIFT)), (double)s->budget_unkept_ms / 1000,
		 (unsigned long long)(s->outside_anon_peak_bytes >> 20));
}

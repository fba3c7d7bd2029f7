/* home: bringing pages home for tools, and holding them there. */
#include "home.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "budget.h"
#include "log.h"
#include "memcg.h"
#include "pager_impl.h"
#include "procread.h"
#include "ranges.h"
#include "sysmem.h"
#include "os.h"

enum { HOME_REQUEST = 1, HOME_TRACER = 2, HOME_CORE = 4 };

#define TICK_NS 100000000L /* 100 ms: a tool waits at most this long for an answer */
/* Runs of never-used pages shorter than this stay in a core: each run left
 * out splits a mapping, and a process has at most vm.max_map_count */
#define DONTDUMP_MIN_PAGES 256

/* Whether n more pages fit in memory without an OOM kill (the cgroup's
 * room when the budget follows it, else the host's available memory) */
static bool room_for(uint64_t n)
{
	int64_t room;

	if (P.c.follow && !memcg_room(&room))
		return room > 0 && (uint64_t)room >> PAGE_SHIFT > n;
	return sysmem_available() >> PAGE_SHIFT > n;
}

/* Holds eviction (bit why) and brings every page home. As a fork does, the
 * last look is taken under the pager lock: eviction runs under it, so none
 * is in flight then, and none starts once the hold is set. */
static void bring(unsigned why)
{
	uint64_t n = pager_bring_all(false);

	__atomic_fetch_or(&P.home_hold, why, __ATOMIC_ACQ_REL);
	for (bool more = true; more;) {
		pager_bring_all(true);
		pager_lock("bring every page home for a tool");
		more = pager_bring_all(false);
		pager_unlock();
	}
	STAT_ADD(P.c.stats, pages_brought_home, n);
}

/* TracerPid from /proc/self/status: a debugger or tracer attached */
static int tracer(void)
{
	char buf[4096], *p;

	if (procread_file("/proc/self/status", buf, sizeof(buf)) <= 0)
		return 0;
	p = strstr(buf, "TracerPid:");
	return p ? atoi(p + 10) : 0;
}

static void take(unsigned want, int pid)
{
	uint64_t n = pager_bring_all(false);

	if (!room_for(n)) {
		__atomic_store_n(&P.c.stats->home_held, HOME_HELD_REFUSED, __ATOMIC_RELEASE);
		log_warn("cannot bring %llu MiB home for %s: the memory %s leaves is short; tools reading this "
			 "process see its evicted pages as unreadable", (unsigned long long)(n >> 8),
			 want & HOME_REQUEST ? "comex home" : "a tracer", P.c.follow ? "cgroup" : "host");
		return;
	}
	bring(want);
	__atomic_store_n(&P.c.stats->home_held, HOME_HELD_YES, __ATOMIC_RELEASE);
	if (want & HOME_TRACER)
		log_info("tracer %d attached: %llu pages brought home, eviction paused while it stays", pid,
			 (unsigned long long)n);
	else
		log_info("comex home: %llu pages brought home, eviction paused until released", (unsigned long long)n);
}

void home_run(bool on_trace)
{
	struct timespec tick = { 0, TICK_NS };
	unsigned held = 0, refused = 0;

	for (;;) {
		int pid = on_trace ? tracer() : 0;
		unsigned want = (pid ? HOME_TRACER : 0) |
				(__atomic_load_n(&P.c.stats->home_request, __ATOMIC_ACQUIRE) ? HOME_REQUEST : 0);

		if (want && !held && want != refused) {
			take(want, pid);
			held = __atomic_load_n(&P.home_hold, __ATOMIC_ACQUIRE) ? want : 0;
			refused = held ? 0 : want; /* not again until what asks changes */
		} else if (want && held) {
			__atomic_store_n(&P.home_hold, want, __ATOMIC_RELEASE);
			held = want;
		} else if (!want && held) {
			__atomic_store_n(&P.home_hold, 0, __ATOMIC_RELEASE);
			__atomic_store_n(&P.c.stats->home_held, 0, __ATOMIC_RELEASE);
			held = 0;
			log_info("no tool holds the pages home any more: eviction resumes");
		}
		if (!want && refused) {
			refused = 0;
			__atomic_store_n(&P.c.stats->home_held, 0, __ATOMIC_RELEASE);
		}
		budget_count_outside();
		nanosleep(&tick, NULL);
	}
}

/* MADV_DONTDUMP over [lo, hi) */
static void leave_out(uint64_t lo, uint64_t hi)
{
	if (hi > lo)
		raw_madvise(page_addr(lo), (hi - lo) << PAGE_SHIFT, MADV_DONTDUMP);
}

/* The region's pages the program never had, out of the core. In the heap
 * arena: runs of never-used pages and everything above the highest page
 * used. In the mmap area: what the program has not mapped (the free
 * extents); what it mapped and never touched is dumped as without comex
 * (a hole in the file). Short runs stay: each would split the mapping. */
static void trim_heap(void)
{
	uint64_t run = 0;

	for (uint64_t i = 0; i < P.heap_hi; i++) {
		if (pte_state(pte_at(i)) != PTE_FREE) {
			if (i - run >= DONTDUMP_MIN_PAGES)
				leave_out(run, i);
			run = i + 1;
		}
	}
	leave_out(run, P.c.heap_pages);
}

static void trim_map_area(void)
{
	uint64_t at = 0, s, n;

	while (!ranges_next_free(P.ranges, at, &s, &n)) {
		if (n >= DONTDUMP_MIN_PAGES)
			leave_out(P.c.heap_pages + s, P.c.heap_pages + s + n);
		at = s + n;
	}
}

void home_for_core(void)
{
	int self = os_gettid();

	if (!P.tab.top || P.detached)
		return;
	/* a crash inside the pager, holding its lock: what is away stays away */
	if (!(__atomic_load_n(&P.held_since, __ATOMIC_ACQUIRE) && P.held_tid == self))
		bring(HOME_CORE);
	trim_heap();
	trim_map_area();
}

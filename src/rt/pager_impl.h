/* pager_impl: the state the pager's modules share. pager.c owns the page
 * table and the mmap-family bookkeeping, fault.c the fault path, reclaim.c
 * eviction and the reclaimer thread. Not a public interface: everything here
 * is touched only under P.lock unless a field says otherwise. */
#ifndef COMEX_RT_PAGER_IMPL_H
#define COMEX_RT_PAGER_IMPL_H

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "options.h"
#include "pager.h"
#include "pagetab.h"
#include "stats.h"
#include "transport.h"
#include "os.h"


struct pager {
	pthread_mutex_t lock;
	pthread_cond_t reclaim_wake;  /* the reclaimer waits here for resident > high watermark */
	struct pager_config c;
	struct pagetab tab;           /* per page: its entry, and the hash of its remote copy (valid while
				       * it has a frame); tab.top is NULL until pager_init */
	struct ranges *ranges;        /* the mmap area: [heap_pages, npages) */
	struct rbuf *rb;
	struct wbuf *wb[OPT_MEMNODE_MAX];     /* per node: the write buffer filling */
	struct wbuf *wb_out[OPT_MEMNODE_MAX]; /* and the one whose write is in flight (NULL: one buffer) */
	struct tp_op wb_op[OPT_MEMNODE_MAX];  /* that write */
	bool wb_busy[OPT_MEMNODE_MAX];        /* a write is in flight */
	struct evict *ev;
	struct prefetch *pf;
	unsigned nnodes, preferred;
	unsigned cur;                 /* placement's node for the frames being handed out */
	uint32_t cur_left;            /* frames until placement chooses again */
	uint64_t rng;                 /* placement's random state (p2c, weighted) */
	struct { uint32_t pfn, left; } cursor[OPT_MEMNODE_MAX];
	uint16_t epoch[OPT_MEMNODE_MAX];    /* bumped when a node's frames are forgotten (it failed): (node, pfn)
				       * pairs held aside from before are void, a new session may reuse them */
	uint64_t resident, heap_hi, map_hi;
	uint64_t budget;              /* resident pages allowed now: c.budget_pages, or less following
				       * the memory cgroup (c.follow); written under the lock, read as a hint */
	uint64_t follow_at;           /* ns: the cgroup's room last read */
	uint64_t low_free, high_free; /* reclaimer watermarks, pages free under the budget */
	uint64_t full_until;          /* ns: every memnode said full; no eviction tried before */
	int fault_waiters;            /* handlers waiting for the lock (atomic): the reclaimer yields */
	int memfd;                    /* /proc/self/mem: reads pages whatever their protection */
	int pmfd;                     /* /proc/self/pagemap (async mode needs it), or -1 */
	int mapsfd;                   /* /proc/self/maps (PROCMAP_QUERY), or -1 */
	char *park;                   /* 8 areas of MAX_BATCH pages, one per protection, registered
				       * (WP only) as UFFDIO_MOVE's target (reclaim.c) */
	int no_evict;                 /* set while preparing a fork (atomic) */
	int home_hold;                /* HOME_* bits: every page held home for a tool (atomic; home.c) */
	int forking;                  /* a fork holds the lock and waits for its event to be read (atomic) */
	bool wipe_on_fork;            /* the program used MADV_WIPEONFORK in the region: forks are eager */
	int reading_unlocked;         /* handlers reading outside the lock (atomic); counted down before relocking */
	int locked_all;               /* mlockall in effect: nothing is evicted (atomic) */
	uint64_t locked;              /* pages marked PTE_LOCKED */
	bool lock_warned;
	bool detached;                /* forked child: no uffd, no memnodes */
	bool full_warned;
	uint64_t faults;              /* served, for the wedge_after test hook */
	char *scratch;                /* MAX_BATCH pages for eviction copies (synchronous mode, and
				       * non-writable victims in asynchronous mode) */
	/* who holds the lock, for the watchdog: since (ns, 0 when free) is
	 * stored last with release, read first with acquire; a reader racing a
	 * change of holder may pair one holder's tid with another's reason */
	uint64_t held_since;
	const char *held_why;
	int held_tid;
};

extern struct pager P;

static inline pte_t pte_at(uint64_t idx) { return pagetab_pte(&P.tab, idx); }
static inline void pte_put(uint64_t idx, pte_t e) { pagetab_set_pte(&P.tab, idx, e); }
static inline pagesum_t sum_at(uint64_t idx) { return pagetab_sum(&P.tab, idx); }
static inline void sum_put(uint64_t idx, pagesum_t s) { pagetab_set_sum(&P.tab, idx, s); }


/* The pager lock, taken for why (a static string the watchdog reports when
 * the lock is held too long or a fault handler waits for it). */
static inline void pager_note_holder(const char *why)
{
	P.held_why = why;
	P.held_tid = os_gettid();
	__atomic_store_n(&P.held_since, now_ns(), __ATOMIC_RELEASE);
}

static inline void pager_lock(const char *why)
{
	pthread_mutex_lock(&P.lock);
	pager_note_holder(why);
}

/* pager_lock, giving up after ns nanoseconds (false) */
static inline bool pager_lock_within(const char *why, uint64_t ns)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += (time_t)((uint64_t)ts.tv_nsec + ns) / 1000000000;
	ts.tv_nsec = (long)(((uint64_t)ts.tv_nsec + ns) % 1000000000);
	if (pthread_mutex_timedlock(&P.lock, &ts))
		return false;
	pager_note_holder(why);
	return true;
}

static inline void pager_unlock(void)
{
	__atomic_store_n(&P.held_since, 0, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&P.lock);
}

/* A long job holding the lock (moving pages off a memnode, re-replicating)
 * lets waiting fault handlers in, then takes the lock again. */
static inline void pager_yield_to_faults(const char *why)
{
	pager_unlock();
	while (__atomic_load_n(&P.fault_waiters, __ATOMIC_ACQUIRE))
		sched_yield();
	pager_lock(why);
}

static inline void pager_cond_wait(pthread_cond_t *c, const char *why)
{
	__atomic_store_n(&P.held_since, 0, __ATOMIC_RELEASE);
	pthread_cond_wait(c, &P.lock);
	pager_note_holder(why);
}

/* A pager option's value (pager_config.opts), read where it is used. */
static inline uint64_t pager_opt(enum opt_id id) { return opt_num(P.c.opts, id); }
static inline char *page_addr(uint64_t idx) { return P.c.base + (idx << PAGE_SHIFT); }
static inline bool in_heap(uint64_t idx) { return idx < P.c.heap_pages; }

/* Entries at or above heap_hi (heap arena) and map_hi (mmap area) were
 * never anything but free: scans of the tables stop there. Raised for
 * [lo, hi) (pager lock held). */
static inline void pager_raise_hi(uint64_t lo, uint64_t hi)
{
	if (lo < P.c.heap_pages && hi > P.heap_hi)
		P.heap_hi = hi < P.c.heap_pages ? hi : P.c.heap_pages;
	if (hi > P.c.heap_pages && hi > P.map_hi)
		P.map_hi = hi;
}

static inline int raw_madvise(void *addr, size_t len, int advice)
{
	return os_madvise(addr, len, advice) ? -errno : 0;
}

/* pager.c */
void __attribute__((noreturn)) pager_die(const char *what, uintptr_t addr, int err);
void pager_set_resident(int64_t delta);
void pager_became_resident(uint64_t idx, unsigned state, unsigned node, uint32_t pfn);
void pager_release_frame(unsigned node, uint32_t pfn);
void pager_forget_entries(uint64_t lo, uint64_t hi, unsigned to);
/* How many pages of [lo, hi) are remote or in a write buffer (or lost);
 * with read, faults each such page in from this thread first (not under
 * the lock). */
uint64_t pager_bring_home(uint64_t lo, uint64_t hi, bool read);
/* pager_bring_home over every page the program used */
uint64_t pager_bring_all(bool read);

/* foreign.c: pages of mappings the program placed over the region */
enum { FOREIGN_NONE, FOREIGN_ALL, FOREIGN_MIXED };
unsigned foreign_kinds(uint64_t lo, uint64_t hi);
/* Calls fn on each run of [lo, hi) whose pages are all foreign or all not,
 * split where the heap arena ends; stops at the first error. */
int foreign_runs(uint64_t lo, uint64_t hi, int (*fn)(uint64_t lo, uint64_t hi, bool foreign, void *arg), void *arg);
/* The foreign pages of [lo, hi) come back under management, free. */
int foreign_return(uint64_t lo, uint64_t hi);
int foreign_mremap(void *old, size_t oldlen, size_t newlen, int flags, void *newaddr, void **out);

/* fault.c */
int fault_init(void);
/* Serves page idx as a read fault would, from the pager's side (under the
 * lock, which it may let go of meanwhile: a handler's plan in progress),
 * if its state is still state: for pages no fault of the program's can
 * bring in (PROT_NONE). */
void fault_fetch(uint64_t idx, unsigned state);

/* prot.c */
/* P.locked += delta, in the stats too; warns once when over the budget. */
void prot_count_locked(int64_t delta);
/* How many pages from idx (at most n) are in one non-writable mapping:
 * what may be copied out (0: writable after all; prot corrected). */
uint32_t prot_copyable(uint64_t idx, uint32_t n);
/* Discards [lo, hi) (MADV_DONTNEED), unlocking a locked mapping first. */
int prot_discard(uint64_t lo, uint64_t hi);

/* reclaim.c */
int reclaim_init(void);
/* Evicts until k more pages fit in the budget (or nothing more can go). */
void reclaim_make_room(uint64_t k);
/* After a batch of faults: wakes the reclaimer when below the low watermark. */
void reclaim_poke(void);
/* Writes every write buffer out (mremap needs no page parked there). */
void reclaim_flush_all(void);
/* Writes node's write buffers out and retires them (cancelled entries give
 * their frames back); returns how many entries they held. */
uint32_t reclaim_flush_node(unsigned node);
/* The write-buffered copy of page idx, cancelled there (its frame goes back
 * once the write is retired), or NULL. */
void *reclaim_wbuf_take(unsigned node, uint64_t idx);
/* Evicts the resident, unlocked pages of [lo, hi) now (MADV_PAGEOUT). */
void reclaim_range(uint64_t lo, uint64_t hi);
/* Creates node's write buffers (at start-up, or a memnode added later). */
int reclaim_add_node(unsigned node);

#endif

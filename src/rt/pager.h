/* pager: the user-space pager of one process (COMEX §4.3-4.4 on userfaultfd).
 * It owns the managed region's page table and serves its faults on one
 * handler thread: zero fill, write-buffer hit, read-buffer (prefetch) hit, or
 * one remote read of the page's run of neighbours; it keeps resident pages
 * within the budget by evicting through per-memnode write buffers. The
 * interposed mmap family calls in here under the pager lock. */
#ifndef COMEX_RT_PAGER_H
#define COMEX_RT_PAGER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct comex_client;
struct options;

#define MAX_BATCH 256 /* pages one eviction batch handles (PAGEMAP_MAX_PAGES); evict-batch's limit */
struct stats;

/* What the pager is given: the options (read where they are used, through
 * pager_opt), and what the runtime derived from them and from the machine. */
struct pager_config {
	const struct options *opts; /* outlives the pager */
	char *base;               /* managed region, registered with uffd */
	uint64_t npages;
	uint64_t heap_pages;      /* [0, heap_pages): the allocator's arena, handed out as a whole */
	uint64_t budget_pages;    /* resident program pages allowed (with follow: at most) */
	uint64_t follow_reserve;  /* with follow: bytes of the cgroup's room never taken (D49) */
	bool follow;              /* local-mem auto in a memory cgroup: the budget follows its room */
	uint32_t rbuf_pages;      /* the read buffer, or the landing area of one plan (rbuf-pages, shrunk
				   * for a small local-mem; prefetch without a read buffer) */
	unsigned prefetch_policy; /* enum prefetch_policy: prefetch-policy, or the read buffer's when
				   * prefetch-map is false */
	bool async;               /* descriptor has WP_ASYNC and MOVE: writes to clean pages never fault */
	int uffd;
	struct comex_client *client;
	struct stats *stats;
};

int pager_init(const struct pager_config *cfg);
/* In a forked child that holds every page of its own (its parent handed
 * them all and is gone): the pager starts anew on cfg (a new descriptor,
 * client and counters), keeping what is mapped where; every resident page
 * counts against the new budget. */
int pager_reattach(const struct pager_config *cfg);
/* Evicts until the resident pages fit in the budget (after a reattach). */
void pager_fit(void);
/* A fault handler thread's body, pinned to cpu (>= 0) or not; never returns. */
void pager_run(int cpu);
/* Returns once n handlers of this process run pager_run's loop; called
 * before a fork takes the malloc arenas. The fork waits for a handler to
 * read its UFFD_EVENT_FORK while the C library holds every arena: a
 * handler not yet past its thread's first heap call would wait for them,
 * and the fork for it, forever. */
void pager_wait_handlers(int n);
/* The reclaimer thread's body (when pager_opt(OPT_RECLAIMER)); never returns. */
void *pager_reclaimer(void *arg);
/* Watchdog probe: nanoseconds the handler has been stuck on one batch of
 * faults (0 if idle or progressing), and the address it is serving. */
uint64_t pager_stuck_ns(uint64_t now_ns, uintptr_t *addr_out); /* *addr_out set when stuck */
/* Watchdog probe: nanoseconds the pager lock has been held (0 if free), by
 * which thread and for what (set when held). */
uint64_t pager_lock_held_ns(uint64_t now_ns, int *tid_out, const char **why_out);

/* The interposed calls, for ranges inside the region only. */
int pager_mmap(size_t len, int prot, void **out);
int pager_mmap_fixed(void *addr, size_t len, int prot, bool noreplace);
int pager_munmap(void *addr, size_t len);
int pager_madvise(void *addr, size_t len, int advice);
int pager_mremap(void *old, size_t oldlen, size_t newlen, int flags, void *newaddr, void **out);
/* An anonymous mapping of len bytes found no room in the region and goes
 * to the kernel, unmanaged: counted (bytes_mapped_outside), logged once. */
int pager_outside(size_t len);
/* True when len more bytes fit in the budget now (a hint: not locked). */
bool pager_fits(size_t len);
/* The phases of a fork, as pthread_atfork's three handlers */
enum fork_phase { FORK_PREPARE, FORK_PARENT, FORK_CHILD };
/* Fork: prepare brings every page home and holds the lock; parent/child after. */
void pager_fork(enum fork_phase phase);
/* fork's result in the parent (the interposed fork), after the phases. */
void pager_fork_result(pid_t pid);
/* The program is exiting: forked children still served get their pages. */
void pager_exit(void);
/* The program asked for MADV_WIPEONFORK inside the region. */
void pager_wipe_on_fork(void);

#endif

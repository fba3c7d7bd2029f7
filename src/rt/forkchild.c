/* forkchild: forked children served lazily from a snapshot (DECISIONS.md D45).
 *
 * At fork preparation (program thread, pager lock held, eviction off, write
 * buffers settled) the used part of the page table and of the page hashes is
 * copied: in the child, a page is missing exactly where the snapshot says
 * remote (or never touched), and the frame the snapshot names holds its
 * content, as long as the parent neither frees nor rewrites that frame. So
 * while any child lives, frames are "frozen": releases are deferred and a
 * page that owned its frame gets a new one at its next eviction.
 *
 * The kernel hands the child's userfaultfd to the parent's handler with a
 * UFFD_EVENT_FORK message. Faults read from it are served under the pager
 * lock: a page the snapshot has remote, and that the child neither got nor
 * discarded yet, is read (with its run of consecutive frames) and copied in;
 * any other page is zero, as natively (never touched, or discarded by the
 * child after it got it). The child's runtime marks what it discards in a
 * byte map shared with the parent, so a discarded page never comes back as
 * the snapshot's copy. A child that forks brings its pages home first; its
 * own children are released from userfaultfd at once.
 *
 * A child is forgotten when its address space is gone: exit (its pidfd) or
 * exec (a UFFDIO_ZEROPAGE probe at an address registered nowhere then fails
 * with ESRCH instead of ENOENT). */
#include <errno.h>
#include <inttypes.h>
#include <linux/futex.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "client.h"
#include "forkchild.h"
#include "log.h"
#include "rtfd.h"
#include "pager_impl.h"
#include "rtmem.h"
#include "uffd.h"
#include "os.h"

#define MAX_CHILDREN 8     /* served at once; a further fork brings every page home */
#define RUN_PAGES    64    /* pages one child fault may read: a run of consecutive frames */
#define DEFER_MAX    (1u << 24) /* frame releases held back while frozen (8 bytes each, reserved lazily) */

struct child {
	bool used;
	int uffd;               /* -1 until the fork event gave it */
	int pidfd;              /* -1 until the fork returned the pid */
	pid_t pid;
	struct pagetab snap;    /* the tables at the fork; snap.top is NULL when none */
	uint64_t heap_hi, map_hi;
	uint8_t *got;           /* shared with the child: 1 = served or discarded there */
};

/* The page before a child's byte map, shared with it. */
struct shared {
	int complete;           /* the parent handed it every page (release): it may outlive the parent */
};

static struct shared *shared_of(uint8_t *got) { return (struct shared *)(got - PAGE_SIZE); }

static struct child kids[MAX_CHILDREN];
static int nkids;                  /* used slots (pending or live): frames frozen while > 0 */
static int pending = -1;           /* slot of the fork in progress (its event not read yet) */
static __thread int my_slot = -1;  /* the slot this thread's fork prepared */
static uint64_t *deferred;         /* (epoch << 40 | node << 32 | pfn) of frames released while frozen */
static uint32_t ndeferred;
static char *runbuf;               /* RUN_PAGES pages: where a child's run is read */
static uint8_t *lazy_got;          /* in a lazy child: its byte map (else NULL) */
static pid_t fork_parent;          /* who forked: in a lazy child, the parent serving it */
static const char probe_anchor[PAGE_SIZE] __attribute__((aligned(PAGE_SIZE))) = { 1 };

static void free_slot(struct child *c)
{
	if (c->uffd >= 0)
		close(c->uffd); /* unregisters whatever the child still has */
	if (c->pidfd >= 0)
		close(c->pidfd);
	if (c->snap.top)
		pagetab_fini(&c->snap);
	if (c->got)
		os_munmap(c->got - PAGE_SIZE, PAGE_SIZE + P.c.npages);
	*c = (struct child){ .uffd = -1, .pidfd = -1 };
	if (--nkids)
		return;
	for (uint32_t i = 0; i < ndeferred; i++) {
		unsigned node = (unsigned)(deferred[i] >> 32) & 0xff;

		if ((uint16_t)(deferred[i] >> 40) == P.epoch[node]) /* else its node failed since: not ours */
			pager_release_frame(node, (uint32_t)deferred[i]);
	}
	ndeferred = 0;
}

static pte_t snap_pte(const struct child *c, uint64_t idx) { return pagetab_pte(&c->snap, idx); }

/* True when the child's address space is gone (exit or exec). */
static bool gone(const struct child *c)
{
	struct pollfd p = { .fd = c->pidfd, .events = POLLIN };
	size_t z;

	if (c->pidfd >= 0 && poll(&p, 1, 0) == 1)
		return true;
	return c->uffd >= 0 && uffd_zero(c->uffd, (void *)probe_anchor, PAGE_SIZE, &z) == -ESRCH;
}

static void reap(void)
{
	for (int i = 0; i < MAX_CHILDREN; i++)
		if (kids[i].used && i != pending && (kids[i].uffd >= 0 || kids[i].pidfd >= 0) && gone(&kids[i])) {
			free_slot(&kids[i]);
			STAT_ADD(P.c.stats, forks_lazy_ended, 1);
		}
}

int forkchild_prepare(void)
{
	struct child *c = NULL;
	long got;
	int slot;

	reap();
	for (slot = 0; slot < MAX_CHILDREN && !c; slot++)
		if (!kids[slot].used)
			c = &kids[slot];
	if (!c || (!deferred && !(deferred = rt_alloc((size_t)DEFER_MAX * sizeof(*deferred)))) ||
	    (!runbuf && !(runbuf = rt_alloc(RUN_PAGES << PAGE_SHIFT))))
		return -EBUSY;
	*c = (struct child){ .uffd = -1, .pidfd = -1, .heap_hi = P.heap_hi, .map_hi = P.map_hi };
	got = os_mmap(NULL, PAGE_SIZE + P.c.npages, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS | MAP_NORESERVE,
		      -1, 0); /* a header page (struct shared), then the byte map */
	c->got = got == -1 ? NULL : (uint8_t *)got + PAGE_SIZE;
	c->used = true;
	nkids++;
	if (!c->got || pagetab_copy(&P.tab, &c->snap)) {
		log_warn("cannot snapshot %" PRIu64 " pages for a lazy fork (%m); bringing every page home instead",
			 P.c.npages);
		free_slot(c);
		return -EBUSY;
	}
	pending = my_slot = (int)(c - kids);
	fork_parent = getpid();
	STAT_ADD(P.c.stats, forks_lazy, 1);
	return 0;
}

/* A lazy child whose parent dies before handing it every page would read
 * the rest as zero (the kernel drops the registration with the parent's
 * descriptor): it stops instead. It learns of the death by its parent-death
 * signal; the parent's normal exit hands it everything first (complete).
 * The signal is also sent when only the thread that forked exits: then the
 * parent lives on and nothing happens. */
#define PDEATH_SIG SIGRTMAX

static void parent_died(int sig)
{
	static const char msg[] = "comex: error: the parent process died before handing this forked child all "
				  "of its pages (docs/DECISIONS.md D45); stopping it rather than let it read zeros\n";
	int saved = errno;

	(void)sig;
	if (getppid() == fork_parent || !lazy_got) { /* a thread of it exited; it lives */
		errno = saved;
		return;
	}
	if (__atomic_load_n(&shared_of(lazy_got)->complete, __ATOMIC_ACQUIRE)) {
		prctl(PR_SET_PDEATHSIG, 0);
		lazy_got = NULL;
		errno = saved;
		return;
	}
	if (write(2, msg, sizeof(msg) - 1) < 0)
		saved = errno;
	kill(getpid(), SIGKILL);
}

static void watch_parent(void)
{
	struct sigaction sa = { .sa_handler = parent_died, .sa_flags = SA_RESTART };

	sigemptyset(&sa.sa_mask);
	if (sigaction(PDEATH_SIG, &sa, NULL) || prctl(PR_SET_PDEATHSIG, PDEATH_SIG))
		return;
	if (getppid() != fork_parent) /* gone before the signal was armed */
		parent_died(PDEATH_SIG);
}

/* Before an exec, and at start-up of an exec'd image: a new program does not
 * need its old image's parent, and must not die of its signal. */
void forkchild_forget_parent(void)
{
	int sig = 0;

	if (lazy_got || (!prctl(PR_GET_PDEATHSIG, &sig) && sig == PDEATH_SIG))
		prctl(PR_SET_PDEATHSIG, 0);
	lazy_got = NULL;
}

static void in_child(void)
{
	lazy_got = pending >= 0 ? kids[pending].got : NULL;
	if (lazy_got)
		watch_parent();
	for (int i = 0; i < MAX_CHILDREN; i++) /* the parent's to serve, not ours */
		if (kids[i].used && kids[i].uffd >= 0)
			close(kids[i].uffd);
	memset(kids, 0, sizeof(kids));
	nkids = 0;
	pending = my_slot = -1;
}

/* The kernel put the child's userfaultfd in this process at the lowest free
 * number before fork returned here; until the handler has moved it up
 * (forkchild_event), a descriptor the program closes and makes again at
 * that number would be the one moved and closed (seen: CPython's
 * test_swap_std_fds_with_one_closed lost its stdout on a loaded host).
 * The program waits for that, a few microseconds; ADOPT_WAIT_NS bounds it
 * should the event never come. */
#define ADOPT_WAIT_NS 2000000000ull

static void wait_adopted(int slot)
{
	uint64_t until = now_ns() + ADOPT_WAIT_NS;

	while (__atomic_load_n(&kids[slot].uffd, __ATOMIC_ACQUIRE) < 0 && now_ns() < until)
		sched_yield();
}

void forkchild_after_fork(pid_t pid)
{
	int slot = my_slot;

	if (!pid) {
		in_child();
		return;
	}
	my_slot = -1;
	if (slot < 0)
		return;
	if (pid > 0)
		wait_adopted(slot);
	pager_lock("fork");
	if (pid < 0) {
		if (pending == slot)
			pending = -1;
		free_slot(&kids[slot]);
	} else {
		kids[slot].pid = pid;
		kids[slot].pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	}
	pager_unlock();
}

void forkchild_event(int from_fd, const struct uffd_msg *m)
{
	int fd = rtfd_adopt((int)m->arg.fork.ufd); /* the kernel put it at the lowest free number */

	/* the forking thread holds the pager lock and waits for this read:
	 * pending is stable, and only this handler changes it now */
	if (from_fd == P.c.uffd && pending >= 0 && kids[pending].uffd < 0) {
		__atomic_store_n(&kids[pending].uffd, fd, __ATOMIC_RELEASE);
		pending = -1;
		return;
	}
	close(fd);
}

int forkchild_pollfds(struct pollfd *set, int room)
{
	int n = 0;

	for (int i = 0; i < MAX_CHILDREN && n + 2 <= room; i++) {
		int fd = __atomic_load_n(&kids[i].uffd, __ATOMIC_ACQUIRE);
		int pidfd = __atomic_load_n(&kids[i].pidfd, __ATOMIC_ACQUIRE);

		/* a slot never used is all zero: descriptor 0 is the program's
		 * stdin, which poll() finds readable at once (/dev/null, a pipe
		 * with data) and the handler would spin */
		if (!__atomic_load_n(&kids[i].used, __ATOMIC_ACQUIRE))
			continue;
		if (fd >= 0)
			set[n++] = (struct pollfd){ .fd = fd, .events = POLLIN };
		if (pidfd >= 0)
			set[n++] = (struct pollfd){ .fd = pidfd, .events = POLLIN };
	}
	return n;
}

/* Stops a child whose page cannot be served (its frame's memnode failed,
 * or the copy came back changed): never zero in silence. */
static void kill_child(struct child *c, uint64_t idx, const char *why, int err)
{
	errno = -err;
	log_error("forked child %d: page %p %s (%m); killing the child", (int)c->pid, (void *)page_addr(idx), why);
	if (c->pid > 0)
		kill(c->pid, SIGKILL);
}

static bool servable(const struct child *c, uint64_t i, unsigned node, uint32_t pfn)
{
	bool in = i < c->heap_hi || (i >= P.c.heap_pages && i < c->map_hi);
	pte_t e = in ? snap_pte(c, i) : 0;

	return in && !c->got[i] && pte_state(e) == PTE_REMOTE && pte_node(e) == node && pte_pfn(e) == pfn;
}

/* Whether page i is served from the frame the snapshot names. */
static bool servable_at(const struct child *c, uint64_t i)
{
	pte_t e = snap_pte(c, i);

	return servable(c, i, pte_node(e), pte_pfn(e));
}

/* Reads the run of consecutive frames around idx within its aligned
 * window and copies it into the child; pages the child has by now are
 * skipped (-EEXIST). */
static void serve_data(struct child *c, uint64_t idx)
{
	pte_t e = snap_pte(c, idx);
	unsigned node = pte_node(e);
	uint32_t pfn = pte_pfn(e);
	uint64_t wlo = idx - idx % RUN_PAGES, lo = idx, hi = idx + 1;
	int err;

	while (lo > wlo && servable(c, lo - 1, node, pfn - (uint32_t)(idx - lo + 1)))
		lo--;
	while (hi < wlo + RUN_PAGES && hi < P.c.npages && servable(c, hi, node, pfn + (uint32_t)(hi - idx)))
		hi++;
	if ((err = client_read(P.c.client, node, pfn - (uint32_t)(idx - lo), (uint32_t)(hi - lo), runbuf))) {
		kill_child(c, idx, "cannot be read back from its memnode", err);
		return;
	}
	STAT_ADD(P.c.stats, remote_reads, 1);
	STAT_ADD(P.c.stats, bytes_read, (hi - lo) << PAGE_SHIFT);
	for (uint64_t i = lo; i < hi; i++)
		if (!pagesum_eq(pagesum_of(runbuf + ((i - lo) << PAGE_SHIFT)), pagetab_sum(&c->snap, i))) {
			kill_child(c, i, "came back from its memnode changed (checksum mismatch)", -EIO);
			return;
		}
	for (uint64_t i = lo; i < hi;) {
		size_t done = 0;

		err = uffd_copy(c->uffd, page_addr(i), runbuf + ((i - lo) << PAGE_SHIFT), (hi - i) << PAGE_SHIFT, 0, &done);
		for (uint64_t k = 0; k < (done >> PAGE_SHIFT); k++)
			c->got[i + k] = 1;
		STAT_ADD(P.c.stats, pages_child_served, done >> PAGE_SHIFT);
		i += (done >> PAGE_SHIFT) + (err == -EEXIST); /* the child has that one */
		if (err && err != -EEXIST)
			break; /* -ENOENT: the run crosses a mapping of the child's; -EAGAIN: they change */
	}
	/* the faulting page alone lies in one registered mapping */
	if (!c->got[idx] && !uffd_copy(c->uffd, page_addr(idx), runbuf + ((idx - lo) << PAGE_SHIFT), PAGE_SIZE, 0, NULL)) {
		c->got[idx] = 1;
		STAT_ADD(P.c.stats, pages_child_served, 1);
	}
	uffd_wake(c->uffd, page_addr(idx), PAGE_SIZE);
}

/* Zero from idx on, up to ZERO_PAGES while no page needs the snapshot:
 * a child filling fresh memory takes one round trip per window, not per
 * page. A page the child has stops the window (-EEXIST). */
#define ZERO_PAGES 16
static void serve_zero(struct child *c, uint64_t idx)
{
	uint64_t hi = idx + 1;
	size_t z = 0;

	while (hi < idx + ZERO_PAGES && hi < P.c.npages && hi != P.c.heap_pages && !servable_at(c, hi) &&
	       pte_state(snap_pte(c, hi)) != PTE_LOST)
		hi++;
	/* a window that crosses a mapping of the child's (-ENOENT): the page alone */
	if (uffd_zero(c->uffd, page_addr(idx), (hi - idx) << PAGE_SHIFT, &z) && !z &&
	    uffd_zero(c->uffd, page_addr(idx), PAGE_SIZE, &z))
		uffd_wake(c->uffd, page_addr(idx), PAGE_SIZE);
	for (uint64_t i = idx; i < idx + (z >> PAGE_SHIFT); i++)
		c->got[i] = 1;
}

static void serve(struct child *c, const struct uffd_msg *m)
{
	uintptr_t a = m->arg.pagefault.address & ~(PAGE_SIZE - 1);
	uint64_t idx = (a - (uintptr_t)P.c.base) >> PAGE_SHIFT;

	if (m->event != UFFD_EVENT_PAGEFAULT)
		return;
	if (a < (uintptr_t)P.c.base || a >= (uintptr_t)page_addr(P.c.npages)) {
		uffd_wake(c->uffd, (void *)a, PAGE_SIZE);
		return;
	}
	if (m->arg.pagefault.flags & UFFD_PAGEFAULT_FLAG_WP) { /* synchronous write-protect mode */
		uffd_wp(c->uffd, (void *)a, PAGE_SIZE, 0);
		return;
	}
	if (servable_at(c, idx)) {
		serve_data(c, idx);
		return;
	}
	if (pte_state(snap_pte(c, idx)) == PTE_LOST && !c->got[idx]) {
		kill_child(c, idx, "had its only copy on a memnode that failed", -EIO);
		return;
	}
	serve_zero(c, idx);
}

/* Under the lock: a child's descriptor is closed only under it, so a
 * number read here is never another file's. Never waits for the lock while
 * a fork holds it: that fork waits for this handler to read its event. */
void forkchild_serve(bool do_reap)
{
	struct uffd_msg msg[16];

	while (!pager_lock_within("faults of a forked child", 1000000))
		if (__atomic_load_n(&P.forking, __ATOMIC_ACQUIRE))
			return;
	for (int i = 0; i < MAX_CHILDREN; i++) {
		int fd = kids[i].uffd;
		ssize_t r;

		while (kids[i].used && fd >= 0 && (r = read(fd, msg, sizeof(msg))) > 0)
			for (ssize_t k = 0; k < r / (ssize_t)sizeof(msg[0]); k++) {
				if (msg[k].event == UFFD_EVENT_FORK)
					forkchild_event(fd, &msg[k]);
				else
					serve(&kids[i], &msg[k]);
			}
	}
	if (do_reap)
		reap();
	pager_unlock();
}

void forkchild_complete_all(void)
{
	if (!nkids)
		return;
	pager_lock("completing forked children at exit");
	reap();
	for (int i = 0; i < MAX_CHILDREN; i++) {
		struct child *c = &kids[i];
		uint64_t t0 = now_ns();

		/* a fork that returned has had its event read, but the handler
		 * may not have stored the descriptor yet (forkchild_event) */
		while (c->used && c->pid > 0 && __atomic_load_n(&c->uffd, __ATOMIC_ACQUIRE) < 0 &&
		       now_ns() - t0 < 1000000000ull)
			sched_yield();
		if (!c->used || c->uffd < 0)
			continue;
		for (int area = 0; area < 2; area++)
			for (uint64_t p = area ? P.c.heap_pages : 0; p < (area ? c->map_hi : c->heap_hi); p++)
				if (servable_at(c, p))
					serve_data(c, p);
		/* its registration goes with the descriptor: then it may take
		 * its memory over (forkchild_wait_own) */
		close(c->uffd);
		c->uffd = -1;
		__atomic_store_n(&shared_of(c->got)->complete, 1, __ATOMIC_RELEASE);
		os_futex_wake(&shared_of(c->got)->complete, 1);
		STAT_ADD(P.c.stats, children_handed, 1);
		free_slot(c);
	}
	pager_unlock();
}

bool forkchild_defer(unsigned node, uint32_t pfn)
{
	static bool warned;

	if (!nkids)
		return false;
	if (ndeferred < DEFER_MAX) {
		deferred[ndeferred++] = (uint64_t)P.epoch[node] << 40 | (uint64_t)node << 32 | pfn;
	} else if (!warned) { /* kept until the memnode sees us go: never freed under a child */
		warned = true;
		log_warn("more than %u frames freed while forked children live; the rest stay held", DEFER_MAX);
	}
	return true;
}

void forkchild_discarded(uint64_t idx)
{
	if (lazy_got)
		__atomic_store_n(&lazy_got[idx], 1, __ATOMIC_RELEASE);
}

bool forkchild_is_lazy_child(void) { return lazy_got != NULL; }

/* A forked child owns all of its memory once its parent handed it every
 * page (a lazy child: complete, D45) or, when nothing was left remote (an
 * eager fork, or a fork of a lazy child, which brings its pages home
 * first), once the parent is gone, as a daemon's is: before that, the
 * usual fork + exec has no use for a pager of its own. */
int forkchild_wait_own(pid_t parent, int ms, int *pidfd)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000 };
	struct pollfd p;

	if (lazy_got) {
		int *flag = &shared_of(lazy_got)->complete;

		if (!__atomic_load_n(flag, __ATOMIC_ACQUIRE))
			os_futex_wait(flag, 0, &ts);
		return __atomic_load_n(flag, __ATOMIC_ACQUIRE) ? 1 : 0;
	}
	if (*pidfd < 0) {
		*pidfd = (int)syscall(SYS_pidfd_open, parent, 0);
		/* a child whose parent is gone has another (init, a subreaper),
		 * and the pid may name another process by now: the pidfd names
		 * the parent only when the parent is still ours after it opened */
		if (getppid() != parent) {
			if (*pidfd >= 0)
				close(*pidfd);
			*pidfd = -1;
			return 1;
		}
		if (*pidfd < 0)
			return -1; /* no pidfd here */
	}
	p = (struct pollfd){ .fd = *pidfd, .events = POLLIN };
	if (poll(&p, 1, ms) != 1)
		return 0;
	close(*pidfd);
	*pidfd = -1;
	return 1;
}

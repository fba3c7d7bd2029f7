/* rt: configuration, region reservation, start-up order and the watchdog. */
#include "backup.h"
#include "rt.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <malloc.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "client.h"
#include "evict.h"
#include "listener.h"
#include "log.h"
#include "memcg.h"
#include "membership.h"
#include "options.h"
#include "forkchild.h"
#include "cpuload.h"
#include "heapalloc.h"
#include "budget.h"
#include "home.h"
#include "pager.h"
#include "placement.h"
#include "prefetch.h"
#include "procfile.h"
#include "procread.h"
#include "pte.h"
#include "stats.h"
#include "tp_fork.h"
#include "uffd.h"
#include "watchdog.h"
#include "wakeup.h"
#include "os.h"

__thread int rt_internal __attribute__((tls_model("initial-exec")));
int rt_mode;
locale_t rt_c_locale;
char *rt_heap_lo, *rt_heap_hi, *rt_region_hi;

static struct options opts;
static struct stats *stats;
static int early_state; /* 0 not yet, 1 in progress, 2 done */
static bool configured;  /* the options were read, and the runtime may start here */

#define REGION_ALIGN (1ul << 30) /* the allocator wants its arena segment-aligned */

static void __attribute__((noreturn)) fail(const char *why)
{
	log_error("%s; the program cannot run under comex", why);
	_exit(126);
}

/* Whether this is the process comex run started (or one the runtime was
 * preloaded into by hand) */
static bool is_root(void)
{
	const char *root = getenv("COMEX_ROOT_PID");

	return !root || atoi(root) == getpid();
}

/* The runtime cannot start in this process. The program comex run started
 * (or one the runtime was preloaded into by hand) stops: it was asked to run
 * under comex. A program started in turn by a managed one (an exec'd child
 * whose RLIMIT_NOFILE or RLIMIT_AS is too low, or that cannot reach the
 * memnodes) runs unmanaged instead, with a warning and a count in its
 * parent's counters (children_unmanaged): refusing it would break programs
 * that work without comex (docs/DECISIONS.md D41). */
static void start_failed(const char *why)
{
	const char *root = getenv("COMEX_ROOT_PID");

	if (is_root())
		fail(why);
	log_warn("%s; %s (pid %d) runs without comex: its memory is not managed", why, program_invocation_short_name,
		 (int)getpid());
	if (stats_note_unmanaged((int)getppid()))
		stats_note_unmanaged(atoi(root));
}

/* The region's address space: the default size is tried, then halves of
 * it down to REGION_LEAST, where RLIMIT_AS or the kernel's overcommit
 * policy refuse it; a size the user gave is taken or refused. The mapping
 * is *len_io plus REGION_ALIGN long (for the alignment); -1 if refused. */
#define REGION_LEAST (64ul << 30) /* the old default: below it, big programs fall outside */
#define REGION_MOST  (16ul << 40) /* page numbers in the region fit 32 bits (interpose.c's hint key) */
static uint64_t region_len(void) { return opt_num(&opts, OPT_REGION) & ~(REGION_ALIGN - 1); }

static long map_region(uint64_t *len_io)
{
	uint64_t len = region_len();
	bool given = strcmp(opts.v[OPT_REGION].origin, "default");
	long p;

	for (;;) {
		p = os_mmap(NULL, len + REGION_ALIGN, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (p != -1 || given || len / 2 < REGION_LEAST)
			break;
		len /= 2;
	}
	*len_io = len;
	return p;
}

/* Reserves the region and hands its first half to mimalloc (heapalloc) as
 * the only memory it may use, so every heap object lives there.
 * NULL, or why it could not. */
static const char *reserve_region(void)
{
	uint64_t len;
	long p = map_region(&len);
	const char *why;
	char *base;

	if (p == -1)
		return "cannot reserve the managed region (option region; RLIMIT_AS?)";
	base = (char *)(((uintptr_t)p + REGION_ALIGN - 1) & ~(REGION_ALIGN - 1));
	/* the alignment's slack goes back: left mapped, the kernel merged it
	 * with the next anonymous mapping and core dumps held up to 1 GiB of it */
	if (base > (char *)p)
		os_munmap((void *)p, base - (char *)p);
	os_munmap(base + len, (char *)p + REGION_ALIGN - base);
	if ((why = heapalloc_start(base, len / 2))) {
		os_munmap(base, len);
		return why;
	}
	os_madvise(base, len, MADV_NOHUGEPAGE); /* 4 KiB granularity for faults */
	rt_heap_hi = base + len / 2;
	rt_region_hi = base + len;
	/* last: a thread that sees it sees the bounds (rt_in_heap, which other
	 * threads call while a waiting runtime starts) */
	__atomic_store_n(&rt_heap_lo, base, __ATOMIC_RELEASE);
	return NULL;
}

/* A region the runtime could not start in stays reserved (rt_heap_lo is
 * published: a mapping made there later would pass for the allocator's)
 * but inaccessible: mlockall cannot populate it, a core dump skips it. */
static void disable_region(void)
{
	size_t len = (size_t)(rt_region_hi - rt_heap_lo);

	os_mmap(rt_heap_lo, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
	os_madvise(rt_heap_lo, len, MADV_DONTDUMP);
}

/* The region's size is checked at exec, so that a wrong one is said at
 * once; the region itself is reserved when the runtime starts. */
static const char *check_region(void)
{
	uint64_t len = region_len();

	return len < 2 * REGION_ALIGN || len > REGION_MOST ? "option region: must be between 2G and 16T" : NULL;
}

void rt_early(void)
{
	int zero = 0, first;
	char *argv[] = { "comex-rt", NULL };

	if (__atomic_load_n(&early_state, __ATOMIC_ACQUIRE) == 2)
		return;
	if (!__atomic_compare_exchange_n(&early_state, &zero, 1, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
		while (__atomic_load_n(&early_state, __ATOMIC_ACQUIRE) != 2)
			if (rt_internal)
				return; /* re-entered from our own start-up: stay outside */
		return;
	}
	rt_internal++;
	rt_c_locale = newlocale(LC_ALL_MASK, "C", (locale_t)0);
	log_set_prefix("comex");
	if (getenv("COMEX_LOCAL_MEM") && !options_configure(&opts, SC_RUN, 1, argv, &first)) {
		const char *why;

		/* the program's stderr is the program's: what the runtime notes
		 * there unasked is what needs a person (warnings, errors); its
		 * comings and goings are in its counters (docs/DECISIONS.md D41) */
		log_threshold = strcmp(opts.v[OPT_LOG_LEVEL].origin, "default") ? (int)opt_num(&opts, OPT_LOG_LEVEL) : LOG_WARN;
		if ((why = check_region()))
			start_failed(why);
		else
			configured = true;
	}
	rt_internal--;
	__atomic_store_n(&early_state, 2, __ATOMIC_RELEASE);
}

static void *handler_main(void *arg)
{
	rt_internal = 1;
	wakeup_apply((enum wakeup_mode)opt_num(&opts, OPT_SCHED));
	pager_run((int)(intptr_t)arg);
	return NULL;
}

static void *reclaimer_main(void *arg)
{
	rt_internal = 1;
	return pager_reclaimer(arg);
}

static void *membership_main(void *arg)
{
	rt_internal = 1;
	return pager_membership(arg);
}

static void *home_main(void *arg)
{
	(void)arg;
	rt_internal = 1;
	home_run(opt_num(&opts, OPT_HOME_ON_TRACE));
	return NULL;
}

static void *procread_main(void *arg)
{
	(void)arg;
	rt_internal = 1;
	procread_run();
	return NULL;
}

static void *watchdog_main(void *arg)
{
	(void)arg;
	rt_internal = 1;
	watchdog_run(opt_num(&opts, OPT_WATCHDOG), opt_str(&opts, OPT_WATCHDOG));
	return NULL;
}

static void fork_phase(enum fork_phase phase)
{
	locale_t prev = rt_enter();

	pager_fork(phase);
	rt_leave(prev);
}

static const char *start(bool take_over);

/* A forked child that outlives the need for its parent (a daemon's: the
 * parent exits after the fork) starts a pager of its own once it owns all
 * its memory, and keeps its budget (docs/DECISIONS.md D46). */
#define OWN_LOOK_MS 100 /* how often the waiting thread looks whether the program's threads are all gone */

/* A forked child's take-over and the program's forks exclude each other: a
 * fork during a take-over would wait for its UFFD_EVENT_FORK on the new
 * descriptor, whose handlers the take-over is still starting, while the
 * take-over's allocations wait for the C library's locks the fork holds. */
static pthread_mutex_t takeover = PTHREAD_MUTEX_INITIALIZER;

/* The process that forks, noted under takeover before the fork: the child's
 * waiting thread watches that one. Not getppid() in the child: a parent
 * that exits at once (a double fork's first child) can be gone before the
 * child's handlers run, and the child would then watch init or a subreaper,
 * which never goes. */
static pid_t forker;

/* Fault handlers this process started (0: none, or a forked child before
 * its take-over); a fork first waits until they serve (fork_prepare). */
static int handlers_up;

static void *own_main(void *arg)
{
	const char *why;
	int own, pidfd = -1;

	rt_internal = 1;
	watchdog_thread_is_runtime(); /* started by the program's fork, not through internal_start */
	/* this thread must not keep a child alive whose threads all ended; its
	 * looks at them are read by a /proc reader of this child's own, made at
	 * the first (a child that execs at once makes none), which the
	 * take-over keeps */
	for (bool first = true; !(own = forkchild_wait_own((pid_t)(intptr_t)arg, OWN_LOOK_MS, &pidfd)); first = false)
		if (first && !procread_serving())
			rt_start_thread(procread_main, NULL, "comex-proc", NULL); /* failed: reads in the program's table */
		else if (watchdog_program_gone())
			exit(0); /* as the C library ends a process whose last thread ends */
	if (own < 0)
		return NULL;
	forkchild_forget_parent();
	pthread_mutex_lock(&takeover);
	if ((why = start(true))) {
		pthread_mutex_unlock(&takeover);
		log_warn("%s; this forked child (pid %d) goes on without comex", why, (int)getpid());
		return NULL;
	}
	__atomic_store_n(&rt_mode, RT_MANAGED, __ATOMIC_RELEASE);
	interpose_sig_install(); /* a default the child set while it waited: the parent's stand-in went with it */
	pthread_mutex_unlock(&takeover);
	pager_fit();
	return NULL;
}

/* Runs before the C library takes its malloc arenas for the fork: the fork
 * waits for a handler to read its UFFD_EVENT_FORK, and a handler started
 * just before (a forked child's main that waited for its take-over forks
 * at once) must be past its thread's first heap call by then. */
static void fork_prepare(void)
{
	pthread_mutex_lock(&takeover);
	if (handlers_up)
		pager_wait_handlers(handlers_up);
	forker = getpid();
	fork_phase(FORK_PREPARE);
}

static void fork_parent(void)
{
	fork_phase(FORK_PARENT);
	pthread_mutex_unlock(&takeover);
}

static void fork_child(void)
{
	fork_phase(FORK_CHILD);
	pthread_mutex_init(&takeover, NULL); /* held by the forking thread, which is this one */
	rt_mode = RT_DETACHED;
	handlers_up = 0; /* the parent's; none here until a take-over */
	watchdog_forget_threads(); /* the parent's; they are not here */
	procread_fork_child();
	listener_reset(); /* the parent's handlers are not here; this thread is the child's main */
	listener_note_main();
	rt_start_thread(own_main, (void *)(intptr_t)forker, "comex-own", NULL);
}

/* Pages a batch of eviction holds beside the budget for a moment: its
 * parking slots and the scratch copies (reclaim.c). */
#define EVICT_TRANSIENT_PAGES 512

/* With cgroup-follow: the room never taken, cgroup-slack (default 1/64 of
 * the limit, 4 MiB to 64 MiB: page tables and stacks grow with the program
 * between two samples) plus the runtime's own buffers, which the cgroup
 * charges only once they are touched. */
static int follow_reserve(uint64_t lim, uint64_t buffers, struct pager_config *pc)
{
	uint64_t slack = opt_num(&opts, OPT_CGROUP_SLACK);

	if (!slack)
		slack = lim / 64 < (4ull << 20) ? 4ull << 20 : lim / 64 > (64ull << 20) ? 64ull << 20 : lim / 64;
	pc->follow_reserve = slack + ((buffers + EVICT_TRANSIENT_PAGES) << PAGE_SHIFT);
	if (lim < pc->follow_reserve + (4ull << 20)) {
		log_error("option local-mem auto: the cgroup limit of %llu MiB leaves nothing after cgroup-slack %llu MiB "
			  "and the runtime's %llu MiB of buffers", (unsigned long long)(lim >> 20),
			  (unsigned long long)(slack >> 20), (unsigned long long)(pc->follow_reserve - slack) >> 20);
		return -EINVAL;
	}
	return 0;
}

static uint64_t local_mem; /* bytes, as budget() found it */

/* Budget for program pages: local-mem minus the runtime's buffers. With
 * local-mem auto in a memory cgroup, local-mem is the cgroup's limit, an
 * upper bound; the fault path follows the room left under it (reclaim.c). */
static int budget(unsigned nodes, struct pager_config *pc)
{
	uint64_t m, lim, wb = nodes * opt_num(&opts, OPT_WBUF_PAGES), prefetch = opt_num(&opts, OPT_PREFETCH);

	if (options_parse_size(opt_str(&opts, OPT_LOCAL_MEM), &m)) {
		log_error("option local-mem: '%s' is not a size (the runtime needs bytes; 'auto' is resolved by comex run)",
			  opt_str(&opts, OPT_LOCAL_MEM));
		return -EINVAL;
	}
	pc->follow = getenv(MEMCG_AUTO_ENV) && opt_num(&opts, OPT_CGROUP_FOLLOW) && !memcg_open(&lim);
	if (pc->follow)
		m = lim;
	local_mem = m;
	if (pc->prefetch_policy != PREFETCH_READ_BUFFER)
		pc->rbuf_pages = (uint32_t)prefetch; /* no read buffer: a landing area for one plan */

	if (pc->rbuf_pages + wb > (m >> PAGE_SHIFT) / 4) {
		uint64_t rb = (m >> PAGE_SHIFT) / 8;

		rb = rb < prefetch * 4 ? prefetch * 4 : rb;
		log_debug("local-mem %llu MiB is small: read buffer shrunk from %u to %llu pages",
			 (unsigned long long)(m >> 20), pc->rbuf_pages, (unsigned long long)rb);
		pc->rbuf_pages = (uint32_t)rb;
	}
	if ((m >> PAGE_SHIFT) < pc->rbuf_pages + wb + 256) {
		log_error("option local-mem: %llu bytes leave no room beside the runtime's %llu KiB of buffers",
			  (unsigned long long)m, (unsigned long long)((pc->rbuf_pages + wb) * 4));
		return -EINVAL;
	}
	pc->budget_pages = (m >> PAGE_SHIFT) - pc->rbuf_pages - wb;
	return pc->follow ? follow_reserve(lim, pc->rbuf_pages + wb, pc) : 0;
}

/* The pager's configuration for nodes memnodes (cl NULL, uffd -1 and no
 * counters: a check of the options alone, for a start that waits). */
static int configure(unsigned nodes, struct comex_client *cl, int uffd, struct pager_config *pc)
{
	uint64_t prefetch = opt_num(&opts, OPT_PREFETCH), replicas = opt_num(&opts, OPT_REPLICAS);
	uint64_t batch = opt_num(&opts, OPT_EVICT_BATCH);

	*pc = (struct pager_config){
		.opts = &opts,
		.base = rt_heap_lo, .npages = (uint64_t)(rt_region_hi - rt_heap_lo) >> PAGE_SHIFT,
		.heap_pages = (uint64_t)(rt_heap_hi - rt_heap_lo) >> PAGE_SHIFT,
		.rbuf_pages = (uint32_t)opt_num(&opts, OPT_RBUF_PAGES),
		.prefetch_policy = opt_num(&opts, OPT_PREFETCH_MAP) ? (unsigned)opt_num(&opts, OPT_PREFETCH_POLICY)
								    : PREFETCH_READ_BUFFER,
		.uffd = uffd, .client = cl, .stats = stats,
	};
	if (pc->prefetch_policy == PREFETCH_READ_BUFFER && prefetch > 64) {
		log_error("option prefetch: %llu pages; at most 64 with prefetch-map false (the read buffer's window)",
			  (unsigned long long)prefetch);
		return -EINVAL;
	}
	if (!batch || batch > MAX_BATCH || !opt_num(&opts, OPT_WBUF_PAGES) || !opt_num(&opts, OPT_FLUSH_RUN)) {
		log_error("options evict-batch (1-256), wbuf-pages and flush-run must be positive");
		return -EINVAL;
	}
	if (replicas < 1 || replicas > 3 || replicas > nodes) {
		log_error("option replicas: %llu copies of every page; it must be 1-3 and at most the number of memnodes (%u)",
			  (unsigned long long)replicas, nodes);
		return -EINVAL;
	}
	return budget(nodes, pc);
}

/* A runtime thread. It takes no signals (D18), whatever its creator's
 * mask; its stack (8 MiB of address space by default) is left out of core
 * dumps: a core holds the program's memory (D48), and six such stacks made
 * a 128 MiB program's core twice its size. */
int rt_start_thread(void *(*fn)(void *), void *arg, const char *name, pthread_t *t_out)
{
	sigset_t all, saved;
	pthread_attr_t a;
	pthread_t t;
	void *stack;
	size_t size;
	char own[16] = ""; /* the creator's name: PR_GET_NAME's 16 bytes */
	int err;

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &saved);
	/* the thread inherits its creator's name: naming it afterwards writes
	 * /proc/self/task/TID/comm, whose entry every process exit then
	 * invalidates (a tenth of a millisecond a process for six threads) */
	prctl(PR_GET_NAME, own);
	prctl(PR_SET_NAME, name);
	err = pthread_create(&t, NULL, fn, arg);
	prctl(PR_SET_NAME, own);
	pthread_sigmask(SIG_SETMASK, &saved, NULL);
	if (err)
		return -err;
	if (!pthread_getattr_np(t, &a)) {
		if (!pthread_attr_getstack(&a, &stack, &size))
			os_madvise(stack, size, MADV_DONTDUMP);
		pthread_attr_destroy(&a);
	}
	pthread_detach(t);
	if (t_out)
		*t_out = t;
	return 0;
}

enum fault_handlers { FAULT_HANDLERS_PER_CPU, FAULT_HANDLERS_ONE }; /* option fault-handlers, in its order */

/* per-cpu handlers only up to this many CPUs in the program's affinity: a
 * fault of a thread other than the main one wakes every handler (listener),
 * and a wake-up per CPU on every fault of a wide program costs more than
 * the cross-core wake-up it saves. Wider programs get one handler (D32). */
#define PER_CPU_MAX 8

/* The runtime's threads are all made before the pager starts, each parked
 * until it has (go): a process that cannot make them all (at its thread or
 * memory limit) is then left as any start that fails leaves it, unmanaged
 * for a late start, instead of with a registered region no handler serves. */
#define RT_THREADS (PER_CPU_MAX + 7) /* handlers, the shared one, reclaimer, /proc reader, watchdog, members, home, backup */
static struct parked { void *(*fn)(void *); void *arg; } parked[RT_THREADS];
static unsigned nparked;
static int go; /* futex word: 0 parked, 1 run fn, -1 end; release store, acquire load */

/* A parked thread: waits for go, then runs its fn (1) or ends (-1). */
static void *parked_main(void *arg)
{
	const struct parked *p = arg;
	int g;

	while (!(g = __atomic_load_n(&go, __ATOMIC_ACQUIRE)))
		os_futex_wait(&go, 0, NULL);
	return g > 0 ? p->fn(p->arg) : NULL;
}

/* Makes a thread named name that runs fn(arg) once set going: 0, or a
 * negative errno (logged). */
static int park(void *(*fn)(void *), void *arg, const char *name)
{
	int err;

	if (nparked == RT_THREADS) { /* RT_THREADS counts every park_threads makes */
		log_error("internal error: more than %d runtime threads", RT_THREADS);
		return -E2BIG;
	}
	parked[nparked] = (struct parked){ fn, arg };
	if ((err = rt_start_thread(parked_main, &parked[nparked], name, NULL))) {
		errno = -err;
		log_error("cannot start the %s thread: %m", name);
		return err;
	}
	nparked++;
	return 0;
}

/* Sets every parked thread going (how 1) or ending (-1). */
static void unpark(int how)
{
	__atomic_store_n(&go, how, __ATOMIC_RELEASE);
	os_futex_wake(&go, INT_MAX);
}

static void *backup_main(void *arg)
{
	return backup_on() ? backup_writer(arg) : NULL; /* backup-dir given: pager_init opened the file */
}

/* Parks every thread of the runtime: fault-handlers per-cpu, one pinned
 * handler per CPU the program may run on (a thread that faults wakes the
 * one on its own CPU) and the shared one, unpinned, which serves while
 * several threads fault (listener); one, a single unpinned handler that
 * busy-polls handler-spin after each fault. A fork waits until they serve
 * (fork_prepare), not the start of every process. Their number in
 * *handlers; on failure those made end. */
static int park_threads(unsigned *handlers)
{
	cpu_set_t set;
	unsigned n = 0;
	int err = 0;

	nparked = 0;
	__atomic_store_n(&go, 0, __ATOMIC_RELAXED); /* a forked child's copy of its parent's 1; before any thread */
	if (opt_num(&opts, OPT_FAULT_HANDLERS) == FAULT_HANDLERS_PER_CPU && !sched_getaffinity(0, sizeof(set), &set) &&
	    CPU_COUNT(&set) <= PER_CPU_MAX) {
		for (int cpu = 0; cpu < CPU_SETSIZE && !err; cpu++)
			if (CPU_ISSET(cpu, &set) && !(err = park(handler_main, (void *)(intptr_t)cpu, "comex-fault")))
				n++;
		if (!err && !(err = park(handler_main, (void *)(intptr_t)LISTENER_SHARED, "comex-fault")))
			n++;
	} else if (!(err = park(handler_main, (void *)(intptr_t)-1, "comex-fault"))) {
		n++;
	}
	if (!err && opt_num(&opts, OPT_RECLAIMER))
		err = park(reclaimer_main, NULL, "comex-reclaim");
	if (!err && !procread_serving()) /* a forked child's owner thread may have made it */
		err = park(procread_main, NULL, "comex-proc");
	if (!err)
		err = park(watchdog_main, NULL, "comex-watchdog");
	if (!err)
		err = park(membership_main, NULL, "comex-members");
	if (!err)
		err = park(home_main, NULL, "comex-home");
	if (!err && *opt_str(&opts, OPT_BACKUP_DIR))
		err = park(backup_main, NULL, "comex-backup");
	if (err)
		unpark(-1);
	else
		*handlers = n;
	return err;
}

static void note_nodes(struct comex_client *cl)
{
	char addr[256];

	stats->nodes = (int)client_nodes(cl);
	for (unsigned i = 0; i < client_nodes(cl) && i < OPT_MEMNODE_MAX; i++)
		if (!opt_list_item(&opts, OPT_MEMNODE, i, addr, sizeof(addr)))
			snprintf(stats->node_addr[i], sizeof(stats->node_addr[i]), "%.63s", addr);
}

/* Below this RLIMIT_NOFILE the runtime does not start: it holds about 20
 * descriptors (with sched fifo one more per fault handler) and 3-6 per
 * memnode, and leaves the program room for its own. */
#define RT_MIN_NOFILE 64

/* NULL when the process may hold the runtime's descriptors, else why not */
static const char *nofile_short(void)
{
	struct rlimit r;

	return !getrlimit(RLIMIT_NOFILE, &r) && r.rlim_cur < RT_MIN_NOFILE ?
		       "RLIMIT_NOFILE is below the 64 descriptors the runtime needs" : NULL;
}

/* A forked child's registration with its parent's descriptor for it goes
 * when the parent closes that descriptor, a moment after the child was
 * told it owns its memory: until then the region cannot be registered. */
#define UNREGISTERED_WAIT_MS 2000

static int wait_unregistered(int uffd)
{
	size_t len = (size_t)(rt_region_hi - rt_heap_lo);
	int err = -EBUSY;

	for (int ms = 0; ms < UNREGISTERED_WAIT_MS && (err = uffd_register(uffd, rt_heap_lo, len, true)) == -EBUSY; ms++)
		nanosleep(&(struct timespec){ 0, 1000000 }, NULL);
	return err ? err : uffd_unregister(uffd, rt_heap_lo, len);
}

/* /proc/self/statm, opened by start() in each managed process: at exit
 * other threads of the program may still be making descriptors (D47) */
static int statm_fd = -1;

/* Connects, configures and starts the pager; NULL, or why it could not
 * (what it had set up undone, so that the program can run unmanaged).
 * take_over: in a forked child that owns all its memory, the pager starts
 * anew over what the parent's left (D46). */
static const char *start(bool take_over)
{
	struct comex_client *cl;
	struct pager_config pc;
	const char *why = nofile_short();
	unsigned handlers = 0;
	bool async;
	int uffd, err;

	if (why)
		return why;
	if (take_over && tp_fork_child() == -ENOTSUP) /* -ENOENT: UCX is not loaded here (transport tcp) */
		return "this UCX cannot be used again in a forked child";
	if ((err = uffd_open(opt_num(&opts, OPT_WP_ASYNC), opt_num(&opts, OPT_LAZY_FORK), &uffd, &async)))
		return err == -EPERM || err == -ENOSYS ? uffd_permission_help(err) : "userfaultfd unavailable";
	if (take_over && wait_unregistered(uffd)) {
		why = "the parent's registration of this child's memory did not go";
		goto close_uffd;
	}
	if ((take_over || !stats) && stats_create(&stats)) { /* a waiting root's are made (rt_init) */
		why = "out of memory for counters";
		goto close_uffd;
	}
	stats->managed_bytes = (uint64_t)(rt_region_hi - rt_heap_lo);
	if (statm_fd >= 0)
		close(statm_fd); /* the parent's, in a forked child */
	statm_fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
	cpuload_open(); /* failed: polling goes on as if the CPUs were free */
	if (client_connect(&opts, &cl)) {
		why = "cannot reach the memnodes (option memnode)";
		goto drop_stats;
	}
	note_nodes(cl);
	client_board(cl, &stats->board);
	if (configure(client_nodes(cl), cl, uffd, &pc)) {
		why = "pager start-up failed";
		goto disconnect;
	}
	if (park_threads(&handlers)) {
		why = "cannot start the runtime's threads";
		goto close_memcg;
	}
	stats->local_mem_bytes = local_mem;
	pc.async = async;
	if (take_over ? pager_reattach(&pc) : pager_init(&pc))
		fail("pager start-up failed"); /* half made: the region may be registered */
	handlers_up = (int)handlers;
	unpark(1);
	log_debug("managing %p-%p, budget %llu pages", (void *)rt_heap_lo, (void *)rt_region_hi,
		  (unsigned long long)pc.budget_pages);
	return NULL;

close_memcg:
	if (pc.follow)
		memcg_close();
disconnect:
	client_close(cl);
drop_stats:
	stats_unlink(getpid());
	stats = NULL;
	if (statm_fd >= 0)
		close(statm_fd);
	statm_fd = -1;
close_uffd:
	close(uffd);
	return why;
}

/* Reserves the region (a process that waited to start has none: D87), then
 * runs start(false) with every signal blocked (the runtime's threads inherit
 * the mask: D18); the mmap family is managed once it returns NULL. */
static const char *start_managed(void)
{
	sigset_t all, saved;
	const char *why;

	if (!rt_heap_lo && (why = reserve_region()))
		return why;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &saved);
	why = start(false);
	pthread_sigmask(SIG_SETMASK, &saved, NULL);
	if (why) {
		disable_region();
		return why;
	}
	__atomic_store_n(&rt_mode, RT_MANAGED, __ATOMIC_RELEASE); /* mmap family managed from now on */
	interpose_sig_install();
	return NULL;
}

/* ---- lazy start (option start-after, docs/DECISIONS.md D87) ----
 * A process that the runtime waits to start in runs as one it could not
 * start in (RT_OFF): the C library's heap, the kernel's mappings, no
 * userfaultfd, no thread, no connection. Program threads' allocations are
 * counted (rt_grow: malloc family, anonymous mmap); the one that would take
 * the count past start-after starts the runtime first, and is then served
 * from the region. What was taken before stays unmanaged for good: at most
 * start-after, which is at most 1/LAZY_SHARE of the budget (else the start
 * is at exec). */
#define LAZY_SHARE 64
int rt_pending;               /* 1: waiting to start; relaxed reads */
static int64_t pending_bytes; /* held by the program as counted; relaxed atomic */
static int64_t start_after;   /* option start-after, bytes */
/* Held while the runtime starts lazily, and by a fork meanwhile (its child
 * would hold a half-started runtime). */
static pthread_mutex_t arming = PTHREAD_MUTEX_INITIALIZER;
static bool fork_managed; /* the fork under way is of a process the runtime started in (set under arming) */

/* The process's fork handlers, registered before the runtime starts (at
 * exec or lazily): a late pthread_atfork could wait for the C library's
 * fork lock, which a fork holds while its prepare handler waits for
 * arming. They are the runtime's (fork_prepare...) once it runs. */
static void on_fork_prepare(void)
{
	pthread_mutex_lock(&arming);
	fork_managed = __atomic_load_n(&rt_mode, __ATOMIC_ACQUIRE) != RT_OFF; /* a forked child's too (DETACHED) */
	if (fork_managed)
		fork_prepare();
}

static void on_fork_parent(void)
{
	if (fork_managed)
		fork_parent();
	pthread_mutex_unlock(&arming);
}

static void on_fork_child(void)
{
	pthread_mutex_init(&arming, NULL);
	if (fork_managed)
		fork_child();
	else {
		listener_note_main(); /* this thread is the child's main */
		stats = NULL;         /* a waiting root's: the child makes its own when it starts */
	}
}

/* Starts the runtime on the program thread that crossed start-after. A
 * thread that crosses it while another starts it (or a fork holds arming)
 * goes on unmanaged meanwhile and does not wait: it may hold a lock the
 * start needs (the dynamic linker's, in a library's constructor). A failure
 * leaves the process unmanaged: the program is already running, and
 * stopping it would lose its work (D41). */
static void arm(void)
{
	const char *why;

	if (pthread_mutex_trylock(&arming))
		return;
	if (__atomic_load_n(&rt_pending, __ATOMIC_ACQUIRE)) {
		rt_internal++;
		if ((why = start_managed())) {
			log_warn("%s; %s (pid %d) goes on without comex: its memory is not managed", why,
				 program_invocation_short_name, (int)getpid());
			stats_note_unmanaged((int)getppid());
		}
		__atomic_store_n(&rt_pending, 0, __ATOMIC_RELEASE);
		rt_internal--;
	}
	pthread_mutex_unlock(&arming);
}

void rt_grow(int64_t bytes, bool may_start)
{
	int64_t held = __atomic_add_fetch(&pending_bytes, bytes, __ATOMIC_RELAXED);

	if (bytes > 0 && held >= start_after && may_start)
		arm();
	else if (held < 0) /* frees of blocks made before the count began */
		__atomic_compare_exchange_n(&pending_bytes, &held, 0, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
}

/* Whether this process may wait to start: start-after set, a budget of at
 * least LAZY_SHARE times start-after, descriptors enough, and, in the root,
 * options the start would take, a region the kernel would map and a
 * mimalloc that loads (checked here: else the start at exec fails and says
 * why; backup-dir's directory only by the start itself). */
static bool may_wait(void)
{
	struct pager_config pc;
	unsigned nodes = 0;
	char addr[256];
	uint64_t m, len;
	int level = log_threshold;
	long p = -1;
	bool ok;

	start_after = (int64_t)opt_num(&opts, OPT_START_AFTER);
	if (start_after <= 0 || options_parse_size(opt_str(&opts, OPT_LOCAL_MEM), &m) ||
	    m / LAZY_SHARE < (uint64_t)start_after || nofile_short() || *opt_str(&opts, OPT_BACKUP_DIR))
		return false;
	if (!is_root())
		return true; /* the root checked them: started in turn, a late failure leaves it unmanaged (D41) */
	while (!opt_list_item(&opts, OPT_MEMNODE, nodes, addr, sizeof(addr)))
		nodes++;
	log_threshold = -1; /* a wrong option is logged once, by the start at exec */
	ok = !configure(nodes, NULL, -1, &pc);
	log_threshold = level;
	if (ok && (p = map_region(&len)) != -1) /* RLIMIT_AS, overcommit: said at exec too */
		os_munmap((void *)p, len + REGION_ALIGN);
	return ok && p != -1 && heapalloc_loadable(); /* else the start at exec says why */
}

__attribute__((constructor(101))) static void rt_init(void)
{
	const char *why;

	rt_early();
	interpose_fd_resolve();
	forkchild_forget_parent(); /* an exec'd lazy child's signal (D45) */
	if (!configured)
		return;
	rt_internal++;
	listener_note_main(); /* the constructor runs on the program's main thread */
	pthread_atfork(on_fork_prepare, on_fork_parent, on_fork_child);
	if (may_wait()) {
		void *probe = malloc(16); /* the C library's: rt_internal */

		malloc_usable_size(probe); /* looks up the C library's, which free's count takes, now */
		free(probe);
		if (*opt_str(&opts, OPT_STATS_JSON) && is_root() && stats_create(&stats))
			stats = NULL; /* the launcher writes --stats-json from them even after _exit: made now */
		__atomic_store_n(&rt_pending, 1, __ATOMIC_RELEASE);
	} else if ((why = start_managed()))
		start_failed(why);
	rt_internal--;
}

static uint64_t rss_bytes(void)
{
	char buf[128] = "", *p = buf;

	if (statm_fd >= 0)
		procfile_pread(statm_fd, buf, sizeof(buf)); /* unread, buf stays "": 0 */
	strtoul(p, &p, 10); /* statm: size, then resident, in pages */
	return (uint64_t)strtoul(p, NULL, 10) << PAGE_SHIFT;
}

/* The shared memory resident in the process (RssShmem), bytes: mostly the
 * embedded memnode's pool, which the client maps (D38) and which is the
 * memnode's memory, not the program's. 0 when unknown. At exit only. */
static uint64_t rss_shmem_bytes(void)
{
	char buf[4096];
	const char *at;

	if (procfile_read("/proc/self/status", buf, sizeof(buf)) <= 0)
		return 0;
	at = strstr(buf, "\nRssShmem:");
	return at ? strtoull(at + 10, NULL, 10) << 10 : 0;
}

__attribute__((destructor)) static void rt_fini(void)
{
	const char *root = getenv("COMEX_ROOT_PID"), *path = opt_str(&opts, OPT_STATS_JSON);
	uint64_t rss, shmem;

	if (rt_pending && stats) { /* the root, never started: counters of nothing paged */
		rt_internal++; /* what this allocates starts nothing */
		stats_write_json(stats, path);
		stats_unlink(getpid());
		rt_internal--;
		return;
	}
	if (rt_mode != RT_MANAGED || !stats)
		return; /* also in a forked child: its parent reports */
	rt_internal++;
	pager_exit();
	rss = rss_bytes();
	shmem = rss_shmem_bytes();
	rss = shmem < rss ? rss - shmem : 0; /* the embedded pool is the memnode's */
	stats->outside_rss_bytes = rss > stats->resident_bytes ? rss - stats->resident_bytes : 0;
	if (root && atoi(root) == getpid()) {
		budget_count_outside(); /* the last measure, for the report: a short program may end within one tick */
		budget_report();
		if (*path)
			stats_write_json(stats, path);
	}
	stats_unlink(getpid());
	rt_internal--;
}

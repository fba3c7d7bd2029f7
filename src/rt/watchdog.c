/* watchdog: three probes, every 100 ms (the last every second):
 * - a fault handler busy on one batch of faults (pager_stuck_ns);
 * - the pager lock held (pager_lock_held_ns), by whom and for what;
 * - program threads asleep in a userfaultfd fault: /proc/self/task/T/wchan
 *   is handle_userfault at every look and voluntary_ctxt_switches has not
 *   moved, so the thread has slept in one fault since (a thread that keeps
 *   faulting wakes, and switches, once per fault). That is a fault read
 *   and never answered, or one no handler reads: without this probe such a
 *   program hung silently.
 * Runs on its own runtime thread: no malloc or stdio (paths and numbers are
 * formatted by hand), only the log's stack buffer. */
#include "watchdog.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "log.h"
#include "pager.h"
#include "procread.h"
#include "os.h"

#define TICK_NS 100000000ull /* 100 ms */
#define SCAN_EVERY 10        /* ticks between task scans (1 s) */
#define MAX_WAITERS 256      /* threads tracked at once; more are looked at again next scan */

struct waiter { int tid; bool seen; uint64_t nvcsw, since; };
static struct waiter waiters[MAX_WAITERS];
static unsigned nwaiters;

static void __attribute__((noreturn)) stop(void)
{
	kill(getpid(), SIGKILL);
	_exit(137);
}

/* "/proc/self/task/<tid>/<leaf>" into buf. */
static void task_path(char *buf, int tid, const char *leaf)
{
	char digits[16];
	int n = 0;

	do
		digits[n++] = (char)('0' + tid % 10);
	while ((tid /= 10));
	strcpy(buf, "/proc/self/task/");
	buf += strlen(buf);
	while (n)
		*buf++ = digits[--n];
	*buf++ = '/';
	strcpy(buf, leaf);
}

/* The number after key in /proc status text, or 0. */
static uint64_t status_num(const char *st, const char *key)
{
	const char *p = strstr(st, key);
	uint64_t v = 0;

	if (!p)
		return 0;
	for (p += strlen(key); *p == ' ' || *p == '\t'; p++)
		;
	for (; *p >= '0' && *p <= '9'; p++)
		v = v * 10 + (uint64_t)(*p - '0');
	return v;
}

static struct waiter *waiter_of(int tid)
{
	for (unsigned i = 0; i < nwaiters; i++)
		if (waiters[i].tid == tid)
			return &waiters[i];
	if (nwaiters == MAX_WAITERS)
		return NULL;
	waiters[nwaiters] = (struct waiter){ .tid = tid };
	return &waiters[nwaiters++];
}

/* One thread: asleep in a userfaultfd fault? since when, without waking? */
static void look_at(int tid, uint64_t t, uint64_t limit, const char *option)
{
	char path[64], wchan[64], st[4096];
	struct waiter *w;
	uint64_t nvcsw;
	const char *name;

	task_path(path, tid, "wchan");
	if (procread_file(path, wchan, sizeof(wchan)) < 0 || strcmp(wchan, "handle_userfault"))
		return;
	task_path(path, tid, "status");
	if (procread_file(path, st, sizeof(st)) < 0 || !(w = waiter_of(tid)))
		return;
	nvcsw = status_num(st, "voluntary_ctxt_switches:");
	if (!w->since || w->nvcsw != nvcsw) {
		w->since = t;
		w->nvcsw = nvcsw;
	}
	w->seen = true;
	if (t - w->since <= limit)
		return;
	name = strstr(st, "Name:") ? strstr(st, "Name:") + 5 : "?";
	while (*name == '\t' || *name == ' ')
		name++;
	*strchrnul(name, '\n') = 0;
	log_error("watchdog: thread %d (%s) has slept for %llu ms in one page fault of the managed region that no "
		  "fault handler answers (option watchdog = %s); stopping the program",
		  tid, name, (unsigned long long)((t - w->since) / 1000000), option);
	stop();
}

#define MAX_RT_THREADS 64 /* handlers (one per CPU), the others, UCX's */
static int rt_tids[MAX_RT_THREADS];
static unsigned n_rt_tids;

void watchdog_thread_is_runtime(void)
{
	unsigned i = __atomic_fetch_add(&n_rt_tids, 1, __ATOMIC_RELAXED);

	if (i < MAX_RT_THREADS)
		__atomic_store_n(&rt_tids[i], os_gettid(), __ATOMIC_RELEASE);
}

void watchdog_forget_threads(void)
{
	__atomic_store_n(&n_rt_tids, 0, __ATOMIC_RELEASE);
}

static bool is_runtime(int tid)
{
	unsigned n = __atomic_load_n(&n_rt_tids, __ATOMIC_ACQUIRE);

	for (unsigned i = 0; i < n && i < MAX_RT_THREADS; i++)
		if (__atomic_load_n(&rt_tids[i], __ATOMIC_ACQUIRE) == tid)
			return true;
	return false;
}

/* A thread group's leader that ended stays listed, as a zombie; a thread
 * that ended since it was listed is gone. Anything else unreadable (out of
 * descriptors) counts as alive: a wrong "ended" would end the program. */
static bool ended(int tid)
{
	char path[64], buf[256], *p;
	int n;

	task_path(path, tid, "stat");
	if ((n = procread_file(path, buf, sizeof(buf))) < 0)
		return n == -ENOENT || n == -ESRCH;
	p = strrchr(buf, ')');
	return p && p[1] == ' ' && (p[2] == 'Z' || p[2] == 'X');
}

#define MAX_TASKS 256 /* thread ids asked for at once */

/* Calls fn(tid, arg) for each thread of the process; false when fn returned
 * false for one (it stops there), and when the threads could not be listed
 * (out of descriptors): a wrong "the program is gone" would end it. */
static bool each_task(bool (*fn)(int tid, void *arg), void *arg)
{
	int tids[MAX_TASKS], n;
	unsigned from = 0;
	bool all = false;

	do {
		if ((n = procread_tasks(from, MAX_TASKS, tids, &all)) < 0)
			return false;
		for (int i = 0; i < n; i++)
			if (!fn(tids[i], arg))
				return false;
		from += (unsigned)n;
	} while (!all && n);
	return all;
}

static bool not_the_programs(int tid, void *arg)
{
	(void)arg;
	return is_runtime(tid) || ended(tid);
}

bool watchdog_program_gone(void)
{
	return each_task(not_the_programs, NULL);
}

struct scan { uint64_t t, limit; const char *option; };

static bool look(int tid, void *arg)
{
	struct scan *sc = arg;

	look_at(tid, sc->t, sc->limit, sc->option);
	return true;
}

static void scan_tasks(uint64_t t, uint64_t limit, const char *option)
{
	struct scan sc = { t, limit, option };
	unsigned k = 0;

	for (unsigned i = 0; i < nwaiters; i++)
		waiters[i].seen = false;
	each_task(look, &sc);
	for (unsigned i = 0; i < nwaiters; i++) /* threads that woke or ended */
		if (waiters[i].seen)
			waiters[k++] = waiters[i];
	nwaiters = k;
}

void watchdog_run(uint64_t limit, const char *option)
{
	struct timespec tick = { 0, TICK_NS };

	for (unsigned ticks = 1;; ticks++) {
		uintptr_t addr = 0;
		const char *why = "?";
		uint64_t stuck, held, t;
		int tid = 0;

		nanosleep(&tick, NULL);
		if (!limit)
			continue;
		t = now_ns();
		stuck = pager_stuck_ns(t, &addr);
		held = pager_lock_held_ns(t, &tid, &why);
		if (stuck > limit) {
			if (held)
				log_error("watchdog: the fault handler has been stuck for %llu ms serving page %#lx; the pager "
					  "lock is held by thread %d (%s) for %llu ms (option watchdog = %s); stopping the program",
					  (unsigned long long)(stuck / 1000000), (unsigned long)addr, tid, why,
					  (unsigned long long)(held / 1000000), option);
			else
				log_error("watchdog: the fault handler has been stuck for %llu ms serving page %#lx "
					  "(option watchdog = %s); stopping the program",
					  (unsigned long long)(stuck / 1000000), (unsigned long)addr, option);
			stop();
		}
		if (held > limit) {
			log_error("watchdog: the pager lock has been held for %llu ms by thread %d (%s) "
				  "(option watchdog = %s); stopping the program",
				  (unsigned long long)(held / 1000000), tid, why, option);
			stop();
		}
		if (ticks % SCAN_EVERY == 0)
			scan_tasks(t, limit, option);
		if (ticks % SCAN_EVERY == 0 && watchdog_program_gone())
			exit(0); /* what the C library does when the last thread ends */
	}
}

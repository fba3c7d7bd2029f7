/* interpose_sig: the core-dumping signals. A core written while pages are
 * away holds zeros for them, and the whole reserved region as a sparse
 * file. Where the program leaves such a signal at its default action, the
 * runtime's handler stands in: it brings every page home and leaves the
 * parts of the region the program never had out of the core
 * (home_for_core), then the signal takes its default action. sigaction and
 * signal are interposed so that the program sees and sets its dispositions
 * as without comex: it is told SIG_DFL where the runtime's handler stands
 * in, and a handler of its own replaces the runtime's. docs/DECISIONS.md D48. */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "home.h"
#include "os.h"
#include "rt.h"

#define EXPORT __attribute__((visibility("default")))

/* The signals whose default action dumps core (signal(7)) */
static bool dumps_core(int sig)
{
	switch (sig) {
	case SIGQUIT: case SIGILL: case SIGTRAP: case SIGABRT: case SIGBUS: case SIGFPE: case SIGSEGV:
	case SIGXCPU: case SIGXFSZ: case SIGSYS:
		return true;
	}
	return false;
}

static uint64_t standing;            /* bit per signal: the runtime's handler stands in for SIG_DFL */
static struct sigaction asked[SIGSYS + 1]; /* what the program set there: SIG_DFL, its flags and mask */
static int busy; /* a spin lock over both, held with every signal blocked: a handler may call sigaction */
static int (*next_sigaction)(int, const struct sigaction *, struct sigaction *);
static __sighandler_t (*next_signal)(int, __sighandler_t);

static void spin_lock(sigset_t *saved)
{
	sigset_t all;

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, saved);
	while (__atomic_exchange_n(&busy, 1, __ATOMIC_ACQUIRE))
		cpu_relax();
}

static void spin_unlock(const sigset_t *saved)
{
	__atomic_store_n(&busy, 0, __ATOMIC_RELEASE);
	pthread_sigmask(SIG_SETMASK, saved, NULL);
}

static bool stands_in(int sig) { return __atomic_load_n(&standing, __ATOMIC_ACQUIRE) >> sig & 1; }

/* The C library's sigaction and signal, looked up before the lock is taken:
 * dlsym takes the dynamic linker's lock, which a thread in dlopen holds
 * while a library constructor of its calls sigaction. */
static void resolve(void)
{
	if (!__atomic_load_n(&next_sigaction, __ATOMIC_ACQUIRE))
		__atomic_store_n(&next_sigaction,
				 (int (*)(int, const struct sigaction *, struct sigaction *))dlsym(RTLD_NEXT, "sigaction"),
				 __ATOMIC_RELEASE);
	if (!__atomic_load_n(&next_signal, __ATOMIC_ACQUIRE))
		__atomic_store_n(&next_signal, (__sighandler_t (*)(int, __sighandler_t))dlsym(RTLD_NEXT, "signal"),
				 __ATOMIC_RELEASE);
}

static int real_sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	return next_sigaction(sig, act, old);
}

/* A fork while another thread held the lock leaves the child's copy held
 * by nobody: the child has only the forking thread. */
static void forked_child(void)
{
	__atomic_store_n(&busy, 0, __ATOMIC_RELAXED);
}

__attribute__((constructor)) static void sig_init(void)
{
	resolve();
	pthread_atfork(NULL, NULL, forked_child);
}

/* A fault's own signal comes again when the faulting instruction runs
 * again, with its true siginfo; any other is sent again, to this thread,
 * and taken once the handler returns (it is blocked until then). */
static void on_core_signal(int sig, siginfo_t *si, void *uc)
{
	struct sigaction dfl = { .sa_handler = SIG_DFL };
	int saved = errno;
	sigset_t mask;

	(void)uc;
	if (!rt_internal) /* on a runtime thread: a crash of the runtime, nothing can be served */
		home_for_core();
	spin_lock(&mask);
	real_sigaction(sig, &dfl, NULL);
	__atomic_fetch_and(&standing, ~(1ull << sig), __ATOMIC_RELEASE);
	spin_unlock(&mask);
	if (si->si_code <= 0 || !(sig == SIGSEGV || sig == SIGBUS || sig == SIGILL || sig == SIGFPE))
		raw6(SYS_tgkill, getpid(), os_gettid(), sig, 0, 0, 0);
	errno = saved;
}

static int stand_in(int sig, struct sigaction *old)
{
	struct sigaction ours = { .sa_sigaction = on_core_signal, .sa_flags = SA_SIGINFO | SA_ONSTACK };

	sigfillset(&ours.sa_mask);
	return real_sigaction(sig, &ours, old);
}

/* Each disposition is read and replaced under the lock, which every
 * sigaction of a core-dumping signal takes: a handler another thread set
 * between the two would be overwritten. */
void interpose_sig_install(void)
{
	resolve();
	for (int sig = 1; sig <= SIGSYS; sig++) {
		struct sigaction cur;
		sigset_t mask;

		if (!dumps_core(sig))
			continue;
		spin_lock(&mask);
		if (!real_sigaction(sig, NULL, &cur) && cur.sa_handler == SIG_DFL && !stand_in(sig, NULL)) {
			asked[sig] = cur;
			__atomic_fetch_or(&standing, 1ull << sig, __ATOMIC_RELEASE);
		}
		spin_unlock(&mask);
	}
}

/* With the runtime's handler standing in for sig */
static int while_standing(int sig, const struct sigaction *act, struct sigaction *old)
{
	struct sigaction prev = asked[sig];

	if (act && act->sa_handler != SIG_DFL) {
		int r = real_sigaction(sig, act, NULL);

		if (r)
			return r;
		__atomic_fetch_and(&standing, ~(1ull << sig), __ATOMIC_RELEASE);
	} else if (act) {
		asked[sig] = *act;
	}
	if (old)
		*old = prev;
	return 0;
}

/* Every call for a core-dumping signal takes the lock, managed or not yet:
 * one that read rt_mode just before the start published it would otherwise
 * set its handler between interpose_sig_install's read and its stand-in. */
EXPORT int sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	sigset_t mask;
	int r;

	resolve();
	if (!dumps_core(sig))
		return real_sigaction(sig, act, old);
	spin_lock(&mask);
	if (stands_in(sig)) {
		r = while_standing(sig, act, old);
	} else if (act && act->sa_handler == SIG_DFL && __atomic_load_n(&rt_mode, __ATOMIC_ACQUIRE) == RT_MANAGED) {
		if (!(r = stand_in(sig, old))) {
			asked[sig] = *act;
			__atomic_fetch_or(&standing, 1ull << sig, __ATOMIC_RELEASE);
		}
	} else {
		r = real_sigaction(sig, act, old);
	}
	spin_unlock(&mask);
	return r;
}

/* The C library's signal() calls its own sigaction: BSD semantics, as it
 * gives them (restarting, the signal itself blocked in its handler; for
 * the core-dumping signals siginterrupt() is not followed). */
EXPORT __sighandler_t signal(int sig, __sighandler_t handler)
{
	struct sigaction sa = { .sa_handler = handler, .sa_flags = SA_RESTART }, old;

	resolve();
	if (!dumps_core(sig))
		return next_signal(sig, handler);
	if (handler == SIG_ERR) {
		errno = EINVAL;
		return SIG_ERR;
	}
	sigemptyset(&sa.sa_mask);
	sigaddset(&sa.sa_mask, sig);
	return sigaction(sig, &sa, &old) ? SIG_ERR : old.sa_handler;
}

/* rtfd: where the runtime's descriptors live, and which they are. */
#include "rtfd.h"

#include <errno.h>
#include <sched.h>
#include <fcntl.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/syscall.h>

#include "clock.h"
#include "log.h"
#include "os.h"

/* The runtime's descriptors fill the WINDOW numbers below the top, then the
 * window below that, and so on. A UCX connection takes 3-6 descriptors and
 * the runtime itself 4, so one window holds about ten memnodes. */
#define WINDOW 64
/* The top is RLIMIT_NOFILE's soft limit, but no higher than this: the
 * kernel sizes a process's descriptor table to its highest descriptor (8
 * bytes and 2 bits each), and containers often allow 1M descriptors. */
#define TOP_MAX 65536

/* The gate: program calls inside (low bits), GATE_RUNTIME while runtime
 * code makes one. Acquire on entry, release on leave. */
#define GATE_RUNTIME (1u << 31)
/* The longest the runtime waits for program calls to leave, ns: those may
 * block (a FIFO's open, a path in evicted memory this very thread serves),
 * and then the order is given up, not liveness. */
#define GATE_WAIT_NS 10000000ull
/* The longest a program call waits for the runtime's maker: it makes its
 * descriptor in three system calls that never block (microseconds), so
 * only a preemption holds it; on a loaded 2-core host that exceeded 10 ms,
 * and CPython's test_subprocess then saw a descriptor number move (CI). */
#define GATE_PROGRAM_WAIT_NS 1000000000ull
static unsigned gate;

static uint64_t owned[RTFD_MAX / 64]; /* bit per descriptor; relaxed atomics */
static unsigned owned_end;            /* no recorded descriptor at or above it */
static int top;                       /* 0: not yet computed */

static int compute_top(void)
{
	struct rlimit r;
	rlim_t soft = TOP_MAX;

	if (!getrlimit(RLIMIT_NOFILE, &r) && r.rlim_cur < soft)
		soft = r.rlim_cur;
	return soft < 4 ? 4 : (int)soft;
}

static void record(int fd)
{
	unsigned end = (unsigned)fd + 1, seen = __atomic_load_n(&owned_end, __ATOMIC_RELAXED);

	__atomic_fetch_or(&owned[fd / 64], 1ull << (fd % 64), __ATOMIC_RELEASE);
	while (seen < end && !__atomic_compare_exchange_n(&owned_end, &seen, end, true, __ATOMIC_RELAXED,
							   __ATOMIC_RELAXED))
		;
}

/* The highest window below the top with a free number; -EMFILE when none.
 * EINVAL: the program lowered its limit under the top, which then follows. */
static int move_up(int fd)
{
	int t = __atomic_load_n(&top, __ATOMIC_RELAXED);

	if (!t)
		__atomic_store_n(&top, t = compute_top(), __ATOMIC_RELAXED);
	for (int base = t - WINDOW;; base -= WINDOW) {
		long nfd = raw6(SYS_fcntl, fd, F_DUPFD_CLOEXEC, base < 3 ? 3 : base, 0, 0, 0);

		if (nfd >= 0)
			return (int)nfd;
		if (nfd == -EINVAL && t != compute_top()) {
			__atomic_store_n(&top, t = compute_top(), __ATOMIC_RELAXED);
			base = t; /* the loop steps down to t - WINDOW */
			continue;
		}
		if ((nfd != -EMFILE && nfd != -EINVAL) || base <= 3)
			return nfd == -EINVAL ? -EMFILE : (int)nfd;
	}
}

int rtfd_adopt(int fd)
{
	static int warned;
	int saved = errno, nfd;

	if (fd < 0 || fd >= RTFD_MAX || rtfd_owned(fd))
		return fd;
	nfd = move_up(fd);
	if (nfd >= 0 && nfd < RTFD_MAX) {
		raw6(SYS_close, fd, 0, 0, 0, 0, 0);
		fd = nfd;
	} else {
		if (nfd >= 0)
			raw6(SYS_close, nfd, 0, 0, 0, 0, 0);
		raw6(SYS_fcntl, fd, F_SETFD, FD_CLOEXEC, 0, 0, 0);
		if (!__atomic_exchange_n(&warned, 1, __ATOMIC_RELAXED))
			log_warn("no free descriptor left below the limit of %d: the runtime's descriptor %d stays "
				 "where the program's next one would go", __atomic_load_n(&top, __ATOMIC_RELAXED), fd);
	}
	record(fd);
	errno = saved;
	return fd;
}

bool rtfd_owned(int fd)
{
	return fd >= 0 && fd < RTFD_MAX &&
	       (__atomic_load_n(&owned[fd / 64], __ATOMIC_ACQUIRE) >> (fd % 64) & 1);
}

void rtfd_forget(int fd)
{
	if (fd >= 0 && fd < RTFD_MAX)
		__atomic_fetch_and(&owned[fd / 64], ~(1ull << (fd % 64)), __ATOMIC_RELEASE);
}

int rtfd_next(unsigned from, unsigned to)
{
	unsigned end = __atomic_load_n(&owned_end, __ATOMIC_RELAXED);

	if (to >= end)
		to = end ? end - 1 : 0;
	for (unsigned fd = from; fd <= to && fd < end;) {
		uint64_t w = __atomic_load_n(&owned[fd / 64], __ATOMIC_ACQUIRE) >> (fd % 64);

		if (w) {
			fd += (unsigned)__builtin_ctzll(w);
			return fd <= to ? (int)fd : -1;
		}
		fd = (fd / 64 + 1) * 64;
	}
	return -1;
}

/* Waits while done(gate) is false, up to GATE_WAIT_NS (the runtime) or
 * GATE_PROGRAM_WAIT_NS (a program call); whether it came */
static bool gate_wait(bool (*done)(unsigned *seen, bool runtime), bool runtime)
{
	uint64_t until = 0;

	for (unsigned seen = __atomic_load_n(&gate, __ATOMIC_ACQUIRE); !done(&seen, runtime);) {
		uint64_t now = now_ns();

		if (!until)
			until = now + (runtime ? GATE_WAIT_NS : GATE_PROGRAM_WAIT_NS);
		else if (now > until)
			return false;
		sched_yield();
		seen = __atomic_load_n(&gate, __ATOMIC_ACQUIRE);
	}
	return true;
}

/* Enters when no runtime maker is in: the program adds itself, the
 * runtime sets GATE_RUNTIME (one runtime maker at a time) */
static bool try_enter(unsigned *seen, bool runtime)
{
	return !(*seen & GATE_RUNTIME) &&
	       __atomic_compare_exchange_n(&gate, seen, runtime ? *seen | GATE_RUNTIME : *seen + 1, false,
					   __ATOMIC_ACQUIRE, __ATOMIC_ACQUIRE);
}

static bool drained(unsigned *seen, bool runtime)
{
	(void)runtime;
	return !(*seen & ~GATE_RUNTIME);
}

/* Tokens: 0 nothing to undo, 1 a program call counted, 2 the runtime bit */
int rtfd_gate_enter(bool runtime)
{
	if (!gate_wait(try_enter, runtime))
		return 0;
	if (runtime)
		gate_wait(drained, true); /* in alone even when not drained: it holds the bit */
	return runtime ? 2 : 1;
}

void rtfd_gate_leave(int token)
{
	if (token == 1)
		__atomic_fetch_sub(&gate, 1, __ATOMIC_RELEASE);
	else if (token == 2)
		__atomic_fetch_and(&gate, ~GATE_RUNTIME, __ATOMIC_RELEASE);
}

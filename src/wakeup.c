/* wakeup: SCHED_FIFO while asleep, or a short EEVDF slice. */
#include "wakeup.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cpuload.h"
#include "log.h"
#include "procfile.h"

/* A woken fair thread preempts the running one at once when its virtual
 * deadline is earlier, and a short requested slice makes it so (EEVDF,
 * Linux 6.12+: sched_attr.sched_runtime of a fair thread is its slice).
 * 100 us is the shortest the kernel takes. */
#define SLICE_NS 100000ull

struct attr { /* struct sched_attr, which the C library does not declare */
	uint32_t size, policy;
	uint64_t flags;
	int32_t nice;
	uint32_t priority;
	uint64_t runtime, deadline, period;
};

enum { NOT_FIFO, FIFO_OFF, FIFO_ON }; /* OFF: fifo asked for, normal priority now */
/* initial-exec: read on the fault path of the preloaded runtime */
static __thread int state __attribute__((tls_model("initial-exec")));
static __thread bool yields __attribute__((tls_model("initial-exec")));

static int set_class(bool fifo)
{
	struct sched_param p = { .sched_priority = fifo }; /* 1: below every real-time thread of the system */

	return -pthread_setschedparam(pthread_self(), fifo ? SCHED_FIFO : SCHED_OTHER, &p);
}

static int slice(void)
{
	struct attr a = { .size = sizeof(a), .policy = SCHED_OTHER, .runtime = SLICE_NS };

	return syscall(SYS_sched_setattr, 0, &a, 0) ? -errno : 0;
}

/* Each fifo thread's /proc/thread-self/schedstat, opened as it starts and
 * kept: a probe that opened it every 10 ms made a descriptor in the
 * program's table, where a program listing /proc/self/fd saw it (D47).
 * (pid << 32) | fd, 0 free; a forked child closes its parent's copies. A
 * thread that finds no room opens the file at each probe instead. */
#define KEPT_MAX 64
static uint64_t kept[KEPT_MAX];
static __thread int kept_fd __attribute__((tls_model("initial-exec"))) = -1;

static void keep_schedstat(void)
{
	uint64_t pid = (uint64_t)getpid();
	int fd;

	for (unsigned i = 0; i < KEPT_MAX; i++) {
		uint64_t k = __atomic_load_n(&kept[i], __ATOMIC_ACQUIRE);

		if (k && k >> 32 != pid && __atomic_compare_exchange_n(&kept[i], &k, 0, false, __ATOMIC_ACQ_REL,
								       __ATOMIC_RELAXED))
			close((int)(uint32_t)k);
	}
	if ((fd = open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC)) < 0)
		return;
	for (unsigned i = 0; i < KEPT_MAX; i++) {
		uint64_t none = 0;

		if (__atomic_compare_exchange_n(&kept[i], &none, pid << 32 | (uint32_t)fd, false, __ATOMIC_ACQ_REL,
						__ATOMIC_RELAXED)) {
			kept_fd = fd;
			return;
		}
	}
	close(fd);
}

void wakeup_apply(enum wakeup_mode mode)
{
	static int warned;
	int err;

	state = NOT_FIFO;
	if (mode == WAKEUP_NORMAL)
		return;
	if (mode == WAKEUP_FIFO) {
		if (!(err = set_class(true)) && !set_class(false)) { /* the privilege is there */
			state = FIFO_OFF;
			keep_schedstat();
			return;
		}
		if (!__atomic_exchange_n(&warned, 1, __ATOMIC_RELAXED))
			log_info("option sched fifo: SCHED_FIFO refused (%s; needs CAP_SYS_NICE or RLIMIT_RTPRIO >= 1): "
				 "a short time slice instead", strerror(-err));
	}
	if ((err = slice()) && !__atomic_exchange_n(&warned, 1, __ATOMIC_RELAXED))
		log_info("option sched: a 100 us time slice refused (%s; Linux 6.12+): normal scheduling",
			 strerror(-err));
}

/* fifo's probe of the calling thread's own waits: every PROBE_NS, the time
 * it spent runnable but not running (schedstat's run_delay) per time it was
 * scheduled. A woken thread on a machine with a CPU free waits a few us
 * (~25 us for a cross-core wake-up here); beside a CPU-bound neighbour it
 * waits for the neighbour's slice, milliseconds. The machine's load average
 * cannot tell: comex's own polling threads count in it. Once real-time the
 * thread's waits vanish, so it stays so HOLD_NS before it tries normal
 * priority again: switching class costs system calls (on every sleep it
 * doubled a random fault, 15 -> 35 us). */
#define PROBE_NS 10000000ull  /* 10 ms */
#define WAIT_NS 100000ull     /* 100 us average wait: woken threads wait for a CPU */
#define HOLD_NS 1000000000ull /* 1 s */

static __thread struct probe {
	uint64_t at, delay, count, rt_until;
} me __attribute__((tls_model("initial-exec")));

/* run_delay (ns) and pcount of the calling thread */
static bool schedstat(uint64_t *delay, uint64_t *count)
{
	char buf[96], *p;

	if ((kept_fd < 0 ? procfile_read("/proc/thread-self/schedstat", buf, sizeof(buf))
			 : procfile_pread(kept_fd, buf, sizeof(buf))) <= 0)
		return false;
	strtoull(buf, &p, 10); /* "time-on-cpu run-delay timeslices": no stdio on the fault path */
	*delay = strtoull(p, &p, 10);
	*count = strtoull(p, &p, 10);
	return *p == '\n' || !*p;
}

void wakeup_sleeping(uint64_t now)
{
	uint64_t delay, count;
	bool waits;

	if (state == NOT_FIFO || now - me.at < PROBE_NS || !schedstat(&delay, &count))
		return;
	waits = count > me.count && (delay - me.delay) / (count - me.count) > WAIT_NS;
	me = (struct probe){ now, delay, count, me.rt_until };
	if (state == FIFO_ON && now >= me.rt_until && !set_class(false))
		state = FIFO_OFF;
	else if (state == FIFO_OFF && waits && !set_class(true)) {
		state = FIFO_ON;
		me.rt_until = now + HOLD_NS;
	}
}

bool wakeup_may_poll(uint64_t now)
{
	return state != FIFO_ON && !cpuload_contended(now);
}

void wakeup_poll_yields(bool on)
{
	yields = on;
}

void wakeup_between_polls(void)
{
	if (yields)
		sched_yield();
}

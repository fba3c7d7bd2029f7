/* wakeup: SCHED_FIFO while asleep, or a short EEVDF slice. */
#include "wakeup.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "log.h"

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

enum { NOT_FIFO, FIFO_AWAKE, FIFO_ASLEEP };
/* initial-exec: read on the fault path of the preloaded runtime */
static __thread int state __attribute__((tls_model("initial-exec")));

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

int wakeup_apply(const char *mode)
{
	static int warned;
	int err;

	state = NOT_FIFO;
	if (!strcmp(mode, "normal"))
		return 0;
	if (strcmp(mode, "fifo") && strcmp(mode, "slice"))
		return -EINVAL;
	if (!strcmp(mode, "fifo")) {
		if (!(err = set_class(true))) { /* the privilege is there: asleep from now on */
			state = FIFO_ASLEEP;
			return 0;
		}
		if (!__atomic_exchange_n(&warned, 1, __ATOMIC_RELAXED))
			log_info("option sched fifo: SCHED_FIFO refused (%s; needs CAP_SYS_NICE or RLIMIT_RTPRIO >= 1): "
				 "a short time slice instead", strerror(-err));
	}
	if ((err = slice()) && !__atomic_exchange_n(&warned, 1, __ATOMIC_RELAXED))
		log_info("option sched: a 100 us time slice refused (%s; Linux 6.12+): normal scheduling",
			 strerror(-err));
	return 0;
}

void wakeup_sleeping(bool sleeping)
{
	if (state == NOT_FIFO || (state == FIFO_ASLEEP) == sleeping)
		return;
	if (!set_class(sleeping))
		state = sleeping ? FIFO_ASLEEP : FIFO_AWAKE;
}

/* tp_fork: a private async thread for UCX in a forked child.
 *
 * libucs calls every mode-specific async operation through two exported,
 * writable method tables (ucs_async_thread_spinlock_ops and
 * ucs_async_thread_mutex_ops; struct ucs_async_ops in UCX's
 * src/ucs/async/async_int.h, the same layout from 1.9 to 1.19). In the
 * child the event and timer entries of both are pointed at a fresh epoll
 * set served by a thread of our own, which dispatches through the exported
 * ucs_async_dispatch_handlers(). The parent's state (use count, thread,
 * epoll set, wake-up pipe) is never touched in the child again. This is
 * UCX's internal interface, checked at run time, not a supported API:
 * UCX itself does not support using it after fork (openucx/ucx#4325). */
#include "tp_fork.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <ucs/async/async_fwd.h>
#include <ucs/sys/event_set.h>
#include <ucs/type/status.h>

#include "clock.h"
#include "rt.h"

struct async_ops { /* UCX's struct ucs_async_ops, member for member */
	void (*init)(void);
	void (*cleanup)(void);
	int (*is_from_async)(void);
	void (*block)(void);
	void (*unblock)(void);
	ucs_status_t (*context_init)(ucs_async_context_t *);
	void (*context_cleanup)(ucs_async_context_t *);
	int (*context_try_block)(ucs_async_context_t *);
	void (*context_unblock)(ucs_async_context_t *);
	ucs_status_t (*add_event_fd)(ucs_async_context_t *, int, ucs_event_set_types_t);
	ucs_status_t (*remove_event_fd)(ucs_async_context_t *, int);
	ucs_status_t (*modify_event_fd)(ucs_async_context_t *, int, ucs_event_set_types_t);
	ucs_status_t (*add_timer)(ucs_async_context_t *, int, ucs_time_t);
	ucs_status_t (*remove_timer)(ucs_async_context_t *, int);
};

#define MAX_TIMERS 32   /* UCX registers a handful (keepalive, progress) */
#define MIN_TIMER_NS 1000000ull

struct timer { int id; uint64_t every_ns, due_ns; };

static struct {
	pthread_mutex_t lock; /* everything below but the two function pointers */
	bool started;
	int epfd, wakefd;
	pthread_t tid;
	struct timer timers[MAX_TIMERS];
	unsigned ntimers;
	ucs_status_t (*dispatch)(int *ids, size_t n, ucs_event_set_types_t events);
	double (*clocks_per_sec)(void);
} S;

static uint32_t to_epoll(ucs_event_set_types_t ev)
{
	return (ev & UCS_EVENT_SET_EVREAD ? EPOLLIN : 0) | (ev & UCS_EVENT_SET_EVWRITE ? EPOLLOUT : 0) |
	       (ev & UCS_EVENT_SET_EVERR ? EPOLLERR : 0) | (ev & UCS_EVENT_SET_EDGE_TRIGGERED ? EPOLLET : 0);
}

static ucs_event_set_types_t from_epoll(uint32_t raw)
{
	return (raw & EPOLLIN ? UCS_EVENT_SET_EVREAD : 0) | (raw & EPOLLOUT ? UCS_EVENT_SET_EVWRITE : 0) |
	       (raw & EPOLLERR ? UCS_EVENT_SET_EVERR : 0) | (raw & EPOLLET ? UCS_EVENT_SET_EDGE_TRIGGERED : 0);
}

static void wake(void)
{
	uint64_t one = 1;

	if (S.wakefd >= 0 && write(S.wakefd, &one, sizeof(one)) < 0)
		return; /* the counter is full: the thread is awake anyway */
}

/* Timers due now into ids (advanced by their period); ms until the next
 * one, -1 when there is none. */
static int due(int *ids, size_t *n)
{
	uint64_t now = now_ns(), next = UINT64_MAX;

	*n = 0;
	pthread_mutex_lock(&S.lock);
	for (unsigned i = 0; i < S.ntimers; i++) {
		struct timer *t = &S.timers[i];

		if (t->due_ns <= now) {
			ids[(*n)++] = t->id;
			t->due_ns = now + t->every_ns;
		}
		next = t->due_ns < next ? t->due_ns : next;
	}
	pthread_mutex_unlock(&S.lock);
	return next == UINT64_MAX ? -1 : next <= now ? 0 : (int)((next - now + 999999) / 1000000);
}

static void *async_main(void *arg)
{
	struct epoll_event ev[16];
	int ids[MAX_TIMERS];

	(void)arg;
	for (;;) {
		size_t n;
		int timeout = due(ids, &n), k;
		bool missed = n && S.dispatch(ids, n, 0) == UCS_ERR_NO_PROGRESS;

		k = epoll_wait(S.epfd, ev, 16, n ? 0 : timeout);
		if (k < 0 && errno != EINTR)
			return NULL;
		for (int i = 0; i < k; i++) {
			int fd = ev[i].data.fd;
			uint64_t v;

			if (fd == S.wakefd) {
				if (read(S.wakefd, &v, sizeof(v)) < 0)
					v = 0;
				continue;
			}
			missed |= S.dispatch(&fd, 1, from_epoll(ev[i].events)) == UCS_ERR_NO_PROGRESS;
		}
		/* the worker held its async lock: the event waits in its missed
		 * queue until the owner runs, so let it (as UCX's own thread does) */
		if (missed)
			sched_yield();
	}
	return NULL;
}

/* With S.lock held: the thread and its descriptors, on first use. */
static ucs_status_t start(void)
{
	struct epoll_event ev = { .events = EPOLLIN };

	if (S.started)
		return UCS_OK;
	S.epfd = epoll_create1(EPOLL_CLOEXEC);
	S.wakefd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	ev.data.fd = S.wakefd;
	if (S.epfd < 0 || S.wakefd < 0 || epoll_ctl(S.epfd, EPOLL_CTL_ADD, S.wakefd, &ev))
		goto close_fds;
	if (rt_start_thread(async_main, NULL, "ucx-async", &S.tid)) /* no signals, as UCX's */
		goto close_fds;
	S.started = true;
	return UCS_OK;
close_fds:
	if (S.epfd >= 0)
		close(S.epfd);
	if (S.wakefd >= 0)
		close(S.wakefd);
	S.epfd = S.wakefd = -1;
	return UCS_ERR_IO_ERROR;
}

static ucs_status_t add_event_fd(ucs_async_context_t *async, int fd, ucs_event_set_types_t events)
{
	struct epoll_event ev = { .events = to_epoll(events), .data.fd = fd };
	ucs_status_t st;

	(void)async;
	pthread_mutex_lock(&S.lock);
	st = start();
	if (st == UCS_OK && epoll_ctl(S.epfd, EPOLL_CTL_ADD, fd, &ev))
		st = UCS_ERR_IO_ERROR;
	pthread_mutex_unlock(&S.lock);
	return st;
}

static ucs_status_t modify_event_fd(ucs_async_context_t *async, int fd, ucs_event_set_types_t events)
{
	struct epoll_event ev = { .events = to_epoll(events), .data.fd = fd };

	(void)async;
	return S.epfd >= 0 && !epoll_ctl(S.epfd, EPOLL_CTL_MOD, fd, &ev) ? UCS_OK : UCS_ERR_IO_ERROR;
}

/* A descriptor the parent registered is not in our set (ENOENT): fine, and
 * the parent's set is left alone. */
static ucs_status_t remove_event_fd(ucs_async_context_t *async, int fd)
{
	(void)async;
	return S.epfd < 0 || !epoll_ctl(S.epfd, EPOLL_CTL_DEL, fd, NULL) || errno == ENOENT ? UCS_OK : UCS_ERR_IO_ERROR;
}

static ucs_status_t add_timer(ucs_async_context_t *async, int id, ucs_time_t interval)
{
	uint64_t ns = (uint64_t)((double)interval * 1e9 / S.clocks_per_sec());
	ucs_status_t st;

	(void)async;
	pthread_mutex_lock(&S.lock);
	st = start();
	if (st == UCS_OK && S.ntimers == MAX_TIMERS)
		st = UCS_ERR_NO_RESOURCE;
	if (st == UCS_OK) {
		ns = ns < MIN_TIMER_NS ? MIN_TIMER_NS : ns;
		S.timers[S.ntimers++] = (struct timer){ id, ns, now_ns() + ns };
	}
	pthread_mutex_unlock(&S.lock);
	wake();
	return st;
}

static ucs_status_t remove_timer(ucs_async_context_t *async, int id)
{
	(void)async;
	pthread_mutex_lock(&S.lock);
	for (unsigned i = 0; i < S.ntimers; i++)
		if (S.timers[i].id == id) {
			S.timers[i] = S.timers[--S.ntimers];
			break;
		}
	pthread_mutex_unlock(&S.lock);
	wake();
	return UCS_OK;
}

static int is_from_async(void)
{
	return S.started && pthread_equal(pthread_self(), S.tid);
}

static void take_over(struct async_ops *o)
{
	o->is_from_async = is_from_async;
	o->add_event_fd = add_event_fd;
	o->remove_event_fd = remove_event_fd;
	o->modify_event_fd = modify_event_fd;
	o->add_timer = add_timer;
	o->remove_timer = remove_timer;
}

/* The two tables share every event and timer method and differ in their
 * locking ones: what this layout has, and what a changed one would not. */
static bool layout_known(const struct async_ops *sp, const struct async_ops *mx)
{
	if (sp->add_event_fd == add_event_fd) /* ours already: a grandchild */
		return true;
	return sp->add_event_fd && sp->add_event_fd == mx->add_event_fd && sp->remove_event_fd == mx->remove_event_fd &&
	       sp->modify_event_fd == mx->modify_event_fd && sp->add_timer == mx->add_timer &&
	       sp->remove_timer == mx->remove_timer && sp->is_from_async == mx->is_from_async &&
	       sp->context_init != mx->context_init;
}

int tp_fork_child(void)
{
	struct async_ops *sp = dlsym(RTLD_DEFAULT, "ucs_async_thread_spinlock_ops");
	struct async_ops *mx = dlsym(RTLD_DEFAULT, "ucs_async_thread_mutex_ops");

	/* our own state from before this fork is as stale as UCX's */
	pthread_mutex_init(&S.lock, NULL);
	S.started = false;
	S.epfd = S.wakefd = -1;
	S.ntimers = 0;
	if (!sp || !mx)
		return -ENOENT;
	S.dispatch = (ucs_status_t (*)(int *, size_t, ucs_event_set_types_t))dlsym(RTLD_DEFAULT,
										  "ucs_async_dispatch_handlers");
	S.clocks_per_sec = (double (*)(void))dlsym(RTLD_DEFAULT, "ucs_get_cpu_clocks_per_sec");
	if (!S.dispatch || !S.clocks_per_sec || !layout_known(sp, mx))
		return -ENOTSUP;
	take_over(sp);
	take_over(mx);
	return 0;
}

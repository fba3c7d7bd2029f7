/* transport: picks a backend at tp_create and forwards every call to it
 * (docs/DECISIONS.md, "native TCP"). */
#include "transport_impl.h"

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <string.h>

#include "clock.h"
#include "log.h"
#include "netaddr.h"
#include "paths.h"
#include "wakeup.h"

/* A pass of tp_run that long was a freeze of this process or the VM, not a
 * slow peer: each pass takes at most one sleep (100 ms) plus progress. */
#define STALL_NS 3000000000ull


/* An RDMA device is what UCX brings that kernel sockets cannot: one that
 * the kernel lists under /sys/class/infiniband (InfiniBand, RoCE, iWARP). */
static bool rdma_present(void)
{
	DIR *d = opendir("/sys/class/infiniband");
	struct dirent *de;
	bool found = false;

	while (d && !found && (de = readdir(d)))
		found = de->d_name[0] != '.';
	if (d)
		closedir(d);
	return found;
}

void tp_clock_start(struct tp_clock *c, uint64_t spin_ns, uint64_t timeout_ns)
{
	uint64_t now = now_ns();

	*c = (struct tp_clock){ now, now, now, spin_ns, timeout_ns };
}

int tp_clock_pass(struct tp_clock *c, bool busy, int max_ms)
{
	uint64_t now = now_ns(), left;

	if (now - c->prev > STALL_NS)
		c->start += now - c->prev;
	c->prev = now;
	if (busy)
		c->last = now;
	if (c->timeout_ns && now - c->start >= c->timeout_ns)
		return -ETIMEDOUT;
	/* polling pays only while a CPU is free for it: on a machine with more
	 * runnable threads than CPUs it takes the CPU of the very thread (the
	 * program, the peer) it is waiting for */
	if (now - c->last < c->spin_ns && wakeup_may_poll(now)) {
		wakeup_between_polls();
		return 0;
	}
	left = c->timeout_ns ? (c->timeout_ns - (now - c->start)) / 1000000 + 1 : (uint64_t)max_ms;
	return left < (uint64_t)max_ms ? (int)left : max_ms;
}

void tp_clock_woken(struct tp_clock *c)
{
	c->last = now_ns();
}

/* Loads the UCX plugin once: beside this file (the build tree, and the
 * runtime in lib/comex), else in ../lib/comex (an installed comex binary).
 * RTLD_GLOBAL: tp_fork.c finds UCX's tables by name. The runtime reaches
 * this from client_connect at its start, never from the fault path, where
 * the dynamic linker's lock may be held by the program. */
static int ucx_load(tp_create_fn **out)
{
	static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	static tp_create_fn *create;
	static const struct tp_host host = {
		.log_msg = log_msg, .log_threshold = &log_threshold, .netaddr_resolve = netaddr_resolve,
		.clock_start = tp_clock_start, .clock_pass = tp_clock_pass, .clock_woken = tp_clock_woken,
		.wakeup_sleeping = wakeup_sleeping,
	};
	char dir[PATH_MAX], path[PATH_MAX + 64];
	void *h = NULL, (*init)(const struct tp_host *);
	const char *why = "no such file";
	int err = 0;

	pthread_mutex_lock(&lock);
	if (create)
		goto unlock;
	if ((err = paths_own_dir(dir, sizeof(dir)))) {
		log_error("transport ucx: cannot tell where %s is (the directory of this program): %s", TP_UCX_PLUGIN,
			  strerror(-err));
		goto unlock;
	}
	if (!paths_find_lib(dir, TP_UCX_PLUGIN, path, sizeof(path)) && !(h = dlopen(path, RTLD_NOW | RTLD_GLOBAL)))
		why = dlerror();
	init = h ? (void (*)(const struct tp_host *))dlsym(h, TP_UCX_INIT) : NULL;
	create = h ? (tp_create_fn *)dlsym(h, TP_UCX_CREATE) : NULL;
	if (!init || !create) {
		create = NULL;
		log_error("transport ucx: cannot load %s from %s or %s/../lib/comex: %s (transport tcp needs no UCX)",
			  TP_UCX_PLUGIN, dir, dir, h ? "not comex's plugin" : why);
		err = -ENOENT;
		goto unlock;
	}
	init(&host);
unlock:
	*out = create;
	pthread_mutex_unlock(&lock);
	return err;
}

int tp_create(const struct tp_callbacks *cb, unsigned flags, struct tp **out)
{
	bool ucx = (flags & (TP_UCX | TP_SHM)) || ((flags & TP_AUTO) && rdma_present());
	tp_create_fn *create;
	int err;

	if (!ucx)
		return tp_tcp_create(cb, flags, out);
	err = ucx_load(&create);
	return err ? err : create(cb, flags, out);
}

void tp_destroy(struct tp *t)
{
	if (t)
		t->ops->destroy(t);
}

int tp_listen(struct tp *t, const char *hostport, void *addr, size_t len, struct tp_listen_info *out)
{
	return t->ops->listen(t, hostport, addr, len, out);
}

int tp_connect(struct tp *t, const char *hostport, void *user, struct tp_ep **out)
{
	return t->ops->connect(t, hostport, user, out);
}

void tp_close(struct tp_ep *ep)
{
	ep->ops->close(ep);
}

int tp_send(struct tp_ep *ep, const void *msg, size_t len, const void *bulk, size_t bulk_len)
{
	return ep->ops->send(ep, msg, len, bulk, bulk_len);
}

int tp_recv_bulk(struct tp_ep *ep, struct tp_bulk *b, void *dst, void (*done)(void *arg, int status), void *arg)
{
	return ep->ops->recv_bulk(ep, b, dst, done, arg);
}

int tp_set_rkey(struct tp_ep *ep, const void *rkey, size_t len)
{
	return ep->ops->set_rkey(ep, rkey, len);
}

int tp_rma(struct tp_ep *ep, enum tp_rma_kind kind, void *local, size_t len, uint64_t raddr, struct tp_op *op)
{
	return ep->ops->rma(ep, kind, local, len, raddr, op);
}

int tp_abandon(struct tp_ep *ep, struct tp_op *op)
{
	return ep->ops->abandon ? ep->ops->abandon(ep, op) : -EOPNOTSUPP;
}

int tp_run(struct tp *t, bool (*done)(void *arg), void *arg, uint64_t spin_ns, uint64_t timeout_ns)
{
	return t->ops->run(t, done, arg, spin_ns, timeout_ns);
}

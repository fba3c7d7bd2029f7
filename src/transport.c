/* transport: picks a backend at tp_create and forwards every call to it
 * (docs/DECISIONS.md, "native TCP"). */
#include "transport_impl.h"

#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "clock.h"
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
	if (now - c->last < c->spin_ns && wakeup_may_poll(now))
		return 0;
	left = c->timeout_ns ? (c->timeout_ns - (now - c->start)) / 1000000 + 1 : (uint64_t)max_ms;
	return left < (uint64_t)max_ms ? (int)left : max_ms;
}

void tp_clock_woken(struct tp_clock *c)
{
	c->last = now_ns();
}

int tp_create(const struct tp_callbacks *cb, unsigned flags, struct tp **out)
{
	bool ucx = (flags & (TP_UCX | TP_SHM)) || ((flags & TP_AUTO) && rdma_present());

	return ucx ? tp_ucx_create(cb, flags, out) : tp_tcp_create(cb, flags, out);
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

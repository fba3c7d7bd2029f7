/* transport_impl: what the two transport backends (transport_ucx.c: UCX, for
 * RDMA and same-host shared memory; transport_tcp.c: plain kernel sockets)
 * share with the dispatcher in transport.c. Every struct tp and tp_ep starts
 * with its backend's operations table; nothing else is common. */
#ifndef COMEX_TRANSPORT_IMPL_H
#define COMEX_TRANSPORT_IMPL_H

#include <sys/socket.h>

#include "transport.h"

struct tp_ops {
	int (*listen)(struct tp *t, const char *hostport, void *addr, size_t len, struct tp_listen_info *out);
	int (*connect)(struct tp *t, const char *hostport, void *user, struct tp_ep **out);
	void (*close)(struct tp_ep *ep);
	void (*destroy)(struct tp *t);
	int (*send)(struct tp_ep *ep, const void *msg, size_t len, const void *bulk, size_t bulk_len);
	int (*recv_bulk)(struct tp_ep *ep, struct tp_bulk *b, void *dst, void (*done)(void *arg, int status),
			 void *arg);
	int (*set_rkey)(struct tp_ep *ep, const void *rkey, size_t len);
	int (*rma)(struct tp_ep *ep, enum tp_rma_kind kind, void *local, size_t len, uint64_t raddr,
		   struct tp_op *op);
	int (*abandon)(struct tp_ep *ep, struct tp_op *op); /* NULL: -EOPNOTSUPP */
	int (*run)(struct tp *t, bool (*done)(void *arg), void *arg, uint64_t spin_ns, uint64_t timeout_ns);
};

/* The head of every backend's struct tp and struct tp_ep. */
struct tp { const struct tp_ops *ops; };
struct tp_ep { const struct tp_ops *ops; };

/* tp_run's bookkeeping, the same for both backends: the timeout, which a
 * freeze of this process (or the VM) does not count against, and whether to
 * busy-poll again or sleep. */
struct tp_clock { uint64_t start, last, prev, spin_ns, timeout_ns; };
void tp_clock_start(struct tp_clock *c, uint64_t spin_ns, uint64_t timeout_ns);
/* After a pass of progress that found work (busy) or not, with done()
 * still false: -ETIMEDOUT; 0, poll again at once (spin_ns since the last
 * work has not passed and a CPU is free, wakeup.h); else the longest sleep
 * in ms, at most max_ms. The pass's time is c->prev. */
int tp_clock_pass(struct tp_clock *c, bool busy, int max_ms);
/* Woken from a sleep: spin again for the burst that follows. */
void tp_clock_woken(struct tp_clock *c);

typedef int tp_create_fn(const struct tp_callbacks *cb, unsigned flags, struct tp **out);
tp_create_fn tp_tcp_create;

/* The UCX backend is a plugin, libcomex-ucx.so, loaded by the first
 * tp_create that needs it (docs/DECISIONS.md D80): a process that talks
 * TCP never loads UCX. The plugin cannot bind to its host's symbols
 * (libcomex-rt.so exports only what it interposes), so the host hands it
 * what it uses once, before its first create. */
struct tp_host {
	void (*log_msg)(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
	int *log_threshold;
	int (*netaddr_resolve)(const char *hostport, struct sockaddr_storage *ss, socklen_t *len);
	void (*clock_start)(struct tp_clock *c, uint64_t spin_ns, uint64_t timeout_ns);
	int (*clock_pass)(struct tp_clock *c, bool busy, int max_ms);
	void (*clock_woken)(struct tp_clock *c);
	void (*wakeup_sleeping)(uint64_t now);
};
#define TP_UCX_PLUGIN "libcomex-ucx.so"
#define TP_UCX_INIT   "comex_tp_ucx_init"   /* void (const struct tp_host *) */
#define TP_UCX_CREATE "comex_tp_ucx_create" /* tp_tcp_create's signature */

#endif

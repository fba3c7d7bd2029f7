/* transport: messages with an optional bulk part of pages, and one-sided
 * get/put on the one region a listener offers, between one struct tp (used by
 * one thread at a time) and its peers. Two backends: kernel TCP sockets
 * (transport_tcp.c) and UCX (transport_ucx.c: RDMA, shared memory), whose
 * status codes become negative errno there and nowhere else. */
#ifndef COMEX_TRANSPORT_H
#define COMEX_TRANSPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct tp;
struct tp_ep;

/* The bulk part (pages) of a received message; claim it with tp_recv_bulk()
 * during the recv callback or it is dropped. */
struct tp_bulk {
	void *desc;   /* UCX data descriptor */
	size_t len;
	bool rndv;    /* data still on the sender: tp_recv_bulk fetches it */
};

struct tp_callbacks {
	/* A message arrived on ep; msg (and bulk) are valid only during the call;
	 * bulk is NULL for a message without pages. */
	void (*recv)(void *arg, struct tp_ep *ep, void *user, const void *msg, size_t len, struct tp_bulk *bulk);
	/* Listener only: a client connected; returns the user pointer for ep,
	 * or NULL to refuse it (ep is then closed). */
	void *(*accept)(void *arg, struct tp_ep *ep);
	/* ep failed (peer gone, reset, timeout); err is a negative errno. The
	 * owner must call tp_close(ep) afterwards, outside this callback. */
	void (*error)(void *arg, struct tp_ep *ep, void *user, int err);
	void *arg;
};

/* A one-sided operation or flush; owned by the caller until done is set. */
struct tp_op {
	volatile bool done;
	int status;   /* 0 or negative errno, valid once done */
	uint32_t tag; /* the owner's; the transport never reads it */
	uint64_t t0;  /* the owner's too (the client: when it started, ns) */
	uint32_t bytes; /* the owner's too (the client: what it moves) */
};

enum tp_rma_kind { TP_GET, TP_PUT, TP_FLUSH };

enum tp_flags {
	/* enable one-sided operations (and so UCX's software emulation of them,
	 * which does no address checks: never on a memnode whose clients are
	 * not trusted) */
	TP_RMA = 1,
	/* let UCX use shared memory with a peer on the same host (both sides
	 * need it; other peers still get TCP or RDMA) */
	TP_SHM = 2,
	/* tp_send copies the bulk part too, so the caller may change it at once
	 * (the memnode's COMEX_TEST_CORRUPT_READS test hook; costs a copy) */
	TP_COPY_BULK = 4,
	/* the UCX backend (with TP_SHM too); without it, or TP_AUTO on a host
	 * with an RDMA device, kernel TCP sockets. Both ends must agree: each
	 * greets the other with its own bytes and a mismatch fails the connection */
	TP_UCX = 8,
	TP_AUTO = 16,
};
/* Option transport's values, in its order, and the flags each sets. */
enum tp_choice { TP_CHOICE_AUTO, TP_CHOICE_TCP, TP_CHOICE_UCX };
static inline unsigned tp_choice_flags(unsigned choice)
{
	return choice == TP_CHOICE_UCX ? TP_UCX : choice == TP_CHOICE_AUTO ? TP_AUTO : 0;
}
int tp_create(const struct tp_callbacks *cb, unsigned flags, struct tp **out);
void tp_destroy(struct tp *t);

struct tp_listen_info {
	const void *rkey;  /* packed remote key of the region, valid until tp_destroy;
			    * NULL unless created with rma */
	size_t rkey_len;
	uint16_t port;     /* the bound port (useful when asked for port 0) */
};
/* Accepts clients on "HOST:PORT"; with rma, registers [addr, addr+len) for
 * one-sided access by them. */
int tp_listen(struct tp *t, const char *hostport, void *addr, size_t len, struct tp_listen_info *out);
int tp_connect(struct tp *t, const char *hostport, void *user, struct tp_ep **out);
/* Closes ep at once; operations still in flight complete with an error
 * during later progress. ep must not be used afterwards. */
void tp_close(struct tp_ep *ep);
/* Sends one message (copied: msg is free on return) with an optional bulk
 * part of bulk_len bytes that is not copied (unless TP_COPY_BULK) and must
 * stay unchanged until the peer has answered the message. */
int tp_send(struct tp_ep *ep, const void *msg, size_t len, const void *bulk, size_t bulk_len);
/* Receives a bulk part into dst (b->len bytes); done(arg, status) runs once
 * it is there (or failed), possibly before this returns. Call from the recv
 * callback of ep; tp_close(ep) waits for it. */
int tp_recv_bulk(struct tp_ep *ep, struct tp_bulk *b, void *dst, void (*done)(void *arg, int status), void *arg);
/* Remembers the remote region's key for tp_rma on ep. */
int tp_set_rkey(struct tp_ep *ep, const void *rkey, size_t len);
/* Starts a get (remote -> local) or put (local -> remote) of len bytes at
 * remote address raddr, or a flush that completes once every earlier put on
 * ep is complete at the target. local must stay valid until op->done. */
int tp_rma(struct tp_ep *ep, enum tp_rma_kind kind, void *local, size_t len, uint64_t raddr, struct tp_op *op);
/* Gives up on op (a get, put or flush of tp_rma, or a bulk part claimed with
 * op as the done callback's arg) without failing ep: from the return on, the
 * transport neither writes op's local buffer nor touches op; an answer that
 * still comes is read and dropped. A put or bulk part being sent keeps going
 * from its buffer, which must stay mapped (its content no longer matters).
 * -EOPNOTSUPP where the backend cannot (UCX: only closing ep stops a get). */
int tp_abandon(struct tp_ep *ep, struct tp_op *op);

/* Drives progress until done(arg) is true. Busy-polls while there is
 * activity and for spin_ns after the last of it, then sleeps on the worker's
 * event fd. timeout_ns 0 = none. Returns 0, -ETIMEDOUT, or -EINTR when a
 * signal interrupted a sleep and done() is still false. */
int tp_run(struct tp *t, bool (*done)(void *arg), void *arg, uint64_t spin_ns, uint64_t timeout_ns);

#endif

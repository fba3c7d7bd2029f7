/* transport_tcp: the backend over kernel TCP sockets (docs/DECISIONS.md D12).
 * One non-blocking socket per endpoint (TCP_NODELAY), all served by one epoll
 * set. A frame is a 16-byte header, up to PROTO_MAX_MSG bytes of message,
 * then its bulk part, which the receiver reads straight into the buffer that
 * tp_recv_bulk names: one kernel copy each way, as a plain recv/send, and no
 * rendezvous round trip. One-sided get/put are frames that the listening
 * side's transport answers itself, against the one region it offers, bounds
 * checked, and only to a peer that showed the region's secret (its "key").
 *
 * Wire format (little-endian), docs/PROTOCOL.md "Native TCP framing":
 *   u8 kind, u8 zero, u16 msg_len, u32 bulk_len, u64 aux
 * HELLO (first frame each way): aux = TCP_MAGIC, bulk_len = TCP_VERSION.
 * MSG: message, then bulk_len bytes. KEY: aux = the region's secret.
 * GET: aux = remote address, bulk_len = length wanted (nothing follows).
 * GET_REPLY: aux = 0 and bulk_len bytes, or aux = a positive errno.
 * PUT: aux = remote address, then bulk_len bytes. FLUSH / FLUSH_ACK: aux =
 * 0 or the positive errno of a PUT since the last flush. */
#include "transport_impl.h"

#include <endian.h>
#include <errno.h>
#include <arpa/inet.h>
#include <fcntl.h>
#include <stdio.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "clock.h"
#include "log.h"
#include "netaddr.h"
#include "proto.h"
#include "wakeup.h"

#define TCP_MAGIC 0x50435478656d6f63ull /* "comexTCP" on the wire: nobody else's first bytes */
#define TCP_VERSION 1u
#define HDR 16u
#define MAX_BULK (16u << 20)   /* 4x the largest READ/WRITE (PROTO_MAX_RW_FRAMES) */
/* Receive staging: a header, a whole message and the start of its bulk part
 * come in one recv; the rest of a bulk part is received in place. */
#define STAGE (PROTO_MAX_MSG + 2 * HDR + 4096)
#define MAX_RMA_WAIT 1024      /* gets and flushes awaiting their answer, per endpoint */
#define EVENTS 32
/* Longest sleep in tp_run: a timeout is checked at least this often. */
#define SLEEP_MS 100
/* A peer that has not greeted this long after the connection was made is
 * not comex's TCP transport (a UCX listener waits for bytes of its own). */
#define HELLO_TIMEOUT_NS 5000000000ull

enum kind { K_HELLO = 1, K_MSG, K_KEY, K_GET, K_GET_REPLY, K_PUT, K_FLUSH, K_FLUSH_ACK, K_END };
enum rx_state { RX_HDR, RX_BULK };

struct frame { uint8_t kind; uint16_t msg_len; uint32_t bulk_len; uint64_t aux; };

/* A frame not yet fully written; hdr and msg (and a copied bulk) inline. */
struct sqe {
	struct sqe *next;
	struct tp_op *op;    /* a PUT's: done once written */
	int iovcnt, iovi;
	struct iovec iov[3];
	uint8_t data[];
};

struct rma_wait { struct tp_op *op; uint8_t *local; uint32_t len; uint8_t kind; };

struct tep {
	struct tp_ep base;   /* first: the dispatcher's view */
	struct ttp *t;
	int fd;
	void *user;
	bool connecting, hello_seen, failed, closed, want_out, keyed;
	int deferred_err;    /* a failure to report at the next progress */
	uint64_t hello_due;  /* until hello_seen: when the peer's HELLO is overdue */
	struct sqe *sq_head, **sq_tail;
	/* receiving */
	enum rx_state st;
	uint32_t s_off, s_len;
	uint8_t *dst;        /* where the bulk part goes; NULL: dropped */
	size_t need;
	void (*done)(void *arg, int status);
	void *done_arg;
	struct tp_op *rop;   /* the get this bulk part answers */
	bool claimed;
	/* The last recv took less than it asked for: the socket is empty, and
	 * the epoll set (level-triggered) says when it is not. rx_progress
	 * returns then instead of a recv that fails with EAGAIN, a system call
	 * less on every message, on the reader's critical path. */
	bool drained;
	int put_err;         /* listener side: a PUT since the last FLUSH failed */
	/* one-sided operations of this side awaiting their answer, in order */
	struct rma_wait rq[MAX_RMA_WAIT];
	unsigned rq_head, rq_n;
	uint64_t rsecret;    /* the peer region's secret, from tp_set_rkey */
	struct tep *next, **pprev, *dead_next;
	char peer[64];       /* "peer HOST:PORT", for messages */
	uint8_t stage[STAGE];
};

struct ttp {
	struct tp base;      /* first */
	struct tp_callbacks cb;
	int epfd, lfd;
	unsigned flags, depth, awaiting_hello;
	bool deferred;
	struct tep *eps, *dead;
	uint8_t *region;     /* offered for one-sided access (TP_RMA) */
	uint64_t region_len, secret;
	uint8_t rkey[24];    /* u64 base, u64 length, u64 secret */
};

static const struct tp_ops tcp_ops;

static void put_hdr(uint8_t *p, const struct frame *f)
{
	uint16_t ml = htole16(f->msg_len);
	uint32_t bl = htole32(f->bulk_len);
	uint64_t aux = htole64(f->aux);

	p[0] = f->kind;
	p[1] = 0;
	memcpy(p + 2, &ml, 2);
	memcpy(p + 4, &bl, 4);
	memcpy(p + 8, &aux, 8);
}

/* The header's fields as they are, checked or not. */
static void decode_hdr(const uint8_t *p, struct frame *f)
{
	uint16_t ml;
	uint32_t bl;
	uint64_t aux;

	memcpy(&ml, p + 2, 2);
	memcpy(&bl, p + 4, 4);
	memcpy(&aux, p + 8, 8);
	*f = (struct frame){ p[0], le16toh(ml), le32toh(bl), le64toh(aux) };
}

static int get_hdr(const uint8_t *p, struct frame *f)
{
	decode_hdr(p, f);
	if (!f->kind || f->kind >= K_END || p[1] || f->msg_len > PROTO_MAX_MSG || f->bulk_len > MAX_BULK)
		return -EPROTO;
	return 0;
}

static void set_out(struct tep *e, bool on)
{
	struct epoll_event ev = { .events = EPOLLIN | (on ? EPOLLOUT : 0), .data.ptr = e };

	if (e->want_out == on || e->failed || e->closed)
		return;
	e->want_out = on;
	(void)epoll_ctl(e->t->epfd, EPOLL_CTL_MOD, e->fd, &ev);
}

static void op_done(struct tp_op *op, int status)
{
	if (!op) /* abandoned (tp_abandon) */
		return;
	op->status = status;
	__atomic_store_n(&op->done, true, __ATOMIC_RELEASE);
}

/* The bulk part being received is in (status 0) or never will be: its
 * claim's done callback, or the get it answers, hears so. */
static void bulk_finish(struct tep *e, int status)
{
	e->st = RX_HDR;
	if (e->done)
		e->done(e->done_arg, status);
	if (e->rop)
		op_done(e->rop, status);
	e->done = NULL, e->rop = NULL;
}

/* Completes everything in flight on e with err: the bulk part being
 * received, gets and flushes awaiting answers, frames not yet written. */
static void fail_inflight(struct tep *e, int err)
{
	struct sqe *q;

	if (e->st == RX_BULK)
		bulk_finish(e, err);
	for (; e->rq_n; e->rq_n--, e->rq_head = (e->rq_head + 1) % MAX_RMA_WAIT)
		op_done(e->rq[e->rq_head].op, err);
	while ((q = e->sq_head)) {
		e->sq_head = q->next;
		if (q->op)
			op_done(q->op, err);
		free(q);
	}
	e->sq_tail = &e->sq_head;
}

/* The connection is unusable: everything in flight fails, the owner hears
 * of it once (and calls tp_close). */
static void ep_fail(struct tep *e, int err)
{
	if (e->failed || e->closed)
		return;
	e->failed = true;
	(void)epoll_ctl(e->t->epfd, EPOLL_CTL_DEL, e->fd, NULL);
	fail_inflight(e, err);
	if (e->t->cb.error)
		e->t->cb.error(e->t->cb.arg, &e->base, e->user, err);
}

/* Reported from progress, not from inside the caller's tp_send/tp_connect. */
static void ep_fail_later(struct tep *e, int err)
{
	if (!e->deferred_err)
		e->deferred_err = err;
	e->t->deferred = true;
}

/* ---- sending ---- */

/* Writes what the socket takes of iov[*i..n); 0 when all went, -EAGAIN when
 * some is left (iov advanced), another negative errno on failure. */
static int write_iov(int fd, struct iovec *iov, int n, int *i)
{
	while (*i < n) {
		struct msghdr mh = { .msg_iov = iov + *i, .msg_iovlen = (size_t)(n - *i) };
		ssize_t w = sendmsg(fd, &mh, MSG_DONTWAIT | MSG_NOSIGNAL);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return errno == EAGAIN || errno == EWOULDBLOCK ? -EAGAIN : -errno;
		while (*i < n && (size_t)w >= iov[*i].iov_len)
			w -= (ssize_t)iov[(*i)++].iov_len;
		if (*i < n) {
			iov[*i].iov_base = (uint8_t *)iov[*i].iov_base + w;
			iov[*i].iov_len -= (size_t)w;
		}
	}
	return 0;
}

static void tx_flush(struct tep *e)
{
	struct sqe *q;
	int err = 0;

	while ((q = e->sq_head) && !(err = write_iov(e->fd, q->iov, q->iovcnt, &q->iovi))) {
		e->sq_head = q->next;
		if (q->op)
			op_done(q->op, 0);
		free(q);
	}
	if (!e->sq_head)
		e->sq_tail = &e->sq_head;
	if (err && err != -EAGAIN) {
		log_debug("tcp transport: a send on fd %d failed: %s", e->fd, strerror(-err));
		ep_fail(e, err);
		return;
	}
	set_out(e, e->sq_head != NULL);
}

/* Queues what is left of a frame (iov[i..n)); the bulk part is copied only
 * with copy_bulk, else it must stay valid (tp_send's contract). */
static int enqueue(struct tep *e, struct iovec *iov, int n, int i, bool copy_bulk, struct tp_op *op)
{
	size_t inl = 0;
	struct sqe *q;
	uint8_t *p;

	for (int k = i; k < n; k++)
		if (k < 2 || copy_bulk)
			inl += iov[k].iov_len;
	q = malloc(sizeof(*q) + inl);
	if (!q)
		return -ENOMEM;
	*q = (struct sqe){ .op = op };
	p = q->data;
	for (int k = i; k < n; k++) {
		q->iov[q->iovcnt] = iov[k];
		if ((k < 2 || copy_bulk) && iov[k].iov_len) { /* a frame without message has base NULL */
			q->iov[q->iovcnt].iov_base = memcpy(p, iov[k].iov_base, iov[k].iov_len);
			p += iov[k].iov_len;
		}
		q->iovcnt++;
	}
	*e->sq_tail = q;
	e->sq_tail = &q->next;
	set_out(e, true);
	return 0;
}

/* Sends one frame now, or as much of it as the socket takes and the rest from
 * progress. op (a PUT's) is done once the frame is written. */
static int send_frame(struct tep *e, const struct frame *f, const void *msg, const void *bulk, struct tp_op *op)
{
	uint8_t hdr[HDR];
	struct iovec iov[3] = { { hdr, HDR }, { (void *)msg, f->msg_len }, { (void *)bulk, f->bulk_len } };
	int n = bulk ? 3 : 2, i = 0, err = 0;

	if (e->failed || e->closed || e->deferred_err)
		return -ENOTCONN;
	put_hdr(hdr, f);
	if (!e->sq_head && !e->connecting)
		err = write_iov(e->fd, iov, n, &i);
	if (!err && i == n) {
		if (op)
			op_done(op, 0);
		return 0;
	}
	if (err && err != -EAGAIN) {
		ep_fail_later(e, err);
		return err;
	}
	return enqueue(e, iov, n, i, bulk && (e->t->flags & TP_COPY_BULK), op);
}

/* ---- receiving ---- */

/* What a recv that took no byte means: -ECONNRESET (the peer closed), 0
 * (interrupted: try again), -EAGAIN (nothing there yet) or the error. */
static int recv_failed(ssize_t r)
{
	if (r == 0)
		return -ECONNRESET;
	return errno == EAGAIN || errno == EWOULDBLOCK ? -EAGAIN : errno == EINTR ? 0 : -errno;
}

/* More bytes into the stage; -EAGAIN when none are there. */
static int rx_fill(struct tep *e)
{
	ssize_t r;

	if (e->s_off) {
		memmove(e->stage, e->stage + e->s_off, e->s_len - e->s_off);
		e->s_len -= e->s_off;
		e->s_off = 0;
	}
	if (e->drained)
		return -EAGAIN;
	r = recv(e->fd, e->stage + e->s_len, STAGE - e->s_len, MSG_DONTWAIT);
	if (r <= 0)
		return recv_failed(r);
	e->drained = (uint32_t)r < STAGE - e->s_len;
	e->s_len += (uint32_t)r;
	return 0;
}

/* Receives the rest of a bulk part in place (or drops it). */
static int rx_bulk(struct tep *e)
{
	size_t take = e->s_len - e->s_off < e->need ? e->s_len - e->s_off : e->need;

	if (take && e->dst)
		memcpy(e->dst, e->stage + e->s_off, take);
	e->s_off += (uint32_t)take;
	e->need -= take;
	if (e->dst)
		e->dst += take;
	while (e->need) {
		void *to = e->dst ? (void *)e->dst : (void *)e->stage;
		size_t want = e->dst || e->need < STAGE ? e->need : STAGE;
		ssize_t r;

		if (e->drained)
			return -EAGAIN;
		r = recv(e->fd, to, want, MSG_DONTWAIT);
		if (r <= 0)
			return recv_failed(r);
		e->drained = (size_t)r < want;
		e->need -= (size_t)r;
		if (e->dst)
			e->dst += r;
		e->s_off = e->s_len = 0;
	}
	bulk_finish(e, 0);
	return 0;
}

static void expect_bulk(struct tep *e, uint8_t *dst, size_t len)
{
	e->st = RX_BULK;
	e->dst = dst;
	e->need = len;
}

/* The region's [raddr, raddr + len), or NULL when outside it or the peer
 * never showed the key. */
static uint8_t *region_at(struct tep *e, uint64_t raddr, uint64_t len)
{
	struct ttp *t = e->t;
	uint64_t base = (uint64_t)(uintptr_t)t->region;

	if (!t->region || !e->keyed || raddr < base || raddr - base > t->region_len ||
	    len > t->region_len - (raddr - base))
		return NULL;
	return t->region + (raddr - base);
}

static int rx_rma_answer(struct tep *e, const struct frame *f)
{
	struct rma_wait w;

	if (!e->rq_n)
		return -EPROTO;
	w = e->rq[e->rq_head];
	if ((f->kind == K_GET_REPLY) != (w.kind == TP_GET))
		return -EPROTO;
	e->rq_head = (e->rq_head + 1) % MAX_RMA_WAIT;
	e->rq_n--;
	if (f->aux) {
		op_done(w.op, f->aux < 4096 ? -(int)f->aux : -EIO);
		return f->bulk_len ? -EPROTO : 0;
	}
	if (f->kind == K_FLUSH_ACK) {
		op_done(w.op, 0);
		return 0;
	}
	if (f->bulk_len != w.len)
		return -EPROTO;
	e->rop = w.op;
	expect_bulk(e, w.local, w.len);
	return 0;
}

static int rx_dispatch(struct tep *e, const struct frame *f, const uint8_t *msg)
{
	struct ttp *t = e->t;
	struct tp_bulk b = { e, f->bulk_len, true };
	uint8_t *at;

	switch (f->kind) {
	case K_MSG:
		e->claimed = false;
		t->cb.recv(t->cb.arg, &e->base, e->user, msg, f->msg_len, f->bulk_len ? &b : NULL);
		if (f->bulk_len && !e->closed && !e->failed && !e->claimed)
			expect_bulk(e, NULL, f->bulk_len);
		return 0;
	case K_KEY:
		e->keyed = t->region && f->aux == t->secret;
		return 0;
	case K_GET:
		at = region_at(e, f->aux, f->bulk_len);
		return send_frame(e, &(struct frame){ K_GET_REPLY, 0, at ? f->bulk_len : 0, at ? 0 : EFAULT }, NULL,
				  at, NULL);
	case K_PUT:
		at = region_at(e, f->aux, f->bulk_len);
		if (!at)
			e->put_err = EFAULT;
		expect_bulk(e, at, f->bulk_len);
		return 0;
	case K_FLUSH: {
		struct frame ack = { K_FLUSH_ACK, 0, 0, (uint64_t)e->put_err };

		e->put_err = 0;
		return send_frame(e, &ack, NULL, NULL, NULL);
	}
	case K_GET_REPLY:
	case K_FLUSH_ACK:
		return rx_rma_answer(e, f);
	default:
		return -EPROTO;
	}
}

/* The first 16 bytes from the peer, before they are parsed as a frame: a
 * peer that is not comex's TCP transport (a UCX memnode or client, anything
 * else) is named as such instead of as a malformed frame. */
static int check_hello(struct tep *e, const uint8_t *p)
{
	struct frame f;

	decode_hdr(p, &f); /* bulk_len: the version */
	if (f.kind == K_HELLO && f.aux == TCP_MAGIC && f.bulk_len == TCP_VERSION)
		return 0;
	if (f.kind == K_HELLO && f.aux == TCP_MAGIC)
		log_error("%s: speaks comex's TCP transport version %u, this side %u", e->peer, f.bulk_len, TCP_VERSION);
	else
		log_error("%s: not comex's TCP transport (is it running with transport ucx? a memnode and its "
			  "clients must use the same option transport)", e->peer);
	return -EPROTONOSUPPORT;
}

static void greeted(struct tep *e)
{
	e->hello_seen = true;
	e->t->awaiting_hello--;
}

/* Takes in everything the socket has; a negative errno fails e. */
static int rx_progress(struct tep *e)
{
	struct frame f;
	int err;

	e->drained = false; /* epoll said it is readable */
	while (!e->failed && !e->closed) {
		uint32_t avail = e->s_len - e->s_off;

		if (e->st == RX_BULK) {
			if ((err = rx_bulk(e)))
				return err == -EAGAIN ? 0 : err;
			continue;
		}
		if (avail >= HDR && !e->hello_seen && (err = check_hello(e, e->stage + e->s_off)))
			return err;
		if (avail >= HDR && (err = get_hdr(e->stage + e->s_off, &f)))
			return err;
		if (avail < HDR || avail < HDR + f.msg_len) {
			if ((err = rx_fill(e)))
				return err == -EAGAIN ? 0 : err;
			continue;
		}
		e->s_off += HDR;
		if (!e->hello_seen)
			greeted(e); /* check_hello passed it */
		else if (f.kind == K_HELLO)
			err = -EPROTO;
		else
			err = rx_dispatch(e, &f, e->stage + e->s_off);
		e->s_off += f.msg_len; /* the message was valid during the callback only */
		if (err)
			return err;
	}
	return 0;
}

/* ---- endpoints ---- */

static void name_peer(struct tep *e)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	char host[48] = "?";
	unsigned port = 0;

	if (!getpeername(e->fd, (struct sockaddr *)&ss, &len)) {
		bool v6 = ss.ss_family == AF_INET6;

		inet_ntop(ss.ss_family, v6 ? (void *)&((struct sockaddr_in6 *)&ss)->sin6_addr :
					     (void *)&((struct sockaddr_in *)&ss)->sin_addr, host, sizeof(host));
		port = ntohs(v6 ? ((struct sockaddr_in6 *)&ss)->sin6_port : ((struct sockaddr_in *)&ss)->sin_port);
	}
	snprintf(e->peer, sizeof(e->peer), "peer %s:%u", host, port);
}

/* An accepted endpoint's name; a connecting one is named by its address. */
static struct tep *ep_new(struct ttp *t, int fd, void *user)
{
	struct tep *e = calloc(1, sizeof(*e));
	int one = 1;

	if (!e)
		return NULL;
	e->base.ops = &tcp_ops;
	e->t = t;
	e->fd = fd;
	e->user = user;
	e->sq_tail = &e->sq_head;
	(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (!user)
		name_peer(e);
	return e;
}

/* Watches e's socket, links e in and sends our HELLO (a failure to queue it
 * is reported by progress). -errno when epoll refused it: e is not linked. */
static int ep_start(struct ttp *t, struct tep *e)
{
	struct epoll_event ev = { .events = EPOLLIN | (e->connecting ? EPOLLOUT : 0), .data.ptr = e };
	int err;

	if (epoll_ctl(t->epfd, EPOLL_CTL_ADD, e->fd, &ev))
		return -errno;
	e->want_out = e->connecting;
	e->hello_due = now_ns() + HELLO_TIMEOUT_NS;
	t->awaiting_hello++;
	e->next = t->eps;
	if (e->next)
		e->next->pprev = &e->next;
	e->pprev = &t->eps;
	t->eps = e;
	err = send_frame(e, &(struct frame){ K_HELLO, 0, TCP_VERSION, TCP_MAGIC }, NULL, NULL, NULL);
	if (err)
		ep_fail_later(e, err);
	return 0;
}

static void tcp_close(struct tp_ep *ep)
{
	struct tep *e = (struct tep *)ep;

	if (e->closed)
		return;
	*e->pprev = e->next;
	if (e->next)
		e->next->pprev = e->pprev;
	if (!e->hello_seen)
		e->t->awaiting_hello--;
	if (!e->failed) /* a forked child holding the socket keeps it in the set */
		(void)epoll_ctl(e->t->epfd, EPOLL_CTL_DEL, e->fd, NULL);
	e->closed = true;
	fail_inflight(e, -ECANCELED);
	close(e->fd); /* never shutdown(): a forked child may share the socket */
	if (e->t->depth) { /* progress may still hold a pointer to it: freed after */
		e->dead_next = e->t->dead;
		e->t->dead = e;
	} else {
		free(e);
	}
}

static void accept_all(struct ttp *t)
{
	int fd, err;

	while ((fd = accept4(t->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0) {
		struct tep *e = ep_new(t, fd, NULL);

		if (!e) {
			log_error("out of memory accepting a client on fd %d; refusing it", fd);
			close(fd);
			continue;
		}
		e->user = t->cb.accept(t->cb.arg, &e->base);
		if (!e->user) {
			close(fd);
			free(e);
			continue;
		}
		if ((err = ep_start(t, e))) {
			log_error("cannot watch a new client's socket (fd %d): %s", fd, strerror(-err));
			e->pprev = &e->next; /* not linked: the owner's tp_close unlinks nothing */
			e->failed = true;
			t->cb.error(t->cb.arg, &e->base, e->user, err);
		}
	}
	if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR && errno != ECONNABORTED)
		log_warn("accepting on fd %d failed: %m", t->lfd);
}

static void connected(struct tep *e)
{
	int err = 0;
	socklen_t len = sizeof(err);

	if (getsockopt(e->fd, SOL_SOCKET, SO_ERROR, &err, &len) || err) {
		ep_fail(e, err ? -err : -errno);
		return;
	}
	e->connecting = false;
	tx_flush(e);
}

static void on_event(struct ttp *t, struct epoll_event *ev)
{
	struct tep *e = ev->data.ptr;
	int err = 0;

	if (!e) {
		accept_all(t);
		return;
	}
	if (e->closed || e->failed)
		return;
	if (e->deferred_err) { /* connect(2)'s own error, not what the socket says after */
		ep_fail(e, e->deferred_err);
		return;
	}
	if (e->connecting) {
		if (ev->events & (EPOLLOUT | EPOLLERR | EPOLLHUP))
			connected(e);
		return;
	}
	if (ev->events & (EPOLLIN | EPOLLERR | EPOLLHUP))
		err = rx_progress(e);
	if (err) {
		if (err == -EPROTO)
			log_error("%s: malformed frame; closing the connection", e->peer);
		else if (!e->hello_seen && e->s_len < HDR)
			log_warn("%s closed the connection before greeting as comex's TCP transport (%s): is it running "
				 "with transport ucx? a memnode and its clients must use the same option transport",
				 e->peer, strerror(-err));
		ep_fail(e, err);
		return;
	}
	if ((ev->events & EPOLLOUT) && !e->closed && !e->failed)
		tx_flush(e);
}

static void report_deferred(struct ttp *t)
{
	t->deferred = false;
	for (struct tep *e = t->eps, *next; e; e = next) {
		next = e->next;
		if (e->deferred_err && !e->failed)
			ep_fail(e, e->deferred_err);
	}
}

static void check_greetings(struct ttp *t, uint64_t now)
{
	for (struct tep *e = t->eps, *next; e; e = next) {
		next = e->next;
		if (e->hello_seen || e->failed || now < e->hello_due)
			continue;
		if (e->s_len) { /* it sent something, and not a greeting */
			log_error("%s: no greeting %llu s after the connection was made: not comex's TCP transport (is it "
				  "running with transport ucx? a memnode and its clients must use the same option "
				  "transport)", e->peer, HELLO_TIMEOUT_NS / 1000000000ull);
			ep_fail(e, -EPROTONOSUPPORT);
			continue;
		}
		/* silent: hung or starved (its caller tries again later, and says so),
		 * or a UCX peer, which waits for its own handshake */
		log_info("%s: nothing received %llu s after the connection was made: the peer is hung or overloaded, or "
			 "is not comex's TCP transport (transport ucx?)", e->peer, HELLO_TIMEOUT_NS / 1000000000ull);
		ep_fail(e, -ETIMEDOUT);
	}
}

/* One epoll_wait of up to ms and the work it found: the number of events, or
 * a negative errno. */
static int progress(struct ttp *t, int ms)
{
	struct epoll_event ev[EVENTS];
	int n = epoll_wait(t->epfd, ev, EVENTS, t->deferred ? 0 : ms);

	if (n < 0)
		return errno == EINTR ? -EINTR : -errno;
	t->depth++;
	for (int i = 0; i < n; i++)
		on_event(t, &ev[i]);
	if (t->deferred)
		report_deferred(t);
	if (t->awaiting_hello)
		check_greetings(t, now_ns());
	if (!--t->depth) {
		while (t->dead) {
			struct tep *e = t->dead;

			t->dead = e->dead_next;
			free(e);
		}
	}
	return n;
}

static int tcp_run(struct tp *t_, bool (*done)(void *arg), void *arg, uint64_t spin_ns, uint64_t timeout_ns)
{
	struct ttp *t = (struct ttp *)t_;
	struct tp_clock clk;

	tp_clock_start(&clk, spin_ns, timeout_ns);
	for (;;) {
		int n = progress(t, 0), ms;

		if (done(arg))
			return 0;
		if ((ms = tp_clock_pass(&clk, n > 0, SLEEP_MS)) <= 0) {
			if (ms)
				return ms;
			continue;
		}
		wakeup_sleeping(clk.prev);
		if (progress(t, ms) == -EINTR && !done(arg))
			return -EINTR;
		tp_clock_woken(&clk);
	}
}

static int tcp_send(struct tp_ep *ep, const void *msg, size_t len, const void *bulk, size_t bulk_len)
{
	struct tep *e = (struct tep *)ep;

	if (len > PROTO_MAX_MSG || bulk_len > MAX_BULK)
		return -EMSGSIZE;
	return send_frame(e, &(struct frame){ K_MSG, (uint16_t)len, bulk ? (uint32_t)bulk_len : 0, 0 }, msg, bulk,
			  NULL);
}

static int tcp_recv_bulk(struct tp_ep *ep, struct tp_bulk *b, void *dst, void (*done)(void *arg, int status),
			 void *arg)
{
	struct tep *e = (struct tep *)ep;

	if (b->desc != e || e->claimed || e->st != RX_HDR)
		return -EINVAL;
	e->claimed = true;
	e->done = done;
	e->done_arg = arg;
	expect_bulk(e, dst, b->len);
	return 0;
}

static int tcp_set_rkey(struct tp_ep *ep, const void *rkey, size_t len)
{
	struct tep *e = (struct tep *)ep;

	if (len != sizeof(e->t->rkey)) {
		log_error("a remote key of %zu bytes is not this transport's (%zu): the memnode uses another transport",
			  len, sizeof(e->t->rkey));
		return -EINVAL;
	}
	memcpy(&e->rsecret, (const uint8_t *)rkey + 16, 8);
	return send_frame(e, &(struct frame){ K_KEY, 0, 0, le64toh(e->rsecret) }, NULL, NULL, NULL);
}

static int tcp_rma(struct tp_ep *ep, enum tp_rma_kind kind, void *local, size_t len, uint64_t raddr,
		   struct tp_op *op)
{
	struct tep *e = (struct tep *)ep;
	static const uint8_t kinds[] = { [TP_GET] = K_GET, [TP_PUT] = K_PUT, [TP_FLUSH] = K_FLUSH };
	int err;

	if (len > MAX_BULK)
		return -EMSGSIZE;
	if (kind != TP_PUT && e->rq_n == MAX_RMA_WAIT)
		return -ENOBUFS;
	op->done = false;
	err = send_frame(e, &(struct frame){ kinds[kind], 0, kind == TP_FLUSH ? 0 : (uint32_t)len, raddr }, NULL,
			 kind == TP_PUT ? local : NULL, kind == TP_PUT ? op : NULL);
	if (err || kind == TP_PUT)
		return err;
	e->rq[(e->rq_head + e->rq_n++) % MAX_RMA_WAIT] = (struct rma_wait){ op, local, (uint32_t)len, kind };
	return 0;
}

/* Nothing of e refers to op afterwards: a bulk part landing for it is
 * dropped, its place in the queues keeps the stream in step. */
static int tcp_abandon(struct tp_ep *ep, struct tp_op *op)
{
	struct tep *e = (struct tep *)ep;
	struct sqe *q;

	if (e->st == RX_BULK && (e->rop == op || (e->done && e->done_arg == op)))
		e->dst = NULL, e->rop = NULL, e->done = NULL;
	for (unsigned i = 0; i < e->rq_n; i++) {
		struct rma_wait *w = &e->rq[(e->rq_head + i) % MAX_RMA_WAIT];

		if (w->op == op)
			w->op = NULL, w->local = NULL;
	}
	for (q = e->sq_head; q; q = q->next)
		if (q->op == op)
			q->op = NULL;
	return 0;
}

static int tcp_connect(struct tp *t_, const char *hostport, void *user, struct tp_ep **out)
{
	struct ttp *t = (struct ttp *)t_;
	struct sockaddr_storage ss;
	socklen_t sslen;
	struct tep *e;
	int fd, err = netaddr_resolve(hostport, &ss, &sslen);

	if (err)
		return err;
	fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		err = -errno;
		log_error("cannot make a socket to connect to %s: %m", hostport);
		return err;
	}
	e = ep_new(t, fd, user);
	if (!e) {
		close(fd);
		return -ENOMEM;
	}
	snprintf(e->peer, sizeof(e->peer), "peer %s", hostport);
	/* a refusal is reported by progress, as a failure found later is */
	int cerr = connect(fd, (struct sockaddr *)&ss, sslen) && errno != EINPROGRESS ? -errno : 0;

	e->connecting = true;
	if ((err = ep_start(t, e))) {
		log_error("cannot watch the socket to %s: %s", hostport, strerror(-err));
		close(fd);
		free(e);
		return err;
	}
	if (cerr)
		ep_fail_later(e, cerr);
	*out = &e->base;
	return 0;
}

static int tcp_listen(struct tp *t_, const char *hostport, void *addr, size_t len, struct tp_listen_info *out)
{
	struct ttp *t = (struct ttp *)t_;
	struct sockaddr_storage ss;
	socklen_t sslen = sizeof(ss);
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = NULL };
	int one = 1, err = netaddr_resolve(hostport, &ss, &sslen);
	uint64_t v[3];

	if (err)
		return err;
	t->lfd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (t->lfd < 0 || setsockopt(t->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(t->lfd, (struct sockaddr *)&ss, sslen) || listen(t->lfd, 128) ||
	    epoll_ctl(t->epfd, EPOLL_CTL_ADD, t->lfd, &ev) ||
	    getsockname(t->lfd, (struct sockaddr *)&ss, &(socklen_t){ sizeof(ss) })) {
		err = -errno;
		log_error("cannot listen on %s: %m", hostport);
		return err;
	}
	if ((t->flags & TP_RMA) && addr) {
		if (getrandom(&t->secret, sizeof(t->secret), 0) != (ssize_t)sizeof(t->secret))
			return -errno;
		t->region = addr;
		t->region_len = len;
		v[0] = htole64((uint64_t)(uintptr_t)addr);
		v[1] = htole64(len);
		v[2] = htole64(t->secret);
		memcpy(t->rkey, v, sizeof(v));
	}
	out->rkey = t->region ? t->rkey : NULL;
	out->rkey_len = t->region ? sizeof(t->rkey) : 0;
	out->port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port :
						      ((struct sockaddr_in *)&ss)->sin_port);
	return 0;
}

static void tcp_destroy(struct tp *t_)
{
	struct ttp *t = (struct ttp *)t_;

	while (t->eps)
		tcp_close(&t->eps->base);
	if (t->lfd >= 0)
		close(t->lfd);
	close(t->epfd);
	free(t);
}

int tp_tcp_create(const struct tp_callbacks *cb, unsigned flags, struct tp **out)
{
	struct ttp *t = calloc(1, sizeof(*t));

	if (!t)
		return -ENOMEM;
	t->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (t->epfd < 0) {
		int err = -errno;

		log_error("cannot make an epoll set for the TCP transport: %m");
		free(t);
		return err;
	}
	t->base.ops = &tcp_ops;
	t->cb = *cb;
	t->flags = flags;
	t->lfd = -1;
	*out = &t->base;
	return 0;
}

static const struct tp_ops tcp_ops = {
	.listen = tcp_listen, .connect = tcp_connect, .close = tcp_close, .destroy = tcp_destroy,
	.send = tcp_send, .recv_bulk = tcp_recv_bulk, .set_rkey = tcp_set_rkey, .rma = tcp_rma, .abandon = tcp_abandon,
	.run = tcp_run,
};

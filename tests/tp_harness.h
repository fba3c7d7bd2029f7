/* tp_harness: what the transport tests share: two tps driven in one thread
 * (sides, pumping, pairs), patterned messages and bulk parts, and raw
 * sockets that speak transport_tcp.c's wire format. Header-only. */
#ifndef COMEX_TESTS_TP_HARNESS_H
#define COMEX_TESTS_TP_HARNESS_H

#include <endian.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "clock.h"
#include "proto.h"
#include "testing.h"
#include "transport.h"

#define MAX_RX 512
#define MAX_EPS 32
#define PUMP_NS 5000000000ull  /* a condition that took longer is a failure */
#define SLICE_NS 1000000ull    /* each tp's turn while pumping */
#define MSG_SALT 0x5a5a5a5au   /* the message body's pattern differs from its bulk part's */
#define KiB 1024u
#define MiB (1024u * 1024u)

/* The wire format of transport_tcp.c, rebuilt here to speak to it raw. */
#define W_MAGIC 0x50435478656d6f63ull
enum { W_HELLO = 1, W_MSG, W_KEY, W_GET, W_GET_REPLY, W_PUT, W_FLUSH, W_FLUSH_ACK, W_END };

/* What every message of the test starts with: its number, the seed of its
 * patterns, and whether the receiver is to claim its bulk part. */
struct msg {
	uint32_t seq, seed, claim, pad;
};

/* One message as a recv callback saw it. */
struct rx {
	struct tp_ep *ep;
	struct msg m;      /* zero for a message shorter than one */
	size_t len;
	bool msg_ok;       /* the body after m held its pattern */
	size_t bulk_len;   /* 0: no bulk part */
	uint8_t *buf;      /* the claimed bulk part (malloc'd), or NULL: skipped */
	int claim_err;     /* tp_recv_bulk's return */
	bool done;         /* the claim's done callback ran (once), with status */
	int status;
};

/* One tp and everything its callbacks saw. */
struct side {
	struct tp *t;
	struct tp_ep *acc[MAX_EPS];    /* accepted endpoints, in order */
	int n_acc;
	struct tp_ep *err_ep[MAX_EPS]; /* endpoints the error callback named, in order; */
	int err[MAX_EPS];              /* NULL once closed (the address may come again) */
	int n_err, n_closed;
	struct rx rx[MAX_RX];
	int n_rx;
};

/* A listener and a client connected to it, each with its endpoint. */
struct pair {
	struct side *srv, *cli;
	struct tp_ep *sep, *cep;
	struct tp_listen_info li;
};

/* ---- patterns ---- */

static inline uint64_t word(uint32_t seed, uint64_t i)
{
	uint64_t z = (((uint64_t)seed << 32) ^ i) + 0x9e3779b97f4a7c15ull;

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* seed's pattern: another 64-bit word at every offset, so that a byte out of
 * place, or from another message, shows. */
static inline void fill(uint8_t *p, size_t len, uint32_t seed)
{
	for (size_t i = 0; i < len; i += 8) {
		uint64_t w = word(seed, i / 8);

		memcpy(p + i, &w, len - i < 8 ? len - i : 8);
	}
}

static inline bool matches(const uint8_t *p, size_t len, uint32_t seed)
{
	for (size_t i = 0; i < len; i += 8) {
		uint64_t w = word(seed, i / 8);

		if (memcmp(p + i, &w, len - i < 8 ? len - i : 8))
			return false;
	}
	return true;
}

static inline uint32_t seed_of(uint32_t seq)
{
	return seq * 2654435761u + 12345u;
}

/* ---- callbacks ---- */

static inline void on_done(void *arg, int status)
{
	struct rx *r = arg;

	CHECK(!r->done); /* once */
	r->done = true;
	r->status = status;
}

/* Records the message; claims its bulk part into a buffer of its own when
 * the message asks for it, else leaves it to be skipped. */
static inline void on_recv(void *arg, struct tp_ep *ep, void *user, const void *msg, size_t len, struct tp_bulk *bulk)
{
	struct side *s = arg;
	struct rx *r;

	CHECK(user);
	CHECK(s->n_rx < MAX_RX);
	r = &s->rx[s->n_rx++];
	*r = (struct rx){ .ep = ep, .len = len, .msg_ok = true, .bulk_len = bulk ? bulk->len : 0 };
	CHECK(!bulk || bulk->len);
	if (len >= sizeof(r->m)) {
		memcpy(&r->m, msg, sizeof(r->m));
		r->msg_ok = matches((const uint8_t *)msg + sizeof(r->m), len - sizeof(r->m), r->m.seed ^ MSG_SALT);
	}
	if (bulk && r->m.claim) {
		r->buf = malloc(bulk->len);
		CHECK(r->buf);
		r->claim_err = tp_recv_bulk(ep, bulk, r->buf, on_done, r);
	}
}

static inline void *on_accept(void *arg, struct tp_ep *ep)
{
	struct side *s = arg;

	CHECK(s->n_acc < MAX_EPS);
	s->acc[s->n_acc++] = ep;
	return s;
}

/* Records the failure; the test body closes ep (never this callback). */
static inline void on_error(void *arg, struct tp_ep *ep, void *user, int err)
{
	struct side *s = arg;

	CHECK(user);
	CHECK(s->n_err < MAX_EPS);
	for (int i = 0; i < s->n_err; i++)
		CHECK(s->err_ep[i] != ep); /* once per endpoint */
	s->err_ep[s->n_err] = ep;
	s->err[s->n_err++] = err;
}

/* ---- sides and pumping ---- */

/* The error callback named ep last on s, with a negative errno; the owner
 * closes it now. */
static inline void close_failed(struct side *s, struct tp_ep *ep)
{
	CHECK(s->n_err > 0 && s->err_ep[s->n_err - 1] == ep && s->err[s->n_err - 1] < 0);
	s->err_ep[s->n_err - 1] = NULL;
	s->n_closed++;
	tp_close(ep);
}

static inline struct side *side_new(unsigned flags)
{
	struct side *s = calloc(1, sizeof(*s));
	struct tp_callbacks cb = { .recv = on_recv, .accept = on_accept, .error = on_error };

	CHECK(s);
	cb.arg = s;
	CHECK(tp_create(&cb, flags, &s->t) == 0 && s->t);
	return s;
}

static inline void rx_reset(struct side *s)
{
	for (int i = 0; i < s->n_rx; i++)
		free(s->rx[i].buf);
	s->n_rx = 0;
}

/* Destroys the tp first: its endpoints' claims complete into s. */
static inline void side_free(struct side *s)
{
	if (!s)
		return;
	tp_destroy(s->t);
	rx_reset(s);
	free(s);
}

/* Drives a and b (if any) in turn until pred(arg) holds: false when it did
 * not within PUMP_NS. */
static inline bool pump(struct side *a, struct side *b, bool (*pred)(void *), void *arg)
{
	uint64_t end = now_ns() + PUMP_NS;

	while (!pred(arg)) {
		if (now_ns() > end)
			return false;
		(void)tp_run(a->t, pred, arg, 0, SLICE_NS);
		if (b)
			(void)tp_run(b->t, pred, arg, 0, SLICE_NS);
	}
	return true;
}

/* A count in a side has reached n. */
struct want {
	struct side *s;
	int n;
};

static inline bool accepted(void *arg)
{
	struct want *w = arg;

	return w->s->n_acc >= w->n;
}

static inline bool failed(void *arg)
{
	struct want *w = arg;

	return w->s->n_err >= w->n;
}

/* n messages are in, and every bulk part claimed among them is complete. */
static inline bool received(void *arg)
{
	struct want *w = arg;

	if (w->s->n_rx < w->n)
		return false;
	for (int i = 0; i < w->s->n_rx; i++)
		if (w->s->rx[i].buf && !w->s->rx[i].done)
			return false;
	return true;
}

/* n messages are in, their bulk parts maybe not. */
static inline bool got_msgs(void *arg)
{
	struct want *w = arg;

	return w->s->n_rx >= w->n;
}

static inline bool op_done(void *arg)
{
	return ((struct tp_op *)arg)->done;
}

/* ---- messages ---- */

/* Sends message seq: len bytes (a struct msg, then the pattern of its seed
 * ^ MSG_SALT), with a bulk part of bulk_len bytes of its seed's pattern,
 * written into bulk, that the receiver is to claim or skip. */
static inline void send_from(struct tp_ep *ep, uint32_t seq, size_t len, uint8_t *bulk, size_t bulk_len, bool claim)
{
	static uint8_t body[PROTO_MAX_MSG];
	struct msg m = { seq, seed_of(seq), claim, 0 };

	CHECK(len == 0 || (len >= sizeof(m) && len <= sizeof(body)));
	memcpy(body, &m, sizeof(m));
	fill(body + sizeof(m), sizeof(body) - sizeof(m), m.seed ^ MSG_SALT);
	fill(bulk, bulk_len, m.seed);
	CHECK(tp_send(ep, body, len, bulk_len ? bulk : NULL, bulk_len) == 0);
}

/* send_from a bulk part of its own, returned to be freed once the peer has
 * it (NULL without one). */
static inline uint8_t *send_msg(struct tp_ep *ep, uint32_t seq, size_t len, size_t bulk_len, bool claim)
{
	uint8_t *bulk = bulk_len ? malloc(bulk_len) : NULL;

	CHECK(bulk || !bulk_len);
	send_from(ep, seq, len, bulk, bulk_len, claim);
	return bulk;
}

/* r is message seq as send_msg made it, on ep: its bulk part claimed and
 * intact, or skipped. */
static inline void check_rx(const struct rx *r, struct tp_ep *ep, uint32_t seq, size_t len, size_t bulk_len, bool claim)
{
	CHECK(r->ep == ep);
	CHECK(r->len == len);
	CHECK(r->msg_ok);
	CHECK(len == 0 || (r->m.seq == seq && r->m.seed == seed_of(seq)));
	CHECK(r->bulk_len == bulk_len);
	if (!claim || !bulk_len) {
		CHECK(!r->buf);
		return;
	}
	CHECK(r->claim_err == 0);
	CHECK(r->done && r->status == 0);
	CHECK(matches(r->buf, bulk_len, seed_of(seq)));
}

/* One message each way without a bulk part: the pair works. */
static inline void ping(struct pair *p, uint32_t seq)
{
	struct want ws = { p->srv, p->srv->n_rx + 1 }, wc = { p->cli, p->cli->n_rx + 1 };

	send_msg(p->cep, seq, sizeof(struct msg), 0, false);
	send_msg(p->sep, seq + 1, sizeof(struct msg), 0, false);
	CHECK(pump(p->srv, p->cli, received, &ws));
	CHECK(pump(p->cli, p->srv, received, &wc));
	check_rx(&p->srv->rx[ws.n - 1], p->sep, seq, sizeof(struct msg), 0, false);
	check_rx(&p->cli->rx[wc.n - 1], p->cep, seq + 1, sizeof(struct msg), 0, false);
}

/* ---- setup ---- */

static inline void hostport(char *buf, size_t len, uint16_t port)
{
	snprintf(buf, len, "127.0.0.1:%u", port);
}

/* c connects to srv's port; returns c's endpoint once srv accepted it (the
 * newest of srv->acc). */
static inline struct tp_ep *connect_to(struct side *c, struct side *srv, uint16_t port)
{
	struct want w = { srv, srv->n_acc + 1 };
	struct tp_ep *ep = NULL;
	char hp[32];

	hostport(hp, sizeof(hp), port);
	CHECK(tp_connect(c->t, hp, c, &ep) == 0 && ep);
	CHECK(pump(srv, c, accepted, &w));
	return ep;
}

/* A listener (flags; offering region with TP_RMA) and a client (flags)
 * connected to it, past a message each way; nothing recorded yet. */
static inline void pair_open(struct pair *p, unsigned flags, void *region, size_t len)
{
	*p = (struct pair){ .srv = side_new(flags), .cli = side_new(flags) };
	CHECK(tp_listen(p->srv->t, "127.0.0.1:0", region, len, &p->li) == 0);
	CHECK(p->li.port);
	p->cep = connect_to(p->cli, p->srv, p->li.port);
	p->sep = p->srv->acc[p->srv->n_acc - 1];
	ping(p, 900000);
	rx_reset(p->srv);
	rx_reset(p->cli);
}

static inline void pair_close(struct pair *p)
{
	/* every failure was expected, and closed */
	CHECK(p->srv->n_err == p->srv->n_closed && p->cli->n_err == p->cli->n_closed);
	side_free(p->cli);
	side_free(p->srv);
}

/* ---- raw sockets ---- */

/* A frame header as transport_tcp.c puts it (little-endian). */
static inline size_t put_frame(uint8_t *p, uint8_t kind, uint16_t msg_len, uint32_t bulk_len, uint64_t aux)
{
	uint16_t ml = htole16(msg_len);
	uint32_t bl = htole32(bulk_len);
	uint64_t ax = htole64(aux);

	p[0] = kind;
	p[1] = 0;
	memcpy(p + 2, &ml, 2);
	memcpy(p + 4, &bl, 4);
	memcpy(p + 8, &ax, 8);
	return 16;
}

static inline size_t put_hello(uint8_t *p)
{
	return put_frame(p, W_HELLO, 0, 1, W_MAGIC);
}

static inline struct sockaddr_in loopback(uint16_t port)
{
	return (struct sockaddr_in){ .sin_family = AF_INET, .sin_port = htons(port),
				     .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
}

/* A blocking socket connected to 127.0.0.1:port. */
static inline int raw_connect(uint16_t port)
{
	struct sockaddr_in sa = loopback(port);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	CHECK(fd >= 0);
	CHECK(connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0);
	return fd;
}

/* A listening socket on 127.0.0.1, its port in *port. */
static inline int raw_listen(uint16_t *port)
{
	struct sockaddr_in sa = loopback(0);
	socklen_t len = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	CHECK(fd >= 0);
	CHECK(bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 && listen(fd, 8) == 0);
	CHECK(getsockname(fd, (struct sockaddr *)&sa, &len) == 0);
	*port = ntohs(sa.sin_port);
	return fd;
}

/* The next connection on lfd, waiting at most PUMP_NS (the kernel completes
 * the handshake without the peer's progress). */
static inline int raw_accept(int lfd)
{
	struct pollfd pfd = { .fd = lfd, .events = POLLIN };
	int fd;

	CHECK(poll(&pfd, 1, (int)(PUMP_NS / 1000000)) == 1);
	fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	CHECK(fd >= 0);
	return fd;
}

static inline void raw_write(int fd, const void *p, size_t len)
{
	CHECK(send(fd, p, len, MSG_NOSIGNAL) == (ssize_t)len);
}

#endif

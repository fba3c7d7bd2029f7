/* test_transport_abandon: tp_abandon on native TCP: a get given up before its answer, one given up halfway through its answer, a claimed bulk part (a READ's DATA) given up halfway: their buffers and ops are never touched again, and the connection stays in step for what follows. */
#include "tp_harness.h"

#define REGION (16 * MiB) /* more than the socket buffers hold: an answer comes in parts */
#define SLICE_RX 20000ull /* ns: one short turn of progress */

static uint64_t region_base(struct pair *p)
{
	uint64_t v;

	memcpy(&v, p->li.rkey, 8);
	return le64toh(v);
}

/* A get that completes: the connection is in step after whatever was dropped. */
static void get_ok(struct pair *p, uint8_t *region, size_t len, uint64_t off)
{
	uint8_t *in = malloc(len);
	struct tp_op op = { 0 };

	CHECK(in);
	CHECK(tp_rma(p->cep, TP_GET, in, len, region_base(p) + off, &op) == 0);
	CHECK(pump(p->cli, p->srv, op_done, &op));
	CHECK(op.status == 0 && memcmp(in, region + off, len) == 0);
	free(in);
}

#define SENTINEL 0xee

static bool untouched(const uint8_t *in, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (in[i] != SENTINEL)
			return false;
	return true;
}

/* The client has received the start of an answer into in, not its end. */
static bool partly_in(const uint8_t *in, size_t len)
{
	return !untouched(in, 4 * KiB) && untouched(in + len - 4 * KiB, 4 * KiB);
}

static void test_gets(void)
{
	uint8_t *region = aligned_alloc(4096, REGION), *in = malloc(REGION);
	struct tp_op op = { 0 };
	struct pair p;

	CHECK(region && in);
	fill(region, REGION, 5);
	pair_open(&p, TP_RMA, region, REGION);
	CHECK(tp_set_rkey(p.cep, p.li.rkey, p.li.rkey_len) == 0);

	/* 1. given up before any answer came: the answer is read and dropped */
	memset(in, SENTINEL, REGION);
	CHECK(tp_rma(p.cep, TP_GET, in, 64 * KiB, region_base(&p), &op) == 0);
	CHECK(tp_abandon(p.cep, &op) == 0);
	get_ok(&p, region, 16 * KiB, 8 * KiB);
	CHECK(!op.done && untouched(in, REGION));

	pair_close(&p);
	free(in);
	free(region);
}

/* Message 2 of the client's is in, its claimed bulk part complete. */
static bool second_in(void *arg)
{
	struct side *s = arg;

	return s->n_rx >= 2 && s->rx[1].done;
}

static void raw_read(int fd, void *p, size_t len)
{
	CHECK(recv(fd, p, len, MSG_WAITALL) == (ssize_t)len);
}

/* A get given up halfway through its answer, against a raw peer that
 * answers in two halves: the second half is dropped, and the answer to the
 * next get lands whole. */
static void test_get_halfway(void)
{
	static const size_t len = 1 * MiB;
	uint8_t *in = malloc(len), *in2 = malloc(len), *data = malloc(len), key[24] = { 0 }, f[48];
	struct tp_op op = { 0 }, op2 = { 0 };
	struct side *c = side_new(0);
	struct tp_ep *ep = NULL;
	uint16_t port;
	char hp[32];
	int lfd = raw_listen(&port), fd;
	uint64_t end;

	CHECK(in && in2 && data);
	fill(data, len, 7);
	memset(in, SENTINEL, len);
	hostport(hp, sizeof(hp), port);
	CHECK(tp_connect(c->t, hp, c, &ep) == 0);
	fd = raw_accept(lfd);
	raw_write(fd, f, put_hello(f));
	CHECK(tp_set_rkey(ep, key, sizeof(key)) == 0);
	CHECK(tp_rma(ep, TP_GET, in, len, 4096, &op) == 0);
	(void)tp_run(c->t, op_done, &op, 0, 10 * SLICE_RX);
	raw_read(fd, f, 48); /* its HELLO, KEY and GET */
	CHECK(f[32] == W_GET);
	raw_write(fd, f, put_frame(f, W_GET_REPLY, 0, (uint32_t)len, 0));
	raw_write(fd, data, len / 2);
	end = now_ns() + PUMP_NS;
	while (!partly_in(in, len) && now_ns() < end)
		(void)tp_run(c->t, op_done, &op, 0, SLICE_RX);
	CHECK(partly_in(in, len) && !op.done);
	CHECK(tp_abandon(ep, &op) == 0);
	memset(in, SENTINEL, len);
	CHECK(tp_rma(ep, TP_GET, in2, len, 4096, &op2) == 0);
	raw_write(fd, data + len / 2, len - len / 2); /* the rest of the first answer */
	raw_read(fd, f, 16);
	CHECK(f[0] == W_GET);
	raw_write(fd, f, put_frame(f, W_GET_REPLY, 0, (uint32_t)len, 0));
	fill(data, len, 8);
	raw_write(fd, data, len);
	CHECK(pump(c, NULL, op_done, &op2));
	CHECK(op2.status == 0 && matches(in2, len, 8));
	CHECK(!op.done && untouched(in, len));
	tp_close(ep);
	side_free(c);
	close(fd);
	close(lfd);
	free(data);
	free(in2);
	free(in);
}

/* A raw peer's message seq (a struct msg, claimed) with a bulk part of len
 * bytes of its pattern, of which only the first part bytes go now; the
 * rest is returned (malloc'd) to be written later. */
static uint8_t *raw_msg(int fd, uint32_t seq, size_t len, size_t part)
{
	struct msg m = { seq, seed_of(seq), 1, 0 };
	uint8_t f[16], *bulk = malloc(len);

	CHECK(bulk);
	fill(bulk, len, m.seed);
	raw_write(fd, f, put_frame(f, W_MSG, sizeof(m), (uint32_t)len, 0));
	raw_write(fd, &m, sizeof(m));
	raw_write(fd, bulk, part);
	return bulk;
}

/* A claimed bulk part given up mid-way (a hedged READ's DATA): its buffer
 * and done callback are left alone; the next message and its bulk part
 * arrive intact. */
static void test_claimed(void)
{
	static const size_t len = 1 * MiB;
	struct side *c = side_new(0);
	struct tp_ep *ep = NULL;
	uint8_t f[16], *rest, *b2;
	uint16_t port;
	char hp[32];
	int lfd = raw_listen(&port), fd;
	struct want w = { c, 1 };
	struct rx *r;
	uint64_t end;

	hostport(hp, sizeof(hp), port);
	CHECK(tp_connect(c->t, hp, c, &ep) == 0);
	fd = raw_accept(lfd);
	raw_write(fd, f, put_hello(f));
	rest = raw_msg(fd, 1, len, len / 2);
	CHECK(pump(c, NULL, got_msgs, &w));
	r = &c->rx[0];
	CHECK(r->buf && r->claim_err == 0);
	end = now_ns() + PUMP_NS;
	while (!matches(r->buf, 4 * KiB, seed_of(1)) && now_ns() < end) /* the first half in */
		(void)tp_run(c->t, got_msgs, &w, 0, SLICE_RX);
	CHECK(matches(r->buf, 4 * KiB, seed_of(1)) && !r->done);
	/* the claim's done arg stands for the op (the client passes its op) */
	CHECK(tp_abandon(ep, (struct tp_op *)(void *)r) == 0);
	memset(r->buf, SENTINEL, len);
	raw_write(fd, rest + len / 2, len - len / 2);
	b2 = raw_msg(fd, 2, 64 * KiB, 64 * KiB);
	CHECK(pump(c, NULL, second_in, c));
	check_rx(&c->rx[1], ep, 2, sizeof(struct msg), 64 * KiB, true);
	CHECK(!r->done && untouched(r->buf, len));
	tp_close(ep);
	side_free(c);
	close(fd);
	close(lfd);
	free(b2);
	free(rest);
}

int main(void)
{
	test_gets();
	test_get_halfway();
	test_claimed();
	printf("test_transport_abandon: ok\n");
	return 0;
}

/* serve: the memnode's request rules, driven directly with encoded messages. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buddy.h"
#include "log.h"
#include "proto.h"
#include "serve.h"
#include "testing.h"

#define ORDERS (BUDDY_MAX_ORDER + 1)
#define POOL 4101u /* four order-10 blocks, then orders 2 and 0 */
static const char SECRET[] = "correct horse battery staple";
static const uint8_t RKEY[] = { 1, 2, 3, 4, 5 };

/* A connection as the test sees it: its id and the next seq to use. */
struct cl {
	uint32_t conn;
	uint64_t seq;
};

static uint8_t reply_buf[PROTO_MAX_MSG];
static struct proto_msg rep; /* the last reply, decoded (points into reply_buf) */

static struct auth_token secret_token(void)
{
	struct auth_token t = { .len = sizeof(SECRET) - 1 };

	memcpy(t.bytes, SECRET, t.len);
	return t;
}

static struct serve *make(uint32_t pool, uint32_t max_clients, const struct auth_token *token)
{
	struct serve_config cfg = {
		.pool_frames = pool, .nid = 7, .credits = 32, .max_clients = max_clients,
		.base = 0x7f0000000000ull, .rkey = RKEY, .rkey_len = sizeof(RKEY), .token = token,
	};
	struct serve *s = NULL;

	CHECK(serve_create(&cfg, &s) == 0 && s);
	return s;
}

static struct cl connect_cl(struct serve *s)
{
	struct cl c = { .seq = 1 };

	CHECK(serve_connect(s, &c.conn) == 0);
	return c;
}

/* Hands raw bytes to serve; checks a reply decodes with the expected seq. */
static int send_raw(struct serve *s, uint32_t conn, const void *buf, size_t len, uint64_t want_seq)
{
	size_t rlen = 0;
	struct serve_bulk sb;
	int rc = serve_handle(s, conn, buf, len, 0, reply_buf, sizeof(reply_buf), &rlen, &sb);

	CHECK(rc == 0 || rc == SERVE_CLOSE);
	CHECK(proto_decode(reply_buf, rlen, &rep) == 0);
	CHECK(rep.seq == want_seq);
	return rc;
}

/* Sends m with the connection's next seq. */
static int send_msg(struct serve *s, struct cl *c, struct proto_msg *m)
{
	uint8_t buf[PROTO_MAX_MSG];
	size_t len;

	m->seq = c->seq++;
	CHECK(proto_encode(m, buf, sizeof(buf), &len) == 0);
	return send_raw(s, c->conn, buf, len, m->seq);
}

static int hello(struct serve *s, struct cl *c, const char *token)
{
	struct proto_msg m = { .type = PROTO_HELLO };

	m.u.hello.client_id = 0xc0ffee00u + c->conn;
	m.u.hello.token_len = (uint16_t)strlen(token);
	m.u.hello.token = (const uint8_t *)token;
	return send_msg(s, c, &m);
}

static int alloc(struct serve *s, struct cl *c, uint32_t order)
{
	struct proto_msg m = { .type = PROTO_ALLOC, .u.alloc.order = order };

	return send_msg(s, c, &m);
}

static int free_ranges(struct serve *s, struct cl *c, const struct proto_range *r, uint32_t n)
{
	struct proto_msg m = { .type = PROTO_FREE, .u.free = { .nranges = n, .ranges = r } };

	return send_msg(s, c, &m);
}

static int free_one(struct serve *s, struct cl *c, uint32_t pfn, uint32_t count)
{
	struct proto_range r = { pfn, count };

	return free_ranges(s, c, &r, 1);
}

static int simple(struct serve *s, struct cl *c, uint8_t type)
{
	struct proto_msg m = { .type = type };

	return send_msg(s, c, &m);
}

/* Checks the last reply is ERROR err (positive on the wire). */
static void want_error(int err)
{
	CHECK(rep.type == PROTO_ERROR);
	CHECK(rep.u.error.error == err);
	CHECK(rep.u.error.text_len > 0);
}

static uint32_t alloc_ok(struct serve *s, struct cl *c, uint32_t order)
{
	CHECK(alloc(s, c, order) == 0);
	CHECK(rep.type == PROTO_CHUNK && rep.u.chunk.count == 1u << order);
	CHECK(rep.u.chunk.pfn % (1u << order) == 0 && rep.u.chunk.pfn + rep.u.chunk.count <= POOL);
	return rep.u.chunk.pfn;
}

static void free_ok(struct serve *s, struct cl *c, uint32_t pfn, uint32_t count)
{
	CHECK(free_one(s, c, pfn, count) == 0);
	CHECK(rep.type == PROTO_FREED && rep.u.freed.frames == count);
}

static uint64_t client_frames(struct serve *s, struct cl *c)
{
	CHECK(simple(s, c, PROTO_STATS) == 0 && rep.type == PROTO_STATS_REPLY);
	return rep.u.stats.client_frames;
}

static uint64_t free_frames(const struct serve *s)
{
	struct serve_stats st;

	serve_stats(s, &st);
	CHECK(st.pool_frames >= st.free_frames);
	return st.free_frames;
}

/* A connected, authenticated client. */
static struct cl login(struct serve *s, const char *token)
{
	struct cl c = connect_cl(s);

	CHECK(hello(s, &c, token) == 0 && rep.type == PROTO_WELCOME);
	return c;
}

/* Runs fn with stderr captured; returns what was logged (static buffer). */
static const char *captured_log(void (*fn)(struct serve *), struct serve *s)
{
	static char text[4096];
	FILE *f = tmpfile();
	int saved = dup(STDERR_FILENO);
	size_t n;

	CHECK(f && saved >= 0);
	CHECK(dup2(fileno(f), STDERR_FILENO) >= 0);
	fn(s);
	CHECK(dup2(saved, STDERR_FILENO) >= 0);
	close(saved);
	rewind(f);
	n = fread(text, 1, sizeof(text) - 1, f);
	text[n] = '\0';
	fclose(f);
	return text;
}

static void bad_token_hello(struct serve *s)
{
	struct cl c = connect_cl(s);

	CHECK(hello(s, &c, "correct horse battery stapleX") == SERVE_CLOSE);
	want_error(EACCES);
	serve_disconnect(s, c.conn);
}

static void test_auth(void)
{
	struct auth_token t = secret_token();
	struct serve *s = make(POOL, 16, &t);
	static const char *const wrong[] = {
		"", "correct horse battery stapl", "correct horse battery staplf",
		"Correct horse battery staple", "correct horse battery staple\n",
	};
	struct cl c;
	const char *log;

	/* Anything before HELLO closes the connection. */
	static const uint8_t early[] = { PROTO_ALLOC, PROTO_FREE, PROTO_STATS, PROTO_BYE, PROTO_CHUNK };
	for (size_t i = 0; i < sizeof(early); i++) {
		struct proto_range r = { 0, 1 };
		struct proto_msg m = { .type = early[i] };
		m.u.free.nranges = early[i] == PROTO_FREE;
		m.u.free.ranges = &r;
		c = connect_cl(s);
		CHECK(send_msg(s, &c, &m) == SERVE_CLOSE);
		want_error(EACCES);
		serve_disconnect(s, c.conn);
	}
	for (size_t i = 0; i < sizeof(wrong) / sizeof(wrong[0]); i++) {
		c = connect_cl(s);
		CHECK(hello(s, &c, wrong[i]) == SERVE_CLOSE);
		want_error(EACCES);
		serve_disconnect(s, c.conn);
	}

	/* The refusal is logged, the presented secret is not. */
	log = captured_log(bad_token_hello, s);
	CHECK(strstr(log, "bad token") != NULL);
	CHECK(strstr(log, "horse") == NULL);

	c = connect_cl(s);
	CHECK(hello(s, &c, SECRET) == 0);
	CHECK(rep.type == PROTO_WELCOME);
	CHECK(rep.u.welcome.nid == 7 && rep.u.welcome.max_order == 10);
	CHECK(rep.u.welcome.credits == 32 && rep.u.welcome.pool_frames == POOL);
	CHECK(rep.u.welcome.base == 0x7f0000000000ull);
	CHECK(rep.u.welcome.rkey_len == sizeof(RKEY));
	CHECK(memcmp(rep.u.welcome.rkey, RKEY, sizeof(RKEY)) == 0);
	CHECK(hello(s, &c, SECRET) == 0);
	want_error(EALREADY);
	alloc_ok(s, &c, 0);
	alloc_ok(s, &c, 10);
	/* BYE frees at once, before the transport closes. */
	CHECK(simple(s, &c, PROTO_BYE) == SERVE_CLOSE && rep.type == PROTO_GOODBYE);
	CHECK(free_frames(s) == POOL);
	serve_disconnect(s, c.conn);
	CHECK(free_frames(s) == POOL);
	serve_destroy(s);
}

static void test_no_token(void)
{
	struct serve *s = make(POOL, 4, NULL);
	struct cl a = connect_cl(s), b = connect_cl(s);

	CHECK(hello(s, &a, "") == 0 && rep.type == PROTO_WELCOME);
	CHECK(hello(s, &b, "whatever") == 0 && rep.type == PROTO_WELCOME);
	alloc_ok(s, &b, 3);
	/* Still HELLO first. */
	a = connect_cl(s);
	CHECK(alloc(s, &a, 0) == SERVE_CLOSE);
	want_error(EACCES);
	serve_destroy(s); /* with live connections and frames held */
}

static void test_alloc_free(void)
{
	struct serve *s = make(POOL, 4, NULL);
	struct cl a = login(s, "");
	struct proto_range r[3];
	uint32_t p[ORDERS], q;
	struct serve_stats st;

	for (uint32_t order = 0; order < ORDERS; order++)
		p[order] = alloc_ok(s, &a, order);
	CHECK(client_frames(s, &a) == 2047);
	CHECK(free_frames(s) == POOL - 2047);
	for (uint32_t order = 0; order < ORDERS; order++)
		free_ok(s, &a, p[order], 1u << order);
	CHECK(free_frames(s) == POOL && client_frames(s, &a) == 0);

	/* Ranges need not be whole blocks, and one FREE may carry several. */
	q = alloc_ok(s, &a, 4);
	free_ok(s, &a, q + 3, 5);
	r[0] = (struct proto_range){ q, 1 };
	r[1] = (struct proto_range){ q + 10, 6 };
	r[2] = (struct proto_range){ q + 1, 2 };
	CHECK(free_ranges(s, &a, r, 3) == 0 && rep.type == PROTO_FREED && rep.u.freed.frames == 9);
	CHECK(client_frames(s, &a) == 2);
	free_ok(s, &a, q + 8, 2);
	CHECK(free_frames(s) == POOL);

	/* Order beyond the buddy's. */
	CHECK(alloc(s, &a, ORDERS) == 0);
	want_error(EINVAL);
	CHECK(alloc(s, &a, UINT32_MAX) == 0);
	want_error(EINVAL);

	serve_stats(s, &st);
	CHECK(st.allocs == 12 && st.frees == 2047 + 16 && st.nacks == 0 && st.errors == 2);
	CHECK(st.clients == 1 && st.pool_frames == POOL);
	serve_destroy(s);
}

/* STATS lists each authenticated client's frames and counts every request. */
static void test_stats_usage(void)
{
	struct serve *s = make(POOL, 4, NULL);
	struct cl a = login(s, ""), b = login(s, ""), anon = connect_cl(s);
	struct serve_stats st;
	struct proto_usage u0, u1;

	alloc_ok(s, &a, 3);
	alloc_ok(s, &b, 0);
	CHECK(simple(s, &a, PROTO_STATS) == 0 && rep.type == PROTO_STATS_REPLY);
	CHECK(rep.u.stats.clients == 3 && rep.u.stats.nusage == 2 && rep.u.stats.flags == 0);
	CHECK(rep.u.stats.requests == 5); /* 2 HELLO, 2 ALLOC, this STATS */
	u0 = proto_stats_usage(&rep, 0), u1 = proto_stats_usage(&rep, 1);
	CHECK(u0.client_id == 0xc0ffee00u + a.conn && u0.frames == 8);
	CHECK(u1.client_id == 0xc0ffee00u + b.conn && u1.frames == 1);
	serve_stats(s, &st);
	CHECK(st.requests == 5 && st.clients == 3 && st.free_frames == POOL - 9);
	serve_disconnect(s, b.conn);
	serve_disconnect(s, anon.conn);
	CHECK(simple(s, &a, PROTO_STATS) == 0 && rep.u.stats.nusage == 1 && rep.u.stats.clients == 1);
	serve_stats(s, &st);
	CHECK(st.requests == 6 && st.clients == 1 && st.free_frames == POOL - 8);
	serve_destroy(s);
}

static void nack_ok(struct serve *s, struct cl *c, uint32_t order, int32_t largest)
{
	CHECK(alloc(s, c, order) == 0);
	CHECK(rep.type == PROTO_NACK);
	CHECK(rep.u.nack.error == ENOSPC && rep.u.nack.largest_free_order == largest);
}

static void test_exhaustion(void)
{
	struct serve *s = make(1024 + 2 + 1, 4, NULL);
	struct cl a = login(s, "");
	struct serve_stats st;
	uint32_t big;

	big = alloc_ok(s, &a, 10);
	CHECK(rep.u.chunk.free_frames == 3); /* room piggybacked for placement */
	nack_ok(s, &a, 10, 1);
	CHECK(rep.u.nack.free_frames == 3);
	nack_ok(s, &a, 2, 1);
	CHECK(alloc_ok(s, &a, 0) == 1026);
	CHECK(alloc_ok(s, &a, 1) == 1024);
	nack_ok(s, &a, 0, -1);
	CHECK(free_frames(s) == 0);
	free_ok(s, &a, big, 1024);
	CHECK(rep.u.freed.free_frames == 1024);
	CHECK(alloc_ok(s, &a, 10) == big);
	serve_stats(s, &st);
	CHECK(st.nacks == 3 && st.allocs == 4 && st.errors == 0);
	serve_destroy(s);
}

/* The memnode's side of a growing pool: adds `step` frames per call until
 * told the host has no more (fail), as memnode.c does against MemAvailable. */
struct grower {
	uint32_t step, calls;
	int fail;
};

static int grow_by_step(void *arg, uint32_t frames, uint32_t need, uint32_t *frames_out)
{
	struct grower *g = arg;

	g->calls++;
	if (g->fail)
		return g->fail;
	*frames_out = frames + (need > g->step ? need : g->step);
	return 0;
}

/* A pool that starts at one order-10 block and may grow to four: ALLOCs
 * beyond the first block grow it, WELCOME names the whole PFN range, STATS
 * the frames there are now, and a grow() that fails is a plain NACK. */
static void test_grow(void)
{
	struct grower g = { .step = 512 };
	struct serve_config cfg = {
		.pool_frames = 1024, .max_frames = 4096, .grow = grow_by_step, .grow_arg = &g,
		.credits = 4, .max_clients = 4,
	};
	struct serve *s = NULL;
	struct serve_stats st;
	struct cl a;

	CHECK(serve_create(&cfg, &s) == 0);
	a = connect_cl(s);
	CHECK(hello(s, &a, "") == 0 && rep.type == PROTO_WELCOME && rep.u.welcome.pool_frames == 4096);
	CHECK(rep.u.welcome.free_frames == 4096); /* room counts what the pool may still grow */
	CHECK(alloc_ok(s, &a, 10) == 0 && g.calls == 0);
	CHECK(rep.u.chunk.free_frames == 3072);
	CHECK(alloc_ok(s, &a, 10) == 1024 && g.calls == 1); /* grown by need > step */
	CHECK(alloc_ok(s, &a, 0) == 2048 && g.calls == 2);
	serve_stats(s, &st);
	CHECK(st.pool_frames == 2560 && st.free_frames == 511 && st.nacks == 0);
	CHECK(simple(s, &a, PROTO_STATS) == 0 && rep.u.stats.pool_frames == 2560);
	/* frames beyond the pool so far but below max_frames are nobody's */
	CHECK(free_one(s, &a, 3000, 1) == 0);
	want_error(EPERM);
	g.fail = -ENOMEM;
	nack_ok(s, &a, 10, 8);
	CHECK(g.calls == 3);
	g.fail = 0;
	/* +1024 at 2560 is two order-9 blocks: grown again (capped at
	 * max_frames), which completes the order-10 block at 3072 */
	CHECK(alloc_ok(s, &a, 10) == 3072 && g.calls == 5);
	/* at max_frames grow() is not asked any more */
	nack_ok(s, &a, 10, 9);
	CHECK(g.calls == 5);
	serve_disconnect(s, a.conn);
	CHECK(free_frames(s) == 4096);
	serve_destroy(s);
	cfg.max_frames = 1000;
	CHECK(serve_create(&cfg, &s) == -EINVAL);
}

static uint8_t pool_mem[POOL * 4096ul];

/* Sends READ or WRITE of count frames at pfn with bulk_len bytes attached. */
static struct serve_bulk rw(struct serve *s, struct cl *c, uint8_t type, uint32_t pfn, uint32_t count,
			    size_t bulk_len)
{
	struct proto_msg m = { .type = type, .u.rw = { pfn, count } };
	uint8_t buf[PROTO_MAX_MSG];
	struct serve_bulk sb;
	size_t len, rlen;

	m.seq = c->seq++;
	CHECK(proto_encode(&m, buf, sizeof(buf), &len) == 0);
	CHECK(serve_handle(s, c->conn, buf, len, bulk_len, reply_buf, sizeof(reply_buf), &rlen, &sb) == 0);
	CHECK(proto_decode(reply_buf, rlen, &rep) == 0 && rep.seq == m.seq);
	CHECK(rep.type != PROTO_ERROR || sb.len == 0);
	return sb;
}

/* Elastic pool: blocks taken for the host leave the pool (STATS, room) and
 * no client gets them or may free them; returned, they serve again. */
static void test_host_blocks(void)
{
	struct serve *s = make(POOL, 4, NULL);
	struct cl a = login(s, "");
	struct serve_stats st;
	uint32_t h1, h2, h3;

	CHECK(serve_host_take(s, &h1) == 0 && serve_host_take(s, &h2) == 0 && h1 != h2);
	CHECK(h1 % 1024 == 0 && h2 % 1024 == 0);
	serve_stats(s, &st);
	CHECK(st.pool_frames == POOL - 2048 && st.free_frames == POOL - 2048);
	CHECK(simple(s, &a, PROTO_STATS) == 0 && rep.u.stats.pool_frames == POOL - 2048);
	CHECK(alloc_ok(s, &a, 10) != h1 && rep.u.chunk.free_frames == POOL - 3072);
	CHECK(free_one(s, &a, h1, 1) == 0);
	want_error(EPERM); /* not the client's */
	CHECK(serve_host_take(s, &h3) == 0 && h3 != h1 && h3 != h2);
	CHECK(serve_host_take(s, &h3) == -ENOSPC); /* no order-10 block left free */
	nack_ok(s, &a, 10, 2);
	CHECK(serve_host_return(s, h1) == 0 && serve_host_return(s, h1) == -EPERM);
	CHECK(alloc_ok(s, &a, 10) == h1);
	CHECK(serve_host_return(s, h2) == 0);
	serve_stats(s, &st);
	CHECK(st.pool_frames == POOL - 1024);
	serve_disconnect(s, a.conn);
	CHECK(free_frames(s) == POOL - 1024);
	serve_destroy(s);
}

/* Elastic shrink: the block holding the fewest clients' frames is chosen,
 * each holder gets one SHRINK naming it, ALLOCs are refused meanwhile, and
 * once its frames are freed the block can go to the host. */
static void test_shrink(void)
{
	struct serve *s = make(POOL, 4, NULL);
	struct cl a = login(s, ""), b = login(s, "");
	uint8_t buf[PROTO_MAX_MSG];
	struct proto_msg m;
	uint32_t p[4], pfn, count, h, pb;
	size_t len;

	for (int i = 0; i < 4; i++)
		p[i] = alloc_ok(s, &a, 10);
	free_ok(s, &a, p[2], 1000);                /* block p[2]: 24 of a's frames left */
	pb = alloc_ok(s, &b, 3);
	CHECK(pb >= p[2] && pb < p[2] + 1000);     /* and 8 of b's */
	CHECK(serve_host_take(s, &h) == -ENOSPC);
	CHECK(serve_shrink_msg(s, a.conn, 1000, buf, sizeof(buf), &len) == -ENOENT); /* no shrink yet */
	CHECK(serve_shrink_start(s, 1, &pfn, &count) == 0 && pfn == p[2] && count == 1024);
	for (int k = 0; k < 2; k++) { /* each holder is told once */
		uint32_t conn = k ? b.conn : a.conn;

		CHECK(serve_shrink_msg(s, conn, 1000, buf, sizeof(buf), &len) == 0);
		CHECK(proto_decode(buf, len, &m) == 0 && m.type == PROTO_SHRINK && m.seq == 0);
		CHECK(m.u.shrink.pfn == p[2] && m.u.shrink.count == 1024 && m.u.shrink.timeout_ms == 1000);
		CHECK(serve_shrink_msg(s, conn, 1000, buf, sizeof(buf), &len) == -ENOENT);
	}
	nack_ok(s, &b, 0, -1);                     /* nothing new while shrinking */
	CHECK(simple(s, &a, PROTO_STATS) == 0 && (rep.u.stats.flags & PROTO_STATS_SHRINKING));
	CHECK(serve_shrink_start(s, 1, &pfn, &count) == -EBUSY);
	free_ok(s, &a, p[2] + 1000, 24);
	CHECK(serve_shrink_start(s, 1, &pfn, &count) == -EBUSY); /* b still holds 8 there */
	free_ok(s, &b, pb, 8);
	CHECK(serve_host_take(s, &h) == 0 && h == p[2]);
	/* vacated: the next call picks another range, never the host's block */
	CHECK(serve_shrink_start(s, 4, &pfn, &count) == 0);
	CHECK(count % 1024 == 0 && count >= 1024 && (pfn >= p[2] + 1024 || pfn + count <= p[2]));
	serve_shrink_end(s);
	CHECK(simple(s, &a, PROTO_STATS) == 0 && !(rep.u.stats.flags & PROTO_STATS_SHRINKING));
	CHECK(alloc_ok(s, &b, 0) >= 4096);         /* allocations again (the tail is all that is free) */
	CHECK(serve_shrink_msg(s, a.conn, 1000, buf, sizeof(buf), &len) == -ENOENT);
	serve_disconnect(s, a.conn);
	serve_disconnect(s, b.conn);
	serve_destroy(s);
}

static void test_read_write(void)
{
	struct serve_config cfg = { .pool_frames = POOL, .credits = 4, .max_clients = 4, .pool = pool_mem };
	struct serve *s = NULL, *plain = make(POOL, 2, NULL);
	struct cl a, b, p = login(plain, "");
	struct serve_bulk sb;
	uint32_t pa, pb;

	CHECK(serve_create(&cfg, &s) == 0);
	a = login(s, "");
	b = login(s, "");
	pa = alloc_ok(s, &a, 3);
	pb = alloc_ok(s, &b, 0);
	sb = rw(s, &a, PROTO_READ, pa + 1, 7, 0);
	CHECK(rep.type == PROTO_DATA && rep.u.done.count == 7 && !sb.incoming);
	CHECK(sb.addr == pool_mem + (pa + 1) * 4096ul && sb.len == 7 * 4096);
	sb = rw(s, &a, PROTO_WRITE, pa, 8, 8 * 4096);
	CHECK(rep.type == PROTO_WRITTEN && rep.u.done.count == 8 && sb.incoming);
	CHECK(sb.addr == pool_mem + pa * 4096ul && sb.len == 8 * 4096);
	rw(s, &a, PROTO_READ, pa, 9, 0);           /* one frame past A's chunk */
	want_error(EPERM);
	rw(s, &a, PROTO_READ, pb, 1, 0);           /* B's frame */
	want_error(EPERM);
	rw(s, &b, PROTO_WRITE, pa, 1, 4096);       /* B writing A's frame */
	want_error(EPERM);
	rw(s, &a, PROTO_WRITE, pa, 2, 4096);       /* data shorter than the frames */
	want_error(EBADMSG);
	rw(s, &a, PROTO_READ, pa, 1, 4096);        /* a READ carries no data */
	want_error(EBADMSG);
	rw(s, &a, PROTO_READ, pa, 0, 0);
	want_error(EINVAL);
	rw(s, &a, PROTO_READ, pa, PROTO_MAX_RW_FRAMES + 1, 0);
	want_error(EINVAL);
	rw(s, &a, PROTO_READ, POOL - 1, 2, 0);
	want_error(ERANGE);
	alloc_ok(plain, &p, 0);
	rw(plain, &p, PROTO_READ, 0, 1, 0);        /* no pool given: rma-only memnode */
	want_error(EOPNOTSUPP);
	serve_destroy(plain);
	serve_destroy(s);
}

static void test_ownership(void)
{
	struct serve *s = make(POOL, 4, NULL);
	struct cl a = login(s, ""), b = login(s, "");
	struct proto_range r[2];
	uint32_t pa, pb;
	uint64_t before;

	pa = alloc_ok(s, &a, 2);
	pb = alloc_ok(s, &b, 2);
	before = free_frames(s);

	/* B cannot free A's frames, nor free frames nobody holds. */
	CHECK(free_one(s, &b, pa, 4) == 0);
	want_error(EPERM);
	CHECK(free_one(s, &b, pa + 1, 1) == 0);
	want_error(EPERM);
	CHECK(free_one(s, &b, 3000, 1) == 0);
	want_error(EPERM);
	/* One bad range spoils the whole FREE: nothing is freed. */
	r[0] = (struct proto_range){ pb, 2 };
	r[1] = (struct proto_range){ pa, 1 };
	CHECK(free_ranges(s, &b, r, 2) == 0);
	want_error(EPERM);
	r[0] = (struct proto_range){ pb, 4 };
	CHECK(free_ranges(s, &b, r, 2) == 0); /* more than B holds */
	want_error(EPERM);
	/* Overlapping or repeated ranges would free a frame twice. */
	r[0] = (struct proto_range){ pb, 2 };
	r[1] = (struct proto_range){ pb + 1, 2 };
	CHECK(free_ranges(s, &b, r, 2) == 0);
	want_error(EPERM);
	r[1] = r[0];
	CHECK(free_ranges(s, &b, r, 2) == 0);
	want_error(EPERM);
	/* Outside the pool. */
	CHECK(free_one(s, &b, POOL - 1, 2) == 0);
	want_error(ERANGE);
	CHECK(free_one(s, &b, POOL, 1) == 0);
	want_error(ERANGE);
	CHECK(free_frames(s) == before);
	CHECK(client_frames(s, &b) == 4 && client_frames(s, &a) == 4);

	/* A's frames are still A's: A frees them; B's are still B's. */
	free_ok(s, &a, pa, 4);
	CHECK(free_one(s, &a, pa, 4) == 0); /* double free */
	want_error(EPERM);
	free_ok(s, &b, pb, 4);
	CHECK(free_frames(s) == POOL);
	serve_destroy(s);
}

static void test_seq(void)
{
	struct serve *s = make(POOL, 4, NULL);
	struct cl a = connect_cl(s);

	/* A first seq of 0 is already stale; before HELLO that closes. */
	a.seq = 0;
	CHECK(hello(s, &a, "") == SERVE_CLOSE);
	want_error(EINVAL);
	serve_disconnect(s, a.conn);

	a = connect_cl(s);
	a.seq = 1000;
	CHECK(hello(s, &a, "") == 0 && rep.type == PROTO_WELCOME);
	a.seq = 1000;
	CHECK(alloc(s, &a, 0) == 0);
	want_error(EINVAL);
	a.seq = 5;
	CHECK(alloc(s, &a, 0) == 0);
	want_error(EINVAL);
	a.seq = 5000; /* gaps are fine */
	alloc_ok(s, &a, 0);
	a.seq = 5000;
	CHECK(simple(s, &a, PROTO_STATS) == 0);
	want_error(EINVAL);
	CHECK(client_frames(s, &a) == 1);
	serve_destroy(s);
}

/* A valid encoded STATS with seq 9, to corrupt. */
static size_t stats_bytes(uint8_t *buf)
{
	struct proto_msg m = { .type = PROTO_STATS, .seq = 9 };
	size_t len;

	CHECK(proto_encode(&m, buf, PROTO_MAX_MSG, &len) == 0);
	return len;
}

static void test_malformed(void)
{
	struct serve *s = make(POOL, 4, NULL);
	struct cl a = login(s, ""), b;
	uint8_t buf[PROTO_MAX_MSG + 16];
	size_t len;
	struct serve_stats st;

	memset(buf, 0xa5, sizeof(buf));
	CHECK(send_raw(s, a.conn, buf, 0, 0) == 0);
	want_error(EBADMSG);
	CHECK(send_raw(s, a.conn, buf, 5, 0) == 0);
	want_error(EBADMSG);
	CHECK(send_raw(s, a.conn, buf, sizeof(buf), 0) == 0);
	want_error(EBADMSG);

	len = stats_bytes(buf);
	CHECK(send_raw(s, a.conn, buf, len - 1, 0) == 0); /* truncated */
	want_error(EBADMSG);
	buf[0] ^= 1; /* magic */
	CHECK(send_raw(s, a.conn, buf, len, 0) == 0);
	want_error(EBADMSG);
	len = stats_bytes(buf);
	buf[2] = PROTO_VERSION + 1;
	CHECK(send_raw(s, a.conn, buf, len, 0) == 0);
	want_error(EPROTONOSUPPORT);
	len = stats_bytes(buf);
	buf[3] = PROTO_TYPE_MAX + 1;
	CHECK(send_raw(s, a.conn, buf, len, 0) == 0);
	want_error(ENOMSG);
	len = stats_bytes(buf);
	buf[3] = 0;
	CHECK(send_raw(s, a.conn, buf, len, 0) == 0);
	want_error(ENOMSG);
	len = stats_bytes(buf);
	buf[len] = 0; /* one byte more than the header's length says */
	CHECK(send_raw(s, a.conn, buf, len + 1, 0) == 0);
	want_error(EBADMSG);

	/* Replies are not requests. */
	static const uint8_t replies[] = { PROTO_WELCOME, PROTO_CHUNK, PROTO_NACK, PROTO_FREED,
					   PROTO_STATS_REPLY, PROTO_GOODBYE, PROTO_ERROR,
					   PROTO_DATA, PROTO_WRITTEN };
	for (size_t i = 0; i < sizeof(replies); i++) {
		struct proto_msg m = { .type = replies[i] };
		CHECK(send_msg(s, &a, &m) == 0);
		want_error(EBADMSG);
	}
	/* The connection still works. */
	alloc_ok(s, &a, 0);

	/* Garbage before HELLO closes. */
	b = connect_cl(s);
	CHECK(send_raw(s, b.conn, buf, 7, 0) == SERVE_CLOSE);
	want_error(EBADMSG);

	serve_stats(s, &st);
	CHECK(st.errors == 9 + sizeof(replies) + 1);
	serve_destroy(s);
}

static void test_disconnect(void)
{
	struct serve *s = make(POOL, 4, NULL);
	struct cl a = login(s, ""), b = login(s, "");
	struct serve_stats st;
	uint8_t req[PROTO_MAX_MSG];
	struct serve_bulk sb;
	size_t rlen, len;

	for (uint32_t i = 0; i < 4; i++)
		alloc_ok(s, &a, 10);
	nack_ok(s, &b, 10, 2);
	alloc_ok(s, &a, 0);
	alloc_ok(s, &b, 2);
	CHECK(free_frames(s) == 0);
	serve_stats(s, &st);
	CHECK(st.clients == 2);

	serve_disconnect(s, a.conn);
	CHECK(free_frames(s) == POOL - 4);
	serve_stats(s, &st);
	CHECK(st.clients == 1);
	/* A is gone: no reply at all; unknown ids are ignored. */
	len = stats_bytes(req);
	CHECK(serve_handle(s, a.conn, req, len, 0, reply_buf, sizeof(reply_buf), &rlen, &sb) == -ENOENT);
	CHECK(serve_handle(s, 0, req, len, 0, reply_buf, sizeof(reply_buf), &rlen, &sb) == -ENOENT);
	serve_disconnect(s, a.conn);
	serve_disconnect(s, 12345);
	CHECK(client_frames(s, &b) == 4);
	serve_disconnect(s, b.conn);
	CHECK(free_frames(s) == POOL);
	serve_stats(s, &st);
	CHECK(st.clients == 0);
	serve_destroy(s);
}

static void test_max_clients(void)
{
	struct serve *s = make(POOL, 3, NULL);
	uint32_t id[3], extra;

	for (int i = 0; i < 3; i++)
		CHECK(serve_connect(s, &id[i]) == 0);
	CHECK(id[0] == 1 && id[1] == 2 && id[2] == 3);
	CHECK(serve_connect(s, &extra) == -EMFILE);
	serve_disconnect(s, id[1]);
	CHECK(serve_connect(s, &extra) == 0 && extra == 4); /* ids are not reused */
	CHECK(serve_connect(s, &extra) == -EMFILE);
	serve_destroy(s);
}

static void test_bad_config(void)
{
	struct auth_token empty = { .len = 0 };
	struct serve_config ok = { .pool_frames = 8, .max_clients = 1 }, cfg;
	struct serve *s = NULL;

	cfg = ok;
	cfg.pool_frames = 0;
	CHECK(serve_create(&cfg, &s) == -EINVAL);
	cfg = ok;
	cfg.max_clients = 0;
	CHECK(serve_create(&cfg, &s) == -EINVAL);
	cfg = ok;
	cfg.rkey = RKEY;
	cfg.rkey_len = PROTO_MAX_RKEY + 1;
	CHECK(serve_create(&cfg, &s) == -EINVAL);
	cfg = ok;
	cfg.token = &empty;
	CHECK(serve_create(&cfg, &s) == -EINVAL);
	CHECK(s == NULL);
	serve_destroy(NULL);
}

int main(void)
{
	test_auth();
	test_no_token();
	test_alloc_free();
	test_stats_usage();
	test_exhaustion();
	test_grow();
	test_host_blocks();
	test_shrink();
	test_ownership();
	test_read_write();
	test_seq();
	test_malformed();
	test_disconnect();
	test_max_clients();
	test_bad_config();
	printf("test_serve: ok\n");
	return 0;
}

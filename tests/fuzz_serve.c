/* fuzz_serve: libFuzzer target for the memnode's message handling (serve.c over proto.c and buddy.c). */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "buddy.h"
#include "log.h"
#include "proto.h"
#include "serve.h"

/* Input: records, each starting with a control byte c:
 *   c & 1          which of the two connections
 *   (c >> 1) % 8   0-2: raw message, 2-byte little-endian length then that many
 *                       bytes (1-2: with magic and length fields made valid)
 *                  3-5: structured message, encoded here from the bytes that follow,
 *                       so that deep paths (frees of frames really held) are reached
 *                  6:   the connection closes and a new one takes its place
 *                  7:   STATS on the connection
 * Connection 0 starts with a valid HELLO so inputs begin past authentication.
 * Records after the first MAX_RECORDS are ignored: every state of a connection
 * is a few messages away, and without the cap inputs drift towards hundreds of
 * messages, which slows the bounded run without reaching anything new.
 * The pool is one order-10 block and a tail of orders 2 and 0: exhaustion and
 * splitting are a few messages away, and a disconnect (a scan of the pool)
 * stays cheap, which matters as every run ends with two.
 *
 * Every reply is checked against a model of the rules kept here from the
 * requests and replies alone: per connection whether HELLO succeeded and the
 * last seq accepted, and who holds each frame. So beyond "no crash, reply
 * decodes", the run checks the reply type, errno, seq and close decision of
 * every message, that a frame is never handed out twice or freed by another
 * connection, that a NACK comes exactly when no aligned free run of the order
 * is left (the buddy coalesces fully), and that the free count adds up. Once
 * a DRAIN was served: HELLO is refused, every ALLOC gets NACK(-1), exactly the connections that
 * owe a DONE get an EVICT (serve_evict, checked after every message) naming
 * the frames they hold, DRAINING counts them, and DONE ends the session. */

#define POOL (1024u + 5u)
#define NCONN 2
#define MAX_CHUNKS 64
#define MAX_RECORDS 12

static const char TOKEN[] = "fuzz-token";

struct input {
	const uint8_t *p;
	size_t left;
};

/* A chunk handed out, for FREEs to aim at. */
struct chunk {
	uint32_t pfn, count;
};

struct harness {
	struct serve *s;
	uint32_t conn[NCONN];
	uint64_t seq[NCONN];       /* the next structured message's seq, less one */
	bool authed[NCONN];
	uint64_t last_seq[NCONN];  /* the last seq serve accepted */
	uint32_t held_by[NCONN];   /* frames held by conn[k] */
	uint32_t held;             /* frames held by anyone */
	uint32_t owner[POOL];      /* conn id holding the frame, 0 when free */
	uint32_t seen[POOL];       /* == stamp: named earlier in the FREE being judged */
	uint32_t stamp;
	bool draining;             /* a DRAIN was served: ALLOCs get NACK(-1) */
	bool told[NCONN];          /* owes a DONE */
	struct chunk chunks[MAX_CHUNKS];
	unsigned nchunks;
};

/* What serve must answer. */
struct expect {
	uint8_t type;   /* PROTO_CHUNK also allows a NACK */
	int32_t error;  /* for ERROR: negative here, positive on the wire */
	bool close;
};

static uint8_t reply_buf[PROTO_MAX_MSG];
static uint8_t pool_mem[(size_t)POOL * 4096]; /* READ/WRITE addresses must land in here */

#define REQUIRE(cond) do { if (!(cond)) abort(); } while (0)

static uint64_t take(struct input *in, unsigned bytes)
{
	uint64_t v = 0;

	for (unsigned i = 0; i < bytes && in->left; i++, in->left--)
		v |= (uint64_t)*in->p++ << (8 * i);
	return v;
}

/* Connection k's frames are back in the pool (BYE or close). */
static void model_release(struct harness *h, unsigned k)
{
	for (uint32_t pfn = 0; h->held_by[k] && pfn < POOL; pfn++)
		if (h->owner[pfn] == h->conn[k])
			h->owner[pfn] = 0;
	h->held -= h->held_by[k];
	h->held_by[k] = 0;
}

static void reconnect(struct harness *h, unsigned k)
{
	model_release(h, k);
	serve_disconnect(h->s, h->conn[k]);
	REQUIRE(serve_connect(h->s, &h->conn[k]) == 0);
	h->seq[k] = 0;
	h->authed[k] = false;
	h->told[k] = false;
	h->last_seq[k] = 0;
}

/* Largest order with an aligned run of free frames in the pool, or -1. */
static int largest_free_order(const struct harness *h)
{
	uint32_t run = 0;
	int largest = -1;

	for (uint32_t pfn = 0; pfn < POOL; pfn++) {
		int order;

		run = h->owner[pfn] ? 0 : run + 1;
		if (!run)
			continue;
		order = 31 - __builtin_clz(run); /* the run ending here holds 2^order frames */
		if (__builtin_ctz(pfn + 1) < order)
			order = __builtin_ctz(pfn + 1); /* and its start must be aligned */
		if (order > BUDDY_MAX_ORDER)
			order = BUDDY_MAX_ORDER;
		if (order > largest)
			largest = order;
	}
	return largest;
}

/* 0 if conn k may free all of req's ranges (each frame once), else the errno
 * serve must give: ERANGE if any range leaves the pool, else EPERM. */
static int free_verdict(struct harness *h, unsigned k, const struct proto_msg *req)
{
	uint32_t n = req->u.free.nranges;

	for (uint32_t i = 0; i < n; i++) {
		struct proto_range r = proto_free_range(req, i);
		if (r.pfn >= POOL || r.count > POOL - r.pfn)
			return -ERANGE;
	}
	h->stamp++;
	for (uint32_t i = 0; i < n; i++) {
		struct proto_range r = proto_free_range(req, i);
		for (uint32_t pfn = r.pfn; pfn < r.pfn + r.count; pfn++) {
			if (h->owner[pfn] != h->conn[k] || h->seen[pfn] == h->stamp)
				return -EPERM;
			h->seen[pfn] = h->stamp;
		}
	}
	return 0;
}

static bool token_ok(const struct proto_msg *req)
{
	return req->u.hello.token_len == sizeof(TOKEN) - 1 &&
	       memcmp(req->u.hello.token, TOKEN, sizeof(TOKEN) - 1) == 0;
}

/* The answer to a decoded request that passed the HELLO and seq checks. */
/* READ/WRITE: the frame count, the pool bounds, ownership of every frame,
 * then (WRITE) the data length, in serve's order. */
static int rw_verdict(struct harness *h, unsigned k, const struct proto_msg *req, size_t bulk_len)
{
	uint32_t pfn = req->u.rw.pfn, n = req->u.rw.count;

	if (req->type == PROTO_READ && bulk_len)
		return -EBADMSG;
	if (n == 0 || n > PROTO_MAX_RW_FRAMES)
		return -EINVAL;
	if (pfn >= POOL || n > POOL - pfn)
		return -ERANGE;
	for (uint32_t i = pfn; i < pfn + n; i++)
		if (h->owner[i] != h->conn[k])
			return -EPERM;
	if (req->type == PROTO_WRITE && bulk_len != (size_t)n * 4096)
		return -EBADMSG;
	return 0;
}

static void predict_request(struct harness *h, unsigned k, const struct proto_msg *req,
			    struct expect *e, size_t bulk_len)
{
	switch (req->type) {
	case PROTO_HELLO:
		if (h->authed[k])
			e->error = -EALREADY;
		else if (!token_ok(req))
			e->error = -EACCES;
		else if (h->draining)
			e->error = -ESHUTDOWN;
		else
			e->type = PROTO_WELCOME;
		break;
	case PROTO_ALLOC:
		if (req->u.alloc.order > BUDDY_MAX_ORDER)
			e->error = -EINVAL;
		else
			e->type = h->draining ? PROTO_NACK : PROTO_CHUNK;
		break;
	case PROTO_DRAIN:
		if (!h->draining)
			for (unsigned j = 0; j < NCONN; j++)
				h->told[j] = h->authed[j] && !(j == k && h->held_by[k] == 0);
		h->draining = true;
		e->type = PROTO_DRAINING;
		break;
	case PROTO_DONE:
		if (!h->draining)
			e->error = -EINVAL;
		else
			e->type = PROTO_GOODBYE, h->told[k] = false;
		break;
	case PROTO_FREE:
		e->error = free_verdict(h, k, req);
		if (!e->error)
			e->type = PROTO_FREED;
		break;
	case PROTO_READ:
	case PROTO_WRITE:
		e->error = rw_verdict(h, k, req, bulk_len);
		if (!e->error)
			e->type = req->type == PROTO_READ ? PROTO_DATA : PROTO_WRITTEN;
		break;
	case PROTO_STATS:
		e->type = PROTO_STATS_REPLY;
		break;
	case PROTO_BYE:
		e->type = PROTO_GOODBYE;
		break;
	default:
		e->error = -EBADMSG;
		break;
	}
}

/* The answer serve must give; updates the connection's modelled state. */
static struct expect predict(struct harness *h, unsigned k, const struct proto_msg *req,
			     int decode_rc, size_t bulk_len)
{
	struct expect e = { .type = PROTO_ERROR };

	if (!req) {
		e.error = decode_rc;
	} else if (!h->authed[k] && req->type != PROTO_HELLO) {
		e.error = -EACCES;
	} else if (req->seq <= h->last_seq[k]) {
		e.error = -EINVAL;
	} else {
		h->last_seq[k] = req->seq;
		predict_request(h, k, req, &e, bulk_len);
	}
	if (e.type == PROTO_WELCOME)
		h->authed[k] = true;
	e.close = (e.type == PROTO_ERROR && !h->authed[k]) || e.type == PROTO_GOODBYE;
	return e;
}

static void apply_chunk(struct harness *h, unsigned k, const struct proto_msg *req,
			const struct proto_msg *r)
{
	uint32_t pfn = r->u.chunk.pfn, n = r->u.chunk.count;

	REQUIRE(n == 1u << req->u.alloc.order && pfn % n == 0 && pfn <= POOL - n);
	for (uint32_t i = pfn; i < pfn + n; i++) {
		REQUIRE(h->owner[i] == 0);
		h->owner[i] = h->conn[k];
	}
	h->held += n;
	h->held_by[k] += n;
	REQUIRE(r->u.chunk.free_frames == POOL - h->held); /* the room after this grant */
	h->chunks[h->nchunks++ % MAX_CHUNKS] = (struct chunk){ pfn, n };
}

/* Ranges were validated by free_verdict. */
static void apply_freed(struct harness *h, unsigned k, const struct proto_msg *req,
			const struct proto_msg *r)
{
	uint32_t total = 0;

	for (uint32_t i = 0; i < req->u.free.nranges; i++) {
		struct proto_range rg = proto_free_range(req, i);
		for (uint32_t pfn = rg.pfn; pfn < rg.pfn + rg.count; pfn++)
			h->owner[pfn] = 0;
		total += rg.count;
	}
	REQUIRE(r->u.freed.frames == total);
	h->held -= total;
	h->held_by[k] -= total;
	REQUIRE(r->u.freed.free_frames == (h->draining ? 0 : POOL - h->held));
}

/* Checks r against e, then records its effect. */
static void check_reply(struct harness *h, unsigned k, const struct proto_msg *req,
			const struct expect *e, const struct proto_msg *r)
{
	if (r->type == PROTO_NACK && e->type == PROTO_NACK) { /* draining: nothing for anyone */
		REQUIRE(r->u.nack.error == ENOSPC && r->u.nack.largest_free_order == -1);
		REQUIRE(r->u.nack.free_frames == 0);
		return;
	}
	if (r->type == PROTO_NACK) {
		REQUIRE(e->type == PROTO_CHUNK && r->u.nack.error == ENOSPC);
		REQUIRE(r->u.nack.largest_free_order == largest_free_order(h));
		REQUIRE(r->u.nack.largest_free_order < (int32_t)req->u.alloc.order);
		REQUIRE(r->u.nack.free_frames == POOL - h->held);
		return;
	}
	REQUIRE(r->type == e->type);
	switch (r->type) {
	case PROTO_ERROR:
		REQUIRE(r->u.error.error == -e->error && r->u.error.text_len > 0);
		break;
	case PROTO_WELCOME:
		REQUIRE(r->u.welcome.pool_frames == POOL && r->u.welcome.max_order == BUDDY_MAX_ORDER);
		REQUIRE(r->u.welcome.free_frames == (h->draining ? 0 : POOL - h->held));
		break;
	case PROTO_CHUNK:
		apply_chunk(h, k, req, r);
		break;
	case PROTO_FREED:
		apply_freed(h, k, req, r);
		break;
	case PROTO_STATS_REPLY:
		REQUIRE(r->u.stats.pool_frames == POOL && r->u.stats.free_frames == POOL - h->held);
		REQUIRE(r->u.stats.client_frames == h->held_by[k] && r->u.stats.clients == NCONN);
		break;
	case PROTO_GOODBYE:
		model_release(h, k);
		break;
	case PROTO_DRAINING: {
		uint32_t clients = 0;
		uint64_t frames = 0;

		for (unsigned j = 0; j < NCONN; j++)
			if (h->told[j])
				clients++, frames += h->held_by[j];
		REQUIRE(r->u.draining.clients == clients && r->u.draining.frames == frames);
		break;
	}
	default:
		break;
	}
}

/* Exactly the connections that owe a DONE are sent an EVICT, naming their frames. */
static void check_evicts(struct harness *h)
{
	uint8_t buf[PROTO_MAX_MSG];
	struct proto_msg m;
	uint64_t frames;
	uint32_t told = 0;
	size_t len;

	for (unsigned k = 0; k < NCONN; k++) {
		int rc = serve_evict(h->s, h->conn[k], 1000, buf, sizeof(buf), &len);

		REQUIRE(rc == (h->told[k] ? 0 : -ENOENT));
		if (rc)
			continue;
		told++;
		REQUIRE(proto_decode(buf, len, &m) == 0 && m.type == PROTO_EVICT && m.seq == 0);
		REQUIRE(m.u.evict.frames == h->held_by[k] && m.u.evict.timeout_ms == 1000);
	}
	REQUIRE(serve_drain_left(h->s, &frames) == (h->draining ? (int)told : -1));
}

/* Hands one message to connection k and checks the reply. req is the message
 * as built, or NULL to decode it here. */
static void deliver(struct harness *h, unsigned k, const uint8_t *msg, size_t len,
		    const struct proto_msg *req)
{
	struct proto_msg decoded, r;
	struct serve_stats st;
	struct serve_bulk sb;
	struct expect e;
	size_t rlen = 0, bulk_len = 0;
	int rc = 0;

	if (!req) {
		rc = proto_decode(msg, len, &decoded);
		req = rc ? NULL : &decoded;
	}
	/* A WRITE usually carries its pages; now and then a wrong amount. */
	if (req && req->type == PROTO_WRITE)
		bulk_len = (size_t)req->u.rw.count * 4096 + (req->seq % 7 == 0 ? 4096 : 0);
	e = predict(h, k, req, rc, bulk_len);
	rc = serve_handle(h->s, h->conn[k], msg, len, bulk_len, reply_buf, sizeof(reply_buf), &rlen, &sb);
	REQUIRE(rc == (e.close ? SERVE_CLOSE : 0));
	REQUIRE(rlen >= PROTO_HDR_LEN && rlen <= PROTO_MAX_MSG);
	REQUIRE(proto_decode(reply_buf, rlen, &r) == 0);
	REQUIRE(r.seq == (req ? req->seq : 0));
	check_reply(h, k, req, &e, &r);
	if (r.type == PROTO_DATA || r.type == PROTO_WRITTEN) {
		REQUIRE(sb.addr == pool_mem + (size_t)req->u.rw.pfn * 4096);
		REQUIRE(sb.len == (size_t)req->u.rw.count * 4096 && r.u.done.count == req->u.rw.count);
		REQUIRE(sb.incoming == (r.type == PROTO_WRITTEN));
	} else {
		REQUIRE(sb.len == 0);
	}
	serve_stats(h->s, &st);
	REQUIRE(st.pool_frames == POOL && st.free_frames == POOL - h->held);
	REQUIRE(st.clients == NCONN);
	if (rc == SERVE_CLOSE)
		reconnect(h, k);
	check_evicts(h);
}

/* A raw message; with fix_header its magic and length fields are made right,
 * so that the decoder's later checks (version, type, body shape) get fuzzed
 * too: the fuzzer rarely finds the magic at the right offset by itself. */
static void send_raw(struct harness *h, unsigned k, struct input *in, bool fix_header)
{
	size_t len = take(in, 2);
	uint8_t *copy;

	if (len > in->left)
		len = in->left;
	/* An exact-size copy, so any read past the message is caught. */
	copy = malloc(len ? len : 1);
	REQUIRE(copy);
	memcpy(copy, in->p, len);
	in->p += len;
	in->left -= len;
	if (fix_header && len >= 8) {
		copy[0] = PROTO_MAGIC & 0xff;
		copy[1] = PROTO_MAGIC >> 8;
		for (unsigned i = 0; i < 4; i++)
			copy[4 + i] = (uint8_t)(len >> (8 * i));
	}
	deliver(h, k, copy, len, NULL);
	free(copy);
}

/* FREE ranges: mostly pieces of chunks handed out (to either connection),
 * sometimes arbitrary. */
static uint32_t make_ranges(struct harness *h, struct input *in, struct proto_range *r)
{
	uint32_t n = 1 + take(in, 1) % 8;

	for (uint32_t i = 0; i < n; i++) {
		uint8_t how = take(in, 1);
		if (how < 200 && h->nchunks) {
			struct chunk c = h->chunks[how % (h->nchunks < MAX_CHUNKS ? h->nchunks : MAX_CHUNKS)];
			uint32_t off = take(in, 2) % c.count;
			r[i].pfn = c.pfn + off;
			r[i].count = 1 + take(in, 2) % (c.count - off);
		} else {
			r[i].pfn = take(in, 2) % (POOL + 8);
			r[i].count = 1 + take(in, 2) % 2048;
		}
	}
	return n;
}

static void send_structured(struct harness *h, unsigned k, struct input *in)
{
	static const uint8_t types[] = { PROTO_HELLO, PROTO_ALLOC, PROTO_ALLOC, PROTO_ALLOC,
					 PROTO_FREE, PROTO_FREE, PROTO_FREE, PROTO_STATS,
					 PROTO_BYE, PROTO_CHUNK, PROTO_GOODBYE, PROTO_DRAIN,
					 PROTO_DONE, PROTO_EVICT };
	struct proto_range ranges[8];
	struct proto_msg m = { .type = types[take(in, 1) % sizeof(types)] };
	uint8_t buf[PROTO_MAX_MSG], mode = take(in, 1);
	size_t len;

	/* Mostly the next seq; sometimes a repeat or one from the input. */
	m.seq = mode < 200 ? ++h->seq[k] : mode < 230 ? h->seq[k] : take(in, 1);
	switch (m.type) {
	case PROTO_HELLO:
		m.u.hello.client_id = take(in, 8);
		m.u.hello.token = (const uint8_t *)TOKEN;
		m.u.hello.token_len = take(in, 1) & 1 ? sizeof(TOKEN) - 1 : sizeof(TOKEN) - 2;
		break;
	case PROTO_ALLOC:
		m.u.alloc.order = take(in, 1) % (BUDDY_MAX_ORDER + 3);
		break;
	case PROTO_FREE:
		m.u.free.nranges = make_ranges(h, in, ranges);
		m.u.free.ranges = ranges;
		break;
	case PROTO_CHUNK:
		m.u.chunk.pfn = take(in, 4);
		m.u.chunk.count = take(in, 4);
		break;
	case PROTO_DONE:
		m.u.finished.moved = take(in, 8);
		break;
	default:
		break;
	}
	REQUIRE(proto_encode(&m, buf, sizeof(buf), &len) == 0);
	deliver(h, k, buf, len, &m);
}

static void send_stats(struct harness *h, unsigned k)
{
	struct proto_msg m = { .type = PROTO_STATS, .seq = ++h->seq[k] };
	uint8_t buf[PROTO_HDR_LEN];
	size_t len;

	REQUIRE(proto_encode(&m, buf, sizeof(buf), &len) == 0);
	deliver(h, k, buf, len, &m);
}

/* The same HELLO (seq 1) starts every run; it is encoded once. */
static void login(struct harness *h, unsigned k)
{
	static const struct proto_msg m = {
		.type = PROTO_HELLO, .seq = 1,
		.u.hello = { 0xf022, sizeof(TOKEN) - 1, (const uint8_t *)TOKEN },
	};
	static uint8_t buf[PROTO_HDR_LEN + 10 + sizeof(TOKEN)];
	static size_t len;

	if (!len)
		REQUIRE(proto_encode(&m, buf, sizeof(buf), &len) == 0);
	h->seq[k] = 1;
	deliver(h, k, buf, len, &m);
	REQUIRE(h->authed[k]);
}

static struct harness *setup(const struct auth_token *token)
{
	static const uint8_t rkey[] = { 0xde, 0xad, 0xbe, 0xef };
	struct serve_config cfg = {
		.pool_frames = POOL, .nid = 3, .credits = 16, .max_clients = NCONN,
		.base = 0x10000, .pool = pool_mem, .rkey = rkey, .rkey_len = sizeof(rkey), .token = token,
	};
	struct harness *h = calloc(1, sizeof(*h));

	REQUIRE(h && serve_create(&cfg, &h->s) == 0);
	for (unsigned k = 0; k < NCONN; k++)
		REQUIRE(serve_connect(h->s, &h->conn[k]) == 0);
	return h;
}

/* Closing every connection must return every frame. */
static void teardown(struct harness *h)
{
	struct serve_stats st;

	for (unsigned k = 0; k < NCONN; k++)
		serve_disconnect(h->s, h->conn[k]);
	serve_stats(h->s, &st);
	REQUIRE(st.free_frames == POOL && st.clients == 0);
	serve_destroy(h->s);
	free(h);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct auth_token token = { .len = sizeof(TOKEN) - 1 };
	struct input in = { data, size };
	struct harness *h;

	log_threshold = -1; /* every refusal logs; millions of lines help nobody */
	memcpy(token.bytes, TOKEN, token.len);
	h = setup(&token);
	login(h, 0);
	for (unsigned n = 0; n < MAX_RECORDS && in.left; n++) {
		uint8_t c = take(&in, 1);
		unsigned k = c & 1;

		switch ((c >> 1) % 8) {
		case 0: send_raw(h, k, &in, false); break;
		case 1: case 2: send_raw(h, k, &in, true); break;
		case 3: case 4: case 5: send_structured(h, k, &in); break;
		case 6: reconnect(h, k); break;
		default: send_stats(h, k); break;
		}
	}
	teardown(h);
	return 0;
}

/* test_proto: wire codec round trips, pinned byte vectors, malformed input and limits, random-input robustness. */
#include "proto.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testing.h"

static uint8_t token[PROTO_MAX_TOKEN], rkey[PROTO_MAX_RKEY + 1];
static char text[PROTO_MAX_TEXT + 1];
static struct proto_range ranges[PROTO_FREE_MAX_RANGES + 1];
static struct proto_usage usage[PROTO_STATS_MAX_CLIENTS + 1];

static void fill_inputs(void)
{
	for (size_t i = 0; i < sizeof(token); i++)
		token[i] = (uint8_t)(i * 7 + 1);
	for (size_t i = 0; i < sizeof(rkey); i++)
		rkey[i] = (uint8_t)(i * 13 + 5);
	for (size_t i = 0; i < sizeof(text); i++)
		text[i] = (char)('a' + i % 26);
	for (uint32_t i = 0; i < PROTO_FREE_MAX_RANGES + 1; i++)
		ranges[i] = (struct proto_range){ i * 1024, i % 1023 + 1 };
	for (uint32_t i = 0; i < PROTO_STATS_MAX_CLIENTS + 1; i++)
		usage[i] = (struct proto_usage){ 0x1000000000000001ull * (i + 1), (uint64_t)i << 33 };
}

#define MSG(t, s, ...) (struct proto_msg){ .type = (t), .seq = (s), .u = { __VA_ARGS__ } }

/* One or more messages of every type, with limits at both ends. */
static int build_samples(struct proto_msg *s)
{
	static const struct proto_range top = { UINT32_MAX - 1, 1 };
	int n = 0;

	s[n++] = MSG(PROTO_HELLO, 0, .hello = { 0, 0, NULL });
	s[n++] = MSG(PROTO_HELLO, UINT64_MAX, .hello = { UINT64_MAX, PROTO_MAX_TOKEN, token });
	s[n++] = MSG(PROTO_WELCOME, 1, .welcome = { 0, 0, 0, 0, 0, 0, NULL, 0 });
	s[n++] = MSG(PROTO_WELCOME, 2, .welcome = { UINT16_MAX, 10, UINT32_MAX, UINT64_MAX,
			0xfedcba9876543210u, PROTO_MAX_RKEY, rkey, UINT64_MAX });
	s[n++] = MSG(PROTO_ALLOC, 3, .alloc = { 0 });
	s[n++] = MSG(PROTO_ALLOC, 4, .alloc = { UINT32_MAX }); /* range is the server's check */
	s[n++] = MSG(PROTO_CHUNK, 5, .chunk = { UINT32_MAX, 1, UINT64_MAX });
	s[n++] = MSG(PROTO_NACK, 6, .nack = { ENOSPC, -1, 0 });
	s[n++] = MSG(PROTO_NACK, 7, .nack = { INT32_MAX, 10, UINT64_MAX });
	s[n++] = MSG(PROTO_FREE, 8, .free = { 1, &top, NULL });
	s[n++] = MSG(PROTO_FREE, 9, .free = { PROTO_FREE_MAX_RANGES, ranges, NULL });
	s[n++] = MSG(PROTO_FREED, 10, .freed = { 123456, 1ull << 40 });
	s[n++] = MSG(PROTO_STATS, 11, .alloc = { 0 });
	s[n++] = MSG(PROTO_STATS_REPLY, 12, .stats = { 1, 2, 3, UINT64_MAX, 5, 6, 7, -1, 0, 0, 0, 0, NULL, NULL });
	s[n++] = MSG(PROTO_STATS_REPLY, 12, .stats = { 1, 2, 3, 4, 5, 6, 7, 8, UINT64_MAX, 1234, PROTO_STATS_DRAINING,
						       PROTO_STATS_MAX_CLIENTS, usage, NULL });
	s[n++] = MSG(PROTO_BYE, 13, .alloc = { 0 });
	s[n++] = MSG(PROTO_GOODBYE, 14, .alloc = { 0 });
	s[n++] = MSG(PROTO_ERROR, 15, .error = { EPERM, 0, NULL });
	s[n++] = MSG(PROTO_ERROR, 16, .error = { EACCES, PROTO_MAX_TEXT, text });
	s[n++] = MSG(PROTO_READ, 17, .rw = { UINT32_MAX, PROTO_MAX_RW_FRAMES });
	s[n++] = MSG(PROTO_DATA, 18, .done = { 7 });
	s[n++] = MSG(PROTO_WRITE, 19, .rw = { 0, 1 });
	s[n++] = MSG(PROTO_WRITTEN, 20, .done = { UINT32_MAX });
	s[n++] = MSG(PROTO_DRAIN, 21, .alloc = { 0 });
	s[n++] = MSG(PROTO_DRAINING, 22, .draining = { UINT32_MAX, UINT64_MAX });
	s[n++] = MSG(PROTO_EVICT, 0, .evict = { 0, 0 });
	s[n++] = MSG(PROTO_EVICT, 0, .evict = { UINT64_MAX, UINT32_MAX });
	s[n++] = MSG(PROTO_DONE, 23, .finished = { UINT64_MAX });
	s[n++] = MSG(PROTO_SHRINK, 0, .shrink = { 0, 1, 0 });
	s[n++] = MSG(PROTO_SHRINK, 0, .shrink = { UINT32_MAX - 1024, 1024, UINT32_MAX });
	return n;
}

static bool bytes_eq(const void *a, const void *b, size_t n)
{
	return n == 0 || memcmp(a, b, n) == 0;
}

static bool free_eq(const struct proto_msg *a, const struct proto_msg *b)
{
	if (a->u.free.nranges != b->u.free.nranges)
		return false;
	for (uint32_t i = 0; i < a->u.free.nranges; i++) {
		struct proto_range x = proto_free_range(a, i), y = proto_free_range(b, i);
		if (x.pfn != y.pfn || x.count != y.count)
			return false;
	}
	return true;
}

static bool usage_eq(const struct proto_msg *a, const struct proto_msg *b)
{
	if (a->u.stats.nusage != b->u.stats.nusage)
		return false;
	for (uint32_t i = 0; i < a->u.stats.nusage; i++) {
		struct proto_usage x = proto_stats_usage(a, i), y = proto_stats_usage(b, i);
		if (x.client_id != y.client_id || x.frames != y.frames)
			return false;
	}
	return true;
}

#define FEQ(f) (a->u.f == b->u.f)

static bool msg_eq(const struct proto_msg *a, const struct proto_msg *b)
{
	if (a->type != b->type || a->seq != b->seq)
		return false;
	switch (a->type) {
	case PROTO_HELLO:
		return FEQ(hello.client_id) && FEQ(hello.token_len) &&
		       bytes_eq(a->u.hello.token, b->u.hello.token, a->u.hello.token_len);
	case PROTO_WELCOME:
		return FEQ(welcome.nid) && FEQ(welcome.max_order) && FEQ(welcome.credits) &&
		       FEQ(welcome.pool_frames) && FEQ(welcome.base) && FEQ(welcome.rkey_len) &&
		       FEQ(welcome.free_frames) &&
		       bytes_eq(a->u.welcome.rkey, b->u.welcome.rkey, a->u.welcome.rkey_len);
	case PROTO_ALLOC: return FEQ(alloc.order);
	case PROTO_CHUNK: return FEQ(chunk.pfn) && FEQ(chunk.count) && FEQ(chunk.free_frames);
	case PROTO_READ: case PROTO_WRITE: return FEQ(rw.pfn) && FEQ(rw.count);
	case PROTO_DATA: case PROTO_WRITTEN: return FEQ(done.count);
	case PROTO_NACK: return FEQ(nack.error) && FEQ(nack.largest_free_order) && FEQ(nack.free_frames);
	case PROTO_FREE: return free_eq(a, b);
	case PROTO_FREED: return FEQ(freed.frames) && FEQ(freed.free_frames);
	case PROTO_DRAINING: return FEQ(draining.clients) && FEQ(draining.frames);
	case PROTO_EVICT: return FEQ(evict.frames) && FEQ(evict.timeout_ms);
	case PROTO_DONE: return FEQ(finished.moved);
	case PROTO_SHRINK: return FEQ(shrink.pfn) && FEQ(shrink.count) && FEQ(shrink.timeout_ms);
	case PROTO_STATS_REPLY:
		return FEQ(stats.pool_frames) && FEQ(stats.free_frames) &&
		       FEQ(stats.client_frames) && FEQ(stats.allocs) && FEQ(stats.nacks) &&
		       FEQ(stats.frees) && FEQ(stats.clients) && FEQ(stats.largest_free_order) &&
		       FEQ(stats.requests) && FEQ(stats.uptime_ms) && FEQ(stats.flags) && usage_eq(a, b);
	case PROTO_ERROR:
		return FEQ(error.error) && FEQ(error.text_len) &&
		       bytes_eq(a->u.error.text, b->u.error.text, a->u.error.text_len);
	default:
		return true;
	}
}

static uint8_t buf[PROTO_MAX_MSG + 64], buf2[PROTO_MAX_MSG + 64];

static size_t encode_ok(const struct proto_msg *m, uint8_t *out)
{
	size_t len = 0;
	CHECK(proto_encode(m, out, PROTO_MAX_MSG, &len) == 0);
	CHECK(len >= PROTO_HDR_LEN && len <= PROTO_MAX_MSG);
	return len;
}

/* Decode must fail with want and leave out untouched. */
static void decode_fails(const void *b, size_t len, int want)
{
	struct proto_msg out, before;

	memset(&out, 0xa5, sizeof(out));
	before = out;
	CHECK(proto_decode(b, len, &out) == want);
	CHECK(memcmp(&out, &before, sizeof(out)) == 0);
}

static void put_le(uint8_t *p, uint64_t v, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static void set_length(uint8_t *b, size_t len)
{
	put_le(b + 4, len, 4);
}

static void test_roundtrip(const struct proto_msg *s, int n)
{
	for (int i = 0; i < n; i++) {
		struct proto_msg d;
		size_t len = encode_ok(&s[i], buf), len2;

		CHECK(proto_decode(buf, len, &d) == 0);
		CHECK(msg_eq(&s[i], &d));
		len2 = encode_ok(&d, buf2);
		CHECK(len2 == len && memcmp(buf, buf2, len) == 0);
		/* Unaligned input. */
		memmove(buf2 + 1, buf, len);
		CHECK(proto_decode(buf2 + 1, len, &d) == 0);
		CHECK(msg_eq(&s[i], &d));
		CHECK(s[i].type != PROTO_HELLO || s[i].u.hello.token_len == 0 ||
		      d.u.hello.token == buf2 + 1 + PROTO_HDR_LEN + 10);
	}
}

static void check_vector(const struct proto_msg *m, const uint8_t *want, size_t n)
{
	struct proto_msg d;
	size_t len = encode_ok(m, buf);

	CHECK(len == n && memcmp(buf, want, n) == 0);
	CHECK(proto_decode(want, n, &d) == 0);
	CHECK(msg_eq(m, &d));
}

static void test_vectors(void)
{
	static const uint8_t hello[] = {
		0x43, 0x58, 0x04, 0x01, 0x1d, 0x00, 0x00, 0x00, /* magic, version, HELLO, length 29 */
		0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11, /* seq */
		0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01, /* client_id */
		0x03, 0x00, 'a', 'b', 'c',                      /* token_len, token */
	};
	static const uint8_t free_[] = {
		0x43, 0x58, 0x04, 0x06, 0x24, 0x00, 0x00, 0x00, /* FREE, length 36 */
		0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* seq 2 */
		0x02, 0x00, 0x00, 0x00,                         /* nranges */
		0x10, 0x00, 0x00, 0x00, 0x04, 0x00, 0x00, 0x00, /* pfn 0x10, count 4 */
		0xdd, 0xcc, 0xbb, 0xaa, 0x00, 0x01, 0x00, 0x00, /* pfn 0xaabbccdd, count 256 */
	};
	static const uint8_t nack[] = {
		0x43, 0x58, 0x04, 0x05, 0x20, 0x00, 0x00, 0x00, /* NACK, length 32 */
		0xff, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x80, /* seq */
		0x1c, 0x00, 0x00, 0x00, 0xff, 0xff, 0xff, 0xff, /* ENOSPC (28), -1 */
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* free_frames 0 */
	};
	static const uint8_t chunk[] = {
		0x43, 0x58, 0x04, 0x04, 0x20, 0x00, 0x00, 0x00, /* CHUNK, length 32 */
		0x05, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* seq 5 */
		0x00, 0x04, 0x00, 0x00, 0x00, 0x04, 0x00, 0x00, /* pfn 1024, count 1024 */
		0x00, 0x3c, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* free_frames 15360 */
	};
	static const uint8_t welcome[] = {
		0x43, 0x58, 0x04, 0x02, 0x36, 0x00, 0x00, 0x00, /* WELCOME, length 54 */
		0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* seq 1 */
		0x07, 0x00, 0x0a, 0x00, 0x10, 0x00, 0x00, 0x00, /* nid 7, max_order 10, credits 16 */
		0x00, 0x40, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* pool_frames 16384 */
		0x00, 0x00, 0x00, 0x00, 0x00, 0x7f, 0x00, 0x00, /* base 0x7f0000000000 */
		0x00, 0x40, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* free_frames 16384 */
		0x02, 0x00, 0x00, 0x00, 0xaa, 0xbb,             /* rkey_len 2, rkey */
	};
	static const uint8_t two[] = { 0xaa, 0xbb };
	static const uint8_t stats_reply[] = {
		0x43, 0x58, 0x04, 0x09, 0x70, 0x00, 0x00, 0x00, /* STATS_REPLY, length 112 */
		0x03, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* seq 3 */
		0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* pool_frames 256 */
		0x80, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* free_frames 128 */
		0x10, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* client_frames 16 */
		0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* allocs 2 */
		0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* nacks 1 */
		0x04, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* frees 4 */
		0x02, 0x00, 0x00, 0x00, 0x07, 0x00, 0x00, 0x00, /* clients 2, largest_free_order 7 */
		0x39, 0x30, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* requests 12345 */
		0xe8, 0x03, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* uptime_ms 1000 */
		0x01, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, /* flags DRAINING, nusage 1 */
		0xef, 0xbe, 0xad, 0xde, 0x00, 0x00, 0x00, 0x00, /* client_id 0xdeadbeef */
		0x70, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* frames 112 */
	};
	static const struct proto_usage u1 = { 0xdeadbeef, 112 };
	static const uint8_t evict[] = {
		0x43, 0x58, 0x04, 0x13, 0x1c, 0x00, 0x00, 0x00, /* EVICT (19), length 28 */
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* seq 0: not a reply */
		0x00, 0x10, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* frames 4096 */
		0x30, 0x75, 0x00, 0x00,                         /* timeout 30000 ms */
	};
	static const uint8_t shrink[] = {
		0x43, 0x58, 0x04, 0x15, 0x1c, 0x00, 0x00, 0x00, /* SHRINK (21), length 28 */
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* seq 0: not a reply */
		0x00, 0x04, 0x00, 0x00, 0x00, 0x08, 0x00, 0x00, /* pfn 1024, count 2048 */
		0x10, 0x27, 0x00, 0x00,                         /* timeout 10000 ms */
	};
	struct proto_range r[2] = { { 0x10, 4 }, { 0xaabbccdd, 256 } };

	check_vector(&MSG(PROTO_HELLO, 0x1122334455667788u,
			  .hello = { 0x0102030405060708u, 3, (const uint8_t *)"abc" }),
		     hello, sizeof(hello));
	check_vector(&MSG(PROTO_FREE, 2, .free = { 2, r, NULL }), free_, sizeof(free_));
	check_vector(&MSG(PROTO_STATS_REPLY, 3, .stats = { 256, 128, 16, 2, 1, 4, 2, 7, 12345, 1000,
							   PROTO_STATS_DRAINING, 1, &u1, NULL }),
		     stats_reply, sizeof(stats_reply));
	CHECK(ENOSPC == 28);
	check_vector(&MSG(PROTO_NACK, 0x80000000000000ffu, .nack = { ENOSPC, -1, 0 }),
		     nack, sizeof(nack));
	check_vector(&MSG(PROTO_EVICT, 0, .evict = { 4096, 30000 }), evict, sizeof(evict));
	check_vector(&MSG(PROTO_SHRINK, 0, .shrink = { 1024, 2048, 10000 }), shrink, sizeof(shrink));
	check_vector(&MSG(PROTO_CHUNK, 5, .chunk = { 1024, 1024, 15360 }), chunk, sizeof(chunk));
	check_vector(&MSG(PROTO_WELCOME, 1, .welcome = { 7, 10, 16, 16384, 0x7f0000000000u, 2, two, 16384 }),
		     welcome, sizeof(welcome));
}

static void test_truncation_and_trailing(const struct proto_msg *s, int n)
{
	for (int i = 0; i < n; i++) {
		size_t len = encode_ok(&s[i], buf);

		for (size_t k = 0; k < len; k++) {
			decode_fails(buf, k, -EBADMSG); /* length field now disagrees */
			if (k < PROTO_HDR_LEN)
				continue;
			memcpy(buf2, buf, k);
			set_length(buf2, k);             /* consistent header, short body */
			decode_fails(buf2, k, -EBADMSG);
		}
		buf[len] = 0;
		decode_fails(buf, len + 1, -EBADMSG);
		set_length(buf, len + 1);
		decode_fails(buf, len + 1, -EBADMSG);
	}
}

static void test_header(void)
{
	struct proto_msg m = MSG(PROTO_CHUNK, 1, .chunk = { 2, 3, 4 });
	size_t len = encode_ok(&m, buf);

	memcpy(buf2, buf, len); buf2[0] ^= 1;
	decode_fails(buf2, len, -EBADMSG);
	memcpy(buf2, buf, len); buf2[1] ^= 0x80;
	decode_fails(buf2, len, -EBADMSG);
	memcpy(buf2, buf, len); buf2[0] = 0; buf2[2] = PROTO_VERSION + 1; /* magic checked before version */
	decode_fails(buf2, len, -EBADMSG);
	for (unsigned v = 0; v < 256; v += 255) {
		memcpy(buf2, buf, len); buf2[2] = (uint8_t)v;
		decode_fails(buf2, len, -EPROTONOSUPPORT);
	}
	memcpy(buf2, buf, len); buf2[2] = PROTO_VERSION + 1; set_length(buf2, 9999); /* version before length */
	decode_fails(buf2, len, -EPROTONOSUPPORT);
	memcpy(buf2, buf, len); set_length(buf2, len + 1);
	decode_fails(buf2, len, -EBADMSG);
	set_length(buf2, len - 1);
	decode_fails(buf2, len, -EBADMSG);
	set_length(buf2, UINT32_MAX);
	decode_fails(buf2, len, -EBADMSG);
	for (unsigned t = 0; t < 256; t++) {
		if (t >= PROTO_HELLO && t <= PROTO_TYPE_MAX)
			continue;
		memcpy(buf2, buf, len); buf2[3] = (uint8_t)t;
		decode_fails(buf2, len, -ENOMSG);
	}
	/* Over PROTO_MAX_MSG with a consistent length field. */
	memset(buf2, 0, sizeof(buf2));
	memcpy(buf2, buf, PROTO_HDR_LEN);
	set_length(buf2, PROTO_MAX_MSG + 1);
	decode_fails(buf2, PROTO_MAX_MSG + 1, -EBADMSG);
	decode_fails(NULL, 0, -EBADMSG);
}

static void test_encode_limits(void)
{
	struct proto_range bad0 = { 5, 0 }, wrap = { UINT32_MAX, 1 }, wrap2 = { 2, UINT32_MAX - 1 };
	struct proto_range two[2] = { { 1, 1 }, { 7, 0 } };
	const struct proto_msg bad[] = {
		MSG(PROTO_HELLO, 0, .hello = { 1, PROTO_MAX_TOKEN + 1, token }),
		MSG(PROTO_HELLO, 0, .hello = { 1, UINT16_MAX, token }),
		MSG(PROTO_WELCOME, 0, .welcome = { .rkey_len = PROTO_MAX_RKEY + 1, .rkey = rkey }),
		MSG(PROTO_ERROR, 0, .error = { EIO, PROTO_MAX_TEXT + 1, text }),
		MSG(PROTO_FREE, 0, .free = { 0, ranges, NULL }),
		MSG(PROTO_FREE, 0, .free = { PROTO_FREE_MAX_RANGES + 1, ranges, NULL }),
		MSG(PROTO_FREE, 0, .free = { 1, &bad0, NULL }),
		MSG(PROTO_FREE, 0, .free = { 1, &wrap, NULL }),
		MSG(PROTO_FREE, 0, .free = { 1, &wrap2, NULL }),
		MSG(PROTO_FREE, 0, .free = { 2, two, NULL }),
		MSG(PROTO_FREE, 0, .free = { 1, NULL, NULL }),
		MSG(PROTO_STATS_REPLY, 0, .stats = { .nusage = PROTO_STATS_MAX_CLIENTS + 1, .usage = usage }),
		MSG(PROTO_SHRINK, 0, .shrink = { 5, 0, 100 }),
		MSG(PROTO_SHRINK, 0, .shrink = { UINT32_MAX, 1, 100 }),
		MSG(0, 0, .alloc = { 0 }),
		MSG(PROTO_TYPE_MAX + 1, 0, .alloc = { 0 }),
	};
	struct proto_msg m = MSG(PROTO_WELCOME, 3, .welcome = { .rkey_len = 100, .rkey = rkey });
	size_t len = 777, need;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		CHECK(proto_encode(&bad[i], buf, sizeof(buf), &len) == -EINVAL);
		CHECK(len == 777);
	}
	need = encode_ok(&m, buf2);
	CHECK(need == PROTO_HDR_LEN + 36 + 100);
	memset(buf, 0x5a, sizeof(buf));
	CHECK(proto_encode(&m, buf, need - 1, &len) == -EMSGSIZE);
	CHECK(proto_encode(&m, NULL, 0, &len) == -EMSGSIZE);
	CHECK(len == 777 && buf[0] == 0x5a && buf[need - 2] == 0x5a); /* nothing written */
	CHECK(proto_encode(&m, buf, need, &len) == 0 && len == need);
}

/* Rewrites the count field of an encoded message at body offset off
 * (width bytes) to count, appending extra bytes of body, and fixes the length. */
static size_t patch_count(size_t len, unsigned off, unsigned width, uint32_t count, size_t extra)
{
	put_le(buf + PROTO_HDR_LEN + off, count, width);
	memset(buf + len, 0x11, extra);
	set_length(buf, len + extra);
	return len + extra;
}

static void test_decode_limits(void)
{
	struct proto_msg m, d;
	size_t len;

	m = MSG(PROTO_HELLO, 1, .hello = { 1, PROTO_MAX_TOKEN, token });
	len = patch_count(encode_ok(&m, buf), 8, 2, PROTO_MAX_TOKEN + 1, 1);
	decode_fails(buf, len, -EBADMSG);
	m = MSG(PROTO_WELCOME, 1, .welcome = { .rkey_len = PROTO_MAX_RKEY, .rkey = rkey });
	len = patch_count(encode_ok(&m, buf), 32, 4, PROTO_MAX_RKEY + 1, 1);
	decode_fails(buf, len, -EBADMSG);
	m = MSG(PROTO_ERROR, 1, .error = { EIO, PROTO_MAX_TEXT, text });
	len = patch_count(encode_ok(&m, buf), 4, 2, PROTO_MAX_TEXT + 1, 1);
	decode_fails(buf, len, -EBADMSG);
	m = MSG(PROTO_FREE, 1, .free = { PROTO_FREE_MAX_RANGES, ranges, NULL });
	len = encode_ok(&m, buf);
	memcpy(buf + len, buf + len - 8, 8); /* a well-formed 1001st range */
	len = patch_count(len, 0, 4, PROTO_FREE_MAX_RANGES + 1, 8);
	CHECK(len <= PROTO_MAX_MSG);
	decode_fails(buf, len, -EBADMSG);
	len = patch_count(PROTO_HDR_LEN + 4, 0, 4, 0, 0); /* nranges 0, nothing after */
	decode_fails(buf, len, -EBADMSG);
	m = MSG(PROTO_STATS_REPLY, 1, .stats = { .nusage = PROTO_STATS_MAX_CLIENTS, .usage = usage });
	len = encode_ok(&m, buf);
	CHECK(len == PROTO_HDR_LEN + 80 + PROTO_STATS_MAX_CLIENTS * 16);
	CHECK(proto_decode(buf, len, &d) == 0 && d.u.stats.usage == NULL);
	CHECK(proto_stats_usage(&d, 5).client_id == usage[5].client_id && proto_stats_usage(&d, 5).frames == usage[5].frames);
	CHECK(proto_stats_usage(&d, PROTO_STATS_MAX_CLIENTS).frames == 0); /* out of range: empty */
	decode_fails(buf, patch_count(len, 76, 4, PROTO_STATS_MAX_CLIENTS + 1, 16), -EBADMSG);
	decode_fails(buf, patch_count(len, 76, 4, PROTO_STATS_MAX_CLIENTS - 1, 0), -EBADMSG); /* rows beyond nusage */
	m = MSG(PROTO_SHRINK, 0, .shrink = { 8, 8, 1 });
	len = encode_ok(&m, buf);
	decode_fails(buf, patch_count(len, 4, 4, 0, 0), -EBADMSG);          /* an empty range */
	len = encode_ok(&m, buf);
	put_le(buf + PROTO_HDR_LEN, UINT32_MAX - 3, 4);                    /* a range past u32 PFN space */
	decode_fails(buf, len, -EBADMSG);

	/* Bad ranges inside an otherwise well-formed FREE. */
	m = MSG(PROTO_FREE, 1, .free = { 3, ranges, NULL });
	len = encode_ok(&m, buf);
	CHECK(proto_decode(buf, len, &d) == 0 && d.u.free.ranges == NULL);
	put_le(buf + PROTO_HDR_LEN + 4 + 2 * 8 + 4, 0, 4); /* range 2 count 0 */
	decode_fails(buf, len, -EBADMSG);
	put_le(buf + PROTO_HDR_LEN + 4 + 2 * 8, UINT32_MAX - 4, 4);
	put_le(buf + PROTO_HDR_LEN + 4 + 2 * 8 + 4, 5, 4); /* ends at 2^32 */
	decode_fails(buf, len, -EBADMSG);
	put_le(buf + PROTO_HDR_LEN + 4 + 2 * 8 + 4, 4, 4); /* ends at 2^32 - 1: fine */
	CHECK(proto_decode(buf, len, &d) == 0);
	CHECK(proto_free_range(&d, 2).pfn == UINT32_MAX - 4 && proto_free_range(&d, 2).count == 4);
	CHECK(proto_free_range(&d, 3).count == 0); /* out of range: empty, no bad read */
}

static void test_names(void)
{
	static const char *const want[] = { "UNKNOWN", "HELLO", "WELCOME", "ALLOC", "CHUNK",
		"NACK", "FREE", "FREED", "STATS", "STATS_REPLY", "BYE", "GOODBYE", "ERROR", "READ",
		"DATA", "WRITE", "WRITTEN", "DRAIN", "DRAINING", "EVICT", "DONE", "SHRINK", "UNKNOWN" };

	for (unsigned t = 0; t < sizeof(want) / sizeof(want[0]); t++)
		CHECK(strcmp(proto_type_name(t), want[t]) == 0);
	CHECK(strcmp(proto_type_name(~0u), "UNKNOWN") == 0);
}

static uint64_t rng_state = 0x9e3779b97f4a7c15u;

static uint32_t rnd(uint32_t n)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return (uint32_t)((rng_state >> 11) % n);
}

/* Either random bytes under a plausible header, or a small valid message with
 * a few bytes changed and possibly a resized body. */
static size_t random_input(const uint8_t *seed, size_t seed_len)
{
	size_t len;

	if (rnd(4) == 0) {
		len = rnd(72);
		for (size_t i = 0; i < len; i++)
			buf[i] = (uint8_t)rnd(256);
		if (len >= PROTO_HDR_LEN && rnd(2)) {
			put_le(buf, PROTO_MAGIC, 2);
			buf[2] = PROTO_VERSION;
			buf[3] = (uint8_t)rnd(PROTO_TYPE_MAX + 2);
			set_length(buf, len);
		}
		return len;
	}
	len = seed_len;
	memcpy(buf, seed, len);
	for (unsigned k = rnd(4); k > 0; k--)
		buf[rnd((uint32_t)len)] = (uint8_t)rnd(256);
	if (rnd(4) == 0) {
		size_t nl = PROTO_HDR_LEN + rnd((uint32_t)(len - PROTO_HDR_LEN + 16));
		for (size_t i = len; i < nl; i++)
			buf[i] = (uint8_t)rnd(256);
		len = nl;
	}
	if (rnd(8))
		set_length(buf, len);
	return len;
}

static void test_random(void)
{
	struct proto_range r[3] = { { 0, 1 }, { 100, 28 }, { 1 << 20, 512 } };
	const struct proto_msg seeds[] = {
		MSG(PROTO_HELLO, 1, .hello = { 42, 8, token }),
		MSG(PROTO_WELCOME, 2, .welcome = { 1, 10, 64, 1 << 20, 1 << 30, 12, rkey, 1 << 19 }),
		MSG(PROTO_ALLOC, 3, .alloc = { 4 }),
		MSG(PROTO_CHUNK, 4, .chunk = { 16, 16, 1000 }),
		MSG(PROTO_NACK, 5, .nack = { ENOSPC, 3, 7 }),
		MSG(PROTO_FREE, 6, .free = { 3, r, NULL }),
		MSG(PROTO_FREED, 7, .freed = { 9, 99 }),
		MSG(PROTO_STATS, 8, .alloc = { 0 }),
		MSG(PROTO_STATS_REPLY, 9, .stats = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 0, NULL, NULL }),
		MSG(PROTO_BYE, 10, .alloc = { 0 }),
		MSG(PROTO_GOODBYE, 11, .alloc = { 0 }),
		MSG(PROTO_ERROR, 12, .error = { EIO, 5, "oops!" }),
	};
	enum { NSEEDS = sizeof(seeds) / sizeof(seeds[0]) };
	uint8_t enc[NSEEDS][128];
	size_t enc_len[NSEEDS], ok = 0;

	for (int i = 0; i < NSEEDS; i++)
		enc_len[i] = encode_ok(&seeds[i], enc[i]);
	for (int it = 0; it < 300000; it++) {
		int s = (int)rnd(NSEEDS);
		size_t len = random_input(enc[s], enc_len[s]), len2;
		struct proto_msg d;
		int rc = proto_decode(buf, len, &d);

		CHECK(rc == 0 || rc == -EBADMSG || rc == -EPROTONOSUPPORT || rc == -ENOMSG);
		if (rc)
			continue;
		ok++;
		CHECK(proto_encode(&d, buf2, sizeof(buf2), &len2) == 0);
		CHECK(len2 == len && memcmp(buf, buf2, len) == 0);
	}
	CHECK(ok > 10000); /* the mutations do reach the success path */
}

int main(void)
{
	struct proto_msg samples[32];
	int n;

	fill_inputs();
	n = build_samples(samples);
	test_roundtrip(samples, n);
	test_vectors();
	test_truncation_and_trailing(samples, n);
	test_header();
	test_encode_limits();
	test_decode_limits();
	test_names();
	test_random();
	return 0;
}

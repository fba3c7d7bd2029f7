/* Each message layout is written once, as a "walk" over its fields that either
 * writes them (encode) or reads them (decode), so the two directions cannot
 * disagree. Message shape (lengths and limits) is checked up front from a
 * per-type table, before any body byte is written or trusted. */
#include "proto.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>

/* A bounds-checked byte cursor. Exactly one of wr/rd is set. Any access past
 * end makes it bad, after which it does nothing. */
struct cur {
	uint8_t *wr;
	const uint8_t *rd;
	size_t end, off;
	bool bad;
};

static bool room(struct cur *c, size_t n)
{
	if (c->bad || n > c->end - c->off)
		c->bad = true;
	return !c->bad;
}

/* Moves an n-byte little-endian integer between *v and the cursor. */
static void xfer_le(struct cur *c, uint64_t *v, unsigned n)
{
	uint64_t x = 0;

	if (!room(c, n))
		return;
	for (unsigned i = 0; i < n; i++) {
		if (c->wr)
			c->wr[c->off + i] = (uint8_t)(*v >> (8 * i));
		else
			x |= (uint64_t)c->rd[c->off + i] << (8 * i);
	}
	if (!c->wr)
		*v = x;
	c->off += n;
}

static void f_u8(struct cur *c, uint8_t *v)
{
	uint64_t x = *v;
	xfer_le(c, &x, 1);
	*v = (uint8_t)x;
}

static void f_u16(struct cur *c, uint16_t *v)
{
	uint64_t x = *v;
	xfer_le(c, &x, 2);
	*v = (uint16_t)x;
}

static void f_u32(struct cur *c, uint32_t *v)
{
	uint64_t x = *v;
	xfer_le(c, &x, 4);
	*v = (uint32_t)x;
}

/* Two's complement on the wire; GNU C converts out-of-range values modulo 2^32. */
static void f_i32(struct cur *c, int32_t *v)
{
	uint32_t x = (uint32_t)*v;
	f_u32(c, &x);
	*v = (int32_t)x;
}

static void f_u64(struct cur *c, uint64_t *v)
{
	xfer_le(c, v, 8);
}

/* Encode copies n bytes from *p; decode points *p into the buffer (no copy). */
static void f_bytes(struct cur *c, const uint8_t **p, size_t n)
{
	if (!room(c, n))
		return;
	if (c->wr) {
		if (n)
			memcpy(c->wr + c->off, *p, n);
	} else {
		*p = c->rd + c->off;
	}
	c->off += n;
}

static void f_text(struct cur *c, const char **p, size_t n)
{
	const uint8_t *b = (const uint8_t *)*p;
	f_bytes(c, &b, n);
	*p = (const char *)b;
}

static void f_ranges(struct cur *c, struct proto_msg *m)
{
	uint32_t n = m->u.free.nranges;

	if (!c->wr) {
		m->u.free.ranges = NULL;
		f_bytes(c, &m->u.free.raw, (size_t)n * 8);
		return;
	}
	for (uint32_t i = 0; i < n; i++) {
		struct proto_range r = proto_free_range(m, i);
		f_u32(c, &r.pfn);
		f_u32(c, &r.count);
	}
}

static void f_usage(struct cur *c, struct proto_msg *m)
{
	uint32_t n = m->u.stats.nusage;

	if (!c->wr) {
		m->u.stats.usage = NULL;
		f_bytes(c, &m->u.stats.raw, (size_t)n * 16);
		return;
	}
	for (uint32_t i = 0; i < n; i++) {
		struct proto_usage u = proto_stats_usage(m, i);
		f_u64(c, &u.client_id);
		f_u64(c, &u.frames);
	}
}

struct hdr {
	uint16_t magic;
	uint8_t version, type;
	uint32_t length;
	uint64_t seq;
};

static void walk_hdr(struct cur *c, struct hdr *h)
{
	f_u16(c, &h->magic);
	f_u8(c, &h->version);
	f_u8(c, &h->type);
	f_u32(c, &h->length);
	f_u64(c, &h->seq);
}

/* The body layouts; must agree with shapes[] below and docs/PROTOCOL.md. */
static void walk_body(struct cur *c, struct proto_msg *m)
{
	switch (m->type) {
	case PROTO_HELLO:
		f_u64(c, &m->u.hello.client_id);
		f_u16(c, &m->u.hello.token_len);
		f_bytes(c, &m->u.hello.token, m->u.hello.token_len);
		break;
	case PROTO_WELCOME:
		f_u16(c, &m->u.welcome.nid);
		f_u16(c, &m->u.welcome.max_order);
		f_u32(c, &m->u.welcome.credits);
		f_u64(c, &m->u.welcome.pool_frames);
		f_u64(c, &m->u.welcome.base);
		f_u64(c, &m->u.welcome.free_frames);
		f_u32(c, &m->u.welcome.rkey_len);
		f_bytes(c, &m->u.welcome.rkey, m->u.welcome.rkey_len);
		break;
	case PROTO_ALLOC:
		f_u32(c, &m->u.alloc.order);
		break;
	case PROTO_CHUNK:
		f_u32(c, &m->u.chunk.pfn);
		f_u32(c, &m->u.chunk.count);
		f_u64(c, &m->u.chunk.free_frames);
		break;
	case PROTO_READ:
	case PROTO_WRITE:
		f_u32(c, &m->u.rw.pfn);
		f_u32(c, &m->u.rw.count);
		break;
	case PROTO_DATA:
	case PROTO_WRITTEN:
		f_u32(c, &m->u.done.count);
		break;
	case PROTO_NACK:
		f_i32(c, &m->u.nack.error);
		f_i32(c, &m->u.nack.largest_free_order);
		f_u64(c, &m->u.nack.free_frames);
		break;
	case PROTO_FREE:
		f_u32(c, &m->u.free.nranges);
		f_ranges(c, m);
		break;
	case PROTO_FREED:
		f_u32(c, &m->u.freed.frames);
		f_u64(c, &m->u.freed.free_frames);
		break;
	case PROTO_STATS_REPLY:
		f_u64(c, &m->u.stats.pool_frames);
		f_u64(c, &m->u.stats.free_frames);
		f_u64(c, &m->u.stats.client_frames);
		f_u64(c, &m->u.stats.allocs);
		f_u64(c, &m->u.stats.nacks);
		f_u64(c, &m->u.stats.frees);
		f_u32(c, &m->u.stats.clients);
		f_i32(c, &m->u.stats.largest_free_order);
		f_u64(c, &m->u.stats.requests);
		f_u64(c, &m->u.stats.uptime_ms);
		f_u32(c, &m->u.stats.flags);
		f_u32(c, &m->u.stats.nusage);
		f_usage(c, m);
		break;
	case PROTO_ERROR:
		f_i32(c, &m->u.error.error);
		f_u16(c, &m->u.error.text_len);
		f_text(c, &m->u.error.text, m->u.error.text_len);
		break;
	case PROTO_DRAINING:
		f_u32(c, &m->u.draining.clients);
		f_u64(c, &m->u.draining.frames);
		break;
	case PROTO_EVICT:
		f_u64(c, &m->u.evict.frames);
		f_u32(c, &m->u.evict.timeout_ms);
		break;
	case PROTO_DONE:
		f_u64(c, &m->u.finished.moved);
		break;
	case PROTO_SHRINK:
		f_u32(c, &m->u.shrink.pfn);
		f_u32(c, &m->u.shrink.count);
		f_u32(c, &m->u.shrink.timeout_ms);
		break;
	default: /* STATS, BYE, GOODBYE, DRAIN: empty body */
		break;
	}
}

/* Body = fixed bytes, then n elements of elem bytes, where n is the count
 * field of count_width bytes at count_off within the body (count_width 0: no
 * variable part). n must lie in [n_min, n_max]. */
struct shape {
	uint16_t fixed;
	uint8_t count_off, count_width, elem;
	uint16_t n_min, n_max;
};

static const struct shape shapes[PROTO_TYPE_MAX + 1] = {
	[PROTO_HELLO]       = { 10, 8, 2, 1, 0, PROTO_MAX_TOKEN },
	[PROTO_WELCOME]     = { 36, 32, 4, 1, 0, PROTO_MAX_RKEY },
	[PROTO_ALLOC]       = { 4, 0, 0, 0, 0, 0 },
	[PROTO_CHUNK]       = { 16, 0, 0, 0, 0, 0 },
	[PROTO_NACK]        = { 16, 0, 0, 0, 0, 0 },
	[PROTO_FREE]        = { 4, 0, 4, 8, 1, PROTO_FREE_MAX_RANGES },
	[PROTO_FREED]       = { 12, 0, 0, 0, 0, 0 },
	[PROTO_STATS]       = { 0, 0, 0, 0, 0, 0 },
	[PROTO_STATS_REPLY] = { 80, 76, 4, 16, 0, PROTO_STATS_MAX_CLIENTS },
	[PROTO_BYE]         = { 0, 0, 0, 0, 0, 0 },
	[PROTO_GOODBYE]     = { 0, 0, 0, 0, 0, 0 },
	[PROTO_ERROR]       = { 6, 4, 2, 1, 0, PROTO_MAX_TEXT },
	[PROTO_READ]        = { 8, 0, 0, 0, 0, 0 },
	[PROTO_DATA]        = { 4, 0, 0, 0, 0, 0 },
	[PROTO_WRITE]       = { 8, 0, 0, 0, 0, 0 },
	[PROTO_WRITTEN]     = { 4, 0, 0, 0, 0, 0 },
	[PROTO_DRAIN]       = { 0, 0, 0, 0, 0, 0 },
	[PROTO_DRAINING]    = { 12, 0, 0, 0, 0, 0 },
	[PROTO_EVICT]       = { 12, 0, 0, 0, 0, 0 },
	[PROTO_DONE]        = { 8, 0, 0, 0, 0, 0 },
	[PROTO_SHRINK]      = { 12, 0, 0, 0, 0, 0 },
};

/* The largest messages (full FREE, full WELCOME) must fit the wire limit, so
 * anything within the field limits is encodable. */
_Static_assert(PROTO_HDR_LEN + 4 + PROTO_FREE_MAX_RANGES * 8 <= PROTO_MAX_MSG, "FREE");
_Static_assert(PROTO_HDR_LEN + 36 + PROTO_MAX_RKEY <= PROTO_MAX_MSG, "WELCOME");
_Static_assert(PROTO_HDR_LEN + 80 + PROTO_STATS_MAX_CLIENTS * 16 <= PROTO_MAX_MSG, "STATS_REPLY");

static bool type_known(unsigned type)
{
	return type >= PROTO_HELLO && type <= PROTO_TYPE_MAX;
}

static size_t msg_len(const struct shape *s, uint32_t n)
{
	return PROTO_HDR_LEN + s->fixed + (size_t)n * s->elem;
}

static uint32_t var_count(const struct proto_msg *m)
{
	switch (m->type) {
	case PROTO_HELLO:   return m->u.hello.token_len;
	case PROTO_WELCOME: return m->u.welcome.rkey_len;
	case PROTO_FREE:    return m->u.free.nranges;
	case PROTO_ERROR:   return m->u.error.text_len;
	case PROTO_STATS_REPLY: return m->u.stats.nusage;
	default:            return 0;
	}
}

/* Every range non-empty and ending within u32 PFN space; nranges already checked. */
static bool ranges_ok(const struct proto_msg *m)
{
	for (uint32_t i = 0; i < m->u.free.nranges; i++) {
		struct proto_range r = proto_free_range(m, i);
		if (r.count == 0 || r.count > UINT32_MAX - r.pfn)
			return false;
	}
	return true;
}

/* A SHRINK names at least one frame and ends within u32 PFN space. */
static bool shrink_ok(const struct proto_msg *m)
{
	return m->type != PROTO_SHRINK || (m->u.shrink.count && m->u.shrink.count <= UINT32_MAX - m->u.shrink.pfn);
}

/* Checks the field limits; on success *len_out is the message length. */
static int check_fields(const struct proto_msg *m, size_t *len_out)
{
	const struct shape *s;
	uint32_t n;

	if (!type_known(m->type))
		return -EINVAL;
	s = &shapes[m->type];
	n = var_count(m);
	if (n < s->n_min || n > s->n_max)
		return -EINVAL;
	if ((m->type == PROTO_FREE && !ranges_ok(m)) || !shrink_ok(m))
		return -EINVAL;
	*len_out = msg_len(s, n);
	return 0;
}

int proto_encode(const struct proto_msg *m, void *buf, size_t cap, size_t *len_out)
{
	struct proto_msg tmp = *m; /* the walk takes non-const fields */
	struct hdr h = { PROTO_MAGIC, PROTO_VERSION, m->type, 0, m->seq };
	struct cur c = { .wr = buf, .end = cap };
	size_t len;
	int rc;

	rc = check_fields(m, &len);
	if (rc)
		return rc;
	if (len > cap)
		return -EMSGSIZE;
	h.length = (uint32_t)len;
	walk_hdr(&c, &h);
	walk_body(&c, &tmp);
	if (c.bad || c.off != len) /* shapes[] and walk_body() disagree: a bug */
		return -EMSGSIZE;
	*len_out = len;
	return 0;
}

/* Checks the header; on success *h is filled. */
static int check_hdr(const uint8_t *b, size_t len, struct hdr *h)
{
	struct cur c = { .rd = b, .end = len };

	if (len < PROTO_HDR_LEN)
		return -EBADMSG;
	walk_hdr(&c, h);
	if (h->magic != PROTO_MAGIC)
		return -EBADMSG;
	if (h->version != PROTO_VERSION)
		return -EPROTONOSUPPORT;
	if (h->length != len || len > PROTO_MAX_MSG)
		return -EBADMSG;
	if (!type_known(h->type))
		return -ENOMSG;
	return 0;
}

/* Checks that len is exactly what the type and its count field require. */
static int check_shape(const uint8_t *b, size_t len, unsigned type)
{
	const struct shape *s = &shapes[type];
	struct cur c = { .rd = b, .end = len, .off = PROTO_HDR_LEN + s->count_off };
	uint64_t n = 0;

	if (len < msg_len(s, 0))
		return -EBADMSG;
	if (s->count_width)
		xfer_le(&c, &n, s->count_width);
	if (c.bad || n < s->n_min || n > s->n_max || len != msg_len(s, (uint32_t)n))
		return -EBADMSG;
	return 0;
}

int proto_decode(const void *buf, size_t len, struct proto_msg *out)
{
	const uint8_t *b = buf;
	struct proto_msg m = { 0 };
	struct cur c = { .rd = b, .end = len, .off = PROTO_HDR_LEN };
	struct hdr h = { 0 };
	int rc;

	rc = check_hdr(b, len, &h);
	if (rc == 0)
		rc = check_shape(b, len, h.type);
	if (rc)
		return rc;
	m.type = h.type;
	m.seq = h.seq;
	walk_body(&c, &m);
	if (c.bad || c.off != len)
		return -EBADMSG;
	if ((m.type == PROTO_FREE && !ranges_ok(&m)) || !shrink_ok(&m))
		return -EBADMSG;
	*out = m;
	return 0;
}

/* Reads ranges[] when set (a message built for encoding), else the wire bytes
 * of a decoded FREE, so a decoded FREE can be re-encoded as is. An i out of
 * range, or neither array set, yields an empty range (which encode rejects)
 * rather than a bad read. */
struct proto_range proto_free_range(const struct proto_msg *m, uint32_t i)
{
	struct proto_range r = { 0, 0 };
	struct cur c = { .rd = m->u.free.raw, .end = (size_t)m->u.free.nranges * 8,
			 .off = (size_t)i * 8 };

	if (i >= m->u.free.nranges)
		return r;
	if (m->u.free.ranges)
		return m->u.free.ranges[i];
	if (!m->u.free.raw)
		return r;
	f_u32(&c, &r.pfn);
	f_u32(&c, &r.count);
	return r;
}

/* As proto_free_range(), for the usage rows of a STATS_REPLY. */
struct proto_usage proto_stats_usage(const struct proto_msg *m, uint32_t i)
{
	struct proto_usage u = { 0, 0 };
	struct cur c = { .rd = m->u.stats.raw, .end = (size_t)m->u.stats.nusage * 16,
			 .off = (size_t)i * 16 };

	if (i >= m->u.stats.nusage)
		return u;
	if (m->u.stats.usage)
		return m->u.stats.usage[i];
	if (!m->u.stats.raw)
		return u;
	f_u64(&c, &u.client_id);
	f_u64(&c, &u.frames);
	return u;
}

const char *proto_type_name(unsigned type)
{
	static const char *const names[PROTO_TYPE_MAX + 1] = {
		[PROTO_HELLO] = "HELLO", [PROTO_WELCOME] = "WELCOME",
		[PROTO_ALLOC] = "ALLOC", [PROTO_CHUNK] = "CHUNK",
		[PROTO_NACK] = "NACK", [PROTO_FREE] = "FREE",
		[PROTO_FREED] = "FREED", [PROTO_STATS] = "STATS",
		[PROTO_STATS_REPLY] = "STATS_REPLY", [PROTO_BYE] = "BYE",
		[PROTO_GOODBYE] = "GOODBYE", [PROTO_ERROR] = "ERROR",
		[PROTO_READ] = "READ", [PROTO_DATA] = "DATA",
		[PROTO_WRITE] = "WRITE", [PROTO_WRITTEN] = "WRITTEN",
		[PROTO_DRAIN] = "DRAIN", [PROTO_DRAINING] = "DRAINING",
		[PROTO_EVICT] = "EVICT", [PROTO_DONE] = "DONE",
		[PROTO_SHRINK] = "SHRINK",
	};

	return type_known(type) ? names[type] : "UNKNOWN";
}

/* Every request is decoded, checked against the connection's state (HELLO
 * first, increasing seq) and dispatched by type through handlers[]; each path
 * leaves exactly one reply in the request's reply message, which serve_handle
 * encodes. A refusal is an ERROR reply plus one log line, written by reject()
 * where the problem is found. The buddy owner of a frame is the conn id, and
 * conn ids are never reused, so a late FREE from a closed connection can never
 * free frames that now belong to someone else. */
#include "serve.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "buddy.h"
#include "clock.h"
#include "log.h"
#include "proto.h"

/* The buddy owner of blocks taken out of service for the host (elastic
 * pool); connection ids stop before it. */
#define HOST_OWNER UINT32_MAX

/* Refusals logged per connection; a client stuck in a loop of bad requests
 * must not flood the memnode's log. The count is reported at disconnect. */
#define SERVE_LOGGED_REFUSALS 8

struct conn {
	uint32_t id;         /* 0: slot unused */
	bool authenticated;
	uint64_t client_id;  /* as claimed by HELLO; 0 before it */
	uint64_t last_seq;   /* 0 until the first request */
	uint64_t frames;     /* frames owned in the buddy */
	uint64_t returned;   /* frames given back at BYE */
	uint64_t refusals;   /* ERROR replies sent */
	bool told;           /* asked by EVICT to take its pages elsewhere, no DONE yet */
	bool shrink_told;    /* holds frames in the shrink range, not sent its SHRINK yet */
};

struct serve {
	struct serve_config cfg;  /* rkey and token point at the copies below */
	struct auth_token token;
	uint8_t *rkey;
	struct buddy *buddy;
	uint32_t next_id;         /* 0 once all ids have been used */
	uint32_t nconns;
	bool draining;            /* leaving: ALLOCs get NACK, told conns owe a DONE */
	/* Elastic shrink: frames [pfn, pfn + count) are being vacated for the
	 * host. ALLOCs get NACK meanwhile, so what the clients free merges into
	 * free blocks that serve_host_take gives back. */
	struct { bool on; uint32_t pfn, count; } shrink;
	uint64_t allocs, nacks, frees, errors; /* frees counts frames of FREE requests */
	uint64_t requests, start_ns;
	uint64_t host_frames;     /* out of service, given back to the host */
	uint32_t flags;           /* PROTO_STATS_* reported by STATS, beside DRAINING (from draining) */
	/* serve_stats()'s copy, stored with relaxed atomics after every change,
	 * so that another thread (the metrics server) may read it */
	struct serve_stats pub;
	struct proto_usage usage[PROTO_STATS_MAX_CLIENTS]; /* STATS_REPLY rows, referenced by the reply */
	struct conn conns[];      /* cfg.max_clients slots */      /* cfg.max_clients slots */
};

/* One request being handled: handlers read m (NULL if undecodable) and fill
 * in the reply r, whose seq is already set. */
struct req {
	struct serve *s;
	struct conn *c;
	const struct proto_msg *m;
	size_t len;
	size_t bulk_len;             /* pages that came with the request */
	struct serve_bulk *bulk;     /* pages to move with the reply */
	struct proto_msg *r;
	char text[PROTO_MAX_TEXT + 1]; /* ERROR text, referenced by r */
};

static struct conn *conn_find(struct serve *s, uint32_t id)
{
	if (id == 0)
		return NULL;
	for (uint32_t i = 0; i < s->cfg.max_clients; i++)
		if (s->conns[i].id == id)
			return &s->conns[i];
	return NULL;
}

static struct conn *slot_free(struct serve *s)
{
	for (uint32_t i = 0; i < s->cfg.max_clients; i++)
		if (s->conns[i].id == 0)
			return &s->conns[i];
	return NULL;
}

static void log_refusal(const struct req *q)
{
	const struct conn *c = q->c;

	if (c->refusals > SERVE_LOGGED_REFUSALS)
		return;
	if (c->refusals == SERVE_LOGGED_REFUSALS) {
		log_warn("conn %u client %#" PRIx64 ": %d requests refused; not logging more",
			 c->id, c->client_id, SERVE_LOGGED_REFUSALS);
		return;
	}
	if (q->m)
		log_warn("conn %u client %#" PRIx64 ": %s seq %" PRIu64 " (%zu bytes) refused: %s",
			 c->id, c->client_id, proto_type_name(q->m->type), q->m->seq, q->len, q->text);
	else
		log_warn("conn %u client %#" PRIx64 ": message of %zu bytes refused: %s",
			 c->id, c->client_id, q->len, q->text);
}

/* Makes the reply an ERROR for err (a negative errno, as functions here
 * return; the wire carries it positive) with the formatted text, which goes
 * to the client and to the log. */
static void __attribute__((format(printf, 3, 4)))
reject(struct req *q, int err, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(q->text, sizeof(q->text), fmt, ap);
	va_end(ap);
	if (n < 0)
		n = 0;
	if (n > (int)PROTO_MAX_TEXT)
		n = PROTO_MAX_TEXT;
	q->r->type = PROTO_ERROR;
	q->r->u.error.error = -err;
	q->r->u.error.text_len = (uint16_t)n;
	q->r->u.error.text = q->text;
	q->s->errors++;
	log_refusal(q);
	q->c->refusals++;
}

/* The frames this memnode could still grant: free ones plus, for a growing
 * pool, what it may add (the host may refuse some of that: an upper bound).
 * Piggybacked on every allocation reply for the clients' placement. */
static uint64_t room(const struct serve *s)
{
	struct buddy_stats bs;

	buddy_stats(s->buddy, &bs);
	if (s->draining || s->shrink.on)
		return 0;
	return bs.free_frames + (s->cfg.grow && s->cfg.max_frames > bs.nframes ? s->cfg.max_frames - bs.nframes : 0);
}

static int on_hello(struct req *q)
{
	const struct proto_msg *m = q->m;
	const struct serve_config *cfg = &q->s->cfg;
	struct conn *c = q->c;

	if (c->authenticated) {
		reject(q, -EALREADY, "already authenticated");
		return 0;
	}
	c->client_id = m->u.hello.client_id; /* a claim until the token checks out */
	if (cfg->token && !auth_token_matches(cfg->token, m->u.hello.token, m->u.hello.token_len)) {
		reject(q, -EACCES, "bad token");
		return SERVE_CLOSE;
	}
	if (q->s->draining) { /* leaving: nothing new comes here, nobody new either */
		reject(q, -ESHUTDOWN, "this memnode is leaving (draining)");
		return SERVE_CLOSE;
	}
	c->authenticated = true;
	log_info("conn %u client %#" PRIx64 ": connected%s", c->id, c->client_id,
		 cfg->token ? "" : " (no authentication)");
	q->r->type = PROTO_WELCOME;
	q->r->u.welcome.nid = cfg->nid;
	q->r->u.welcome.max_order = BUDDY_MAX_ORDER;
	q->r->u.welcome.credits = cfg->credits;
	q->r->u.welcome.pool_frames = cfg->max_frames; /* every PFN is below it */
	q->r->u.welcome.base = cfg->base;
	q->r->u.welcome.rkey_len = (uint32_t)cfg->rkey_len;
	q->r->u.welcome.rkey = cfg->rkey;
	q->r->u.welcome.free_frames = room(q->s);
	return 0;
}

/* Grows a growable pool that has no order-`order` block free, as far as the
 * memnode's grow() will; 0 once the buddy holds more frames. */
static int grow_pool(struct serve *s, unsigned order)
{
	struct buddy_stats bs;
	uint32_t frames;
	int rc;

	buddy_stats(s->buddy, &bs);
	if (!s->cfg.grow || bs.nframes >= s->cfg.max_frames)
		return -ENOSPC;
	rc = s->cfg.grow(s->cfg.grow_arg, bs.nframes, 1u << order, &frames);
	if (rc)
		return rc;
	if (frames > s->cfg.max_frames)
		frames = s->cfg.max_frames;
	rc = buddy_grow(s->buddy, frames);
	if (rc == 0 && frames == bs.nframes)
		rc = -ENOSPC;
	return rc;
}

static int on_alloc(struct req *q)
{
	uint32_t order = q->m->u.alloc.order, pfn;
	struct buddy_stats bs;
	int rc;

	if (order > BUDDY_MAX_ORDER) {
		reject(q, -EINVAL, "order %u above %u", order, BUDDY_MAX_ORDER);
		return 0;
	}
	/* leaving or giving memory back: nothing new comes here; -1 so no smaller order is tried */
	if (q->s->draining || q->s->shrink.on) {
		q->s->nacks++;
		q->r->type = PROTO_NACK;
		q->r->u.nack.error = ENOSPC;
		q->r->u.nack.largest_free_order = -1;
		q->r->u.nack.free_frames = 0;
		return 0;
	}
	rc = buddy_alloc(q->s->buddy, order, q->c->id, &pfn);
	while (rc == -ENOSPC && grow_pool(q->s, order) == 0)
		rc = buddy_alloc(q->s->buddy, order, q->c->id, &pfn);
	if (rc == -ENOSPC) {
		/* Normal operation, not a refusal: the client goes elsewhere. */
		buddy_stats(q->s->buddy, &bs);
		log_debug("conn %u: no order-%u block free (largest %d)", q->c->id, order,
			  bs.largest_free_order);
		q->s->nacks++;
		q->r->type = PROTO_NACK;
		q->r->u.nack.error = ENOSPC;
		q->r->u.nack.largest_free_order = bs.largest_free_order;
		q->r->u.nack.free_frames = room(q->s);
		return 0;
	}
	if (rc) {
		reject(q, rc, "order-%u allocation failed", order);
		return 0;
	}
	q->c->frames += 1u << order;
	q->s->allocs++;
	if (q->s->cfg.grow_ahead) {
		buddy_stats(q->s->buddy, &bs);
		q->s->cfg.grow_ahead(q->s->cfg.grow_arg, bs.nframes, bs.free_frames);
	}
	q->r->type = PROTO_CHUNK;
	q->r->u.chunk.pfn = pfn;
	q->r->u.chunk.count = 1u << order;
	q->r->u.chunk.free_frames = room(q->s);
	return 0;
}

/* Copies the ranges into rs and checks each lies in the pool and that together
 * they are no more than the conn holds (which also bounds the owner scan).
 * proto_decode already refuses too many or empty ranges; the checks here keep
 * the bounds of rs and of the scan independent of it. */
static int free_collect(struct req *q, struct proto_range *rs, uint32_t n, uint64_t *total_out)
{
	uint32_t pool = q->s->cfg.max_frames;
	uint64_t total = 0;

	if (n > PROTO_FREE_MAX_RANGES) {
		reject(q, -EBADMSG, "%u ranges, at most %u", n, PROTO_FREE_MAX_RANGES);
		return -EBADMSG;
	}
	for (uint32_t i = 0; i < n; i++) {
		rs[i] = proto_free_range(q->m, i);
		if (rs[i].count == 0) {
			reject(q, -EINVAL, "empty range at pfn %u", rs[i].pfn);
			return -EINVAL;
		}
		if (rs[i].pfn >= pool || rs[i].count > pool - rs[i].pfn) {
			reject(q, -ERANGE, "range %u+%u beyond pool of %u frames", rs[i].pfn,
			       rs[i].count, pool);
			return -ERANGE;
		}
		total += rs[i].count;
	}
	if (total > q->c->frames) {
		reject(q, -EPERM, "frees %" PRIu64 " frames, holds %" PRIu64, total, q->c->frames);
		return -EPERM;
	}
	*total_out = total;
	return 0;
}

static int range_cmp(const void *a, const void *b)
{
	const struct proto_range *x = a, *y = b;

	return (x->pfn > y->pfn) - (x->pfn < y->pfn);
}

/* Sorts rs by pfn and refuses a frame named twice: freeing it the second time
 * would be a double free, which is what EPERM reports across messages too. */
static int free_check_overlap(struct req *q, struct proto_range *rs, uint32_t n)
{
	qsort(rs, n, sizeof(*rs), range_cmp);
	for (uint32_t i = 1; i < n; i++) {
		if ((uint64_t)rs[i - 1].pfn + rs[i - 1].count > rs[i].pfn) {
			reject(q, -EPERM, "ranges overlap at pfn %u", rs[i].pfn);
			return -EPERM;
		}
	}
	return 0;
}

static int free_check_owner(struct req *q, const struct proto_range *rs, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		for (uint32_t pfn = rs[i].pfn; pfn - rs[i].pfn < rs[i].count; pfn++) {
			if (buddy_owner(q->s->buddy, pfn) != q->c->id) {
				reject(q, -EPERM, "pfn %u not held", pfn);
				return -EPERM;
			}
		}
	}
	return 0;
}

/* Nothing is freed unless every range is valid, so a refused FREE leaves the
 * client's holdings exactly as they were. */
static int on_free(struct req *q)
{
	struct proto_range rs[PROTO_FREE_MAX_RANGES]; /* 8 KB */
	uint32_t n = q->m->u.free.nranges;
	uint64_t total;
	int rc;

	rc = free_collect(q, rs, n, &total);
	if (rc == 0)
		rc = free_check_overlap(q, rs, n);
	if (rc == 0)
		rc = free_check_owner(q, rs, n);
	if (rc)
		return 0;
	for (uint32_t i = 0; i < n; i++) {
		rc = buddy_free(q->s->buddy, rs[i].pfn, rs[i].count, q->c->id);
		if (rc) {
			/* Validated above: the buddy and our checks disagree (a bug). */
			log_error("conn %u: buddy refused validated range %u+%u (%d)", q->c->id,
				  rs[i].pfn, rs[i].count, rc);
			reject(q, rc, "range %u+%u not freed", rs[i].pfn, rs[i].count);
			return 0;
		}
		q->c->frames -= rs[i].count;
		q->s->frees += rs[i].count;
	}
	q->r->type = PROTO_FREED;
	q->r->u.freed.frames = (uint32_t)total; /* <= frames held <= max_frames */
	q->r->u.freed.free_frames = room(q->s);
	return 0;
}

#define STORE(f, v) __atomic_store_n(&s->pub.f, (v), __ATOMIC_RELAXED)

/* Copies the counters for serve_stats(); field by field, so a reader on
 * another thread may mix two updates, never tear one counter. */
static void publish(struct serve *s)
{
	struct buddy_stats bs;

	buddy_stats(s->buddy, &bs);
	STORE(pool_frames, bs.nframes - s->host_frames);
	STORE(free_frames, bs.free_frames);
	STORE(allocs, s->allocs);
	STORE(nacks, s->nacks);
	STORE(frees, s->frees);
	STORE(errors, s->errors);
	STORE(requests, s->requests);
	STORE(clients, s->nconns);
}

/* The per-client rows: authenticated connections in slot order. */
static uint32_t fill_usage(struct serve *s)
{
	uint32_t n = 0;

	for (uint32_t i = 0; i < s->cfg.max_clients && n < PROTO_STATS_MAX_CLIENTS; i++)
		if (s->conns[i].id && s->conns[i].authenticated)
			s->usage[n++] = (struct proto_usage){ s->conns[i].client_id, s->conns[i].frames };
	return n;
}

static int on_stats(struct req *q)
{
	struct serve *s = q->s;
	struct buddy_stats bs;

	buddy_stats(s->buddy, &bs);
	q->r->type = PROTO_STATS_REPLY;
	q->r->u.stats.pool_frames = bs.nframes - s->host_frames;
	q->r->u.stats.free_frames = bs.free_frames;
	q->r->u.stats.client_frames = q->c->frames;
	q->r->u.stats.allocs = s->allocs;
	q->r->u.stats.nacks = s->nacks;
	q->r->u.stats.frees = s->frees;
	q->r->u.stats.clients = s->nconns;
	q->r->u.stats.largest_free_order = bs.largest_free_order;
	q->r->u.stats.requests = s->requests;
	q->r->u.stats.uptime_ms = (now_ns() - s->start_ns) / 1000000;
	q->r->u.stats.flags = s->flags | (s->draining ? PROTO_STATS_DRAINING : 0) |
			      (s->shrink.on ? PROTO_STATS_SHRINKING : 0);
	q->r->u.stats.nusage = fill_usage(s);
	q->r->u.stats.usage = s->usage;
	return 0;
}

/* Gives all of c's frames back to the pool. buddy_free_owner scans the whole
 * pool: skipped for the many connections that hold nothing (refused, probing
 * or quickly closed ones). */
static void release_frames(struct serve *s, struct conn *c)
{
	int64_t n = c->frames ? buddy_free_owner(s->buddy, c->id) : 0;

	if (n != (int64_t)c->frames)
		log_error("conn %u: held %" PRIu64 " frames by our count, buddy returned %" PRId64,
			  c->id, c->frames, n);
	c->frames = 0;
	c->returned += (uint64_t)n;
}

/* The session ends with the GOODBYE (docs/PROTOCOL.md): the frames are free
 * before the client hears so, not only once the transport gets to the close. */
static int on_bye(struct req *q)
{
	release_frames(q->s, q->c);
	q->r->type = PROTO_GOODBYE;
	return SERVE_CLOSE;
}

/* Drain (planned departure). Every authenticated connection is told to take
 * its pages elsewhere, except an operator's connection that asked for the
 * drain and holds nothing. */
static void drain_start(struct serve *s, uint32_t requester)
{
	if (s->draining)
		return;
	s->draining = true;
	for (uint32_t i = 0; i < s->cfg.max_clients; i++) {
		struct conn *c = &s->conns[i];

		c->told = c->id && c->authenticated && !(c->id == requester && c->frames == 0);
	}
}

int serve_drain_left(const struct serve *s, uint64_t *frames_out)
{
	uint64_t frames = 0;
	int left = 0;

	if (!s->draining)
		return -1;
	for (uint32_t i = 0; i < s->cfg.max_clients; i++)
		if (s->conns[i].id && s->conns[i].told)
			left++, frames += s->conns[i].frames;
	*frames_out = frames;
	return left;
}

void serve_drain(struct serve *s)
{
	drain_start(s, 0);
}

static int on_drain(struct req *q)
{
	uint64_t frames = 0; /* set: drain_start has begun the drain */
	int left;

	drain_start(q->s, q->c->id);
	left = serve_drain_left(q->s, &frames);
	log_info("conn %u client %#" PRIx64 ": asked this memnode to drain; %d clients told, holding %" PRIu64
		 " frames", q->c->id, q->c->client_id, left, frames);
	q->r->type = PROTO_DRAINING;
	q->r->u.draining.clients = (uint32_t)left;
	q->r->u.draining.frames = frames;
	return 0;
}

/* The client has taken its pages elsewhere: the session ends like BYE (the
 * frames it still holds are unused ones from its local pool). */
static int on_done(struct req *q)
{
	uint64_t held = q->c->frames;

	if (!q->s->draining) {
		reject(q, -EINVAL, "DONE while no drain is in progress");
		return 0;
	}
	release_frames(q->s, q->c);
	q->c->told = false;
	log_info("conn %u client %#" PRIx64 ": DONE, moved %" PRIu64 " pages elsewhere, %" PRIu64
		 " unused frames returned", q->c->id, q->c->client_id, q->m->u.finished.moved, held);
	q->r->type = PROTO_GOODBYE;
	return SERVE_CLOSE;
}

int serve_evict(struct serve *s, uint32_t conn, uint32_t timeout_ms, void *buf, size_t cap, size_t *len_out)
{
	struct conn *c = conn_find(s, conn);
	struct proto_msg m = { .type = PROTO_EVICT }; /* seq 0: not a reply */

	if (!c || !c->told)
		return -ENOENT;
	m.u.evict.frames = c->frames;
	m.u.evict.timeout_ms = timeout_ms;
	return proto_encode(&m, buf, cap, len_out);
}

/* READ and WRITE may only touch frames the client holds. */
static int check_rw(struct req *q)
{
	struct proto_range r = { q->m->u.rw.pfn, q->m->u.rw.count };

	if (!q->s->cfg.pool) {
		reject(q, -EOPNOTSUPP, "this memnode has no validated data path");
		return -EOPNOTSUPP;
	}
	if (r.count == 0 || r.count > PROTO_MAX_RW_FRAMES) {
		reject(q, -EINVAL, "%u frames (1..%u per request)", r.count, PROTO_MAX_RW_FRAMES);
		return -EINVAL;
	}
	if (r.pfn >= q->s->cfg.max_frames || r.count > q->s->cfg.max_frames - r.pfn) {
		reject(q, -ERANGE, "frames %u+%u outside the pool of %u", r.pfn, r.count, q->s->cfg.max_frames);
		return -ERANGE;
	}
	return free_check_owner(q, &r, 1);
}

static void set_bulk(struct req *q, bool incoming)
{
	q->bulk->addr = q->s->cfg.pool + (size_t)q->m->u.rw.pfn * PROTO_FRAME_SIZE;
	q->bulk->len = (size_t)q->m->u.rw.count * PROTO_FRAME_SIZE;
	q->bulk->incoming = incoming;
	q->r->u.done.count = q->m->u.rw.count;
}

static int on_read(struct req *q)
{
	if (q->bulk_len) {
		reject(q, -EBADMSG, "READ carrying %zu bytes of data", q->bulk_len);
		return 0;
	}
	if (check_rw(q))
		return 0;
	q->r->type = PROTO_DATA;
	set_bulk(q, false);
	return 0;
}

static int on_write(struct req *q)
{
	if (check_rw(q))
		return 0;
	if (q->bulk_len != (size_t)q->m->u.rw.count * PROTO_FRAME_SIZE) {
		reject(q, -EBADMSG, "WRITE of %u frames carrying %zu bytes", q->m->u.rw.count, q->bulk_len);
		return 0;
	}
	q->r->type = PROTO_WRITTEN;
	set_bulk(q, true);
	return 0;
}

/* Requests served; any other type is refused as unexpected (the replies: no
 * client has reason to send one). */
static int (*const handlers[PROTO_TYPE_MAX + 1])(struct req *q) = {
	[PROTO_HELLO] = on_hello,
	[PROTO_ALLOC] = on_alloc,
	[PROTO_FREE] = on_free,
	[PROTO_STATS] = on_stats,
	[PROTO_BYE] = on_bye,
	[PROTO_READ] = on_read,
	[PROTO_WRITE] = on_write,
	[PROTO_DRAIN] = on_drain,
	[PROTO_DONE] = on_done,
};

static int dispatch(struct req *q)
{
	const struct proto_msg *m = q->m;
	struct conn *c = q->c;

	if (!c->authenticated && m->type != PROTO_HELLO) {
		reject(q, -EACCES, "HELLO required first");
		return SERVE_CLOSE;
	}
	if (m->seq <= c->last_seq) {
		reject(q, -EINVAL, "stale seq (last was %" PRIu64 ")", c->last_seq);
		return 0;
	}
	c->last_seq = m->seq;
	if (m->type > PROTO_TYPE_MAX || !handlers[m->type]) {
		reject(q, -EBADMSG, "unexpected message");
		return 0;
	}
	return handlers[m->type](q);
}

static const char *decode_reason(int err)
{
	switch (err) {
	case -EPROTONOSUPPORT: return "unsupported protocol version";
	case -ENOMSG:          return "unknown message type";
	default:               return "malformed message";
	}
}

static int encode_reply(struct req *q, void *buf, size_t cap, size_t *len_out)
{
	int rc = proto_encode(q->r, buf, cap, len_out);

	if (rc == 0)
		return 0;
	/* Our own reply out of protocol limits (a bug); still answer the client,
	 * whose request would otherwise wait forever. */
	errno = -rc;
	log_error("conn %u: cannot encode %s reply: %m", q->c->id, proto_type_name(q->r->type));
	q->r->type = PROTO_ERROR;
	q->r->u.error.error = -rc;
	q->r->u.error.text_len = 0;
	return proto_encode(q->r, buf, cap, len_out);
}

int serve_handle(struct serve *s, uint32_t conn, const void *req, size_t len, size_t bulk_len,
		 void *reply, size_t reply_cap, size_t *reply_len, struct serve_bulk *bulk)
{
	struct proto_msg m, r = { 0 };
	struct req q = { .s = s, .r = &r, .len = len, .bulk_len = bulk_len, .bulk = bulk };

	*bulk = (struct serve_bulk){ 0 };
	int verdict = 0, rc;

	q.c = conn_find(s, conn);
	if (!q.c)
		return -ENOENT;
	s->requests++;
	if (reply_cap < PROTO_MAX_MSG) {
		log_error("conn %u: reply buffer of %zu bytes, need %u", conn, reply_cap, PROTO_MAX_MSG);
		return -EINVAL;
	}
	rc = proto_decode(req, len, &m);
	if (rc) {
		reject(&q, rc, "%s", decode_reason(rc));
	} else {
		q.m = &m;
		r.seq = m.seq;
		verdict = dispatch(&q);
	}
	/* Before a good HELLO a peer gets no second chance at anything. */
	if (r.type == PROTO_ERROR && !q.c->authenticated)
		verdict = SERVE_CLOSE;
	rc = encode_reply(&q, reply, reply_cap, reply_len);
	if (r.type == PROTO_ERROR) /* including a reply that failed to encode */
		*bulk = (struct serve_bulk){ 0 };
	publish(s);
	return rc ? rc : verdict;
}

static int config_check(const struct serve_config *cfg)
{
	if (cfg->pool_frames == 0 || cfg->max_clients == 0) {
		log_error("memnode needs a pool of at least one frame and max-clients >= 1 (have %u, %u)",
			  cfg->pool_frames, cfg->max_clients);
		return -EINVAL;
	}
	if (cfg->max_frames && cfg->max_frames < cfg->pool_frames) {
		log_error("a growing pool of %u frames cannot start with %u", cfg->max_frames, cfg->pool_frames);
		return -EINVAL;
	}
	if (cfg->rkey_len > PROTO_MAX_RKEY || (cfg->rkey_len && !cfg->rkey)) {
		log_error("remote key of %zu bytes does not fit WELCOME (max %u)", cfg->rkey_len,
			  PROTO_MAX_RKEY);
		return -EINVAL;
	}
	if (cfg->token && (cfg->token->len == 0 || cfg->token->len > AUTH_TOKEN_MAX)) {
		log_error("token of %zu bytes, need 1..%u", cfg->token->len, AUTH_TOKEN_MAX);
		return -EINVAL;
	}
	return 0;
}

int serve_create(const struct serve_config *cfg, struct serve **out)
{
	struct serve *s;
	int rc;

	rc = config_check(cfg);
	if (rc)
		return rc;
	s = calloc(1, sizeof(*s) + (size_t)cfg->max_clients * sizeof(s->conns[0]));
	if (!s)
		return -ENOMEM;
	s->cfg = *cfg;
	if (!s->cfg.max_frames)
		s->cfg.max_frames = cfg->pool_frames;
	s->next_id = 1;
	if (cfg->token) {
		s->token = *cfg->token;
		s->cfg.token = &s->token;
	}
	if (cfg->rkey_len) {
		s->rkey = malloc(cfg->rkey_len);
		if (!s->rkey) {
			rc = -ENOMEM;
			goto free_serve;
		}
		memcpy(s->rkey, cfg->rkey, cfg->rkey_len);
		s->cfg.rkey = s->rkey;
	}
	rc = buddy_create_max(cfg->pool_frames, s->cfg.max_frames, &s->buddy);
	if (rc) {
		errno = -rc;
		log_error("cannot create allocator for %u frames (up to %u): %m", cfg->pool_frames,
			  s->cfg.max_frames);
		goto free_rkey;
	}
	s->start_ns = now_ns();
	publish(s);
	*out = s;
	return 0;

free_rkey:
	free(s->rkey);
free_serve:
	explicit_bzero(&s->token, sizeof(s->token));
	free(s);
	return rc;
}

void serve_destroy(struct serve *s)
{
	if (!s)
		return;
	buddy_destroy(s->buddy);
	free(s->rkey);
	explicit_bzero(&s->token, sizeof(s->token));
	free(s);
}

int serve_connect(struct serve *s, uint32_t *conn_out)
{
	struct conn *c = slot_free(s);

	if (!c) {
		log_warn("connection refused: %u clients connected already (max-clients)",
			 s->cfg.max_clients);
		return -EMFILE;
	}
	if (s->next_id == 0 || s->next_id == HOST_OWNER) {
		log_error("connection refused: all 2^32-1 connection ids used; restart the memnode");
		return -EOVERFLOW;
	}
	*c = (struct conn){ .id = s->next_id };
	s->next_id++;
	s->nconns++;
	publish(s);
	*conn_out = c->id;
	return 0;
}

void serve_disconnect(struct serve *s, uint32_t conn)
{
	struct conn *c = conn_find(s, conn);

	if (!c)
		return;
	release_frames(s, c);
	log_info("conn %u client %#" PRIx64 ": disconnected, %" PRIu64 " frames returned, %" PRIu64
		 " requests refused", c->id, c->client_id, c->returned, c->refusals);
	*c = (struct conn){ 0 };
	s->nconns--;
	publish(s);
}

#define LOAD(f) __atomic_load_n(&s->pub.f, __ATOMIC_RELAXED)

void serve_stats(const struct serve *s, struct serve_stats *out)
{
	*out = (struct serve_stats){
		.pool_frames = LOAD(pool_frames), .free_frames = LOAD(free_frames),
		.allocs = LOAD(allocs), .nacks = LOAD(nacks), .frees = LOAD(frees),
		.errors = LOAD(errors), .requests = LOAD(requests), .clients = LOAD(clients),
		.uptime_ns = now_ns() - s->start_ns,
	};
}

/* ---- elastic shrink ---- */

#define BLOCK_FRAMES (1u << BUDDY_MAX_ORDER)

/* Clients' frames in block b, or -1 if part of it is out of service. */
static int64_t block_used(const struct serve *s, uint32_t b)
{
	int64_t used = 0;

	for (uint32_t pfn = b * BLOCK_FRAMES; pfn < (b + 1) * BLOCK_FRAMES; pfn++) {
		uint32_t o = buddy_owner(s->buddy, pfn);

		if (o == HOST_OWNER)
			return -1;
		used += o != BUDDY_NO_OWNER;
	}
	return used;
}

/* The first of the `want` consecutive blocks in service (fewer when no run
 * is that long) that hold the fewest clients' frames; -ENOENT if none. */
static int pick_blocks(const struct serve *s, uint32_t nblocks, uint32_t want, uint32_t *first_out,
		       uint32_t *count_out)
{
	for (; want; want /= 2) {
		int64_t best = -1, sum = 0;
		uint32_t run = 0, first = 0;

		for (uint32_t b = 0; b < nblocks; b++) {
			int64_t u = block_used(s, b);

			if (u < 0) { /* a run cannot span a block the host has */
				run = 0, sum = 0;
				continue;
			}
			sum += u, run++;
			if (run > want)
				sum -= block_used(s, b - want), run = want;
			if (run == want && (best < 0 || sum < best))
				best = sum, first = b + 1 - want;
		}
		if (best >= 0) {
			*first_out = first;
			*count_out = want;
			return 0;
		}
	}
	return -ENOENT;
}

static bool range_held(const struct serve *s)
{
	for (uint32_t pfn = s->shrink.pfn; pfn < s->shrink.pfn + s->shrink.count; pfn++) {
		uint32_t o = buddy_owner(s->buddy, pfn);

		if (o != BUDDY_NO_OWNER && o != HOST_OWNER)
			return true;
	}
	return false;
}

int serve_shrink_start(struct serve *s, uint32_t blocks, uint32_t *pfn_out, uint32_t *count_out)
{
	struct buddy_stats bs;
	uint32_t first, n;
	int rc;

	if (s->shrink.on && range_held(s))
		return -EBUSY;
	buddy_stats(s->buddy, &bs);
	rc = pick_blocks(s, bs.nframes / BLOCK_FRAMES, blocks ? blocks : 1, &first, &n);
	if (rc)
		return rc;
	s->shrink.on = true;
	s->shrink.pfn = first * BLOCK_FRAMES;
	s->shrink.count = n * BLOCK_FRAMES;
	for (uint32_t pfn = s->shrink.pfn; pfn < s->shrink.pfn + s->shrink.count; pfn++) {
		struct conn *c = conn_find(s, buddy_owner(s->buddy, pfn));

		if (c)
			c->shrink_told = true;
	}
	publish(s);
	*pfn_out = s->shrink.pfn;
	*count_out = s->shrink.count;
	return 0;
}

int serve_shrink_msg(struct serve *s, uint32_t conn, uint32_t timeout_ms, void *buf, size_t cap, size_t *len_out)
{
	struct conn *c = conn_find(s, conn);
	struct proto_msg m = { .type = PROTO_SHRINK }; /* seq 0: not a reply */
	int rc;

	if (!c || !c->shrink_told || !s->shrink.on)
		return -ENOENT;
	m.u.shrink.pfn = s->shrink.pfn;
	m.u.shrink.count = s->shrink.count;
	m.u.shrink.timeout_ms = timeout_ms;
	rc = proto_encode(&m, buf, cap, len_out);
	if (!rc)
		c->shrink_told = false;
	return rc;
}

void serve_shrink_end(struct serve *s)
{
	s->shrink.on = false;
	for (uint32_t i = 0; i < s->cfg.max_clients; i++)
		s->conns[i].shrink_told = false;
	publish(s);
}

int serve_host_take(struct serve *s, uint32_t *pfn_out)
{
	int rc = buddy_alloc(s->buddy, BUDDY_MAX_ORDER, HOST_OWNER, pfn_out);

	if (rc)
		return rc;
	s->host_frames += 1u << BUDDY_MAX_ORDER;
	publish(s);
	return 0;
}

int serve_host_return(struct serve *s, uint32_t pfn)
{
	int rc = buddy_free(s->buddy, pfn, 1u << BUDDY_MAX_ORDER, HOST_OWNER);

	if (rc)
		return rc;
	s->host_frames -= 1u << BUDDY_MAX_ORDER;
	publish(s);
	return 0;
}

/* Client state machine. Every public call takes the client lock, so UCX (in
 * single-thread mode) only ever runs on one thread at a time. Replies are
 * matched to requests by sequence number and handled inside the UCX receive
 * callback; callers wait by driving progress until their condition holds or
 * op-timeout passes, after which the memnode is declared failed. */
#include "client.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "auth.h"
#include "clock.h"
#include "frame_pool.h"
#include "log.h"
#include "options.h"
#include "pagecrypt.h"
#include "proto.h"
#include "transport.h"
#include "client_impl.h"

#define EXHAUSTED_BACKOFF_NS 100000000ull /* after NACK(pool empty): not asked again for 100 ms */
#define AUTO_T_MIN 16

void node_fail(struct node *n, int err)
{
	if (n->joining) { /* a reconnection attempt failed: its caller retries later, quietly */
		if (!n->join_err)
			n->join_err = err;
		return;
	}
	if (n->fail_err)
		return;
	n->fail_err = err;
	if (n->goodbye) /* the session ended as agreed (BYE, DONE): the close is no failure */
		return;
	log_error("memnode %s (nid %u) failed: %s; its frames are unreachable", n->addr, n->nid, strerror(-err));
	hedge_publish(n->c);
}

static int send_msg_bulk(struct node *n, struct proto_msg *m, const void *bulk, size_t bulk_len,
			 struct tp_op *op, void *dst)
{
	uint8_t buf[PROTO_MAX_MSG];
	size_t len;
	int err;

	if (n->npend >= n->credits || n->npend >= MAX_PENDING)
		return -EAGAIN;
	m->seq = ++n->c->seq;
	err = proto_encode(m, buf, sizeof(buf), &len);
	if (err) {
		log_error("cannot encode a %s for %s: %s", proto_type_name(m->type), n->addr, strerror(-err));
		return err;
	}
	err = tp_send(n->ep, buf, len, bulk, bulk ? bulk_len : 0);
	if (err) {
		node_fail(n, err);
		return err;
	}
	n->pend[n->npend++] = (struct pending){ m->seq, now_ns(), m->type, false, op, dst, bulk_len };
	return 0;
}

int send_msg(struct node *n, struct proto_msg *m)
{
	return send_msg_bulk(n, m, NULL, 0, NULL, NULL);
}

static bool pop_pending(struct node *n, uint64_t seq, struct pending *out)
{
	for (unsigned i = 0; i < n->npend; i++) {
		if (n->pend[i].seq != seq)
			continue;
		*out = n->pend[i];
		n->pend[i] = n->pend[--n->npend];
		return true;
	}
	return false;
}

static void update_rtt(struct node *n, const struct pending *p)
{
	double us = (now_ns() - p->t0) / 1000.0;

	n->rtt_us = n->rtt_us ? n->rtt_us + EWMA_WEIGHT * (us - n->rtt_us) : us;
}

/* Consumption since the last chunk arrived, folded into the rate EWMA. */
static void update_rate(struct node *n)
{
	uint64_t now = now_ns();
	double rate;

	if (n->rate_t0 && now > n->rate_t0) {
		rate = n->taken_since / ((now - n->rate_t0) / 1000.0);
		n->rate_fpus = n->rate_fpus ? n->rate_fpus + EWMA_WEIGHT * (rate - n->rate_fpus) : rate;
	}
	n->rate_t0 = now;
	n->taken_since = 0;
}

static uint32_t suggested_threshold(const struct node *n)
{
	double t = ceil(n->rate_fpus * n->rtt_us);

	return t > (1u << 20) ? (1u << 20) : (uint32_t)t;
}

static uint32_t threshold(const struct node *n)
{
	uint32_t s;

	if (!n->c->auto_threshold)
		return n->c->threshold;
	s = suggested_threshold(n);
	return s < AUTO_T_MIN ? AUTO_T_MIN : s;
}

static void handle_error_reply(struct node *n, const struct proto_msg *m, const struct pending *p)
{
	int code = m->u.error.error > 0 ? m->u.error.error : EPROTO; /* the codec accepts any value */

	if (n->joining) /* a reconnection attempt: retried later, said once per attempt at info level */
		log_info("memnode %s refused us: %s (%.*s)", n->addr, strerror(code), (int)m->u.error.text_len,
			 m->u.error.text);
	else
		log_error("memnode %s rejected our %s: %s (%.*s)", n->addr, proto_type_name(p->type),
			  strerror(code), (int)m->u.error.text_len, m->u.error.text);
	if (p->op)
		p->op->status = -code, p->op->done = true;
	else if (p->type == PROTO_ALLOC)
		n->alloc_pending = false, n->nack_order = -1;
	else if (p->type == PROTO_FREE)
		; /* the frames stay ours on the memnode until we disconnect */
	else
		n->reply_err = -code;
	if (p->type == PROTO_HELLO)
		n->fail_err = -code;
}

static void data_landed(void *arg, int status)
{
	struct tp_op *op = arg;

	op->status = status;
	op->done = true;
}

/* DATA must carry exactly the frames the READ asked for, WRITTEN must
 * confirm all of them; anything else fails the transfer. */
static void handle_transfer(struct node *n, const struct proto_msg *m, const struct pending *p,
			    struct tp_bulk *bulk)
{
	size_t moved = (size_t)m->u.done.count * PROTO_FRAME_SIZE;
	bool ok;

	if (p->abandoned) /* given up by a hedge: its pages, unclaimed, are dropped */
		return;
	ok = p->op && moved == p->len &&
		  ((m->type == PROTO_DATA && p->type == PROTO_READ && bulk && bulk->len == p->len) ||
		   (m->type == PROTO_WRITTEN && p->type == PROTO_WRITE && !bulk));

	if (!ok) {
		log_error("memnode %s answered our %s with a mismatched %s", n->addr, proto_type_name(p->type),
			  proto_type_name(m->type));
		if (p->op)
			data_landed(p->op, -EPROTO);
		node_fail(n, -EPROTO);
		return;
	}
	if (m->type == PROTO_WRITTEN)
		data_landed(p->op, 0);
	else if (tp_recv_bulk(n->ep, bulk, p->dst, data_landed, p->op))
		data_landed(p->op, -EIO);
}

static void handle_reply(struct node *n, const struct proto_msg *m, const struct pending *p)
{
	switch (m->type) {
	case PROTO_WELCOME:
		if (m->u.welcome.rkey_len > sizeof(n->rkey))
			break;
		n->nid = m->u.welcome.nid;
		n->credits = m->u.welcome.credits ? m->u.welcome.credits : 1;
		n->base = m->u.welcome.base;
		n->pool_frames = m->u.welcome.pool_frames;
		n->room = m->u.welcome.free_frames;
		memcpy(n->rkey, m->u.welcome.rkey, m->u.welcome.rkey_len);
		n->rkey_len = m->u.welcome.rkey_len;
		n->direct = pool_file_serves(n->addr, n->pool_frames);
		if (n->direct)
			log_info("memnode %s: pages move through its pool file, by copies of our own", n->addr);
		n->welcomed = true;
		break;
	case PROTO_CHUNK:
		n->alloc_pending = false;
		n->allocs++;
		n->room = m->u.chunk.free_frames;
		if (n->direct)
			pool_file_populate(m->u.chunk.pfn, m->u.chunk.count);
		/* We only ask while the pool has a free chunk slot, so this cannot
		 * fail; if it did, the frames stay ours until we disconnect. */
		if (frame_pool_add(&n->fp, m->u.chunk.pfn, m->u.chunk.count))
			log_error("frame pool for %s full; %u frames idle until exit", n->addr, m->u.chunk.count);
		update_rate(n);
		break;
	case PROTO_NACK:
		n->alloc_pending = false;
		n->nacks++;
		n->nack_order = m->u.nack.largest_free_order;
		n->room = m->u.nack.free_frames;
		break;
	case PROTO_STATS_REPLY:
		n->last_stats = *m;
		n->stats_pending = false;
		break;
	case PROTO_GOODBYE:
		n->goodbye = true;
		break;
	case PROTO_DRAINING:
		n->drain_reply = *m;
		n->drain_answered = true;
		break;
	case PROTO_ERROR:
		handle_error_reply(n, m, p);
		break;
	case PROTO_FREED:
		n->room = m->u.freed.free_frames;
		break;
	default:
		break;
	}
}

/* Options sim-rtt and sim-jitter (a simulation, for benchmarks only): a
 * link that much longer. The reply to a request sent at sent is taken in at
 * sent + the real round trip + rtt (+ up to jitter), never earlier than it
 * came. The real round trip is this reply's own, unless the request was out
 * while an earlier reply's wait spun (its reply may have been here long
 * before we looked): then at most the running average of unhindered ones,
 * so a pipeline's replies are delayed once, not one after another. The wait
 * spins, as a client waiting for a reply polls anyway (client-spin). */
static void sim_distance(struct comex_client *c, uint64_t sent)
{
	uint64_t now = now_ns(), real = now - sent, until;

	if (!c->sim_rtt_ns && !c->sim_jitter_ns)
		return;
	if (sent >= c->sim_spun_until || !c->sim_real_ns)
		c->sim_real_ns = c->sim_real_ns ? (7 * c->sim_real_ns + real) / 8 : real;
	else if (real > c->sim_real_ns)
		real = c->sim_real_ns;
	until = sent + real + c->sim_rtt_ns;
	if (c->sim_jitter_ns) {
		c->sim_rng ^= c->sim_rng << 13;
		c->sim_rng ^= c->sim_rng >> 7;
		c->sim_rng ^= c->sim_rng << 17;
		until += c->sim_rng % (c->sim_jitter_ns + 1);
	}
	while ((now = now_ns()) < until)
		;
	c->sim_spun_until = now;
}

void on_recv(void *arg, struct tp_ep *ep, void *user, const void *msg, size_t len, struct tp_bulk *bulk)
{
	struct node *n = user;
	struct proto_msg m;
	struct pending p;
	int err = proto_decode(msg ? msg : "", len, &m);

	(void)arg;
	(void)ep;
	if (err) {
		log_error("malformed %zu-byte reply from memnode %s: %s", len, n->addr, strerror(-err));
		node_fail(n, -EPROTO);
		return;
	}
	if (m.type == PROTO_EVICT) { /* unsolicited: the memnode is leaving */
		if (!n->evicting)
			log_info("memnode %s is leaving: moving our pages (%llu frames there) elsewhere", n->addr,
				 (unsigned long long)m.u.evict.frames);
		n->evicting = true;
		return;
	}
	if (m.type == PROTO_SHRINK) { /* unsolicited: its host needs memory back */
		if (m.u.shrink.pfn >= n->pool_frames || m.u.shrink.count > n->pool_frames - m.u.shrink.pfn) {
			log_warn("memnode %s asked for frames %u+%u back, outside its pool of %llu: ignored", n->addr,
				 m.u.shrink.pfn, m.u.shrink.count, (unsigned long long)n->pool_frames);
			return;
		}
		log_info("memnode %s needs memory back for its host: moving our pages off frames %u-%u elsewhere",
			 n->addr, m.u.shrink.pfn, m.u.shrink.pfn + m.u.shrink.count - 1);
		n->shrink = (struct proto_range){ m.u.shrink.pfn, m.u.shrink.count };
		n->shrink_due = true;
		return;
	}
	if (!pop_pending(n, m.seq, &p)) {
		log_warn("memnode %s sent a %s for unknown request %llu", n->addr, proto_type_name(m.type),
			 (unsigned long long)m.seq);
		return;
	}
	sim_distance(n->c, p.t0);
	update_rtt(n, &p);
	hedge_answered(n, &p);
	if (m.type == PROTO_DATA || m.type == PROTO_WRITTEN || bulk)
		handle_transfer(n, &m, &p, bulk);
	else
		handle_reply(n, &m, &p);
}

void on_error(void *arg, struct tp_ep *ep, void *user, int err)
{
	(void)arg;
	(void)ep;
	node_fail(user, err);
}

/* Wait conditions: each returns true when the wait is over (including on
 * failure, which the caller then reports). */
struct waiter { struct node *n; bool (*cond)(struct node *); struct tp_op *op; };

static bool wait_done(void *arg)
{
	struct waiter *w = arg;

	if (w->op)
		return w->op->done || w->n->fail_err;
	return w->n->fail_err || w->cond(w->n);
}

/* tp_run for up to ns, through signals meant for the program. */
static int run_for(struct node *n, struct waiter *w, uint64_t ns)
{
	int err;

	while ((err = tp_run(n->c->tp, wait_done, w, n->c->spin_ns, ns)) == -EINTR)
		;
	return err;
}

int wait_until(struct node *n, bool (*cond)(struct node *), struct tp_op *op, uint64_t deadline)
{
	struct waiter w = { n, cond, op };
	uint64_t t0 = now_ns(), limit = n->c->timeout_ns;
	int err;

	if (deadline)
		limit = deadline <= t0 ? 1 : deadline - t0 < limit ? deadline - t0 : limit;
	err = run_for(n, &w, limit < WAIT_NAMED_NS ? limit : WAIT_NAMED_NS);
	if (err == -ETIMEDOUT && limit > WAIT_NAMED_NS) { /* a long wait is said, not silent */
		hedge_waiting(n, t0);
		err = run_for(n, &w, limit - WAIT_NAMED_NS);
		hedge_waiting(n, 0);
	}
	if (err == -ETIMEDOUT && limit < n->c->timeout_ns)
		return -ETIME;
	if (err == -ETIMEDOUT) {
		log_error("memnode %s did not answer within %llu ms", n->addr,
			  (unsigned long long)(n->c->timeout_ns / 1000000));
		node_fail(n, -ETIMEDOUT);
	}
	if (n->fail_err && op && !op->done && n->ep) {
		/* The transfer may still touch the caller's buffer: closing the
		 * endpoint cancels it and waits until UCX lets go. */
		tp_close(n->ep);
		n->ep = NULL;
	}
	return err ? err : n->fail_err;
}

int wait_for(struct node *n, bool (*cond)(struct node *), struct tp_op *op)
{
	return wait_until(n, cond, op, 0);
}

bool has_credit(struct node *n) { return n->npend < n->credits && n->npend < MAX_PENDING; }
static bool alloc_settled(struct node *n) { return !n->alloc_pending; }
static bool no_pending(struct node *n) { return n->npend == 0; }
static bool stats_done(struct node *n) { return !n->stats_pending || n->reply_err; }
bool said_goodbye(struct node *n) { return n->goodbye; }
static bool drain_answered(struct node *n) { return n->drain_answered || n->reply_err; }

/* Waits for a credit of n. Hedged (round >= 0), it gives up (-ETIME): a
 * read once it is late itself (hedge_deadline of bytes in round), a write
 * once n is shunned (hedge_shunned); n turns suspect when its oldest
 * request is late. Up to op-timeout, then as a plain wait. */
static int credit_wait(struct node *n, bool read, uint64_t bytes, int round)
{
	uint64_t t0 = now_ns(), by = round >= 0 ? hedge_deadline(n, t0, bytes, (unsigned)round) : 0;

	while (round >= 0 && n->c->hedge_floor_ns && now_ns() - t0 < n->c->timeout_ns) {
		uint64_t slice = now_ns() + MUTE_CHECK_NS;
		int err = wait_until(n, has_credit, NULL, read && by && by < slice ? by : slice);

		if (err != -ETIME)
			return err;
		if (hedge_overdue(n))
			hedge_suspect(n, "a request", 0);
		if ((read && by && now_ns() >= by) || (!read && hedge_shunned(n)))
			return -ETIME;
	}
	return wait_for(n, has_credit, NULL);
}

/* Sends m, first waiting for a credit when all are in use (HPBD §4.2);
 * round as credit_wait's. */
static int send_with_credit_bulk(struct node *n, struct proto_msg *m, const void *bulk, size_t bulk_len,
				 struct tp_op *op, void *dst, int round)
{
	int err;

	if (n->fail_err)
		return n->fail_err;
	if (!has_credit(n)) {
		err = credit_wait(n, m->type == PROTO_READ, bulk_len, round);
		if (err)
			return err;
	}
	return send_msg_bulk(n, m, bulk, bulk_len, op, dst);
}

int send_with_credit(struct node *n, struct proto_msg *m)
{
	return send_with_credit_bulk(n, m, NULL, 0, NULL, NULL, -1);
}

/* encrypt: room for every frame's IV and tag, backed only where used. */
int meta_alloc(struct node *n)
{
	size_t len = n->pool_frames * sizeof(struct pagecrypt_meta);
	void *p;

	if (!n->c->crypt || !len)
		return 0;
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED) {
		log_error("encrypt: no room for the keys of %s's %llu frames: %m", n->addr,
			  (unsigned long long)n->pool_frames);
		return -ENOMEM;
	}
	n->meta = p;
	n->meta_len = len;
	return 0;
}

static int ask_frames(struct node *n, unsigned order)
{
	struct proto_msg m = { .type = PROTO_ALLOC };
	int err;

	m.u.alloc.order = order;
	err = send_with_credit(n, &m);
	if (!err) {
		n->alloc_pending = true;
		n->nack_order = -2;
	}
	return err;
}

/* When the ALLOC in flight was sent (now if none is found). */
static uint64_t alloc_sent(const struct node *n)
{
	for (unsigned i = 0; i < n->npend; i++)
		if (n->pend[i].type == PROTO_ALLOC)
			return n->pend[i].t0;
	return now_ns();
}

/* Makes sure some frames are in n's pool, waiting if we must: asks with the
 * configured order, then with the largest order a NACK says is free. */
static int fill_pool(struct node *n)
{
	unsigned order = n->c->order;

	if (!n->fp.frames && now_ns() < n->exhausted_until)
		return -ENOSPC; /* it said so lately: the caller goes elsewhere without a round trip */
	for (;;) {
		int err;

		if (n->fp.frames)
			return 0;
		if (!n->alloc_pending && (err = ask_frames(n, order)))
			return err;
		err = wait_until(n, alloc_settled, NULL, hedge_elsewhere(n) ? hedge_deadline(n, alloc_sent(n), 0, 0) : 0);
		if (err == -ETIME) { /* late: the caller places the page on another memnode */
			hedge_suspect(n, "an ALLOC", 0);
			return -ENOSPC;
		}
		if (err)
			return err;
		if (n->fp.frames)
			return 0;
		if (n->nack_order < 0 || (unsigned)n->nack_order >= order) {
			n->exhausted_until = now_ns() + EXHAUSTED_BACKOFF_NS;
			return -ENOSPC;
		}
		order = n->nack_order;
	}
}

static void replenish_ahead(struct node *n)
{
	if (n->alloc_pending || n->fp.frames >= threshold(n) ||
	    n->fp.nchunks >= FRAME_POOL_MAX_CHUNKS - 1 || now_ns() < n->exhausted_until || !has_credit(n))
		return;
	ask_frames(n, n->c->order); /* failure is recorded in the node */
}

struct node *get_node(struct comex_client *c, unsigned node)
{
	return node < c->nnodes ? &c->node[node] : NULL;
}

int client_alloc(struct comex_client *c, unsigned node, uint32_t want, uint32_t *pfn_out, uint32_t *count_out)
{
	struct node *n = get_node(c, node);
	int err;

	if (!n || !want)
		return -EINVAL;
	pthread_mutex_lock(&c->lock);
	err = connect_deferred(c);
	if (!err)
		err = n->fail_err ? n->fail_err : n->evicting || hedge_shunned(n) ? -ENOSPC : 0;
	if (!err)
		err = fill_pool(n);
	if (!err) {
		frame_pool_take(&n->fp, want, pfn_out, count_out);
		n->taken_since += *count_out;
		replenish_ahead(n);
	}
	pthread_mutex_unlock(&c->lock);
	return err;
}

/* Each node's room for new pages (first copies: not on a suspect) or for
 * copies (copy: anywhere but a mute suspect, so that a page keeps its
 * number of copies while a memnode is only late). */
static void room_for(struct comex_client *c, uint64_t *out, unsigned nnodes, bool copy)
{
	uint64_t now = now_ns();

	pthread_mutex_lock(&c->lock);
	connect_deferred(c); /* the first eviction's placement: connect now (connect-on-demand) */
	for (unsigned i = 0; i < nnodes; i++) {
		struct node *n = get_node(c, i);

		out[i] = n && n->welcomed && !n->fail_err && !n->evicting &&
				 !(copy ? hedge_shunned(n) : hedge_avoided(n)) && now >= n->exhausted_until ? n->room : 0;
		if (n && (n->slow || n->write_slow) && out[i]) /* placement by room prefers its faster peers */
			out[i] = out[i] / SLOW_ROOM_DIVISOR + 1;
	}
	pthread_mutex_unlock(&c->lock);
}

void client_room(struct comex_client *c, uint64_t *out, unsigned nnodes)
{
	room_for(c, out, nnodes, false);
}

int client_copy_target(struct comex_client *c, uint64_t avoid, unsigned *node_out, uint64_t *room_out)
{
	uint64_t room[OPT_MEMNODE_MAX];
	unsigned n = c->nnodes < OPT_MEMNODE_MAX ? c->nnodes : OPT_MEMNODE_MAX;
	int best = -1;

	room_for(c, room, n, true);
	for (unsigned i = 0; i < n; i++)
		if (!(avoid >> i & 1) && (best < 0 || room[i] > room[best]))
			best = (int)i;
	if (best < 0)
		return -ENOSPC;
	*node_out = (unsigned)best;
	if (room_out)
		*room_out = room[best];
	return 0;
}

static int send_releases(struct node *n)
{
	struct proto_msg m = { .type = PROTO_FREE };
	int err;

	if (!n->nrel || n->fail_err)
		return n->fail_err;
	if (n->suspect && !has_credit(n)) /* it may be hung: they wait here, not the caller */
		return 0;
	m.u.free.nranges = n->nrel;
	m.u.free.ranges = n->rel;
	err = send_with_credit(n, &m);
	if (!err) {
		n->releases_sent += n->rel_frames;
		n->nrel = 0;
		n->rel_frames = 0;
	}
	return err;
}

/* Queues a run for the next FREE, merging with the previous run when adjacent. */
static int queue_release(struct node *n, uint32_t pfn, uint32_t count)
{
	struct proto_range *last = n->nrel ? &n->rel[n->nrel - 1] : NULL;

	if (n->nrel == PROTO_FREE_MAX_RANGES && !send_releases(n) && n->nrel) {
		/* a suspect's queue, full: ours there until the session ends */
		if (!n->releases_dropped++)
			log_warn("memnode %s is suspect and its releases are queued in full: frames released from now "
				 "on stay ours there until our session with it ends", n->addr);
		return 0;
	}
	if (last && last->pfn + last->count == pfn)
		last->count += count;
	else if (last && pfn + count == last->pfn)
		last->pfn = pfn, last->count += count;
	else
		n->rel[n->nrel++] = (struct proto_range){ pfn, count };
	n->rel_frames += count;
	if (n->rel_frames >= n->c->release_batch || n->nrel == PROTO_FREE_MAX_RANGES)
		return send_releases(n);
	return 0;
}

int client_release(struct comex_client *c, unsigned node, uint32_t pfn, uint32_t count)
{
	struct node *n = get_node(c, node);
	int err;

	if (!n || !count || (uint64_t)pfn + count > n->pool_frames)
		return -EINVAL;
	pthread_mutex_lock(&c->lock);
	err = n->fail_err ? n->fail_err : queue_release(n, pfn, count); /* a gone node freed them all */
	pthread_mutex_unlock(&c->lock);
	return err;
}

int client_trim(struct comex_client *c, unsigned node)
{
	struct node *n = get_node(c, node);
	uint32_t pfn, count;
	int err = 0;

	if (!n)
		return -EINVAL;
	pthread_mutex_lock(&c->lock);
	while (!err && !n->fail_err && !frame_pool_take(&n->fp, UINT32_MAX, &pfn, &count))
		err = queue_release(n, pfn, count);
	if (!err)
		err = send_releases(n);
	pthread_mutex_unlock(&c->lock);
	return err;
}

int client_flush(struct comex_client *c)
{
	int first = 0;

	pthread_mutex_lock(&c->lock);
	for (unsigned i = 0; i < c->nnodes; i++) {
		struct node *n = &c->node[i];
		int err;

		if (n->fail_err || n->suspect) /* out of use: its frames went with its session; suspect: later */
			continue;
		err = send_releases(n);
		if (!err)
			err = wait_for(n, no_pending, NULL);
		if (err && !first)
			first = err;
	}
	pthread_mutex_unlock(&c->lock);
	return first;
}

/* encrypt: count pages from src into the bounce buffer, sealed for their frames. */
static int seal(struct node *n, uint32_t pfn, uint32_t count, const uint8_t *src)
{
	struct comex_client *c = n->c;
	unsigned idx = (unsigned)(n - c->node);

	for (uint32_t i = 0; i < count; i++)
		if (pagecrypt_seal(c->crypt, idx, pfn + i, src + (size_t)i * PROTO_FRAME_SIZE, c->bounce + (size_t)i * PROTO_FRAME_SIZE,
				   &n->meta[pfn + i]))
			return -EIO;
	return 0;
}

/* encrypt: opens count pages read into dst in place; a page that fails is
 * named, and the read fails as a whole. */
static int unseal(struct node *n, uint32_t pfn, uint32_t count, uint8_t *dst)
{
	struct comex_client *c = n->c;
	unsigned idx = (unsigned)(n - c->node);

	for (uint32_t i = 0; i < count; i++) {
		if (!pagecrypt_open(c->crypt, idx, pfn + i, dst + (size_t)i * PROTO_FRAME_SIZE, &n->meta[pfn + i]))
			continue;
		log_error("memnode %s: frame %u came back altered, or is not the copy we wrote (authentication failed)",
			  n->addr, pfn + i);
		return -EBADMSG;
	}
	return 0;
}

/* Waits for op; hedged (round >= 0), only until it is late (measured from
 * op->t0, with 2^round times the patience): then it is given up (-ETIME)
 * where the transport can, else waited for on. */
static int finish_wait(struct node *n, enum tp_rma_kind kind, struct tp_op *op, int round)
{
	uint64_t deadline = round >= 0 ? hedge_deadline(n, op->t0, op->bytes, (unsigned)round) : 0;
	int err = wait_until(n, NULL, op, deadline);

	/* a late write to a memnode that still answers is waited for on (it is
	 * suspect meanwhile): given up, it would leave its pages a copy short,
	 * and a stop of their other memnode later would find them nowhere */
	while (err == -ETIME && kind == TP_PUT && !hedge_mute(n)) {
		hedge_suspect(n, "a write", op->bytes);
		err = wait_until(n, NULL, op, now_ns() + MUTE_CHECK_NS);
	}
	if (err == -ETIME && hedge_abandon(n, op, kind == TP_GET ? "a read" : "a write"))
		err = wait_for(n, NULL, op);
	return err;
}

/* Completes a transfer started by transfer_start (op), waiting for it. A
 * transfer of an older session (the node failed and a new session began
 * since, perhaps still joining) failed with that session: its endpoint was
 * closed by node_reset, which cancelled it, and its frames are gone. It is
 * neither waited for nor allowed to touch the new session's endpoint. */
static int transfer_finish(struct node *n, enum tp_rma_kind kind, struct tp_op *op, int round)
{
	int err;

	if (op->tag != n->session)
		return op->done && op->status ? op->status : -ECONNRESET;
	err = op->done ? 0 : finish_wait(n, kind, op, round);

	if (!err)
		err = op->status;
	if (!err && n->rkey_len && !n->direct && kind == TP_PUT) { /* a put completes locally; a flush proves it landed */
		*op = (struct tp_op){ .tag = n->session, .t0 = op->t0, .bytes = op->bytes };
		err = tp_rma(n->ep, TP_FLUSH, NULL, 0, 0, op);
		if (!err)
			err = finish_wait(n, kind, op, round);
		if (!err)
			err = op->status;
	}
	if (err && err != -EPERM && err != -ERANGE && err != -ETIME)
		node_fail(n, err);
	return err;
}

/* The frames [pfn, pfn + count) of node where the runtime can read them in
 * place (the embedded memnode's pool mapped, pages not encrypted), else
 * NULL. Valid while we hold the frames. */
const void *client_frames_at(struct comex_client *c, unsigned node, uint32_t pfn, uint32_t count)
{
	struct node *n = get_node(c, node);

	if (!n || !n->direct || c->crypt || n->fail_err || (uint64_t)pfn + count > n->pool_frames)
		return NULL;
	return pool_file_at(pfn);
}

/* Through the pool file (D38); one-sided when the memnode offered its key
 * (data-path rma); otherwise a READ or WRITE that the memnode checks against
 * the frames it gave us.
 * Starts it; op is done once it completed (during any later wait). */
static int transfer_start(struct node *n, enum tp_rma_kind kind, uint32_t pfn, uint32_t count, void *local,
			  struct tp_op *op, int round)
{
	struct proto_msg m = { .type = kind == TP_GET ? PROTO_READ : PROTO_WRITE };
	int err;

	*op = (struct tp_op){ .tag = n->session, .t0 = now_ns(), .bytes = count * PROTO_FRAME_SIZE };
	if (n->fail_err)
		return n->fail_err;
	if (!count || (uint64_t)pfn + count > n->pool_frames || count > PROTO_MAX_RW_FRAMES)
		return -ERANGE;
	if (n->c->crypt && kind == TP_PUT && (err = seal(n, pfn, count, local)))
		return err;
	if (n->c->crypt && kind == TP_PUT)
		local = n->c->bounce;
	if (n->direct) {
		op->done = true;
		pool_file_copy(kind, local, count, pfn);
	} else if (n->rkey_len) {
		err = tp_rma(n->ep, kind, local, count * PROTO_FRAME_SIZE, n->base + pfn * PROTO_FRAME_SIZE, op);
	} else {
		m.u.rw.pfn = pfn;
		m.u.rw.count = count;
		err = send_with_credit_bulk(n, &m, kind == TP_PUT ? local : NULL, count * PROTO_FRAME_SIZE, op, local,
					    round);
	}
	if (err && err != -EPERM && err != -ERANGE && err != -ETIME)
		node_fail(n, err);
	return err;
}

/* transfer_finish, and a read's pages opened (option encrypt) */
static int transfer_end(struct node *n, enum tp_rma_kind kind, uint32_t pfn, uint32_t count, void *local,
			struct tp_op *op, int round)
{
	int err = transfer_finish(n, kind, op, round);

	if (!err && n->c->crypt && kind == TP_GET && (err = unseal(n, pfn, count, local)))
		node_fail(n, err);
	return err;
}

static int transfer(struct node *n, enum tp_rma_kind kind, uint32_t pfn, uint32_t count, void *local, int round)
{
	struct tp_op op;
	int err = transfer_start(n, kind, pfn, count, local, &op, round);

	return err ? err : transfer_end(n, kind, pfn, count, local, &op, round);
}

/* A hedged read in round 0 is not sent to a suspect node, nor to a slow
 * one when it may go to a faster copy (slow) */
static bool steered_away(struct node *n, int round, bool slow)
{
	return round == 0 && (hedge_avoided(n) || (slow && hedge_slow(n)));
}

/* A read; hedged (round >= 0): given up once late (-ETIME); in round 0,
 * not from a suspect or slow node (-EAGAIN). */
static int read_frames(struct comex_client *c, unsigned node, uint32_t pfn, uint32_t count, void *dst, int round,
		       bool slow)
{
	struct node *n = get_node(c, node);
	int err;

	if (!n)
		return -EINVAL;
	pthread_mutex_lock(&c->lock);
	if (steered_away(n, round, slow))
		err = -EAGAIN;
	else
		err = transfer(n, TP_GET, pfn, count, dst, round);
	pthread_mutex_unlock(&c->lock);
	return err;
}

int client_read(struct comex_client *c, unsigned node, uint32_t pfn, uint32_t count, void *dst)
{
	return read_frames(c, node, pfn, count, dst, -1, true);
}

int client_read_hedged(struct comex_client *c, unsigned node, uint32_t pfn, uint32_t count, void *dst,
		       unsigned round)
{
	return read_frames(c, node, pfn, count, dst, round < HEDGE_ROUNDS ? (int)round : -1, true);
}

int client_read_last(struct comex_client *c, unsigned node, uint32_t pfn, uint32_t count, void *dst)
{
	return read_frames(c, node, pfn, count, dst, 0, false);
}

int client_read_runs(struct comex_client *c, unsigned node, const struct client_run *runs, unsigned nruns,
		     bool hedged, int *status)
{
	struct tp_op ops[CLIENT_MAX_RUNS];
	struct node *n = get_node(c, node);
	int round = hedged ? 0 : -1;
	bool steered;

	if (!n || nruns > CLIENT_MAX_RUNS)
		return -EINVAL;
	pthread_mutex_lock(&c->lock);
	steered = steered_away(n, round, true);
	for (unsigned r = 0; r < nruns; r++)
		status[r] = steered ? -EAGAIN
				    : transfer_start(n, TP_GET, runs[r].pfn, runs[r].count, runs[r].dst, &ops[r], round);
	for (unsigned r = 0; r < nruns; r++)
		if (!status[r])
			status[r] = transfer_end(n, TP_GET, runs[r].pfn, runs[r].count, runs[r].dst, &ops[r], round);
	pthread_mutex_unlock(&c->lock);
	return 0;
}

static int write_sync(struct comex_client *c, unsigned node, uint32_t pfn, uint32_t count, const void *src, int round)
{
	struct node *n = get_node(c, node);
	int err;

	if (!n)
		return -EINVAL;
	pthread_mutex_lock(&c->lock);
	err = transfer(n, TP_PUT, pfn, count, (void *)src, round);
	pthread_mutex_unlock(&c->lock);
	return err;
}

int client_write(struct comex_client *c, unsigned node, uint32_t pfn, uint32_t count, const void *src)
{
	return write_sync(c, node, pfn, count, src, -1);
}

int client_write_hedged(struct comex_client *c, unsigned node, uint32_t pfn, uint32_t count, const void *src)
{
	return write_sync(c, node, pfn, count, src, 0);
}

int client_write_start(struct comex_client *c, unsigned node, uint32_t pfn, uint32_t count, const void *src,
		       bool hedged, struct tp_op *op)
{
	struct node *n = get_node(c, node);
	int err;

	if (!n)
		return -EINVAL;
	pthread_mutex_lock(&c->lock);
	if (c->crypt) { /* sealed pages go out from the one bounce buffer: at once */
		err = transfer(n, TP_PUT, pfn, count, (void *)src, -1);
		*op = (struct tp_op){ .done = true, .status = err, .tag = n->session };
	} else {
		err = transfer_start(n, TP_PUT, pfn, count, (void *)src, op, hedged ? 0 : -1);
	}
	pthread_mutex_unlock(&c->lock);
	return err;
}

static int write_wait(struct comex_client *c, unsigned node, struct tp_op *op, int round)
{
	struct node *n = get_node(c, node);
	int err;

	if (!n)
		return -EINVAL;
	pthread_mutex_lock(&c->lock);
	err = transfer_finish(n, TP_PUT, op, round);
	pthread_mutex_unlock(&c->lock);
	return err;
}

int client_write_wait(struct comex_client *c, unsigned node, struct tp_op *op)
{
	return write_wait(c, node, op, -1);
}

int client_write_wait_hedged(struct comex_client *c, unsigned node, struct tp_op *op)
{
	return write_wait(c, node, op, 0);
}

/* A request whose answer sets what answered() looks for; its ERROR, if any. */
static int ask(struct node *n, struct proto_msg *m, bool (*answered)(struct node *))
{
	int err;

	n->reply_err = 0;
	err = send_with_credit(n, m);
	if (!err)
		err = wait_for(n, answered, NULL);
	return err ? err : n->reply_err;
}

int client_node_stats(struct comex_client *c, unsigned node, struct client_node_stats *out)
{
	struct node *n = get_node(c, node);
	struct proto_msg m = { .type = PROTO_STATS };
	int err;

	if (!n)
		return -EINVAL;
	pthread_mutex_lock(&c->lock);
	n->stats_pending = true;
	err = connect_deferred(c);
	if (!err)
		err = n->fail_err ? n->fail_err : ask(n, &m, stats_done);
	if (!err)
		*out = (struct client_node_stats){
			.nid = n->nid, .pool_free_frames = n->fp.frames,
			.frames_held = n->last_stats.u.stats.client_frames,
			.memnode_free_frames = n->last_stats.u.stats.free_frames,
			.allocs = n->allocs, .nacks = n->nacks, .releases_sent = n->releases_sent,
			.rtt_us = n->rtt_us, .threshold = threshold(n),
			.threshold_suggested = suggested_threshold(n),
		};
	pthread_mutex_unlock(&c->lock);
	return err;
}

static bool always(void *arg) { (void)arg; return true; }

void client_poll(struct comex_client *c, struct client_health *out)
{
	struct client_health h = { 0 };

	pthread_mutex_lock(&c->lock);
	tp_run(c->tp, always, NULL, 0, 0); /* progress once, never waits */
	for (unsigned i = 0; i < c->nnodes && i < 64; i++) {
		struct node *n = &c->node[i];

		hedge_tick(n);
		if (n->fail_err)
			h.out |= 1ull << i;
		else if (n->evicting)
			h.evicting |= 1ull << i;
		else if (n->shrink_due) {
			h.shrinking |= 1ull << i;
			h.shrink[i].pfn = n->shrink.pfn;
			h.shrink[i].count = n->shrink.count;
		}
		if (!n->fail_err && n->suspect)
			h.suspect |= 1ull << i;
		n->shrink_due = false;
	}
	hedge_publish(c); /* joins, failures and evictions since */
	pthread_mutex_unlock(&c->lock);
	*out = h;
}

int client_done(struct comex_client *c, unsigned node, uint64_t moved)
{
	struct node *n = get_node(c, node);
	struct proto_msg m = { .type = PROTO_DONE };
	int err;

	if (!n || !n->evicting)
		return -EINVAL;
	pthread_mutex_lock(&c->lock);
	err = send_releases(n);
	if (!err)
		err = wait_for(n, no_pending, NULL);
	m.u.finished.moved = moved;
	if (!err)
		err = send_with_credit(n, &m);
	if (!err)
		err = wait_for(n, said_goodbye, NULL);
	if (!err) {
		log_info("memnode %s: drained, %llu of our pages moved elsewhere; no longer used", n->addr,
			 (unsigned long long)moved);
		n->fail_err = -ESHUTDOWN;
	}
	if (n->ep)
		tp_close(n->ep);
	n->ep = NULL;
	pthread_mutex_unlock(&c->lock);
	return err;
}

int client_drain(struct comex_client *c, unsigned node, uint32_t *clients_out, uint64_t *frames_out)
{
	struct node *n = get_node(c, node);
	struct proto_msg m = { .type = PROTO_DRAIN };
	int err;

	if (!n)
		return -EINVAL;
	pthread_mutex_lock(&c->lock);
	n->drain_answered = false;
	err = ask(n, &m, drain_answered);
	if (!err) {
		*clients_out = n->drain_reply.u.draining.clients;
		*frames_out = n->drain_reply.u.draining.frames;
		/* we hold nothing there and the memnode may exit any moment: hang up, no BYE */
		n->goodbye = true;
		n->fail_err = -ESHUTDOWN;
		tp_close(n->ep);
		n->ep = NULL;
	}
	pthread_mutex_unlock(&c->lock);
	return err;
}

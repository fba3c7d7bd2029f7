/* hedge: a memnode that answers late (hung in a long pause, starved, behind
 * a slowed link: a gray failure) is given up on per request instead of
 * waited for up to op-timeout. A request later than its deadline is dropped
 * (its answer, if it comes, is read and thrown away) and the caller goes to
 * another copy or another memnode; the memnode becomes suspect: no first
 * copies go there and reads go to its peers. One that says nothing at all
 * (mute: stopped, hung) is shunned: no copies either. The membership tick
 * probes a suspect memnode and takes it back once it answers in time again,
 * after a probation that grows when it keeps relapsing. docs/RELIABILITY.md,
 * D78-D79. */
#include <errno.h>
#include <string.h>

#include "clock.h"
#include "client_impl.h"
#include "log.h"
#include "stats.h"

/* Late means LATE_FACTOR x (mean + DEV_FACTOR x deviation) of recent answer
 * times, as TCP's RTO is mean + 4 deviations: an answer outside that is an
 * outlier even on a busy host, and the extra factor keeps hedges (each an
 * extra read) for real stalls; never under hedge-floor, which covers a
 * scheduler's delays on an overloaded 2-core host (a few ms). */
#define DEV_FACTOR 4.0
#define LATE_FACTOR 4.0
/* Answer times are kept per 64 KiB moved (plus one unit: a 4 KiB read and
 * an ALLOC cost about a round trip), so that a memnode that took the big
 * writes is not taken for a slow one, and a 1 MiB write gets the time it
 * needs. */
#define XFER_UNIT 65536.0
/* A memnode whose reads take SLOW_FACTOR x its peers' (the mean of the
 * healthy ones not slow themselves), and SLOW_GAP_US more (not a few us of
 * noise), is slow: pages with a copy elsewhere are read there (a crawling
 * link, a starved host, a memnode that sleeps where its peer polls). Twice,
 * not 4x (D84): a 10x slower link's 4 KiB reads took 3-4x a fast peer's (30
 * against 8 us). The mean, not the fastest peer: among four alike memnodes
 * the fastest of three noisy peers made a third of the reads move. It
 * still takes writes (and its copies), D79. */
#define SLOW_FACTOR 2.0
#define SLOW_GAP_US 10.0
/* Only reads are compared for this (a memnode that took more write-behind
 * queues its answers behind it, and is not slower for that; writes have
 * their own, laxer rule below, for placement only), with hysteresis: it
 * is no longer slow under SLOW_BACK x its peers', whatever the gap (the
 * gap alone made it flap every few reads). One read in SLOW_SAMPLE still
 * goes to a slow memnode, so its read times stay current. */
#define SLOW_BACK 1.5
#define SLOW_SAMPLE 16u
/* Writes: a memnode whose writes take WRITE_SLOW_FACTOR x its peers' (per
 * XFER_UNIT, the mean of those not write-slow) is write-slow: placement
 * sees an eighth of its room, so first copies and extra copies go to its
 * peers while they have room (D86: a third memnode, 10x slower, took a
 * third of the copies and held eviction back). 4x, not reads' 2x: a
 * memnode that took more write-behind has its answers queued behind it;
 * no longer write-slow under WRITE_BACK x. Reads are not steered for it. */
#define WRITE_SLOW_FACTOR 4.0
#define WRITE_BACK 2.0
/* and WRITE_SLOW_GAP_US more per XFER_UNIT: 64 KiB cost a 1 Gbit/s link
 * 524 us, while alike memnodes on one host differ by up to 330 us in a
 * burst (one that sleeps between requests, one behind a queue of writes:
 * e2e_run_placement moved its pages off them) */
#define WRITE_SLOW_GAP_US 400.0
/* A suspect is taken back after PROBES_OK timely probe answers in a row
 * (one per 50 ms membership tick: 150 ms), doubled for each time it became
 * suspect again within FLAP_WINDOW_NS of being taken back, up to 2^FLAPS_MAX
 * (2.4 s): a memnode that keeps stalling stays out longer. */
#define PROBES_OK 3u
#define FLAP_WINDOW_NS 30000000000ull
#define FLAPS_MAX 4u
/* Mute: asked something HEARD_NS (5 probe ticks) ago or more, and no answer
 * to anything since. A memnode that only answers late still answers its
 * probes; a stopped one does not. */
#define HEARD_NS 250000000ull

/* The board's words are read by other processes at any time: stored whole. */
#define BOARD_PUT(c, field, v) \
	do { if ((c)->board) __atomic_store_n(&(c)->board->field, (v), __ATOMIC_RELAXED); } while (0)

static double units(uint64_t bytes) { return 1.0 + bytes / XFER_UNIT; }

static uint64_t late_after(const struct node *n, uint64_t bytes)
{
	double us = LATE_FACTOR * (n->xfer_us + DEV_FACTOR * n->xfer_dev_us) * units(bytes);
	uint64_t ns = (uint64_t)(us * 1000);

	return ns < n->c->hedge_floor_ns ? n->c->hedge_floor_ns : ns;
}

uint64_t hedge_deadline(const struct node *n, uint64_t t0, uint64_t bytes, unsigned round)
{
	uint64_t late;

	if (!n->c->hedge_floor_ns)
		return 0;
	late = late_after(n, bytes) << round;
	return late < n->c->timeout_ns ? t0 + late : 0; /* op-timeout first: nothing to hedge */
}

static bool usable(const struct node *n)
{
	return n->welcomed && !n->fail_err && !n->evicting;
}

static bool healthy(const struct node *n)
{
	return usable(n) && !n->suspect;
}

static bool heard_lately(const struct node *n, uint64_t now)
{
	return now - n->heard_t < HEARD_NS;
}

/* When n's oldest unanswered request was sent (ns); now when none is. */
static uint64_t oldest_sent(const struct node *n, uint64_t now)
{
	uint64_t oldest = now;

	for (unsigned i = 0; i < n->npend; i++)
		if (n->pend[i].t0 < oldest)
			oldest = n->pend[i].t0;
	return oldest;
}

bool hedge_overdue(const struct node *n)
{
	uint64_t now = now_ns(), due = hedge_deadline(n, oldest_sent(n, now), 0, 0);

	return n->npend && due && now > due;
}

bool hedge_mute(const struct node *n)
{
	uint64_t now = now_ns();

	/* asked long enough ago (a memnode not asked is not mute) */
	return !heard_lately(n, now) && now - oldest_sent(n, now) >= HEARD_NS;
}

/* A peer serves better than n: it is healthy, or n is mute and the peer is
 * not (when every memnode is suspect, the one that only answers late is
 * used, not the one that is stopped). */
bool hedge_elsewhere(const struct node *n)
{
	bool mute = hedge_mute(n);

	for (unsigned i = 0; i < n->c->nnodes; i++) {
		const struct node *p = &n->c->node[i];

		if (p != n && (healthy(p) || (mute && usable(p) && !hedge_mute(p))))
			return true;
	}
	return false;
}

bool hedge_avoided(const struct node *n)
{
	return n->suspect && !n->fail_err && hedge_elsewhere(n);
}

bool hedge_shunned(const struct node *n)
{
	return hedge_avoided(n) && hedge_mute(n);
}

/* The mean answer time per XFER_UNIT of n's healthy peers that are not slow
 * themselves, of reads or (writes) of writes; 0 when none has one. */
static double peers_us(const struct node *n, bool writes)
{
	double sum = 0;
	unsigned k = 0;

	for (unsigned i = 0; i < n->c->nnodes; i++) {
		const struct node *p = &n->c->node[i];
		double us = writes ? p->write_us : p->read_us;

		if (p != n && healthy(p) && !(writes ? p->write_slow : p->slow) && us > 0) {
			sum += us;
			k++;
		}
	}
	return k ? sum / k : 0;
}

/* Whether a memnode answering in us (per XFER_UNIT) against its peers'
 * mean is slow now, slow before (was): it becomes slow above factor x and
 * gap more, and stays so until under back x (hysteresis). */
static bool slower(const struct node *n, double us, double peers, bool was, double factor, double gap, double back)
{
	return n->c->hedge_floor_ns && peers > 0 && (was ? us > back * peers : us > factor * peers && us - peers > gap);
}

bool hedge_slow(struct node *n)
{
	double peers = peers_us(n, false);
	bool slow = slower(n, n->read_us, peers, n->slow, SLOW_FACTOR, SLOW_GAP_US, SLOW_BACK);

	if (slow != n->slow)
		log_info("memnode %s answers reads in %.0f us, its peers in %.0f us: %s", n->addr, n->read_us, peers,
			 slow ? "slow; pages with a copy elsewhere are read there" : "no longer slow");
	n->slow = slow;
	return slow && ++n->slow_reads % SLOW_SAMPLE;
}

void hedge_publish(struct comex_client *c)
{
	uint64_t avoided = 0, suspects = 0;

	for (unsigned i = 0; i < c->nnodes && i < 64; i++) {
		avoided |= (uint64_t)hedge_shunned(&c->node[i]) << i;
		suspects |= (uint64_t)(c->node[i].suspect && !c->node[i].fail_err) << i;
	}
	__atomic_store_n(&c->avoided, avoided, __ATOMIC_RELAXED);
	BOARD_PUT(c, suspect_nodes, suspects);
}

void hedge_suspect(struct node *n, const char *what, uint64_t bytes)
{
	uint64_t now = now_ns();
	struct comex_client *c = n->c;

	if (n->suspect)
		return;
	if (n->back_t && now - n->back_t < FLAP_WINDOW_NS)
		n->flaps += n->flaps < FLAPS_MAX;
	else
		n->flaps = 0;
	n->suspect = true;
	n->suspect_t0 = now;
	n->probes_ok = 0;
	hedge_publish(c);
	if (c->board)
		__atomic_fetch_add(&c->board->memnodes_suspected, 1, __ATOMIC_RELAXED);
	log_warn("memnode %s is late: %s unanswered after %.0f ms; suspect until it answers in time again: nothing "
		 "new goes there, pages with a copy elsewhere are read from that copy",
		 n->addr, what, late_after(n, bytes) / 1e6);
}

/* n's write times against its healthy peers' that are not write-slow. */
static void judge_writes(struct node *n)
{
	double peers = peers_us(n, true);
	bool slow = slower(n, n->write_us, peers, n->write_slow, WRITE_SLOW_FACTOR, WRITE_SLOW_GAP_US, WRITE_BACK);

	if (slow != n->write_slow)
		log_info("memnode %s takes writes in %.0f us per 64 KiB, its peers in %.0f us: %s", n->addr, n->write_us,
			 peers, slow ? "slow; new pages go to its peers while they have room" : "no longer slow to write");
	n->write_slow = slow;
}

static bool abandoned_left(const struct node *n)
{
	for (unsigned i = 0; i < n->npend; i++)
		if (n->pend[i].abandoned)
			return true;
	return false;
}

static void take_back(struct node *n)
{
	n->suspect = false;
	n->back_t = now_ns();
	hedge_publish(n->c);
	log_info("memnode %s answers in time again (%u probes in a row): back in use after %.1f s", n->addr,
		 n->probes_ok, (n->back_t - n->suspect_t0) / 1e9);
}

static void probe_answered(struct node *n, uint64_t ns)
{
	n->probe_seq = 0;
	if (!n->suspect)
		return;
	n->probes_ok = ns < late_after(n, 0) ? n->probes_ok + 1 : 0;
	if (n->probes_ok >= PROBES_OK << n->flaps && !abandoned_left(n))
		take_back(n);
}

/* Answer times of transfers and ALLOCs feed the deadline; not those of a
 * suspect (a stall's answers would stretch it) nor of abandoned requests. */
void hedge_answered(struct node *n, const struct pending *p)
{
	uint64_t now = now_ns(), ns = now - p->t0;
	double us = ns / 1000.0 / units(p->len), dev;

	n->heard_t = now;
	if (p->abandoned) {
		n->late++;
		return;
	}
	if (p->seq == n->probe_seq) {
		probe_answered(n, ns);
		return;
	}
	if (n->suspect || (p->type != PROTO_READ && p->type != PROTO_WRITE && p->type != PROTO_ALLOC))
		return;
	if (!n->xfer_us) {
		n->xfer_us = us;
		n->xfer_dev_us = us / 2;
		return;
	}
	dev = us > n->xfer_us ? us - n->xfer_us : n->xfer_us - us;
	n->xfer_dev_us += EWMA_WEIGHT * (dev - n->xfer_dev_us);
	n->xfer_us += EWMA_WEIGHT * (us - n->xfer_us);
	if (p->type == PROTO_READ)
		n->read_us = n->read_us ? n->read_us + EWMA_WEIGHT * (us - n->read_us) : us;
	if (p->type == PROTO_WRITE) {
		n->write_us = n->write_us ? n->write_us + EWMA_WEIGHT * (us - n->write_us) : us;
		judge_writes(n);
	}
}

int hedge_abandon(struct node *n, struct tp_op *op, const char *what)
{
	int err = n->ep ? tp_abandon(n->ep, op) : -ENOTCONN;

	if (err)
		return err;
	for (unsigned i = 0; i < n->npend; i++)
		if (n->pend[i].op == op)
			n->pend[i] = (struct pending){ .seq = n->pend[i].seq, .t0 = n->pend[i].t0,
						       .type = n->pend[i].type, .abandoned = true };
	hedge_suspect(n, what, op->bytes);
	return 0;
}

void hedge_tick(struct node *n)
{
	struct proto_msg m = { .type = PROTO_STATS };
	uint64_t now = now_ns();

	if (n->fail_err || !n->welcomed)
		return;
	if (now - oldest_sent(n, now) > n->c->timeout_ns) { /* nobody waits on it (abandoned, or written behind) */
		log_error("memnode %s did not answer within %llu ms", n->addr,
			  (unsigned long long)(n->c->timeout_ns / 1000000));
		node_fail(n, -ETIMEDOUT);
		return;
	}
	if (n->suspect && !n->probe_seq && has_credit(n) && !send_msg(n, &m))
		n->probe_seq = m.seq;
}

void hedge_waiting(struct node *n, uint64_t t0)
{
	struct comex_client *c = n->c;

	if (!t0) {
		BOARD_PUT(c, waiting_node, 0);
		return;
	}
	BOARD_PUT(c, waiting_since_ns, t0);
	BOARD_PUT(c, waiting_node, (uint64_t)(n - c->node) + 1);
	log_warn("waiting for memnode %s: no answer for %.1f s, and no other memnode can serve this request (it is "
		 "declared failed after op-timeout, %.0f s)",
		 n->addr, (now_ns() - t0) / 1e9, c->timeout_ns / 1e9);
}

uint64_t client_avoided(const struct comex_client *c)
{
	return __atomic_load_n(&c->avoided, __ATOMIC_RELAXED);
}

void client_board(struct comex_client *c, struct stats_board *b)
{
	pthread_mutex_lock(&c->lock);
	c->board = b;
	pthread_mutex_unlock(&c->lock);
}

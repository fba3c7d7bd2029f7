/* status talks to each memnode as a short-lived client of its own (HELLO,
 * STATS, then STATS again one interval later for the request rate, BYE)
 * rather than through client.c, which connects to all nodes or fails and
 * would take frames: a status must report the nodes it cannot reach and
 * change nothing. Its own connection is left out of the client counts. */
#include "status.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "auth.h"
#include "clock.h"
#include "json.h"
#include "log.h"
#include "options.h"
#include "programs.h"
#include "proto.h"
#include "transport.h"

#define MIB (1024.0 * 1024.0)
#define SPIN_NS 100000
/* A memnode that has not answered within this is shown suspect (hung or
 * slowed: a gray failure) rather than waited for up to op-timeout: a status
 * is what an operator runs while something is wrong. */
#define LATE_NS 1000000000ull

struct sample {
	struct proto_msg m;  /* the STATS_REPLY (usage rows copied below) */
	double t;            /* when it arrived, monotonic seconds */
};

struct probe {
	char addr[256];
	struct tp_ep *ep;
	uint64_t seq;
	uint8_t want;        /* reply type awaited; 0: none */
	bool got, done;      /* done: numbers in, connection closed by us */
	int err;             /* 0, or why the node counts as failed (or suspect, with late) */
	bool late;           /* no answer within LATE_NS */
	unsigned suspected_by; /* programs on this host that hold it suspect */
	char why[160];
	uint16_t nid;
	struct sample a, b;  /* b unused with --interval 0 */
	struct proto_usage usage[PROTO_STATS_MAX_CLIENTS];
	uint32_t nusage;
};

struct status {
	struct tp *tp;
	struct auth_token token;
	uint64_t client_id, timeout_ns;
	double interval_s;
	bool json, clients;
	struct probe *p;
	unsigned n;
};

static void fail(struct probe *p, int err, const char *why)
{
	if (p->err || p->done) /* the first reason; and none after GOODBYE */
		return;
	p->err = err ? err : -EPROTO;
	snprintf(p->why, sizeof(p->why), "%s", why);
}

static void on_recv(void *arg, struct tp_ep *ep, void *user, const void *msg, size_t len, struct tp_bulk *bulk)
{
	struct probe *p = user;
	struct proto_msg m;
	char why[160];

	(void)arg, (void)ep, (void)bulk;
	if (proto_decode(msg, len, &m) || m.seq != p->seq || m.type != p->want) {
		if (!proto_decode(msg, len, &m) && m.type == PROTO_ERROR) {
			snprintf(why, sizeof(why), "refused: %.*s", (int)m.u.error.text_len, m.u.error.text);
			fail(p, -m.u.error.error, why);
		} else {
			fail(p, -EPROTO, "unexpected reply");
		}
		return;
	}
	p->got = true;
	if (m.type == PROTO_WELCOME)
		p->nid = m.u.welcome.nid;
	if (m.type != PROTO_STATS_REPLY)
		return;
	p->nusage = m.u.stats.nusage;
	for (uint32_t i = 0; i < m.u.stats.nusage; i++)
		p->usage[i] = proto_stats_usage(&m, i);
	m.u.stats.raw = NULL; /* points into msg, gone after this call */
	(p->a.t ? &p->b : &p->a)->m = m;
	(p->a.t ? &p->b : &p->a)->t = now_s();
}

static void on_error(void *arg, struct tp_ep *ep, void *user, int err)
{
	char why[160];

	(void)arg, (void)ep;
	snprintf(why, sizeof(why), "connection failed: %s", strerror(-err));
	fail(user, err, why);
}

static bool settled(void *arg)
{
	struct probe *p = arg;

	return p->got || p->err;
}

/* Sends m to p and waits for the reply of type want. */
static int ask(struct status *st, struct probe *p, struct proto_msg *m, uint8_t want)
{
	uint8_t buf[PROTO_MAX_MSG];
	size_t len;
	int err;

	if (p->err)
		return p->err;
	m->seq = ++p->seq;
	p->want = want;
	p->got = false;
	if ((err = proto_encode(m, buf, sizeof(buf), &len)) || (err = tp_send(p->ep, buf, len, NULL, 0))) {
		fail(p, err, strerror(-err));
		return err;
	}
	err = tp_run(st->tp, settled, p, SPIN_NS, st->timeout_ns < LATE_NS ? st->timeout_ns : LATE_NS);
	if (err == -ETIMEDOUT && st->timeout_ns > LATE_NS && !p->err)
		p->late = true;
	if (err == -ETIMEDOUT)
		fail(p, err, p->late ? "no answer within 1 s: hung or slowed" : "no answer within op-timeout");
	else if (err)
		fail(p, err, strerror(-err));
	return p->err;
}

static void connect_and_sample(struct status *st, struct probe *p)
{
	struct proto_msg hello = { .type = PROTO_HELLO }, stats = { .type = PROTO_STATS };
	int err = tp_connect(st->tp, p->addr, p, &p->ep);

	if (err) {
		fail(p, err, "cannot connect");
		return;
	}
	hello.u.hello.client_id = st->client_id;
	hello.u.hello.token_len = (uint16_t)st->token.len;
	hello.u.hello.token = st->token.bytes;
	if (!ask(st, p, &hello, PROTO_WELCOME))
		ask(st, p, &stats, PROTO_STATS_REPLY);
}

static void second_sample_and_bye(struct status *st, struct probe *p)
{
	struct proto_msg stats = { .type = PROTO_STATS }, bye = { .type = PROTO_BYE };

	if (st->interval_s > 0)
		ask(st, p, &stats, PROTO_STATS_REPLY);
	if (!p->err && ask(st, p, &bye, PROTO_GOODBYE))
		p->err = 0; /* the numbers are in; a lost GOODBYE does not make the node failed */
	p->done = !p->err;
	if (p->ep)
		tp_close(p->ep);
	p->ep = NULL;
}

/* The figures of one node that the table and the JSON show. */
struct row {
	const char *state;
	double pool, used, free, rate;
	uint32_t clients;
};

static struct row row_of(const struct status *st, const struct probe *p)
{
	const struct proto_msg *m = st->interval_s > 0 ? &p->b.m : &p->a.m;
	struct row r = { .state = p->late ? "suspect"
				  : p->err ? "failed"
				  : m->u.stats.flags & PROTO_STATS_DRAINING ? "draining"
				  : p->suspected_by ? "suspect" : "up" };
	double dt = p->b.t - p->a.t;

	if (p->err)
		return r;
	r.pool = (double)m->u.stats.pool_frames * PROTO_FRAME_SIZE;
	r.free = (double)m->u.stats.free_frames * PROTO_FRAME_SIZE;
	r.used = r.pool - r.free;
	r.clients = m->u.stats.clients ? m->u.stats.clients - 1 : 0; /* not us */
	if (st->interval_s > 0 && dt > 0) /* less our own second STATS */
		r.rate = ((double)p->b.m.u.stats.requests - (double)p->a.m.u.stats.requests - 1) / dt;
	else if (m->u.stats.uptime_ms)
		r.rate = (double)m->u.stats.requests / (m->u.stats.uptime_ms / 1e3);
	if (r.rate < 0)
		r.rate = 0;
	return r;
}

/* max/mean of used over the nodes that answered; -1 when nothing is used. */
static double imbalance(const struct status *st, double *pool_out, double *used_out, unsigned *up_out)
{
	double max = 0, sum = 0, pool = 0;
	unsigned up = 0;

	for (unsigned i = 0; i < st->n; i++) {
		struct row r = row_of(st, &st->p[i]);

		if (st->p[i].err)
			continue;
		up++;
		sum += r.used;
		pool += r.pool;
		if (r.used > max)
			max = r.used;
	}
	*pool_out = pool, *used_out = sum, *up_out = up;
	return up && sum > 0 ? max / (sum / up) : -1;
}

/* Memnodes late for us (late) and those that answered us but are late for
 * programs here (among imbalance()'s up). */
static void count_suspects(const struct status *st, unsigned *late_out, unsigned *up_out)
{
	unsigned late = 0, up = 0;

	for (unsigned i = 0; i < st->n; i++) {
		late += st->p[i].late;
		up += !st->p[i].err && st->p[i].suspected_by;
	}
	*late_out = late, *up_out = up;
}

static void print_usage_rows(const struct status *st, const struct probe *p)
{
	for (uint32_t i = 0; i < p->nusage; i++)
		if (p->usage[i].client_id != st->client_id)
			printf("    client %#018" PRIx64 " %10.1fM\n", p->usage[i].client_id,
			       p->usage[i].frames * (double)PROTO_FRAME_SIZE / MIB);
}

static void print_table(const struct status *st)
{
	double pool, used, imb;
	unsigned up, late, late_up;

	imb = imbalance(st, &pool, &used, &up);
	count_suspects(st, &late, &late_up);
	printf("%-24s %5s %-8s %10s %10s %10s %6s %7s %9s\n", "MEMNODE", "NID", "STATE", "POOL", "USED", "FREE",
	       "USE%", "CLIENTS", "REQ/s");
	for (unsigned i = 0; i < st->n; i++) {
		const struct probe *p = &st->p[i];
		struct row r = row_of(st, p);

		if (p->err) {
			printf("%-24s %5s %-8s (%s)\n", p->addr, "-", r.state, p->why);
			continue;
		}
		printf("%-24s %5u %-8s %9.1fM %9.1fM %9.1fM %5.1f%% %7u %9.1f", p->addr, p->nid, r.state,
		       r.pool / MIB, r.used / MIB, r.free / MIB, r.pool ? 100 * r.used / r.pool : 0, r.clients, r.rate);
		if (p->suspected_by)
			printf(" (late for %u program%s here)", p->suspected_by, p->suspected_by == 1 ? "" : "s");
		printf("\n");
		if (st->clients)
			print_usage_rows(st, p);
	}
	printf("%u memnode%s: %u up, %u suspect, %u failed; pool %.1fM, used %.1fM (%.1f%%); imbalance (max/mean used) ",
	       st->n, st->n == 1 ? "" : "s", up - late_up, late + late_up, st->n - up - late, pool / MIB, used / MIB, pool ? 100 * used / pool : 0);
	if (imb < 0)
		printf("- (nothing used)\n");
	else
		printf("%.2f\n", imb);
}

/* The text's room: a memnode's row with every client's, the totals */
#define JSON_ROOM(n) (1024 + (size_t)(n) * (1024 + PROTO_STATS_MAX_CLIENTS * 96))

static int print_json(const struct status *st)
{
	double pool, used, imb;
	char *buf = malloc(JSON_ROOM(st->n)), id[24];
	struct json j;
	unsigned up, late, late_up;
	int len;

	if (!buf)
		return -ENOMEM;
	imb = imbalance(st, &pool, &used, &up);
	count_suspects(st, &late, &late_up);
	json_init(&j, buf, JSON_ROOM(st->n));
	json_open(&j, NULL, '{', true);
	json_str(&j, "schema", "comex-status/1");
	json_num(&j, "interval_s", "%g", st->interval_s);
	json_open(&j, "memnodes", '[', true);
	for (unsigned i = 0; i < st->n; i++) {
		const struct probe *p = &st->p[i];
		struct row r = row_of(st, p);

		json_open(&j, NULL, '{', false);
		json_str(&j, "addr", p->addr);
		json_str(&j, "state", r.state);
		if (p->err) {
			json_str(&j, "error", p->why);
			json_close(&j);
			continue;
		}
		json_uint(&j, "nid", p->nid);
		json_num(&j, "pool_bytes", "%.0f", r.pool);
		json_num(&j, "used_bytes", "%.0f", r.used);
		json_num(&j, "free_bytes", "%.0f", r.free);
		json_uint(&j, "clients", r.clients);
		json_num(&j, "requests_per_s", "%.1f", r.rate);
		json_uint(&j, "suspected_by", p->suspected_by);
		json_open(&j, "clients_usage", '[', false);
		for (uint32_t k = 0; k < p->nusage; k++) {
			if (p->usage[k].client_id == st->client_id)
				continue;
			snprintf(id, sizeof(id), "%#" PRIx64, p->usage[k].client_id);
			json_open(&j, NULL, '{', false);
			json_str(&j, "client_id", id);
			json_uint(&j, "used_bytes", p->usage[k].frames * PROTO_FRAME_SIZE);
			json_close(&j);
		}
		json_close(&j);
		json_close(&j);
	}
	json_close(&j);
	json_uint(&j, "up", up - late_up);
	json_uint(&j, "suspect", late + late_up);
	json_uint(&j, "failed", st->n - up - late);
	json_num(&j, "pool_bytes", "%.0f", pool);
	json_num(&j, "used_bytes", "%.0f", used);
	json_num(&j, "imbalance", "%.4f", imb < 0 ? NAN : imb);
	json_close(&j);
	if ((len = json_end(&j)) > 0)
		fwrite(buf, 1, (size_t)len, stdout);
	free(buf);
	return len < 0 ? len : 0;
}

static void probe_all(struct status *st)
{
	for (unsigned i = 0; i < st->n; i++)
		connect_and_sample(st, &st->p[i]);
	if (st->interval_s > 0)
		sleep_s(st->interval_s);
	for (unsigned i = 0; i < st->n; i++)
		second_sample_and_bye(st, &st->p[i]);
}

/* What the programs on this host think: a memnode late for them is
 * suspect even when it answered us. */
static void note_programs(struct status *st)
{
	struct program *ps;
	size_t n;

	if (programs_snapshot(0, &ps, &n))
		return;
	for (size_t k = 0; k < n; k++)
		for (int i = 0; i < ps[k].s.nodes && i < OPT_MEMNODE_MAX; i++)
			for (unsigned j = 0; j < st->n && ps[k].s.board.suspect_nodes >> i & 1; j++)
				st->p[j].suspected_by += !strcmp(ps[k].s.node_addr[i], st->p[j].addr);
	free(ps);
}

int status_main(const struct options *o, const struct status_args *a)
{
	struct tp_callbacks cb = { .recv = on_recv, .error = on_error };
	struct status st = { .interval_s = a->interval_s, .json = a->json, .clients = a->clients,
			     .client_id = 0x5354415400000000ull | (uint64_t)getpid() };
	char addr[256];
	int failed = 0, err;

	if (*opt_str(o, OPT_TOKEN_FILE) && auth_token_load(opt_str(o, OPT_TOKEN_FILE), &st.token))
		return 2;
	st.timeout_ns = opt_num(o, OPT_OP_TIMEOUT);
	while (!opt_list_item(o, OPT_MEMNODE, st.n, addr, sizeof(addr)))
		st.n++;
	st.p = calloc(st.n ? st.n : 1, sizeof(*st.p));
	if (!st.p || tp_create(&cb, TP_RMA | (opt_num(o, OPT_SHM) ? TP_SHM : 0), &st.tp)) {
		free(st.p);
		return 1;
	}
	for (unsigned i = 0; i < st.n; i++)
		opt_list_item(o, OPT_MEMNODE, i, st.p[i].addr, sizeof(st.p[i].addr));
	probe_all(&st);
	note_programs(&st);
	if (st.json) {
		if ((err = print_json(&st))) {
			errno = -err;
			log_error("status: cannot write the JSON: %m");
			failed = 1;
		}
	} else
		print_table(&st);
	for (unsigned i = 0; i < st.n; i++)
		failed |= st.p[i].err != 0;
	tp_destroy(st.tp);
	explicit_bzero(&st.token, sizeof(st.token));
	free(st.p);
	return failed ? 1 : 0;
}

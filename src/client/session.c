/* session: a memnode's session from HELLO to BYE. The first connections at
 * start (a memnode that cannot be reached yet is waited for up to
 * connect-timeout when it is the only hope, else tried again in the
 * background), a rejoin after a failure, one step per call, a memnode added
 * while running, and the goodbyes at close. */
#include "client.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "client_impl.h"
#include "log.h"

/* A fresh session's state: everything of the old one forgotten but the
 * address (its frames died with it, or were given back at DONE). */
static void node_reset(struct node *n)
{
	struct comex_client *c = n->c;
	char addr[sizeof(n->addr)];
	uint32_t session = n->session + 1;

	if (n->ep)
		tp_close(n->ep);
	if (n->meta)
		munmap(n->meta, n->meta_len);
	memcpy(addr, n->addr, sizeof(addr));
	memset(n, 0, sizeof(*n));
	memcpy(n->addr, addr, sizeof(addr));
	n->c = c;
	n->session = session;
	frame_pool_init(&n->fp);
	n->nack_order = -2;
	n->fail_err = -ENOTCONN;
}

static int join_start(struct node *n)
{
	struct proto_msg m = { .type = PROTO_HELLO };
	int err;

	node_reset(n);
	err = tp_connect(n->c->tp, n->addr, n, &n->ep);
	if (err)
		return err;
	n->joining = true;
	n->join_t0 = now_ns();
	n->credits = 1; /* until WELCOME grants more */
	m.u.hello.client_id = n->c->client_id;
	m.u.hello.token_len = n->c->token.len;
	m.u.hello.token = n->c->token.bytes;
	err = send_msg(n, &m);
	return err ? err : -EINPROGRESS;
}

static int join_check(struct node *n)
{
	int err = n->join_err ? n->join_err : n->reply_err;

	if (!n->ep) /* closed under the join: this attempt failed */
		err = -ENOTCONN;
	if (!err && !n->welcomed)
		return now_ns() - n->join_t0 < n->c->timeout_ns ? -EINPROGRESS : -ETIMEDOUT;
	if (!err && n->rkey_len)
		err = tp_set_rkey(n->ep, n->rkey, n->rkey_len);
	if (!err)
		err = meta_alloc(n);
	n->joining = false;
	if (err) {
		if (n->ep)
			tp_close(n->ep);
		n->ep = NULL;
		n->fail_err = err;
		return err;
	}
	n->fail_err = 0;
	return 0;
}

int client_rejoin(struct comex_client *c, unsigned node)
{
	struct node *n = get_node(c, node);
	int err;

	if (!n)
		return -EINVAL;
	pthread_mutex_lock(&c->lock);
	if (!n->fail_err)
		err = 0;
	else if (!n->joining)
		err = join_start(n);
	else if (!(err = join_check(n)))
		log_info("memnode %s (nid %u) connected: new pages may go there", n->addr, n->nid);
	if (err && err != -EINPROGRESS && n->joining) { /* the start failed */
		n->joining = false;
		n->fail_err = err;
	}
	pthread_mutex_unlock(&c->lock);
	return err;
}

int client_add_node(struct comex_client *c, const char *addr, unsigned *node_out)
{
	int err = 0;

	pthread_mutex_lock(&c->lock);
	for (unsigned i = 0; i < c->nnodes && !err; i++)
		if (!strcmp(c->node[i].addr, addr))
			err = -EEXIST;
	if (!err && c->nnodes == OPT_MEMNODE_MAX)
		err = -E2BIG;
	if (!err && strlen(addr) >= sizeof(c->node[0].addr))
		err = -ENAMETOOLONG;
	if (!err) {
		struct node *n = &c->node[c->nnodes];

		snprintf(n->addr, sizeof(n->addr), "%s", addr);
		n->c = c;
		node_reset(n);
		*node_out = c->nnodes++;
	}
	pthread_mutex_unlock(&c->lock);
	return err;
}

unsigned client_nodes(const struct comex_client *c)
{
	return c->nnodes;
}

static uint64_t make_client_id(void)
{
	char host[256] = "";
	uint64_t h = 1469598103934665603ull; /* FNV-1a of the host name, then the pid */

	gethostname(host, sizeof(host) - 1);
	for (const char *p = host; *p; p++)
		h = (h ^ (uint8_t)*p) * 1099511628211ull;
	return (h << 32) | (uint32_t)getpid();
}

static int configure(struct comex_client *c, const struct options *o)
{
	const char *tok = opt_str(o, OPT_TOKEN_FILE);

	c->client_id = make_client_id();
	c->spin_ns = opt_num(o, OPT_CLIENT_SPIN);
	c->timeout_ns = opt_num(o, OPT_OP_TIMEOUT);
	c->hedge_floor_ns = opt_num(o, OPT_HEDGE_FLOOR);
	c->connect_timeout_ns = opt_num(o, OPT_CONNECT_TIMEOUT);
	c->sim_rtt_ns = opt_num(o, OPT_SIM_RTT);
	c->sim_jitter_ns = opt_num(o, OPT_SIM_JITTER);
	c->sim_rng = c->client_id | 1;
	c->auto_threshold = opt_num(o, OPT_REPLENISH_THRESHOLD) == OPT_AUTO;
	c->threshold = c->auto_threshold ? 0 : (uint32_t)opt_num(o, OPT_REPLENISH_THRESHOLD);
	c->order = opt_num(o, OPT_REPLENISH_ORDER);
	c->release_batch = opt_num(o, OPT_RELEASE_BATCH);
	if (c->order > 10) {
		log_error("option replenish-order: %u is above the largest order 10", c->order);
		return -EINVAL;
	}
	if (!c->timeout_ns) {
		log_error("option op-timeout: must be above 0, or a dead memnode would hang the program");
		return -EINVAL;
	}
	if (opt_num(o, OPT_ENCRYPT)) {
		c->bounce = mmap(NULL, (size_t)PROTO_MAX_RW_FRAMES * PROTO_FRAME_SIZE, PROT_READ | PROT_WRITE,
				 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (c->bounce == MAP_FAILED) {
			c->bounce = NULL;
			return -ENOMEM;
		}
		int err = pagecrypt_create(&c->crypt);
		if (err)
			return err;
	}
	return *tok ? auth_token_load(tok, &c->token) : 0;
}

static void client_free(struct comex_client *c)
{
	for (unsigned i = 0; i < c->nnodes; i++)
		if (c->node[i].meta)
			munmap(c->node[i].meta, c->node[i].meta_len);
	if (c->bounce)
		munmap(c->bounce, (size_t)PROTO_MAX_RW_FRAMES * PROTO_FRAME_SIZE);
	pagecrypt_destroy(c->crypt);
	explicit_bzero(&c->token, sizeof(c->token));
	free(c);
}

/* Failures that a later rejoin may overcome; any other (a refused token, a
 * bad address, another protocol version) is the configuration's. */
static bool unreachable(int err)
{
	return err == -ECONNREFUSED || err == -ETIMEDOUT || err == -EHOSTUNREACH || err == -ENETUNREACH ||
	       err == -ECONNRESET || err == -ENOTCONN || err == -ECONNABORTED;
}

static bool join_settled(void *arg)
{
	struct node *n = arg;

	return n->welcomed || n->reply_err || n->join_err;
}

/* A session with node n, started and waited for (as a rejoin's, but here). */
static int join_wait(struct comex_client *c, struct node *n)
{
	int err = join_start(n);

	while (err == -EINPROGRESS) {
		int w = tp_run(c->tp, join_settled, n, c->spin_ns, c->timeout_ns);

		err = join_check(n);
		if (err == -EINPROGRESS && w && w != -EINTR)
			err = w;
	}
	if (err && n->joining) { /* join_start failed */
		n->joining = false;
		n->fail_err = err;
	}
	return err;
}

static void handshake_failed(const struct node *n, int err)
{
	log_error("memnode %s: handshake failed: %s%s", n->addr, strerror(-err),
		  err == -EACCES ? " (does our token-file hold the memnode's token?)" : "");
}

/* Node c->nnodes, at addr, without a session yet. */
static int name_node(struct comex_client *c, const char *addr)
{
	struct node *n = &c->node[c->nnodes];

	if (c->nnodes == OPT_MEMNODE_MAX) {
		log_error("option memnode: more than %d memnodes", OPT_MEMNODE_MAX);
		return -E2BIG;
	}
	snprintf(n->addr, sizeof(n->addr), "%s", addr);
	n->c = c;
	c->nnodes++;
	return 0;
}

/* Node n's first session. A memnode that cannot be reached is kept out of
 * use (fail_err set; the caller decides what to do about it). */
static int first_join(struct comex_client *c, struct node *n)
{
	int err = join_wait(c, n);

	if (err && !unreachable(err))
		handshake_failed(n, err);
	return err && unreachable(err) ? 0 : err;
}

static int connect_node(struct comex_client *c, const char *addr)
{
	int err = name_node(c, addr);

	return err ? err : first_join(c, &c->node[c->nnodes - 1]);
}

static bool any_reached(const struct comex_client *c)
{
	for (unsigned i = 0; i < c->nnodes; i++)
		if (!c->node[i].fail_err)
			return true;
	return false;
}

/* None of the memnodes could be reached: each is tried again once a second
 * until one answers or connect-timeout has passed. A memnode that answers
 * but refuses us ends the wait with its error. */
#define CONNECT_RETRY_NS 1000000000ull

static int wait_for_one(struct comex_client *c)
{
	uint64_t until = now_ns() + c->connect_timeout_ns;

	log_warn("none of the %u memnodes can be reached yet (%s: %s); trying them for up to %llu s",
		 c->nnodes, c->node[0].addr, strerror(-c->node[0].fail_err),
		 (unsigned long long)(c->connect_timeout_ns / 1000000000));
	for (uint64_t now; (now = now_ns()) < until;) {
		uint64_t nap = until - now < CONNECT_RETRY_NS ? until - now : CONNECT_RETRY_NS;
		struct timespec ts = { .tv_sec = (time_t)(nap / 1000000000), .tv_nsec = (long)(nap % 1000000000) };

		nanosleep(&ts, NULL);
		for (unsigned i = 0; i < c->nnodes; i++) {
			int err = join_wait(c, &c->node[i]);

			if (!err) {
				log_info("memnode %s connected", c->node[i].addr);
				return 0;
			}
			if (!unreachable(err)) {
				handshake_failed(&c->node[i], err);
				return err;
			}
		}
	}
	return -EHOSTUNREACH;
}

/* After the first round: with none reached, waited for; then the memnodes
 * that cannot be reached are said, and tried again in the background while
 * another serves. */
static int settle_unreached(struct comex_client *c)
{
	if (!any_reached(c)) {
		int err = c->connect_timeout_ns ? wait_for_one(c) : -EHOSTUNREACH;

		if (err == -EHOSTUNREACH)
			log_error("option memnode: none of the %u memnodes could be reached%s (%s: %s)", c->nnodes,
				  c->connect_timeout_ns ? " within connect-timeout" : "", c->node[0].addr,
				  strerror(-c->node[0].fail_err));
		if (err)
			return err;
	}
	for (unsigned i = 0; i < c->nnodes; i++)
		if (c->node[i].fail_err)
			log_warn("memnode %s: cannot reach it (%s); it is tried again in the background",
				 c->node[i].addr, strerror(-c->node[i].fail_err));
	return 0;
}

int connect_deferred(struct comex_client *c)
{
	int err = 0;

	if (!c->deferred)
		return 0;
	c->deferred = false;
	for (unsigned i = 0; i < c->nnodes && !err; i++)
		err = first_join(c, &c->node[i]);
	if (!err)
		err = settle_unreached(c);
	for (unsigned i = 0; i < c->nnodes && err; i++) /* out of use: tried again in the background */
		if (!c->node[i].fail_err)
			c->node[i].fail_err = err;
	return err;
}

int client_connect(const struct options *o, struct comex_client **out)
{
	struct tp_callbacks cb = { .recv = on_recv, .error = on_error };
	struct comex_client *c = calloc(1, sizeof(*c));
	char addr[256];
	int err;

	if (!c)
		return -ENOMEM;
	pthread_mutex_init(&c->lock, NULL);
	cb.arg = c;
	pool_file_take();
	err = configure(c, o);
	if (err)
		goto cleanup_client;
	err = tp_create(&cb, TP_RMA | (opt_num(o, OPT_SHM) ? TP_SHM : 0) | tp_choice_flags(opt_num(o, OPT_TRANSPORT)), &c->tp);
	if (err)
		goto cleanup_client;
	c->deferred = opt_num(o, OPT_CONNECT_ON_DEMAND);
	for (unsigned i = 0; !(err = opt_list_item(o, OPT_MEMNODE, i, addr, sizeof(addr))); i++)
		if ((err = c->deferred ? name_node(c, addr) : connect_node(c, addr)))
			goto cleanup_tp;
	if (!c->nnodes) {
		log_error("option memnode: no memnode given");
		err = -EINVAL;
		goto cleanup_tp;
	}
	if (!c->deferred && (err = settle_unreached(c)))
		goto cleanup_tp;
	*out = c;
	return 0;

cleanup_tp:
	client_close(c);
	return err;
cleanup_client:
	client_free(c);
	return err;
}

void client_close(struct comex_client *c)
{
	if (!c)
		return;
	client_flush(c);
	pthread_mutex_lock(&c->lock);
	for (unsigned i = 0; i < c->nnodes; i++) {
		struct node *n = &c->node[i];
		struct proto_msg m = { .type = PROTO_BYE };

		if (n->ep && !n->fail_err && !n->suspect && !send_with_credit(n, &m)) /* a suspect may hang: no wait */
			wait_for(n, said_goodbye, NULL);
		if (n->ep)
			tp_close(n->ep);
		n->ep = NULL;
	}
	pthread_mutex_unlock(&c->lock);
	tp_destroy(c->tp);
	pthread_mutex_destroy(&c->lock);
	client_free(c);
}

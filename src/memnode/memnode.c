/* The memnode event loop. One thread: UCX progress, request handling and
 * connection teardown all happen here, so serve.c and buddy.c need no locks.
 * Connections are closed outside UCX callbacks: a callback only marks them. */
#include "memnode.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include "auth.h"
#include "clock.h"
#include "elastic.h"
#include "log.h"
#include "noreclaim.h"
#include "memnode_metrics.h"
#include "options.h"
#include "pollcore.h"
#include "pool.h"
#include "proto.h"
#include "serve.h"
#include "sysmem.h"
#include "transport.h"
#include "wakeup.h"

enum data_path { DATA_PATH_VALIDATED, DATA_PATH_RMA }; /* option data-path, in its order */

/* A client that was told to go (bad token, BYE) gets this long to read the
 * reply and hang up before we force the connection closed. */
#define CLOSE_GRACE_NS 1000000000ull
struct mconn {
	uint32_t conn;           /* serve.c connection id; 0 once disconnected */
	struct tp_ep *ep;
	uint64_t close_at;       /* 0: open; else monotonic ns when to force-close */
	bool evict_sent;         /* draining: this client has been sent its EVICT */
	struct mconn *next;
};

struct memnode {
	struct tp *tp;
	struct serve *serve;
	struct mconn *conns;
	unsigned close_due;      /* conns whose close is due now (error seen) */
	uint64_t drain_ns;       /* option drain-timeout; 0: a signal stops at once */
	uint64_t drain_until;    /* draining: monotonic ns when it gives up (UINT64_MAX: never); 0: not draining */
	struct elastic *elastic; /* option host-reserve: gives memory back to the host; NULL: off */
	struct pollcore *pollcore; /* option idle-spin: the claim on a polling core; NULL: never polls */
	uint64_t corrupt_every;  /* option test-corrupt-reads; 0: off */
	uint64_t reads, writes;  /* READs answered, WRITEs landed, for the test hooks */
	uint64_t late_every, late_ns; /* options test-late-reads, test-late-by; 0: off */
	uint64_t late_writes;    /* option test-late-writes; 0: off */
	uint64_t idle_since;      /* lingering: monotonic ns since no client is connected; 0: one is */
	bool lingering;
	uint8_t reply[PROTO_MAX_MSG];
};

/* SIGTERM/SIGINT: the first starts a drain (with drain-timeout > 0), the
 * second stops at once. */
static volatile sig_atomic_t signals_seen;

static void on_signal(int sig)
{
	(void)sig;
	signals_seen++;
}

/* The embedded memnode of `comex run` whose program ended (docs/DECISIONS.md
 * D46): SIGUSR1, stay while clients are connected (forked children of the
 * program that outlive it, a daemon); SIGUSR2, also wait LINGER_FIRST_NS
 * for one to connect (the program handed pages to children that are about
 * to). It then no longer dies with its launcher, says so with
 * MEMNODE_LINGER_FILE, and exits once no client has been connected for
 * LINGER_IDLE_NS. */
#define LINGER_FIRST_NS 3000000000ull
#define LINGER_IDLE_NS 2000000000ull
static volatile sig_atomic_t linger_asked; /* 0, SIGUSR1 or SIGUSR2 */

static void on_linger(int sig)
{
	linger_asked = sig;
}

static void *on_accept(void *arg, struct tp_ep *ep)
{
	struct memnode *m = arg;
	struct mconn *c = calloc(1, sizeof(*c));

	if (!c) {
		log_error("out of memory for a new connection; refusing it");
		return NULL;
	}
	if (serve_connect(m->serve, &c->conn)) {
		log_warn("refusing a connection: max-clients reached");
		free(c);
		return NULL;
	}
	c->ep = ep;
	c->next = m->conns;
	m->conns = c;
	return c;
}

static void schedule_close(struct memnode *m, struct mconn *c, bool now)
{
	if (c->conn) {
		serve_disconnect(m->serve, c->conn);
		c->conn = 0;
	}
	if (now) {
		if (c->close_at != 1)
			m->close_due++;
		c->close_at = 1;
	} else if (!c->close_at) {
		c->close_at = now_ns() + CLOSE_GRACE_NS;
	}
}

static struct mconn *find_conn(struct memnode *m, uint32_t conn)
{
	for (struct mconn *c = m->conns; c; c = c->next)
		if (c->conn == conn)
			return c;
	return NULL;
}

static void send_reply(struct memnode *m, struct mconn *c, const void *reply, size_t rlen,
		       const void *bulk, size_t bulk_len)
{
	int err = tp_send(c->ep, reply, rlen, bulk, bulk_len);

	if (err) {
		log_warn("cannot send a reply to connection %u: %s", c->conn, strerror(-err));
		schedule_close(m, c, false);
	}
}

/* A WRITE whose pages are on their way into the pool; the WRITTEN reply
 * waits for them. Holds the conn id, not the conn, which may go meanwhile. */
struct landing {
	struct memnode *m;
	uint32_t conn;
	size_t rlen;
	uint8_t reply[];
};

static void stand_still(const struct memnode *m);

static void write_landed(void *arg, int status)
{
	struct landing *l = arg;
	struct mconn *c = find_conn(l->m, l->conn);

	if (c && !status && l->m->late_writes && ++l->m->writes % l->m->late_writes == 0)
		stand_still(l->m); /* test hook test-late-writes */
	if (c && !status)
		send_reply(l->m, c, l->reply, l->rlen, NULL, 0);
	else if (c) {
		log_warn("connection %u: receiving WRITE data failed: %s", l->conn, strerror(-status));
		schedule_close(l->m, c, false);
	}
	free(l);
}

static void receive_write(struct memnode *m, struct mconn *c, struct tp_bulk *bulk,
			  const struct serve_bulk *sb, size_t rlen)
{
	struct landing *l = malloc(sizeof(*l) + rlen);

	if (!l) {
		log_error("out of memory receiving a WRITE on connection %u; closing it", c->conn);
		schedule_close(m, c, false);
		return;
	}
	*l = (struct landing){ m, c->conn, rlen };
	memcpy(l->reply, m->reply, rlen);
	if (tp_recv_bulk(c->ep, bulk, sb->addr, write_landed, l)) {
		free(l);
		schedule_close(m, c, false);
	}
}

/* Test hook (COMEX_TEST_CORRUPT_READS=N, docs/TESTING.md): every N-th READ
 * is answered with the first byte of its first page inverted, in a copy
 * (tp_send copies it again: TP_COPY_BULK); the pool is not changed. */
static void send_corrupted(struct memnode *m, struct mconn *c, size_t rlen, const struct serve_bulk *sb)
{
	uint8_t *copy = malloc(sb->len);

	if (!copy) {
		log_error("test hook: out of memory for a %zu-byte READ; closing connection %u", sb->len, c->conn);
		schedule_close(m, c, false);
		return;
	}
	memcpy(copy, sb->addr, sb->len);
	copy[0] ^= 0xff;
	send_reply(m, c, m->reply, rlen, copy, sb->len);
	free(copy);
}

/* Test hooks test-late-reads/-writes: the whole memnode stands still for
 * test-late-by, as in a long pause or behind a slow link. */
static void stand_still(const struct memnode *m)
{
	struct timespec ts = { (time_t)(m->late_ns / 1000000000), (long)(m->late_ns % 1000000000) };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* Test hook (test-late-reads): stands still, then answers. */
static void send_late(struct memnode *m, struct mconn *c, size_t rlen, const struct serve_bulk *sb)
{
	stand_still(m);
	send_reply(m, c, m->reply, rlen, sb->addr, sb->len);
}

static void on_recv(void *arg, struct tp_ep *ep, void *user, const void *msg, size_t len, struct tp_bulk *bulk)
{
	struct memnode *m = arg;
	struct mconn *c = user;
	struct serve_bulk sb;
	size_t rlen;
	int rc;

	(void)ep;
	if (!c->conn)
		return; /* closing: the client was already answered */
	rc = serve_handle(m->serve, c->conn, msg ? msg : "", len, bulk ? bulk->len : 0,
			  m->reply, sizeof(m->reply), &rlen, &sb);
	if (rc < 0)
		return;
	if (sb.len && sb.incoming && bulk)
		receive_write(m, c, bulk, &sb, rlen);
	else if (sb.len && m->corrupt_every && ++m->reads % m->corrupt_every == 0)
		send_corrupted(m, c, rlen, &sb);
	else if (sb.len && m->late_every && ++m->reads % m->late_every == 0)
		send_late(m, c, rlen, &sb);
	else
		send_reply(m, c, m->reply, rlen, sb.len ? sb.addr : NULL, sb.len);
	if (rc == SERVE_CLOSE)
		schedule_close(m, c, false);
}

static void on_error(void *arg, struct tp_ep *ep, void *user, int err)
{
	struct mconn *c = user;

	(void)ep;
	if (c->conn)
		log_info("connection %u ended: %s", c->conn, strerror(-err));
	schedule_close(arg, c, true);
}

/* A DRAIN message or a first signal started a drain that has not been told
 * to the clients yet. */
static bool drain_due(struct memnode *m)
{
	uint64_t frames;

	return !m->drain_until && (serve_drain_left(m->serve, &frames) >= 0 || (signals_seen == 1 && m->drain_ns));
}

static bool stop_now(struct memnode *m)
{
	return signals_seen > 1 || (signals_seen == 1 && !m->drain_ns);
}

static bool has_work(void *arg)
{
	struct memnode *m = arg;
	uint64_t frames;

	return stop_now(m) || m->close_due || drain_due(m) || (linger_asked && !m->lingering) ||
	       (m->drain_until && !serve_drain_left(m->serve, &frames) && !m->conns);
}

/* Force-closes every connection whose time has come; returns the earliest
 * pending deadline (0 = none). */
static uint64_t reap(struct memnode *m, bool all)
{
	uint64_t now = now_ns(), next = 0;

	for (struct mconn **pc = &m->conns, *c; (c = *pc);) {
		if (all || c->close_at == 1 || (c->close_at && c->close_at <= now)) {
			schedule_close(m, c, false);
			*pc = c->next;
			tp_close(c->ep);
			free(c);
			continue;
		}
		if (c->close_at && (!next || c->close_at < next))
			next = c->close_at;
		pc = &c->next;
	}
	m->close_due = 0;
	return next;
}

/* Tells every client that owes a DONE to take its pages elsewhere
 * (docs/PROTOCOL.md, EVICT). A client we cannot tell is closed: its pages
 * are then lost to it, which the drain's final report counts. */
static void drain_begin(struct memnode *m)
{
	uint64_t frames;
	int left;

	serve_drain(m->serve);
	left = serve_drain_left(m->serve, &frames);
	/* drain-timeout 0 only makes a signal stop at once: a DRAIN then waits for
	 * the clients however long it takes (a signal still stops it) */
	m->drain_until = m->drain_ns ? now_ns() + m->drain_ns : UINT64_MAX;
	log_info("draining: %d clients hold %llu frames; asking them to move their pages (drain-timeout %llu ms)",
		 left, (unsigned long long)frames, (unsigned long long)(m->drain_ns / 1000000));
}

/* Every client that owes a DONE (those connected when the drain began; no
 * new one is accepted) gets one EVICT. */
static void send_evicts(struct memnode *m)
{
	uint8_t buf[PROTO_MAX_MSG];
	size_t len;

	for (struct mconn *c = m->conns; c; c = c->next) {
		if (!c->conn || c->evict_sent ||
		    serve_evict(m->serve, c->conn, (uint32_t)(m->drain_ns / 1000000), buf, sizeof(buf), &len))
			continue;
		c->evict_sent = true;
		send_reply(m, c, buf, len, NULL, 0);
	}
}

/* Elastic shrink: every client holding frames in the range being vacated
 * gets one SHRINK (the serve layer knows who, and sends each range once). */
static void send_shrinks(struct memnode *m)
{
	uint8_t buf[PROTO_MAX_MSG];
	size_t len;

	for (struct mconn *c = m->conns; c; c = c->next)
		if (c->conn && !serve_shrink_msg(m->serve, c->conn, ELASTIC_SHRINK_TIMEOUT_MS, buf, sizeof(buf), &len))
			send_reply(m, c, buf, len, NULL, 0);
}

/* Draining: true once every client answered DONE (or left) and every
 * connection is closed (so the last replies went out), or when
 * drain-timeout passed (said loudly if a client still holds frames). */
static bool drain_over(struct memnode *m)
{
	uint64_t frames;
	int left = serve_drain_left(m->serve, &frames);
	bool late = now_ns() >= m->drain_until;

	if (left == 0 && (!m->conns || late)) {
		log_info("drain complete: every client took its pages elsewhere; exiting");
		return true;
	}
	if (left > 0 && late) {
		log_error("DRAIN INCOMPLETE after %llu ms: %d clients still hold %llu frames here; exiting loses "
			  "those pages (their programs stop unless they have another copy)",
			  (unsigned long long)(m->drain_ns / 1000000), left, (unsigned long long)frames);
		return true;
	}
	return false;
}

static void linger_begin(struct memnode *m, uint64_t now)
{
	const char *dir = getenv(MEMNODE_DIR_ENV);
	char path[160];
	int fd;

	m->lingering = true;
	m->idle_since = m->conns ? 0 : now + (linger_asked == SIGUSR2 ? LINGER_FIRST_NS - LINGER_IDLE_NS : 0);
	prctl(PR_SET_PDEATHSIG, 0);
	log_info("the program ended: serving its %s until none has been connected for %llu ms",
		 m->conns ? "forked children still connected" : "forked children", LINGER_IDLE_NS / 1000000);
	snprintf(path, sizeof(path), "%s/" MEMNODE_LINGER_FILE, dir ? dir : ".");
	if ((fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600)) >= 0)
		close(fd);
}

/* Lingering: true once no client has been connected for LINGER_IDLE_NS */
static bool linger_over(struct memnode *m, uint64_t now)
{
	if (m->conns)
		m->idle_since = 0;
	else if (!m->idle_since)
		m->idle_since = now;
	return m->idle_since && now > m->idle_since && now - m->idle_since > LINGER_IDLE_NS;
}

static int event_loop(struct memnode *m, uint64_t spin_ns)
{
	uint64_t next = 0, look = 0;

	while (!stop_now(m)) {
		uint64_t now = now_ns(), wake = next;
		uint64_t timeout, spin = 0;
		int err;

		if (m->pollcore) { /* polls only on a core it holds, renewed each tick */
			spin = pollcore_tick(m->pollcore, now) ? spin_ns : 0;
			if (!wake || now + POLLCORE_TICK_NS < wake)
				wake = now + POLLCORE_TICK_NS;
		}

		if (m->elastic && now >= look) { /* a look at the host is due */
			look = elastic_tick(m->elastic, now);
			send_shrinks(m);
		}
		if (look && (!wake || look < wake))
			wake = look;
		if (m->drain_until && (!wake || m->drain_until < wake))
			wake = m->drain_until;
		if (linger_asked && !m->lingering) {
			if (linger_asked == SIGUSR1 && !m->conns)
				return 0; /* nobody to linger for */
			linger_begin(m, now);
		}
		if (m->lingering && linger_over(m, now))
			return 0;
		if (m->lingering && (!wake || now + LINGER_IDLE_NS / 4 < wake))
			wake = now + LINGER_IDLE_NS / 4;
		timeout = wake ? (wake > now ? wake - now : 1) : 0;
		err = tp_run(m->tp, has_work, m, spin, timeout);
		if (err && err != -ETIMEDOUT && err != -EINTR)
			return err;
		next = reap(m, false);
		if (drain_due(m))
			drain_begin(m);
		if (m->drain_until)
			send_evicts(m);
		if (m->drain_until && drain_over(m))
			return 0;
	}
	if (m->drain_until)
		log_error("stopped by a second signal while draining: clients' pages still here are lost");
	return 0;
}

static bool is_loopback(const char *hostport)
{
	return !strncmp(hostport, "127.", 4) || !strncmp(hostport, "localhost:", 10) ||
	       !strncmp(hostport, "[::1]:", 6);
}

static int load_auth(const struct options *o, struct auth_token *tok, bool *use_token)
{
	const char *path = opt_str(o, OPT_TOKEN_FILE), *listen = opt_str(o, OPT_LISTEN);

	*use_token = false;
	if (*path)
		return *use_token = true, auth_token_load(path, tok);
	if (!opt_num(o, OPT_ALLOW_NO_TOKEN)) {
		log_error("no cluster token: pass --token-file FILE (create one with 'comex token FILE'), "
			  "or --allow-no-token for a loopback-only memnode");
		return -EACCES;
	}
	if (!is_loopback(listen)) {
		log_error("refusing to listen on %s without a token: anyone who can reach it could read "
			  "clients' memory; pass --token-file FILE", listen);
		return -EACCES;
	}
	return 0;
}

/* Options test-corrupt-reads, test-late-reads, test-late-writes (0: unset);
 * only the validated data path sees READs and WRITEs. Sets m's hooks. */
static int test_hooks(const struct options *o, bool rma, struct memnode *m)
{
	static const struct { enum opt_id opt; const char *name, *what; } hooks[] = {
		{ OPT_TEST_CORRUPT_READS, "test-corrupt-reads", "READ is answered with one byte changed" },
		{ OPT_TEST_LATE_READS, "test-late-reads", "READ is answered after the memnode stood still" },
		{ OPT_TEST_LATE_WRITES, "test-late-writes", "WRITE is acknowledged after the memnode stood still" },
	};

	for (size_t i = 0; i < sizeof(hooks) / sizeof(hooks[0]); i++) {
		uint64_t n = opt_num(o, hooks[i].opt);

		if (n && rma) {
			log_error("option %s: %llu; the rma data path sends no READs or WRITEs to change, use "
				  "data-path validated", hooks[i].name, (unsigned long long)n);
			return -EINVAL;
		}
		if (n)
			log_warn("test hook %s: every %llu-th %s (test-late-by %llu us)", hooks[i].name,
				 (unsigned long long)n, hooks[i].what,
				 (unsigned long long)(opt_num(o, OPT_TEST_LATE_BY) / 1000));
	}
	m->corrupt_every = opt_num(o, OPT_TEST_CORRUPT_READS);
	m->late_every = opt_num(o, OPT_TEST_LATE_READS);
	m->late_writes = opt_num(o, OPT_TEST_LATE_WRITES);
	m->late_ns = opt_num(o, OPT_TEST_LATE_BY);
	return 0;
}

static uint16_t derive_nid(uint16_t port)
{
	return port ? port : 1; /* a stable per-listener id; 0 is reserved for "derive" */
}

/* pool-fd: empty, or a descriptor number (D38) */
static int pool_fd(const struct options *o, int *fd_out)
{
	const char *t = opt_str(o, OPT_POOL_FD);
	char *end;
	long fd = strtol(t, &end, 10);

	if (!*t) {
		*fd_out = -1;
		return 0;
	}
	if (*end || fd < 0 || fd > INT32_MAX) {
		log_error("option pool-fd: '%s' is not a descriptor number", t);
		return -EINVAL;
	}
	*fd_out = (int)fd;
	return 0;
}

int memnode_main(const struct options *o)
{
	static struct auth_token tok;
	struct memnode m = { .drain_ns = opt_num(o, OPT_DRAIN_TIMEOUT) };
	struct tp_callbacks cb = { .recv = on_recv, .accept = on_accept, .error = on_error, .arg = &m };
	struct sigaction sa = { .sa_handler = on_signal };
	struct tp_listen_info li;
	struct serve_config sc;
	uint64_t bytes = opt_num(o, OPT_POOL) & ~(PROTO_FRAME_SIZE - 1), max = opt_num(o, OPT_POOL_MAX);
	struct pool *pool;
	struct http_metrics *metrics = NULL;
	uint64_t spin = opt_num(o, OPT_IDLE_SPIN);
	bool use_token, rma = opt_num(o, OPT_DATA_PATH) == DATA_PATH_RMA;
	int err, pfd;

	log_set_prefix("comex-memnode");
	if (bytes < PROTO_FRAME_SIZE || bytes / PROTO_FRAME_SIZE > UINT32_MAX) {
		log_error("option pool: %llu bytes is outside 4 KiB .. 16 TiB", (unsigned long long)opt_num(o, OPT_POOL));
		return -EINVAL;
	}
	if (max > bytes) { /* growing: whole order-10 blocks */
		bytes = (bytes + POOL_GROW_ALIGN - 1) & ~(POOL_GROW_ALIGN - 1);
		max &= ~(POOL_GROW_ALIGN - 1);
		if (max < bytes)
			max = bytes;
	} else {
		max = bytes;
	}
	if (max / PROTO_FRAME_SIZE > UINT32_MAX) {
		log_error("option pool-max: %llu bytes is above 16 TiB", (unsigned long long)opt_num(o, OPT_POOL_MAX));
		return -EINVAL;
	}
	if (opt_num(o, OPT_NID) > UINT16_MAX) {
		log_error("option nid: %llu does not fit 16 bits", (unsigned long long)opt_num(o, OPT_NID));
		return -EINVAL;
	}
	err = load_auth(o, &tok, &use_token);
	if (!err)
		err = test_hooks(o, rma, &m);
	if (err)
		return err;
	if ((err = pool_fd(o, &pfd)))
		return err; /* it stays open: the program opens it as /proc/PID/fd/N (D38) */
	err = pool_create(bytes, max, opt_num(o, OPT_HUGEPAGES), opt_num(o, OPT_MLOCK), opt_num(o, OPT_HOST_RESERVE), pfd,
			  &pool);
	if (err)
		return err;
	if (opt_num(o, OPT_RECLAIM_SAFE))
		noreclaim_enter("memnode");
	/* a memnode restarted on its port must listen at once, although the
	 * connections of the one before (killed first) linger in TIME_WAIT */
	setenv("UCX_TCP_CM_REUSEADDR", "y", 0);
	err = tp_create(&cb, (rma ? TP_RMA : 0) | (opt_num(o, OPT_SHM) ? TP_SHM : 0) | (m.corrupt_every ? TP_COPY_BULK : 0) |
				tp_choice_flags(opt_num(o, OPT_TRANSPORT)), &m.tp);
	if (err)
		goto cleanup_pool;
	err = tp_listen(m.tp, opt_str(o, OPT_LISTEN), pool_base(pool), max, &li);
	if (err)
		goto cleanup_tp;
	sc = (struct serve_config){
		.pool_frames = bytes / PROTO_FRAME_SIZE, .max_frames = max / PROTO_FRAME_SIZE,
		.grow = max > bytes ? pool_grow : NULL, .grow_ahead = max > bytes ? pool_grow_ahead : NULL,
		.grow_arg = pool,
		.nid = opt_num(o, OPT_NID) ? opt_num(o, OPT_NID) : derive_nid(li.port),
		.credits = opt_num(o, OPT_CREDITS), .max_clients = opt_num(o, OPT_MAX_CLIENTS),
		.base = (uintptr_t)pool_base(pool), .pool = pool_base(pool), .rkey = li.rkey, .rkey_len = li.rkey_len,
		.token = use_token ? &tok : NULL,
	};
	err = serve_create(&sc, &m.serve);
	if (err)
		goto cleanup_tp;
	if (opt_num(o, OPT_HOST_RESERVE) &&
	    (err = elastic_create(m.serve, pool_base(pool), sc.max_frames, opt_num(o, OPT_HOST_RESERVE),
				   opt_num(o, OPT_MLOCK), &m.elastic)))
		goto cleanup_serve;
	if (*opt_str(o, OPT_METRICS_LISTEN) &&
	    (err = memnode_metrics_start(opt_str(o, OPT_METRICS_LISTEN), m.serve, sc.nid, &metrics)))
		goto cleanup_serve;
	wakeup_apply((enum wakeup_mode)opt_num(o, OPT_SCHED));
	if (spin && !pollcore_open(POLLCORE_DIR, &m.pollcore) && !pollcore_tick(m.pollcore, now_ns()))
		log_info("every polling core is held by running memnodes (%d a core); sleeping between requests "
			 "(until a holder stops running)", POLLCORE_SHARE);
	wakeup_poll_yields(true);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sa.sa_handler = on_linger;
	sigaction(SIGUSR1, &sa, NULL);
	sigaction(SIGUSR2, &sa, NULL);
	if (max > bytes)
		log_info("pool of %llu MiB grows on demand up to %llu MiB", (unsigned long long)(bytes >> 20),
			 (unsigned long long)(max >> 20));
	log_info("nid %u serving %llu MiB on port %u (%s, %s data path)", sc.nid,
		 (unsigned long long)(bytes >> 20), li.port, use_token ? "token required" : "no authentication",
		 rma ? "one-sided rma" : "validated");
	err = event_loop(&m, spin);
	reap(&m, true);
	log_info("stopped");
	memnode_metrics_stop(metrics);
	pollcore_close(m.pollcore);
cleanup_serve:
	elastic_destroy(m.elastic);
	serve_destroy(m.serve);
cleanup_tp:
	tp_destroy(m.tp);
cleanup_pool:
	pool_destroy(pool);
	return err;
}

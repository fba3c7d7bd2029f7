/* transport_ucx: the UCX backend, for RDMA and same-host shared memory.
 * AM id TP_AM_ID carries every control message, sent eager-only
 * with the REPLY flag so the receiver learns the sending endpoint; data moves
 * with ucp_get_nbx/ucp_put_nbx against the one region a listener registers.
 * Endpoints use peer error handling so a dead peer fails requests instead of
 * hanging them. */
#include "transport_impl.h"

#include <errno.h>
#include <arpa/inet.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <ucp/api/ucp.h>

#include "clock.h"
#include "log.h"

/* Built alone as the plugin libcomex-ucx.so (transport_impl.h): what it
 * uses of the process that loads it goes through the table that process
 * handed over, set once before the first create. */
static struct tp_host host;
#define log_msg host.log_msg
#define log_threshold (*host.log_threshold)
#define netaddr_resolve host.netaddr_resolve
#define tp_clock_start host.clock_start
#define tp_clock_pass host.clock_pass
#define tp_clock_woken host.clock_woken
#define wakeup_sleeping host.wakeup_sleeping
#define EXPORT __attribute__((visibility("default")))

EXPORT void comex_tp_ucx_init(const struct tp_host *h)
{
	host = *h;
}

#define TP_AM_ID 7      /* control message in the AM data */
#define TP_AM_BULK_ID 8 /* message in the AM header, pages in the AM data */

struct uep {
	struct tp_ep base;  /* first: the dispatcher's view */
	struct utp *t;
	ucp_ep_h ep;
	ucp_rkey_h rkey;
	void *user;
	unsigned inflight;  /* RMA ops and bulk receives whose callback has not run yet */
	struct uep *next, **pprev;
};

struct utp {
	struct tp base;     /* first: the dispatcher's view */
	ucp_context_h ctx;
	ucp_worker_h worker;
	int efd;
	ucp_listener_h listener;
	ucp_mem_h memh;
	void *rkey_buf;
	size_t rkey_len;
	struct tp_callbacks cb;
	struct uep *eps;
	bool rma, copy_bulk;
	uint64_t late_events;   /* progress found work after a poll timed out */
};

static const struct tp_ops ucx_ops;

struct rma_ctx { struct uep *ep; struct tp_op *op; };

/* The one place UCX status codes become errno values. */
static int tp_err(ucs_status_t st)
{
	switch (st) {
	case UCS_OK: return 0;
	case UCS_INPROGRESS: return -EINPROGRESS;
	case UCS_ERR_NO_MEMORY: return -ENOMEM;
	case UCS_ERR_INVALID_PARAM: return -EINVAL;
	case UCS_ERR_UNREACHABLE: return -EHOSTUNREACH;
	case UCS_ERR_INVALID_ADDR: return -EADDRNOTAVAIL;
	case UCS_ERR_BUSY: return -EBUSY;
	case UCS_ERR_CANCELED: return -ECANCELED;
	case UCS_ERR_TIMED_OUT: case UCS_ERR_ENDPOINT_TIMEOUT: return -ETIMEDOUT;
	case UCS_ERR_CONNECTION_RESET: return -ECONNRESET;
	case UCS_ERR_REJECTED: return -ECONNREFUSED;
	case UCS_ERR_NOT_CONNECTED: return -ENOTCONN;
	case UCS_ERR_UNSUPPORTED: return -EOPNOTSUPP;
	case UCS_ERR_EXCEEDS_LIMIT: case UCS_ERR_OUT_OF_RANGE: return -EMSGSIZE;
	case UCS_ERR_NO_DEVICE: case UCS_ERR_NO_RESOURCE: return -ENODEV;
	default: return -EIO;
	}
}

static struct uep *find_ep(struct utp *t, ucp_ep_h ep)
{
	for (struct uep *e = t->eps; e; e = e->next)
		if (e->ep == ep)
			return e;
	return NULL;
}

static struct uep *sender(struct utp *t, const ucp_am_recv_param_t *param, size_t len)
{
	struct uep *e = (param->recv_attr & UCP_AM_RECV_ATTR_FIELD_REPLY_EP) ?
			  find_ep(t, param->reply_ep) : NULL;

	if (!e)
		log_warn("dropped a %zu-byte message from an unknown endpoint", len);
	return e;
}

static ucs_status_t am_recv(void *arg, const void *header, size_t header_len, void *data,
			    size_t len, const ucp_am_recv_param_t *param)
{
	struct utp *t = arg;
	struct uep *e = sender(t, param, len);

	(void)header;
	(void)header_len;
	if (!e)
		return UCS_OK;
	/* A rendezvous message means a peer ignored the eager-only contract and
	 * the size limit; hand over no bytes so it is rejected as malformed. */
	if (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV)
		data = NULL, len = 0;
	t->cb.recv(t->cb.arg, &e->base, e->user, data, len, NULL);
	return UCS_OK;
}

static ucs_status_t am_recv_bulk(void *arg, const void *header, size_t header_len, void *data,
				 size_t len, const ucp_am_recv_param_t *param)
{
	struct utp *t = arg;
	struct uep *e = sender(t, param, len);
	struct tp_bulk b = { data, len, (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) != 0 };

	/* Unclaimed rendezvous data is dropped by UCX when we return UCS_OK. */
	if (e)
		t->cb.recv(t->cb.arg, &e->base, e->user, header, header_len, &b);
	return UCS_OK;
}

struct bulk_ctx { void (*done)(void *arg, int status); void *arg; struct uep *ep; };

static void bulk_done(void *req, ucs_status_t st, size_t len, void *arg)
{
	struct bulk_ctx bc = *(struct bulk_ctx *)arg;

	(void)len;
	free(arg);
	ucp_request_free(req);
	bc.ep->inflight--;
	bc.done(bc.arg, tp_err(st));
}

static int ucx_recv_bulk(struct tp_ep *e_, struct tp_bulk *b, void *dst, void (*done)(void *arg, int status), void *arg)
{
	struct uep *e = (struct uep *)e_;
	ucp_request_param_t p = {
		.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA,
		.cb.recv_am = bulk_done,
	};
	struct bulk_ctx *bc;
	void *req;

	if (!b->rndv) {
		memcpy(dst, b->desc, b->len);
		done(arg, 0);
		return 0;
	}
	bc = malloc(sizeof(*bc));
	if (!bc)
		return -ENOMEM;
	*bc = (struct bulk_ctx){ done, arg, e };
	p.user_data = bc;
	req = ucp_am_recv_data_nbx(e->t->worker, b->desc, dst, b->len, &p);
	if (UCS_PTR_IS_PTR(req)) {
		e->inflight++;
		return 0;
	}
	free(bc);
	if (UCS_PTR_IS_ERR(req))
		return tp_err(UCS_PTR_STATUS(req));
	done(arg, 0);
	return 0;
}

static void ep_error(void *arg, ucp_ep_h ep, ucs_status_t st)
{
	struct uep *e = arg;

	(void)ep;
	if (e->t->cb.error)
		e->t->cb.error(e->t->cb.arg, &e->base, e->user, tp_err(st));
}

/* UCX leaves its shared-memory transports out of endpoints that ask for peer
 * error handling (ours all do) unless MM_ERROR_HANDLING is on; and by default
 * it moves messages above a few KiB by rendezvous over the TCP lane. With
 * eager copies through the shared FIFOs up to 1 MiB, a validated 64 KiB read
 * took 10 us instead of 80 (docs/TRANSPORT.md). A UCX_* variable the user
 * set wins; a UCX_TLS without shared memory leaves both alone (UCX would warn
 * that no transport uses the setting). */
static ucs_status_t config_shm(ucp_config_t *config)
{
	static const char *const kv[][2] = { { "MM_ERROR_HANDLING", "y" }, { "RNDV_THRESH", "1M" } };
	const char *tls = getenv("UCX_TLS");
	ucs_status_t st = UCS_OK;
	char env[64];

	if (tls && !strstr(tls, "all") && !strstr(tls, "sm") && !strstr(tls, "mm") &&
	    !strstr(tls, "posix") && !strstr(tls, "sysv"))
		return UCS_OK;
	for (size_t i = 0; i < sizeof(kv) / sizeof(kv[0]) && st == UCS_OK; i++) {
		snprintf(env, sizeof(env), "UCX_%s", kv[i][0]);
		if (!getenv(env))
			st = ucp_config_modify(config, kv[i][0], kv[i][1]);
	}
	return st;
}

EXPORT int comex_tp_ucx_create(const struct tp_callbacks *cb, unsigned flags, struct tp **out)
{
	bool rma = flags & TP_RMA;
	ucp_params_t params = {
		.field_mask = UCP_PARAM_FIELD_FEATURES,
		.features = UCP_FEATURE_AM | UCP_FEATURE_WAKEUP | (rma ? UCP_FEATURE_RMA : 0),
	};
	ucp_worker_params_t wparams = {
		.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE,
		.thread_mode = UCS_THREAD_MODE_SINGLE,
	};
	ucp_am_handler_param_t am = {
		.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_CB |
			      UCP_AM_HANDLER_PARAM_FIELD_ARG | UCP_AM_HANDLER_PARAM_FIELD_FLAGS,
		.id = TP_AM_ID, .cb = am_recv, .flags = UCP_AM_FLAG_WHOLE_MSG,
	};
	ucp_config_t *config;
	ucs_status_t st;
	struct utp *t = calloc(1, sizeof(*t));
	int err;

	if (!t)
		return -ENOMEM;
	t->cb = *cb;
	st = ucp_config_read(NULL, NULL, &config);
	if (st != UCS_OK)
		goto fail_config;
	if (flags & TP_SHM)
		st = config_shm(config);
	if (st == UCS_OK)
		st = ucp_init(&params, config, &t->ctx);
	ucp_config_release(config);
	if (st != UCS_OK)
		goto fail_config;
	st = ucp_worker_create(t->ctx, &wparams, &t->worker);
	if (st != UCS_OK)
		goto cleanup_ctx;
	st = ucp_worker_get_efd(t->worker, &t->efd);
	if (st != UCS_OK)
		goto cleanup_worker;
	am.arg = t;
	st = ucp_worker_set_am_recv_handler(t->worker, &am);
	if (st != UCS_OK)
		goto cleanup_worker;
	am.id = TP_AM_BULK_ID;
	am.cb = am_recv_bulk;
	st = ucp_worker_set_am_recv_handler(t->worker, &am);
	if (st != UCS_OK)
		goto cleanup_worker;
	t->rma = rma;
	t->copy_bulk = flags & TP_COPY_BULK;
	t->base.ops = &ucx_ops;
	*out = &t->base;
	return 0;

cleanup_worker:
	ucp_worker_destroy(t->worker);
cleanup_ctx:
	ucp_cleanup(t->ctx);
fail_config:
	err = tp_err(st);
	log_error("UCX initialisation failed: %s", ucs_status_string(st));
	free(t);
	return err;
}

static void ep_link(struct utp *t, struct uep *e)
{
	e->next = t->eps;
	if (e->next)
		e->next->pprev = &e->next;
	e->pprev = &t->eps;
	t->eps = e;
}

static void ucx_close(struct tp_ep *e_)
{
	struct uep *e = (struct uep *)e_;
	ucp_request_param_t param = { .op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS,
				      .flags = UCP_EP_CLOSE_FLAG_FORCE };
	void *req;

	*e->pprev = e->next;
	if (e->next)
		e->next->pprev = e->pprev;
	if (e->ep) {
		req = ucp_ep_close_nbx(e->ep, &param);
		/* A forced close fails everything in flight without talking to
		 * the peer, so this loop is bounded by local work only. */
		while (UCS_PTR_IS_PTR(req) && ucp_request_check_status(req) == UCS_INPROGRESS)
			ucp_worker_progress(e->t->worker);
		if (UCS_PTR_IS_PTR(req))
			ucp_request_free(req);
	}
	while (e->inflight)
		ucp_worker_progress(e->t->worker);
	if (e->rkey)
		ucp_rkey_destroy(e->rkey);
	free(e);
}

static void ucx_destroy(struct tp *t_)
{
	struct utp *t = (struct utp *)t_;
	if (!t)
		return;
	while (t->eps)
		ucx_close(&t->eps->base);
	if (t->listener)
		ucp_listener_destroy(t->listener);
	if (t->rkey_buf)
		ucp_rkey_buffer_release(t->rkey_buf);
	if (t->memh)
		ucp_mem_unmap(t->ctx, t->memh);
	ucp_worker_destroy(t->worker);
	ucp_cleanup(t->ctx);
	free(t);
}

static ucp_ep_params_t ep_params(struct uep *e)
{
	return (ucp_ep_params_t){
		.field_mask = UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE | UCP_EP_PARAM_FIELD_ERR_HANDLER,
		.err_mode = UCP_ERR_HANDLING_MODE_PEER,
		.err_handler = { .cb = ep_error, .arg = e },
	};
}

static void on_conn_request(ucp_conn_request_h req, void *arg)
{
	struct utp *t = arg;
	struct uep *e = calloc(1, sizeof(*e));

	ucp_ep_params_t p;
	ucs_status_t st;

	if (!e) {
		log_error("out of memory accepting a client; rejecting it");
		ucp_listener_reject(t->listener, req);
		return;
	}
	e->base.ops = &ucx_ops;
	e->t = t;
	e->user = t->cb.accept(t->cb.arg, &e->base);
	if (!e->user) {
		ucp_listener_reject(t->listener, req);
		free(e);
		return;
	}
	p = ep_params(e);
	p.field_mask |= UCP_EP_PARAM_FIELD_CONN_REQUEST;
	p.conn_request = req;
	st = ucp_ep_create(t->worker, &p, &e->ep);
	ep_link(t, e);
	if (st != UCS_OK) {
		log_error("cannot create an endpoint for a new client: %s", ucs_status_string(st));
		e->ep = NULL;
		t->cb.error(t->cb.arg, &e->base, e->user, tp_err(st));
	}
}

static int register_region(struct utp *t, void *addr, size_t len)
{
	ucp_mem_map_params_t mp = {
		.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH,
		.address = addr, .length = len,
	};
	ucs_status_t st = ucp_mem_map(t->ctx, &mp, &t->memh);

	if (st != UCS_OK) {
		log_error("cannot register the %zu-byte pool at %p with UCX: %s", len, addr, ucs_status_string(st));
		return tp_err(st);
	}
	st = ucp_rkey_pack(t->ctx, t->memh, &t->rkey_buf, &t->rkey_len);
	if (st != UCS_OK) {
		log_error("cannot pack the pool's remote key: %s", ucs_status_string(st));
		return tp_err(st);
	}
	return 0;
}

static int listen_info(struct utp *t, struct tp_listen_info *out)
{
	ucp_listener_attr_t attr = { .field_mask = UCP_LISTENER_ATTR_FIELD_SOCKADDR };
	ucs_status_t st = ucp_listener_query(t->listener, &attr);

	if (st != UCS_OK) {
		log_error("cannot query the listener's address: %s", ucs_status_string(st));
		return tp_err(st);
	}
	out->port = ntohs(attr.sockaddr.ss_family == AF_INET6 ?
			  ((struct sockaddr_in6 *)&attr.sockaddr)->sin6_port :
			  ((struct sockaddr_in *)&attr.sockaddr)->sin_port);
	out->rkey = t->rkey_buf;
	out->rkey_len = t->rkey_len;
	return 0;
}

static int ucx_listen(struct tp *t_, const char *hostport, void *addr, size_t len, struct tp_listen_info *out)
{
	struct utp *t = (struct utp *)t_;
	struct sockaddr_storage ss;
	socklen_t sslen;
	ucp_listener_params_t lp = {
		.field_mask = UCP_LISTENER_PARAM_FIELD_SOCK_ADDR | UCP_LISTENER_PARAM_FIELD_CONN_HANDLER,
		.conn_handler = { .cb = on_conn_request, .arg = t },
	};
	ucs_status_t st;
	int err = netaddr_resolve(hostport, &ss, &sslen);

	if (err)
		return err;
	if (t->rma && (err = register_region(t, addr, len)))
		return err;
	lp.sockaddr.addr = (struct sockaddr *)&ss;
	lp.sockaddr.addrlen = sslen;
	st = ucp_listener_create(t->worker, &lp, &t->listener);
	if (st != UCS_OK) {
		log_error("cannot listen on %s: %s", hostport, ucs_status_string(st));
		return tp_err(st) == -EBUSY ? -EADDRINUSE : tp_err(st);
	}
	return listen_info(t, out);
}

static int ucx_connect(struct tp *t_, const char *hostport, void *user, struct tp_ep **out)
{
	struct utp *t = (struct utp *)t_;
	struct sockaddr_storage ss;
	socklen_t sslen;
	struct uep *e;
	ucp_ep_params_t p;
	ucs_status_t st;
	int err = netaddr_resolve(hostport, &ss, &sslen);

	if (err)
		return err;
	e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	e->base.ops = &ucx_ops;
	e->t = t;
	e->user = user;
	p = ep_params(e);
	p.field_mask |= UCP_EP_PARAM_FIELD_FLAGS | UCP_EP_PARAM_FIELD_SOCK_ADDR;
	p.flags = UCP_EP_PARAMS_FLAGS_CLIENT_SERVER;
	p.sockaddr.addr = (struct sockaddr *)&ss;
	p.sockaddr.addrlen = sslen;
	st = ucp_ep_create(t->worker, &p, &e->ep);
	if (st != UCS_OK) {
		log_error("cannot connect to %s: %s", hostport, ucs_status_string(st));
		free(e);
		return tp_err(st);
	}
	ep_link(t, e);
	*out = &e->base;
	return 0;
}

static void send_done(void *req, ucs_status_t st, void *buf)
{
	if (st != UCS_OK && st != UCS_ERR_CANCELED)
		log_debug("message send failed: %s", ucs_status_string(st));
	free(buf);
	ucp_request_free(req);
}

static int ucx_send(struct tp_ep *e_, const void *msg, size_t len, const void *bulk, size_t bulk_len)
{
	struct uep *e = (struct uep *)e_;
	ucp_request_param_t p = {
		.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA |
				UCP_OP_ATTR_FIELD_FLAGS,
		.flags = UCP_AM_SEND_FLAG_REPLY | (bulk ? 0 : UCP_AM_SEND_FLAG_EAGER),
		.cb.send = send_done,
	};
	size_t copied = bulk && e->t->copy_bulk ? bulk_len : 0;
	void *buf, *req;

	if (!e->ep)
		return -ENOTCONN;
	/* Our copy of msg lives until completion: UCX may read an AM header
	 * after ucp_am_send_nbx returns when it sends by rendezvous. */
	buf = malloc(len + copied);
	if (!buf)
		return -ENOMEM;
	memcpy(buf, msg, len);
	if (copied)
		bulk = memcpy((char *)buf + len, bulk, copied);
	p.user_data = buf;
	if (bulk)
		req = ucp_am_send_nbx(e->ep, TP_AM_BULK_ID, buf, len, bulk, bulk_len, &p);
	else
		req = ucp_am_send_nbx(e->ep, TP_AM_ID, NULL, 0, buf, len, &p);
	if (UCS_PTR_IS_PTR(req))
		return 0;
	free(buf);
	return tp_err(UCS_PTR_STATUS(req));
}

static int ucx_set_rkey(struct tp_ep *e_, const void *rkey, size_t len)
{
	struct uep *e = (struct uep *)e_;
	ucs_status_t st;

	(void)len;
	if (e->rkey)
		return -EALREADY;
	st = ucp_ep_rkey_unpack(e->ep, rkey, &e->rkey);
	if (st != UCS_OK) {
		log_error("cannot unpack a %zu-byte remote key: %s", len, ucs_status_string(st));
		return tp_err(st);
	}
	return 0;
}

static void rma_done(void *req, ucs_status_t st, void *arg)
{
	struct rma_ctx *rc = arg;

	rc->op->status = tp_err(st);
	rc->op->done = true;
	rc->ep->inflight--;
	free(rc);
	ucp_request_free(req);
}

static int ucx_rma(struct tp_ep *e_, enum tp_rma_kind kind, void *local, size_t len, uint64_t raddr, struct tp_op *op)
{
	struct uep *e = (struct uep *)e_;
	ucp_request_param_t p = {
		.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA,
		.cb.send = rma_done,
	};
	struct rma_ctx *rc;
	void *req;

	if (!e->ep || (kind != TP_FLUSH && !e->rkey))
		return -ENOTCONN;
	rc = malloc(sizeof(*rc));
	if (!rc)
		return -ENOMEM;
	*rc = (struct rma_ctx){ e, op };
	p.user_data = rc;
	op->done = false;
	if (kind == TP_GET)
		req = ucp_get_nbx(e->ep, local, len, raddr, e->rkey, &p);
	else if (kind == TP_PUT)
		req = ucp_put_nbx(e->ep, local, len, raddr, e->rkey, &p);
	else
		req = ucp_ep_flush_nbx(e->ep, &p);
	if (UCS_PTR_IS_PTR(req)) {
		e->inflight++;
		return 0;
	}
	free(rc);
	if (UCS_PTR_IS_ERR(req))
		return tp_err(UCS_PTR_STATUS(req));
	op->status = 0;
	op->done = true;
	return 0;
}

/* Longest sleep on the event fd. UCX over TCP sometimes has work without
 * signalling the fd (seen as stalls of seconds under load with 1 s sleeps);
 * waking 100 times a second bounds what a missed wake-up costs, for a few
 * µs of CPU per wake. */
#define POLL_MS 10

static int ucx_run(struct tp *t_, bool (*done)(void *arg), void *arg, uint64_t spin_ns, uint64_t timeout_ns)
{
	struct utp *t = (struct utp *)t_;
	struct tp_clock clk;
	bool slept_out = false;

	tp_clock_start(&clk, spin_ns, timeout_ns);
	for (;;) {
		unsigned n = 0, k;
		struct pollfd pfd = { .fd = t->efd, .events = POLLIN };
		int ms, rc;

		while ((k = ucp_worker_progress(t->worker)))
			n += k;
		if (n && slept_out && !t->late_events++)
			log_info("UCX had work although its event fd stayed quiet for %d ms; "
				 "waking every %d ms to make up for missed wake-ups", POLL_MS, POLL_MS);
		slept_out = false;
		if (done(arg))
			return 0;
		if ((ms = tp_clock_pass(&clk, n, POLL_MS)) <= 0) {
			if (ms)
				return ms;
			continue;
		}
		if (ucp_worker_arm(t->worker) == UCS_ERR_BUSY)
			continue;  /* events arrived since the last progress */
		wakeup_sleeping(clk.prev);
		rc = poll(&pfd, 1, ms);
		if (rc < 0 && errno == EINTR && !done(arg))
			return -EINTR;
		slept_out = rc == 0;
		tp_clock_woken(&clk);
	}
}

static const struct tp_ops ucx_ops = {
	.listen = ucx_listen, .connect = ucx_connect, .close = ucx_close, .destroy = ucx_destroy,
	.send = ucx_send, .recv_bulk = ucx_recv_bulk, .set_rkey = ucx_set_rkey, .rma = ucx_rma, .run = ucx_run,
};

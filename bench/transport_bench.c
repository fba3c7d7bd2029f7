/* transport_bench: latency and bandwidth of moving BYTES to and from remote
 * memory, one request at a time, in one of two modes:
 *
 *   transport_bench comex  --size BYTES --iters N [--cpu C] [client options]
 *       through the client library (client_write / client_read of one
 *       contiguous frame run) to a running `comex memnode`; every option the
 *       bench does not know (--memnode, --token-file, --client-spin, ...) goes
 *       to options_configure() for the client.
 *   transport_bench rawtcp --size BYTES --iters N [--cpu C] [--server-poll] [--client-poll]
 *                          [--netns NAME --addr IP]
 *       a plain request/response baseline over TCP (TCP_NODELAY) to a forked
 *       server process holding a BYTES buffer, on loopback or listening on IP
 *       inside network namespace NAME (/var/run/netns/NAME), as a memnode
 *       there would.
 *
 *   --under-writes BYTES (both modes): a third timed op, "read_w": before each
 *       read a write of BYTES to another buffer is started (not waited for),
 *       as the pager's write-behind does, so the read shares the connection
 *       with a write in flight; its latency runs from the read's request to
 *       its data, and the write is waited for afterwards, untimed.
 *
 * Each run writes a fresh pattern N times, then reads it back N times (after
 * WARMUP untimed ops each) and compares the last read with what was written;
 * a mismatch fails the run before any number is printed. Output: one JSON
 * object per op on stdout:
 *   {"op":"write","size":4096,"iters":N,"median_us":..,"p99_us":..,"mean_us":..,"min_us":..,"max_us":..,"mbps":..}
 * Latencies are per op, CLOCK_MONOTONIC, in microseconds; mbps is MB/s
 * (10^6 bytes per second) = size * iters / wall time of the timed loop.
 * Exit status 0 on success, 1 on any failure (reason on stderr). */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "client.h"
#include "options.h"
#include "transport.h"

#define FRAME_SIZE 4096u
#define MAX_FRAMES 1024u            /* PROTO_MAX_RW_FRAMES: one transfer's limit */
#define WARMUP 100                  /* untimed ops before each timed loop */
#define CLIENT_SPIN_NS 100000ull    /* --client-poll: the comex client's default client-spin */
#define SPIN_FOREVER UINT64_MAX
#define ALLOC_TRIES 64              /* client_alloc calls before giving up on a contiguous run */
#define MAX_PASSTHROUGH 64

enum op_kind { OP_WRITE = 1, OP_READ = 2, OP_READ_W = 3 };

struct bench_args {
	const char *mode;               /* "comex" or "rawtcp" */
	size_t size;                    /* bytes per op, a multiple of FRAME_SIZE */
	unsigned iters;                 /* timed ops per direction */
	int cpu;                        /* core to pin the client to; -1: none */
	bool server_poll, client_poll;  /* rawtcp only */
	const char *netns, *addr;       /* rawtcp only: the server's namespace and address */
	size_t wsize;                   /* --under-writes: bytes of the write beside each read_w */
	int nrest;                      /* comex only: arguments for options_configure */
	char *rest[MAX_PASSTHROUGH];
};

/* One remote buffer of size bytes that ops move whole; OP_READ_W also
 * starts a write of wsize bytes to a second one first, and returns in
 * *t0 when the read's own request went out. */
struct target {
	int (*op)(void *ctx, enum op_kind kind, void *buf, uint64_t *t0);
	void *ctx;
	size_t size;
};

struct op_stats { double median_us, p99_us, mean_us, min_us, max_us, mbps; };

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static int pin_to(int cpu)
{
	cpu_set_t set;

	if (cpu < 0)
		return 0;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(0, sizeof(set), &set) ? -errno : 0;
}

/* ---------------------------------------------------------------- stats */

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Sorts lat (n > 0 latencies in ns) and summarises it; total_ns is the wall
 * time of the whole timed loop, for bandwidth. */
static void summarise(uint64_t *lat, unsigned n, size_t size, uint64_t total_ns, struct op_stats *s)
{
	double sum = 0;
	unsigned p99 = (unsigned)((n * 99ull + 99) / 100); /* ceil(0.99 n), 1-based rank */

	qsort(lat, n, sizeof(*lat), cmp_u64);
	for (unsigned i = 0; i < n; i++)
		sum += lat[i];
	s->median_us = (n % 2 ? lat[n / 2] : (lat[n / 2 - 1] + lat[n / 2]) / 2.0) / 1000.0;
	s->p99_us = lat[p99 - 1] / 1000.0;
	s->mean_us = sum / n / 1000.0;
	s->min_us = lat[0] / 1000.0;
	s->max_us = lat[n - 1] / 1000.0;
	s->mbps = (double)size * n * 1000.0 / (double)total_ns;
}

static void print_stats(const char *op, const struct bench_args *a, const struct op_stats *s)
{
	printf("{\"op\":\"%s\",\"size\":%zu,\"iters\":%u,\"median_us\":%.3f,\"p99_us\":%.3f,"
	       "\"mean_us\":%.3f,\"min_us\":%.3f,\"max_us\":%.3f,\"mbps\":%.1f}\n",
	       op, a->size, a->iters, s->median_us, s->p99_us, s->mean_us, s->min_us, s->max_us, s->mbps);
}

/* ------------------------------------------------------------- measuring */

/* WARMUP untimed ops, then iters timed ones, each timed on its own. */
static int measure(const struct target *t, enum op_kind kind, void *buf, unsigned iters, struct op_stats *s)
{
	uint64_t *lat = calloc(iters, sizeof(*lat));
	uint64_t start, t0;
	int err = lat ? 0 : -ENOMEM;

	for (unsigned i = 0; !err && i < WARMUP; i++)
		err = t->op(t->ctx, kind, buf, &t0);
	start = now_ns();
	for (unsigned i = 0; !err && i < iters; i++) {
		uint64_t t1;

		t0 = now_ns();
		err = t->op(t->ctx, kind, buf, &t0);
		t1 = now_ns();
		lat[i] = t1 - t0;
	}
	if (!err)
		summarise(lat, iters, t->size, now_ns() - start, s);
	free(lat);
	return err;
}

/* A pattern that differs per run (seed) and per 8-byte word. */
static void fill_pattern(uint64_t *p, size_t bytes, uint64_t seed)
{
	for (size_t i = 0; i < bytes / 8; i++) {
		uint64_t x = seed + i * 0x9e3779b97f4a7c15ull;

		x = (x ^ (x >> 31)) * 0xbf58476d1ce4e5b9ull;
		p[i] = x ^ (x >> 29);
	}
}

/* Writes a fresh pattern, reads it back, checks the last read, then prints
 * both results. -EILSEQ when the data read is not the data written. */
static int run_target(const struct target *t, const struct bench_args *a)
{
	void *wbuf = aligned_alloc(FRAME_SIZE, a->size), *rbuf = aligned_alloc(FRAME_SIZE, a->size);
	struct op_stats ws, rs, rws;
	int err = wbuf && rbuf ? 0 : -ENOMEM;

	if (!err) {
		fill_pattern(wbuf, a->size, now_ns() ^ ((uint64_t)getpid() << 32));
		memset(rbuf, 0, a->size);
		err = measure(t, OP_WRITE, wbuf, a->iters, &ws);
	}
	if (!err)
		err = measure(t, OP_READ, rbuf, a->iters, &rs);
	if (!err && a->wsize) {
		memset(rbuf, 0, a->size);
		err = measure(t, OP_READ_W, rbuf, a->iters, &rws);
	}
	if (!err && memcmp(wbuf, rbuf, a->size)) {
		fprintf(stderr, "transport_bench: %s: data read back differs from data written\n", a->mode);
		err = -EILSEQ;
	}
	if (!err) {
		print_stats("write", a, &ws);
		print_stats("read", a, &rs);
		if (a->wsize)
			print_stats("read_w", a, &rws);
	}
	free(wbuf);
	free(rbuf);
	return err;
}

/* ----------------------------------------------------------- comex mode */

struct comex_ctx { struct comex_client *c; uint32_t pfn, count, wpfn, wcount; void *wbuf; };

static int comex_op(void *ctx, enum op_kind kind, void *buf, uint64_t *t0)
{
	struct comex_ctx *x = ctx;
	struct tp_op op;
	int err;

	if (kind == OP_WRITE)
		return client_write(x->c, 0, x->pfn, x->count, buf);
	if (kind == OP_READ)
		return client_read(x->c, 0, x->pfn, x->count, buf);
	err = client_write_start(x->c, 0, x->wpfn, x->wcount, x->wbuf, false, &op);
	*t0 = now_ns();
	if (!err)
		err = client_read(x->c, 0, x->pfn, x->count, buf);
	if (!err)
		err = client_write_wait(x->c, 0, &op);
	return err;
}

/* Takes `want` contiguous frames on node 0. client_alloc hands out the head
 * of its oldest chunk, which may be shorter than want: such a short run is
 * released and the next chunk tried. */
static int alloc_run(struct comex_client *c, uint32_t want, uint32_t *pfn)
{
	for (int tries = 0; tries < ALLOC_TRIES; tries++) {
		uint32_t got;
		int err = client_alloc(c, 0, want, pfn, &got);

		if (err || got == want)
			return err;
		err = client_release(c, 0, *pfn, got);
		if (err)
			return err;
	}
	return -ENOSPC;
}

static int run_comex(const struct bench_args *a)
{
	static struct options o; /* large: not on the stack */
	struct comex_ctx x = { .count = a->size / FRAME_SIZE };
	struct target t = { comex_op, &x, a->size };
	int first, err;

	err = options_configure(&o, SC_CLIENT, a->nrest, (char **)a->rest, &first);
	if (!err && first < a->nrest) {
		fprintf(stderr, "transport_bench: unexpected argument '%s'\n", a->rest[first]);
		err = -EINVAL;
	}
	if (!err)
		err = client_connect(&o, &x.c);
	if (err)
		return err;
	err = alloc_run(x.c, x.count, &x.pfn);
	x.wcount = a->wsize / FRAME_SIZE;
	if (!err && x.wcount && !(err = alloc_run(x.c, x.wcount, &x.wpfn)))
		err = (x.wbuf = calloc(1, a->wsize)) ? 0 : -ENOMEM;
	if (err)
		fprintf(stderr, "transport_bench: cannot get %u + %u contiguous frames: %s\n", x.count, x.wcount,
			strerror(-err));
	if (!err)
		err = run_target(&t, a);
	client_close(x.c);
	free(x.wbuf);
	return err;
}

/* ---------------------------------------------------------- rawtcp mode */

/* Request header; a write's payload follows it, a read's reply is the
 * payload, a write's reply is the header echoed back as an ack. */
struct raw_hdr { uint32_t op, len; };

/* Receives exactly len bytes. Busy-polls (MSG_DONTWAIT) until spin_ns pass
 * without progress, then blocks; spin_ns 0 always blocks, SPIN_FOREVER never
 * does. -ESHUTDOWN when the peer closed before the first byte, -EPROTO when
 * it closed mid-message. */
static int recv_full(int fd, void *p, size_t len, uint64_t spin_ns)
{
	size_t got = 0;
	uint64_t idle_since = spin_ns && spin_ns != SPIN_FOREVER ? now_ns() : 0;

	while (got < len) {
		bool spin = spin_ns == SPIN_FOREVER || (spin_ns && now_ns() - idle_since < spin_ns);
		ssize_t r = recv(fd, (char *)p + got, len - got, spin ? MSG_DONTWAIT : 0);

		if (r > 0) {
			got += r;
			idle_since = idle_since ? now_ns() : 0;
		} else if (!r) {
			return got ? -EPROTO : -ESHUTDOWN;
		} else if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
			return -errno;
		}
	}
	return 0;
}

/* Sends every byte of iov[0..n), resuming after partial sends (blocking). */
static int send_full(int fd, struct iovec *iov, int n)
{
	while (n) {
		struct msghdr mh = { .msg_iov = iov, .msg_iovlen = n };
		ssize_t r = sendmsg(fd, &mh, MSG_NOSIGNAL);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		for (; n && (size_t)r >= iov->iov_len; iov++, n--)
			r -= iov->iov_len;
		if (n) {
			iov->iov_base = (char *)iov->iov_base + r;
			iov->iov_len -= r;
		}
	}
	return 0;
}

static int send_buf(int fd, const void *p, size_t len)
{
	struct iovec iov = { (void *)p, len };

	return send_full(fd, &iov, 1);
}

#define OP_SIDE_WRITE 4 /* rawtcp: the write beside a read_w, into the side buffer */

/* Answers one request from buf (size bytes) or, for OP_SIDE_WRITE, into
 * side (wsize bytes); -ESHUTDOWN once the client has closed the connection. */
static int serve_one(int fd, void *buf, size_t size, void *side, size_t wsize, uint64_t spin_ns)
{
	struct raw_hdr h;
	int err = recv_full(fd, &h, sizeof(h), spin_ns);

	if (err)
		return err;
	if (h.op == OP_SIDE_WRITE && h.len <= wsize)
		buf = side, size = wsize, h.op = OP_WRITE;
	else if (h.op == OP_SIDE_WRITE)
		return -EPROTO;
	if (h.len > size || (h.op != OP_READ && h.op != OP_WRITE))
		return -EPROTO;
	if (h.op == OP_READ)
		return send_buf(fd, buf, h.len);
	err = recv_full(fd, buf, h.len, spin_ns);
	return err ? err : send_buf(fd, &h, sizeof(h));
}

/* The server's placement mirrors the memnode's: a polling server takes the
 * last core (as claim_spin_core does), a sleeping one may run anywhere. */
static int server_placement(bool poll)
{
	cpu_set_t set;
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);

	if (poll)
		return pin_to(ncpu - 1);
	CPU_ZERO(&set);
	for (long i = 0; i < ncpu; i++)
		CPU_SET(i, &set);
	return sched_setaffinity(0, sizeof(set), &set) ? -errno : 0;
}

/* Child process: accepts one connection and serves it until it closes. */
static int raw_server(int lfd, size_t size, size_t wsize, bool poll)
{
	void *buf = calloc(1, size), *side = calloc(1, wsize ? wsize : 1);
	int one = 1, fd, err = buf && side ? server_placement(poll) : -ENOMEM;

	fd = err ? -1 : accept(lfd, NULL, NULL);
	if (!err && fd < 0)
		err = -errno;
	if (!err && setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)))
		err = -errno;
	while (!err)
		err = serve_one(fd, buf, size, side, wsize, poll ? SPIN_FOREVER : 0);
	if (err != -ESHUTDOWN)
		fprintf(stderr, "transport_bench: rawtcp server: %s\n", strerror(-err));
	free(buf);
	free(side);
	return err == -ESHUTDOWN ? 0 : err;
}

struct raw_ctx { int fd; size_t size; uint64_t spin_ns; size_t wsize; void *wbuf; };

/* Hands the kernel what it takes of iov now (as the comex client's first
 * non-blocking send does); the rest goes with send_full. */
static int send_some(int fd, struct iovec *iov, int *n)
{
	struct msghdr mh = { .msg_iov = iov, .msg_iovlen = *n };
	ssize_t r = sendmsg(fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);

	if (r < 0)
		return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -errno;
	for (; *n && (size_t)r >= iov->iov_len; iov++, --*n)
		r -= iov->iov_len;
	if (*n) {
		iov->iov_base = (char *)iov->iov_base + r;
		iov->iov_len -= r;
	}
	return 0;
}

static int recv_ack(struct raw_ctx *x, const struct raw_hdr *h)
{
	struct raw_hdr ack;
	int err = recv_full(x->fd, &ack, sizeof(ack), x->spin_ns);

	return err ? err : (ack.op == h->op && ack.len == h->len ? 0 : -EPROTO);
}

/* read_w: the side write goes out as far as it goes at once, then (t0) the
 * read's request follows it on the stream; the write's ack comes first. */
static int raw_read_w(struct raw_ctx *x, void *buf, uint64_t *t0)
{
	struct raw_hdr w = { OP_SIDE_WRITE, x->wsize }, r = { OP_READ, x->size }, wack = { OP_WRITE, x->wsize };
	struct iovec iov[3] = { { &w, sizeof(w) }, { x->wbuf, x->wsize }, { &r, sizeof(r) } };
	struct iovec *rest = iov;
	int n = 2, err = send_some(x->fd, iov, &n);

	*t0 = now_ns();
	rest += 2 - n;
	n += 1;
	if (!err)
		err = send_full(x->fd, rest, n);
	if (!err)
		err = recv_ack(x, &wack);
	return err ? err : recv_full(x->fd, buf, x->size, x->spin_ns);
}

static int raw_op(void *ctx, enum op_kind kind, void *buf, uint64_t *t0)
{
	struct raw_ctx *x = ctx;
	struct raw_hdr h = { kind, x->size };
	struct iovec iov[2] = { { &h, sizeof(h) }, { buf, x->size } };
	int err;

	if (kind == OP_READ_W)
		return raw_read_w(x, buf, t0);
	err = send_full(x->fd, iov, kind == OP_WRITE ? 2 : 1);
	if (err)
		return err;
	if (kind == OP_READ)
		return recv_full(x->fd, buf, x->size, x->spin_ns);
	return recv_ack(x, &h);
}

/* Closes *fd after a failed call, returning that call's -errno; *fd = -1. */
static int close_fail(int *fd)
{
	int err = -errno;

	close(*fd);
	*fd = -1;
	return err;
}

/* Makes the next sockets in network namespace name (NULL: ours, given back
 * as *home, closed). */
static int enter_netns(const char *name, int *home)
{
	char path[256];
	int fd, err = 0;

	if (!name) {
		err = setns(*home, CLONE_NEWNET) ? -errno : 0;
		close(*home);
		return err;
	}
	snprintf(path, sizeof(path), "/var/run/netns/%s", name);
	*home = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (*home < 0 || fd < 0 || setns(fd, CLONE_NEWNET))
		err = -errno;
	if (fd >= 0)
		close(fd);
	if (err && *home >= 0)
		close(*home);
	return err;
}

/* A listening socket on addr (NULL: 127.0.0.1), inside network namespace
 * netns when given, any port; its address (and so the port the kernel
 * chose) in *sa. */
static int raw_listen(const char *netns, const char *addr, int *lfd, struct sockaddr_in *sa)
{
	socklen_t salen = sizeof(*sa);
	int home = -1, err;

	*sa = (struct sockaddr_in){ .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	if (addr && inet_pton(AF_INET, addr, &sa->sin_addr) != 1)
		return -EINVAL;
	if (netns && (err = enter_netns(netns, &home)))
		return err;
	*lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (netns && (err = enter_netns(NULL, &home)))
		return err;
	if (*lfd < 0)
		return -errno;
	if (bind(*lfd, (struct sockaddr *)sa, sizeof(*sa)) || listen(*lfd, 1) ||
	    getsockname(*lfd, (struct sockaddr *)sa, &salen))
		return close_fail(lfd);
	return 0;
}

static int raw_connect(const struct sockaddr_in *sa, int *fd)
{
	int one = 1;

	*fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (*fd < 0)
		return -errno;
	if (connect(*fd, (const struct sockaddr *)sa, sizeof(*sa)) ||
	    setsockopt(*fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)))
		return close_fail(fd);
	return 0;
}

/* Closing our end ends the server; it must then exit cleanly. */
static int raw_reap(pid_t pid)
{
	int st;

	if (waitpid(pid, &st, 0) != pid)
		return -errno;
	return WIFEXITED(st) && !WEXITSTATUS(st) ? 0 : -ECHILD;
}

static int run_rawtcp(const struct bench_args *a)
{
	struct raw_ctx x = { -1, a->size, a->client_poll ? CLIENT_SPIN_NS : 0, a->wsize, NULL };
	struct target t = { raw_op, &x, a->size };
	struct sockaddr_in sa;
	int lfd, err, rerr;
	pid_t pid;

	if (a->wsize && !(x.wbuf = calloc(1, a->wsize)))
		return -ENOMEM;
	if ((err = raw_listen(a->netns, a->addr, &lfd, &sa))) {
		free(x.wbuf);
		return err;
	}
	pid = fork();
	if (pid < 0) {
		close(lfd);
		return -errno;
	}
	if (!pid)
		_exit(raw_server(lfd, a->size, a->wsize, a->server_poll) ? 1 : 0);
	close(lfd);
	err = raw_connect(&sa, &x.fd);
	if (!err)
		err = run_target(&t, a);
	if (x.fd >= 0)
		close(x.fd);
	else
		kill(pid, SIGTERM); /* never connected: the server waits in accept */
	rerr = raw_reap(pid);
	free(x.wbuf);
	return err ? err : rerr;
}

/* ------------------------------------------------------------ arguments */

static int usage(void)
{
	fprintf(stderr,
		"usage: transport_bench comex  --size BYTES --iters N [--cpu C] --memnode HOST:PORT --token-file F [client options]\n"
		"       transport_bench rawtcp --size BYTES --iters N [--cpu C] [--server-poll] [--client-poll]\n"
		"                              [--netns NAME --addr IP]\n"
		"--under-writes BYTES (both modes): also time reads each sharing the connection with a write of BYTES.\n"
		"BYTES: a multiple of %u up to %u frames. --cpu pins this (client) process to core C.\n"
		"--server-poll: the rawtcp server busy-polls its socket (MSG_DONTWAIT) instead of blocking.\n"
		"--client-poll: the rawtcp client busy-polls for %llu us before blocking, like the comex client.\n",
		FRAME_SIZE, MAX_FRAMES, CLIENT_SPIN_NS / 1000);
	return -EINVAL;
}

/* Handles one bench option at argv[*i] (advancing *i past its value);
 * 1 if it is not a bench option. */
static int bench_option(struct bench_args *a, int argc, char **argv, int *i)
{
	const char *f = argv[*i];
	bool takes_value = !strcmp(f, "--size") || !strcmp(f, "--iters") || !strcmp(f, "--cpu") ||
			   !strcmp(f, "--under-writes");
	char *end = NULL;
	long long v = 0;

	if (!strcmp(f, "--netns") || !strcmp(f, "--addr")) {
		if (++*i >= argc)
			return usage();
		*(f[2] == 'n' ? &a->netns : &a->addr) = argv[*i];
		return 0;
	}
	if (takes_value) {
		if (++*i >= argc)
			return usage();
		v = strtoll(argv[*i], &end, 10);
		if (*end || end == argv[*i])
			return usage();
	}
	if (!strcmp(f, "--size"))
		a->size = v;
	else if (!strcmp(f, "--iters"))
		a->iters = v;
	else if (!strcmp(f, "--cpu"))
		a->cpu = v;
	else if (!strcmp(f, "--under-writes"))
		a->wsize = v;
	else if (!strcmp(f, "--server-poll"))
		a->server_poll = true;
	else if (!strcmp(f, "--client-poll"))
		a->client_poll = true;
	else
		return 1;
	return 0;
}

static int parse_args(int argc, char **argv, struct bench_args *a)
{
	*a = (struct bench_args){ .cpu = -1 };
	if (argc < 2 || (strcmp(argv[1], "comex") && strcmp(argv[1], "rawtcp")))
		return usage();
	a->mode = argv[1];
	a->rest[a->nrest++] = argv[0];
	for (int i = 2; i < argc; i++) {
		int r = bench_option(a, argc, argv, &i);

		if (r < 0)
			return r;
		if (r && a->nrest == MAX_PASSTHROUGH)
			return usage();
		if (r)
			a->rest[a->nrest++] = argv[i];
	}
	if (!a->size || a->size % FRAME_SIZE || a->size / FRAME_SIZE > MAX_FRAMES || !a->iters ||
	    a->wsize % FRAME_SIZE || a->wsize / FRAME_SIZE > MAX_FRAMES)
		return usage();
	if (!strcmp(a->mode, "rawtcp") && a->nrest > 1) {
		fprintf(stderr, "transport_bench: rawtcp: unknown option '%s'\n", a->rest[1]);
		return -EINVAL;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct bench_args a;
	int err = parse_args(argc, argv, &a);

	if (!err && (err = pin_to(a.cpu)))
		fprintf(stderr, "transport_bench: cannot pin to core %d: %s\n", a.cpu, strerror(-err));
	if (!err)
		err = !strcmp(a.mode, "comex") ? run_comex(&a) : run_rawtcp(&a);
	if (err && err != -EINVAL)
		fprintf(stderr, "transport_bench: %s %zu bytes failed: %s\n", a.mode, a.size, strerror(-err));
	return err ? 1 : 0;
}

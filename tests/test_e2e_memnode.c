/* End to end over real `comex memnode` processes and UCX over TCP: 100 000
 * pages round trip, two clients, tokens, isolation, several reads at once,
 * disconnect clean-up, full pool, one-sided mode, dead or stopped memnodes,
 * a simulated distance; then again over shared memory (option shm). */
#include <pthread.h>

#include "clock.h"
#include "e2e.h"

#define MIB "M"
static char token[256], other_token[256];

struct run { uint32_t pfn, count; };

/* Writes npages pages in runs of 1..64 frames, reads them back in another
 * order with other run boundaries, and checks every byte. */
static void roundtrip(struct comex_client *c, unsigned node, uint32_t npages, uint64_t seed)
{
	struct run *runs = calloc(npages, sizeof(*runs));
	uint64_t *buf = malloc(64 * 4096);
	uint32_t nruns = 0, done = 0;

	CHECK(runs && buf);
	while (done < npages) {
		uint32_t want = 1 + mix64(seed + done) % 64, pfn, got;

		if (want > npages - done)
			want = npages - done;
		CHECK(client_alloc(c, node, want, &pfn, &got) == 0);
		for (uint32_t i = 0; i < got; i++)
			fill_page(buf + i * 512, pfn + i, seed);
		CHECK(client_write(c, node, pfn, got, buf) == 0);
		runs[nruns++] = (struct run){ pfn, got };
		done += got;
	}
	for (uint32_t i = nruns - 1; i > 0; i--) { /* shuffle */
		uint32_t j = mix64(seed ^ i) % (i + 1);
		struct run t = runs[i];
		runs[i] = runs[j];
		runs[j] = t;
	}
	for (uint32_t r = 0; r < nruns; r++) {
		/* read the run in two pieces to cross the write boundaries */
		uint32_t first = runs[r].count / 2;
		if (first)
			CHECK(client_read(c, node, runs[r].pfn, first, buf) == 0);
		CHECK(client_read(c, node, runs[r].pfn + first, runs[r].count - first, buf + first * 512) == 0);
		for (uint32_t i = 0; i < runs[r].count; i++)
			CHECK(page_ok(buf + i * 512, runs[r].pfn + i, seed));
		CHECK(client_release(c, node, runs[r].pfn, runs[r].count) == 0);
	}
	CHECK(client_flush(c) == 0);
	free(runs);
	free(buf);
}

static void test_roundtrip_100k(void)
{
	struct memnode_proc mn;
	struct comex_client *c;
	struct client_node_stats st;

	memnode_start(&mn, (const char *[]){ "--pool", "512M", "--token-file", token, NULL });
	CHECK(client_for((const char *[]){ "--memnode", mn.addr, "--token-file", token, NULL }, &c) == 0);
	roundtrip(c, 0, 100000, 1);
	CHECK(client_node_stats(c, 0, &st) == 0);
	/* everything released: the memnode holds for us only what our pool keeps */
	CHECK(st.frames_held == st.pool_free_frames);
	CHECK(st.allocs > 0 && st.rtt_us > 0);
	client_close(c);
	memnode_stop(&mn);
	fprintf(stderr, "roundtrip_100k: ok (rtt %.1f us, T %u, suggested %u)\n", st.rtt_us, st.threshold,
		st.threshold_suggested);
}

struct worker_arg { const char *addr; uint64_t seed; };

static void *client_thread(void *p)
{
	struct worker_arg *a = p;
	struct comex_client *c;

	CHECK(client_for((const char *[]){ "--memnode", a->addr, "--token-file", token, NULL }, &c) == 0);
	roundtrip(c, 0, 20000, a->seed);
	client_close(c);
	return NULL;
}

static void test_two_clients(void)
{
	struct memnode_proc mn;
	pthread_t t[2];
	struct worker_arg a[2];

	memnode_start(&mn, (const char *[]){ "--pool", "256M", "--token-file", token, NULL });
	for (int i = 0; i < 2; i++) {
		a[i] = (struct worker_arg){ mn.addr, 100 + i };
		CHECK(pthread_create(&t[i], NULL, client_thread, &a[i]) == 0);
	}
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	memnode_stop(&mn);
	fprintf(stderr, "two_clients: ok\n");
}

static void test_tokens_and_isolation(void)
{
	struct memnode_proc mn;
	struct comex_client *a, *b;
	struct client_node_stats st;
	uint64_t page[512];
	uint32_t pfn, got;

	memnode_start(&mn, (const char *[]){ "--pool", "64M", "--token-file", token, NULL });
	CHECK(client_for((const char *[]){ "--memnode", mn.addr, "--token-file", other_token, NULL }, &b) == -EACCES);
	CHECK(client_for((const char *[]){ "--memnode", mn.addr, NULL }, &b) == -EACCES);
	CHECK(client_for((const char *[]){ "--memnode", mn.addr, "--token-file", token, NULL }, &a) == 0);
	CHECK(client_for((const char *[]){ "--memnode", mn.addr, "--token-file", token, NULL }, &b) == 0);
	CHECK(client_alloc(a, 0, 1, &pfn, &got) == 0 && got == 1);
	fill_page(page, pfn, 7);
	CHECK(client_write(a, 0, pfn, 1, page) == 0);
	memset(page, 0, sizeof(page));
	CHECK(client_read(b, 0, pfn, 1, page) == -EPERM);      /* B cannot read A's frame */
	CHECK(client_write(b, 0, pfn, 1, page) == -EPERM);     /* nor overwrite it */
	CHECK(client_release(b, 0, pfn, 1) == 0);
	client_flush(b);                                       /* the memnode refuses that FREE */
	CHECK(client_read(a, 0, pfn, 1, page) == 0 && page_ok(page, pfn, 7));
	CHECK(client_node_stats(a, 0, &st) == 0 && st.frames_held >= 1);
	client_close(b);
	client_close(a);
	memnode_stop(&mn);
	fprintf(stderr, "tokens_and_isolation: ok\n");
}

static uint64_t memnode_free(const char *addr)
{
	struct comex_client *c;
	struct client_node_stats st;

	CHECK(client_for((const char *[]){ "--memnode", addr, "--token-file", token, NULL }, &c) == 0);
	CHECK(client_node_stats(c, 0, &st) == 0);
	client_close(c);
	return st.memnode_free_frames;
}

/* client_read_runs: several runs asked for at once come back whole and in
 * their own buffers; a run that is refused (out of the pool, or frames not
 * ours) fails alone; hedged reads of a healthy memnode succeed too. */
static void test_read_runs(void)
{
	enum { RUNS = 6 };
	struct memnode_proc mn;
	struct comex_client *c, *other;
	struct client_run cr[RUNS + 2];
	uint64_t *buf = malloc((size_t)(RUNS + 2) * 64 * 4096);
	int status[RUNS + 2];
	uint32_t pfn, got;

	CHECK(buf);
	memnode_start(&mn, (const char *[]){ "--pool", "64M", "--token-file", token, NULL });
	CHECK(client_for((const char *[]){ "--memnode", mn.addr, "--token-file", token, NULL }, &c) == 0);
	for (unsigned r = 0; r < RUNS; r++) {
		CHECK(client_alloc(c, 0, 1 + r * 11, &pfn, &got) == 0);
		for (uint32_t i = 0; i < got; i++)
			fill_page(buf + i * 512, pfn + i, 40 + r);
		CHECK(client_write(c, 0, pfn, got, buf) == 0);
		cr[r] = (struct client_run){ pfn, got, buf + (size_t)r * 64 * 512 };
	}
	cr[RUNS] = (struct client_run){ 1u << 30, 1, buf + (size_t)RUNS * 64 * 512 };    /* past the pool */
	CHECK(client_for((const char *[]){ "--memnode", mn.addr, "--token-file", token, NULL }, &other) == 0);
	CHECK(client_alloc(other, 0, 1, &pfn, &got) == 0);
	cr[RUNS + 1] = (struct client_run){ pfn, 1, buf + (size_t)(RUNS + 1) * 64 * 512 }; /* another client's */
	for (int hedged = 0; hedged < 2; hedged++) {
		memset(buf, 0, (size_t)(RUNS + 2) * 64 * 4096);
		CHECK(client_read_runs(c, 0, cr, RUNS + 2, hedged, status) == 0);
		for (unsigned r = 0; r < RUNS; r++) {
			CHECK(status[r] == 0);
			for (uint32_t i = 0; i < cr[r].count; i++)
				CHECK(page_ok((uint64_t *)cr[r].dst + i * 512, cr[r].pfn + i, 40 + r));
		}
		CHECK(status[RUNS] == -ERANGE && status[RUNS + 1] == -EPERM);
	}
	CHECK(client_read_runs(c, 0, cr, CLIENT_MAX_RUNS + 1, false, status) == -EINVAL);
	client_close(other);
	client_close(c);
	memnode_stop(&mn);
	free(buf);
	fprintf(stderr, "read_runs: ok\n");
}

static void test_disconnect_returns_frames(void)
{
	struct memnode_proc mn;
	struct comex_client *c;
	uint32_t pfn, got;
	pid_t child;
	int st;

	memnode_start(&mn, (const char *[]){ "--pool", "64M", "--token-file", token, NULL });
	CHECK(memnode_free(mn.addr) == 16384);
	CHECK(client_for((const char *[]){ "--memnode", mn.addr, "--token-file", token, NULL }, &c) == 0);
	for (int i = 0; i < 100; i++)
		CHECK(client_alloc(c, 0, 64, &pfn, &got) == 0);
	client_close(c); /* BYE */
	CHECK(memnode_free(mn.addr) == 16384);
	child = fork();
	if (!child) { /* a client that dies without saying goodbye */
		CHECK(client_for((const char *[]){ "--memnode", mn.addr, "--token-file", token, NULL }, &c) == 0);
		for (int i = 0; i < 100; i++)
			CHECK(client_alloc(c, 0, 64, &pfn, &got) == 0);
		_exit(0);
	}
	CHECK(waitpid(child, &st, 0) == child && WIFEXITED(st) && WEXITSTATUS(st) == 0);
	for (int tries = 0; memnode_free(mn.addr) != 16384; tries++) {
		CHECK(tries < 1000); /* the memnode notices the reset asynchronously */
		usleep(10000);
	}
	memnode_stop(&mn);
	fprintf(stderr, "disconnect_returns_frames: ok\n");
}

static void test_full_pool(void)
{
	struct memnode_proc mn;
	struct comex_client *c;
	uint32_t pfn, got;
	uint64_t total = 0;
	int err;

	memnode_start(&mn, (const char *[]){ "--pool", "4M", "--token-file", token, NULL });
	CHECK(client_for((const char *[]){ "--memnode", mn.addr, "--token-file", token, "--replenish-order", "6", NULL }, &c) == 0);
	while (!(err = client_alloc(c, 0, 1000, &pfn, &got)))
		total += got;
	CHECK(err == -ENOSPC);
	CHECK(total == 1024);
	client_close(c);
	memnode_stop(&mn);
	fprintf(stderr, "full_pool: ok\n");
}

static void test_rma_path(void)
{
	struct memnode_proc mn;
	struct comex_client *c;

	memnode_start(&mn, (const char *[]){ "--pool", "128M", "--token-file", token, "--data-path", "rma", NULL });
	CHECK(client_for((const char *[]){ "--memnode", mn.addr, "--token-file", token, NULL }, &c) == 0);
	roundtrip(c, 0, 20000, 5);
	client_close(c);
	memnode_stop(&mn);
	fprintf(stderr, "rma_path: ok\n");
}

static void test_memnode_dies(int sig)
{
	struct memnode_proc mn;
	struct comex_client *c;
	uint64_t page[512];
	uint32_t pfn, got;
	int err, st;

	memnode_start(&mn, (const char *[]){ "--pool", "64M", "--token-file", token, NULL });
	CHECK(client_for((const char *[]){ "--memnode", mn.addr, "--token-file", token, "--op-timeout", "2s", NULL }, &c) == 0);
	CHECK(client_alloc(c, 0, 1, &pfn, &got) == 0);
	fill_page(page, pfn, 9);
	CHECK(client_write(c, 0, pfn, 1, page) == 0);
	kill(mn.pid, sig);
	memset(page, 0xab, sizeof(page));
	err = client_read(c, 0, pfn, 1, page);
	CHECK(err < 0); /* an error, never a hang or stale data reported as success */
	CHECK(client_read(c, 0, pfn, 1, page) < 0);
	CHECK(client_alloc(c, 0, 1, &pfn, &got) < 0);
	client_close(c);
	if (sig == SIGSTOP)
		kill(mn.pid, SIGCONT), memnode_stop(&mn);
	else
		CHECK(waitpid(mn.pid, &st, 0) == mn.pid);
	fprintf(stderr, "memnode_dies(%s): ok (%s)\n", strsignal(sig), strerror(-err));
}

/* Writes in flight when their memnode died, waited for while its restart is
 * joined and after: each fails at once (its session is gone), and neither
 * touches nor fails the new session (the soak's SIGSEGV in join_check). */
static void test_rejoin_old_writes(void)
{
	struct memnode_proc mn, again;
	struct comex_client *c;
	struct client_health h;
	struct tp_op op1, op2;
	uint64_t page[512];
	uint32_t pfn, got;
	int err, st;

	memnode_start(&mn, (const char *[]){ "--pool", "64M", "--token-file", token, NULL });
	CHECK(client_for((const char *[]){ "--memnode", mn.addr, "--token-file", token, "--op-timeout", "5s", NULL },
			 &c) == 0);
	CHECK(client_alloc(c, 0, 2, &pfn, &got) == 0 && got == 2);
	fill_page(page, pfn, 11);
	kill(mn.pid, SIGSTOP); /* the writes stay unanswered */
	CHECK(client_write_start(c, 0, pfn, 1, page, false, &op1) == 0);
	CHECK(client_write_start(c, 0, pfn + 1, 1, page, false, &op2) == 0);
	kill(mn.pid, SIGKILL);
	CHECK(waitpid(mn.pid, &st, 0) == mn.pid);
	do
		client_poll(c, &h);
	while (!(h.out & 1));
	memnode_start(&again, (const char *[]){ "--listen", mn.addr, "--pool", "64M", "--token-file", token, NULL });
	CHECK(client_rejoin(c, 0) == -EINPROGRESS);
	CHECK(client_write_wait(c, 0, &op1) < 0); /* while joining */
	while ((err = client_rejoin(c, 0)) == -EINPROGRESS)
		client_poll(c, &h);
	CHECK(err == 0);
	CHECK(client_write_wait(c, 0, &op2) < 0); /* after the join */
	client_poll(c, &h);
	CHECK(!(h.out & 1));
	roundtrip(c, 0, 2000, 12);
	client_close(c);
	memnode_stop(&again);
	fprintf(stderr, "rejoin_old_writes: ok\n");
}

/* A memnode that is down when the client starts: the client starts on the
 * others and takes it in once it is up; with none up it fails (connect-timeout 0). */
static void test_start_with_one_down(void)
{
	struct memnode_proc up, down;
	struct comex_client *c;
	struct client_health h;
	char list[160];
	int err, st;

	memnode_start(&up, (const char *[]){ "--pool", "64M", "--token-file", token, NULL });
	memnode_start(&down, (const char *[]){ "--pool", "64M", "--token-file", token, NULL });
	kill(down.pid, SIGKILL); /* its port is free now: nobody listens there */
	CHECK(waitpid(down.pid, &st, 0) == down.pid);
	CHECK(client_for((const char *[]){ "--memnode", down.addr, "--token-file", token, "--connect-timeout", "0",
				NULL }, &c) < 0); /* none up, and no wait for one (e2e_run_rejoin late waits) */
	snprintf(list, sizeof(list), "%s,%s", up.addr, down.addr);
	CHECK(client_for((const char *[]){ "--memnode", list, "--token-file", token, NULL }, &c) == 0);
	client_poll(c, &h);
	CHECK(h.out == 2); /* the first in use, the second out */
	roundtrip(c, 0, 1000, 13);
	CHECK(client_rejoin(c, 1) < 0 || h.out); /* still down: an error or in progress, never a wait */
	memnode_start(&down, (const char *[]){ "--listen", down.addr, "--pool", "64M", "--token-file", token, NULL });
	do { /* back-off as the membership thread does it, without the delays */
		err = client_rejoin(c, 1);
		client_poll(c, &h);
	} while (err);
	roundtrip(c, 1, 1000, 14);
	client_close(c);
	memnode_stop(&down);
	memnode_stop(&up);
	fprintf(stderr, "start_with_one_down: ok\n");
}

/* Option sim-rtt: every reply waits for the simulated round trip, so an
 * ALLOC, a WRITE and a READ each take at least that long (only the lower
 * bound is checked here: the upper one is timing, measured in
 * bench/distance.py against a ping-pong of the same run). */
static void test_sim_rtt(void)
{
	struct memnode_proc mn;
	struct comex_client *c;
	uint64_t *buf = malloc(4096), t0, ns[3];
	uint32_t pfn, got;

	CHECK(buf);
	memnode_start(&mn, (const char *[]){ "--pool", "64M", "--token-file", token, NULL });
	CHECK(client_for((const char *[]){ "--memnode", mn.addr, "--token-file", token, "--sim-rtt", "20ms",
					   "--replenish-threshold", "1", NULL }, &c) == 0);
	t0 = now_ns();
	CHECK(client_alloc(c, 0, 1, &pfn, &got) == 0 && got == 1);
	ns[0] = now_ns() - t0;
	fill_page(buf, pfn, 77);
	t0 = now_ns();
	CHECK(client_write(c, 0, pfn, 1, buf) == 0);
	ns[1] = now_ns() - t0;
	memset(buf, 0, 4096);
	t0 = now_ns();
	CHECK(client_read(c, 0, pfn, 1, buf) == 0);
	ns[2] = now_ns() - t0;
	CHECK(page_ok(buf, pfn, 77));
	client_close(c);
	memnode_stop(&mn);
	free(buf);
	for (int i = 0; i < 3; i++)
		CHECK(ns[i] >= 20000000);
	fprintf(stderr, "sim_rtt: ok (20 ms set: alloc %.1f ms, write %.1f ms, read %.1f ms)\n", ns[0] / 1e6,
		ns[1] / 1e6, ns[2] / 1e6);
}

int main(void)
{
	setenv("UCX_TLS", getenv("COMEX_TEST_UCX_TLS") ? getenv("COMEX_TEST_UCX_TLS") : "tcp", 1);
	e2e_init();
	e2e_token("token", token, sizeof(token));
	e2e_token("other", other_token, sizeof(other_token));
	test_roundtrip_100k();
	test_two_clients();
	test_tokens_and_isolation();
	test_read_runs();
	test_disconnect_returns_frames();
	test_full_pool();
	test_rma_path();
	test_memnode_dies(SIGKILL);
	test_memnode_dies(SIGSTOP);
	test_rejoin_old_writes();
	test_start_with_one_down();
	test_sim_rtt();
	/* Same paths with UCX's own choice and the shm option: shared memory
	 * between the memnode and its clients on this host. */
	unsetenv("UCX_TLS");
	setenv("COMEX_SHM", "true", 1);
	test_two_clients();
	test_tokens_and_isolation();
	test_read_runs();
	test_disconnect_returns_frames();
	test_rma_path();
	test_memnode_dies(SIGKILL);
	test_memnode_dies(SIGSTOP);
	test_rejoin_old_writes();
	return 0;
}

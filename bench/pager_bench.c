/* pager_bench: a synthetic memory workload for the pager benchmark
 * (bench/pager.py). A plain C program that knows nothing about comex, so it
 * can run natively and under `comex run` unchanged:
 *
 *   pager_bench --pattern seq|rand|stride --size-mib N [--passes K] [--write-pct W] [--seed S]
 *               [--stride K] [--time-touches 0|1] [--fault-ns T] [--threads T] [--progress 0|1]
 *
 * 1. fill: mallocs N MiB and writes every 8-byte word of it with a value
 *    derived from its index and the seed (the first touch of every page);
 * 2. access: K passes, each touching every 4 KiB page exactly once, in
 *    order (seq) or in a fresh seeded random permutation of the pages per
 *    pass (rand; the permutation is built before the pass's clock starts),
 *    or in strides of --stride pages (stride, default 16: pages 0, 16, 32,
 *    ..., then 1, 17, 33, ..., then 2, ...).
 *    Each touch reads one word of the page into the checksum, and in W % of
 *    the touches (chosen by a hash of seed, pass and page) also writes one
 *    word: the one the next pass reads, so a lost or stale write changes the
 *    checksum.
 *    With --threads T (default 1) each pass is split into T consecutive
 *    shares of its order, one per thread (threads started per pass and
 *    joined before the next, so what a pass reads never depends on timing);
 *    each thread keeps its own running checksum, folded in thread order at
 *    the end (T = 1 gives the single-threaded checksum).
 *
 * Output: one line of JSON on stdout,
 *   {"pattern":"rand","size_mib":256,"passes":3,"write_pct":20,"seed":1,
 *    "checksum":"<16 hex digits>","fill_s":..,"access_s":..,"ns_per_page":..}
 * With --time-touches 1 every touch of the access passes is timed
 * (CLOCK_MONOTONIC before and after); touches slower than --fault-ns
 * (default 2000 ns) count as faults, and the line gains
 *   "faults_seen":..,"fault_median_us":..,"fault_p99_us":..,"fault_total_s":..,"fault_ns":T
 * (the medians are null when no touch was that slow); the clock calls add
 * to access_s, so compare timed runs only with timed runs.
 * With --progress 1 the first thread writes "pager_bench: progress NS N" to
 * stderr every 4096 touches of the access passes (NS: CLOCK_MONOTONIC, N:
 * its touches so far), for a script that follows the throughput
 * (bench/soak.py).
 * checksum depends only on the arguments (never on timing or where the
 * pages lived); fill_s and access_s are CLOCK_MONOTONIC seconds of the two
 * phases; ns_per_page = access_s / (passes * pages). Exit status 0, or 2 on
 * a usage error, 1 if memory cannot be allocated. This CLI is used by other
 * harnesses: keep it stable (new keys may be added, none removed). */
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define PAGE 4096u
#define WORDS_PER_PAGE (PAGE / sizeof(uint64_t))
#define DEFAULT_STRIDE 16
#define DEFAULT_FAULT_NS 2000

enum pattern { PAT_SEQ, PAT_RAND, PAT_STRIDE };

/* Latencies of the slow touches (ns), when touches are timed. */
struct touch_log {
	uint32_t *ns;
	size_t n, cap;
	uint64_t threshold_ns;
};

static uint64_t splitmix(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint64_t mix(uint64_t a, uint64_t b)
{
	uint64_t s = a ^ (b * 0xd6e8feb86659fd93ull);

	return splitmix(&s);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The word of page p that pass k reads (pass k-1 may have written it). */
static size_t word_of(uint64_t p, unsigned k)
{
	return (size_t)((p * 31u + (uint64_t)k * 17u) % WORDS_PER_PAGE);
}

static void usage(void)
{
	fprintf(stderr, "usage: pager_bench --pattern seq|rand|stride --size-mib N [--passes K] [--write-pct W] [--seed S]\n"
			"                   [--stride K] [--time-touches 0|1] [--fault-ns T] [--threads T] [--progress 0|1]\n");
	exit(2);
}

static unsigned long long num(const char *s, unsigned long long max)
{
	char *end;
	unsigned long long v;

	if (!s || !*s || *s == '-')
		usage();
	v = strtoull(s, &end, 10);
	if (*end || v > max)
		usage();
	return v;
}

static enum pattern parse_pattern(const char *s)
{
	if (s && !strcmp(s, "seq"))
		return PAT_SEQ;
	if (s && !strcmp(s, "rand"))
		return PAT_RAND;
	if (s && !strcmp(s, "stride"))
		return PAT_STRIDE;
	usage();
	return PAT_SEQ;
}

/* order = 0, k, 2k, ..., 1, k+1, 2k+1, ...: every page once. */
static void stride_order(uint32_t *order, size_t npages, size_t k)
{
	size_t i = 0;

	for (size_t r = 0; r < k; r++)
		for (size_t p = r; p < npages; p += k)
			order[i++] = (uint32_t)p;
}

/* A fresh seeded random permutation of the pages (Fisher-Yates). */
static void rand_order(uint32_t *order, size_t npages, uint64_t *rng)
{
	for (size_t i = 0; i < npages; i++)
		order[i] = (uint32_t)i;
	for (size_t i = npages - 1; i > 0; i--) {
		size_t j = (size_t)(splitmix(rng) % (i + 1));
		uint32_t t = order[i];

		order[i] = order[j];
		order[j] = t;
	}
}

static void log_touch(struct touch_log *log, uint64_t ns)
{
	if (ns >= log->threshold_ns && log->n < log->cap)
		log->ns[log->n++] = ns > UINT32_MAX ? UINT32_MAX : (uint32_t)ns;
}

/* Index of the q-quantile of n sorted values (nearest rank). */
static size_t rank(size_t n, double q)
{
	size_t r = (size_t)(q * (double)n + 0.999999);

	return r ? r - 1 : 0;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return (x > y) - (x < y);
}

/* ,"faults_seen":..,... for the JSON line (nothing if touches were not timed). */
static void print_touch_log(struct touch_log *log)
{
	uint64_t total = 0;

	if (!log->ns)
		return;
	qsort(log->ns, log->n, sizeof(*log->ns), cmp_u32);
	for (size_t i = 0; i < log->n; i++)
		total += log->ns[i];
	printf(",\"faults_seen\":%zu", log->n);
	if (log->n)
		printf(",\"fault_median_us\":%.3f,\"fault_p99_us\":%.3f", log->ns[rank(log->n, 0.5)] / 1e3,
		       log->ns[rank(log->n, 0.99)] / 1e3);
	else
		printf(",\"fault_median_us\":null,\"fault_p99_us\":null");
	printf(",\"fault_total_s\":%.6f,\"fault_ns\":%" PRIu64, (double)total * 1e-9, log->threshold_ns);
}

#define MAX_THREADS 64

/* One thread's share of one access pass: order[first, last) (or those
 * pages in address order when order is NULL). */
struct share {
	uint64_t *mem;
	const uint32_t *order;
	size_t first, last;
	unsigned pass;
	uint64_t seed, write_pct, sum;
	bool timed;
	int progress_fd;           /* -1, or where to report touches (thread 0's share only) */
	struct touch_log log;
};

#define PROGRESS_EVERY 4096 /* touches between two progress lines */

/* "pager_bench: progress NS TOUCHED\n" with NS on CLOCK_MONOTONIC (the
 * clock of a watching script), written whole with one write(2). */
static void progress(int fd, uint64_t touched)
{
	char line[96];
	int n = snprintf(line, sizeof(line), "pager_bench: progress %" PRIu64 " %" PRIu64 "\n", now_ns(), touched);

	if (write(fd, line, (size_t)n) < 0)
		return; /* a watcher that went away is no reason to stop */
}

static uint64_t touched_total; /* thread 0's touches over all passes */

static void *access_share(void *arg)
{
	struct share *sh = arg;
	uint64_t sum = sh->sum;
	unsigned k = sh->pass;

	for (size_t i = sh->first; i < sh->last; i++) {
		uint64_t p = sh->order ? sh->order[i] : i;
		uint64_t *page = sh->mem + p * WORDS_PER_PAGE;
		uint64_t t_touch = sh->timed ? now_ns() : 0;
		uint64_t v = page[word_of(p, k)];

		sum = (sum ^ v) * 0x100000001b3ull + p;
		if (sh->write_pct && mix(sh->seed ^ ((uint64_t)k << 40), p) % 100 < sh->write_pct)
			page[word_of(p, k + 1)] = sum;
		if (sh->timed)
			log_touch(&sh->log, now_ns() - t_touch);
		if (sh->progress_fd >= 0 && ++touched_total % PROGRESS_EVERY == 0)
			progress(sh->progress_fd, touched_total);
	}
	sh->sum = sum;
	return NULL;
}

/* One pass over npages pages by nthreads threads (this one included). */
static int access_pass(struct share *sh, unsigned nthreads, size_t npages, unsigned pass)
{
	pthread_t t[MAX_THREADS];

	for (unsigned j = 0; j < nthreads; j++) {
		sh[j].first = npages * j / nthreads;
		sh[j].last = npages * (j + 1) / nthreads;
		sh[j].pass = pass;
	}
	for (unsigned j = 1; j < nthreads; j++)
		if (pthread_create(&t[j], NULL, access_share, &sh[j]))
			return -1;
	access_share(&sh[0]);
	for (unsigned j = 1; j < nthreads; j++)
		pthread_join(t[j], NULL);
	return 0;
}

int main(int argc, char **argv)
{
	const char *pattern = NULL;
	unsigned long long size_mib = 0, passes = 3, write_pct = 0, seed = 1, stride = DEFAULT_STRIDE;
	unsigned long long timed = 0, fault_ns = DEFAULT_FAULT_NS, nthreads = 1, progress_on = 0;
	enum pattern pat;

	for (int i = 1; i < argc; i += 2) { /* every option takes a value */
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(a, "--pattern"))
			pattern = v;
		else if (!strcmp(a, "--size-mib"))
			size_mib = num(v, 1ull << 20);
		else if (!strcmp(a, "--passes"))
			passes = num(v, 1000000);
		else if (!strcmp(a, "--write-pct"))
			write_pct = num(v, 100);
		else if (!strcmp(a, "--seed"))
			seed = num(v, UINT64_MAX);
		else if (!strcmp(a, "--stride"))
			stride = num(v, 1ull << 20);
		else if (!strcmp(a, "--time-touches"))
			timed = num(v, 1);
		else if (!strcmp(a, "--fault-ns"))
			fault_ns = num(v, UINT32_MAX);
		else if (!strcmp(a, "--threads"))
			nthreads = num(v, MAX_THREADS);
		else if (!strcmp(a, "--progress"))
			progress_on = num(v, 1);
		else
			usage();
	}
	pat = parse_pattern(pattern);
	if (!size_mib || !stride || !nthreads)
		usage();

	size_t bytes = (size_t)size_mib << 20, npages = bytes / PAGE, nwords = bytes / sizeof(uint64_t);
	uint64_t *mem = malloc(bytes);
	uint32_t *order = pat != PAT_SEQ ? malloc(npages * sizeof(*order)) : NULL;
	struct touch_log log = { .threshold_ns = fault_ns };

	if (timed) {
		log.cap = (size_t)passes * npages;
		log.ns = malloc(log.cap * sizeof(*log.ns) + 1);
		if (log.ns) /* first touch now, not inside the passes */
			memset(log.ns, 0, log.cap * sizeof(*log.ns));
	}
	if (!mem || (pat != PAT_SEQ && !order) || (timed && !log.ns)) {
		fprintf(stderr, "pager_bench: cannot allocate %llu MiB\n", size_mib);
		return 1;
	}
	if (pat == PAT_STRIDE)
		stride_order(order, npages, stride);

	/* fill: the first touch of every page */
	double t0 = now_s();
	for (size_t w = 0; w < nwords; w++)
		mem[w] = mix(seed, w);
	double fill_s = now_s() - t0;

	/* access */
	uint64_t sum = 0x1234567887654321ull ^ seed, rng = seed * 0x2545f4914f6cdd1dull + 7;
	double access_s = 0;
	struct share sh[MAX_THREADS];

	for (unsigned j = 0; j < nthreads; j++) {
		sh[j] = (struct share){ .mem = mem, .order = order, .seed = seed, .write_pct = write_pct,
					.sum = sum ^ j, .timed = timed, .log = log,
					.progress_fd = progress_on && !j ? STDERR_FILENO : -1 };
		sh[j].log.ns = log.ns ? log.ns + log.cap / nthreads * j : NULL;
		sh[j].log.cap = log.cap / nthreads;
	}
	for (unsigned k = 0; k < passes; k++) {
		if (pat == PAT_RAND) /* outside the clock */
			rand_order(order, npages, &rng);
		t0 = now_s();
		if (access_pass(sh, (unsigned)nthreads, npages, k)) {
			fprintf(stderr, "pager_bench: cannot start %llu threads\n", nthreads);
			return 1;
		}
		access_s += now_s() - t0;
	}
	sum = sh[0].sum;
	for (unsigned j = 1; j < nthreads; j++)
		sum = (sum ^ sh[j].sum) * 0x100000001b3ull;
	if (timed) { /* the shares' slow touches, gathered at the front */
		log.n = 0;
		for (unsigned j = 0; j < nthreads; j++) {
			memmove(log.ns + log.n, sh[j].log.ns, sh[j].log.n * sizeof(*log.ns));
			log.n += sh[j].log.n;
		}
	}

	printf("{\"pattern\":\"%s\",\"size_mib\":%llu,\"passes\":%llu,\"write_pct\":%llu,\"seed\":%llu,"
	       "\"checksum\":\"%016" PRIx64 "\",\"fill_s\":%.6f,\"access_s\":%.6f,\"ns_per_page\":%.1f",
	       pattern, size_mib, passes, write_pct, seed, sum, fill_s, access_s,
	       passes ? access_s * 1e9 / ((double)passes * (double)npages) : 0.0);
	if (pat == PAT_STRIDE)
		printf(",\"stride\":%llu", stride);
	if (nthreads > 1)
		printf(",\"threads\":%llu", nthreads);
	print_touch_log(&log);
	printf("}\n");
	free(log.ns);
	free(order);
	free(mem);
	return 0;
}

/* pager_bench: a synthetic memory workload for the pager benchmark
 * (bench/pager.py). A plain C program that knows nothing about comex, so it
 * can run natively and under `comex run` unchanged:
 *
 *   pager_bench --pattern seq|rand --size-mib N [--passes K] [--write-pct W] [--seed S]
 *
 * 1. fill: mallocs N MiB and writes every 8-byte word of it with a value
 *    derived from its index and the seed (the first touch of every page);
 * 2. access: K passes, each touching every 4 KiB page exactly once, in
 *    order (seq) or in a fresh seeded random permutation of the pages per
 *    pass (rand; the permutation is built before the pass's clock starts).
 *    Each touch reads one word of the page into the checksum, and in W % of
 *    the touches (chosen by a hash of seed, pass and page) also writes one
 *    word: the one the next pass reads, so a lost or stale write changes the
 *    checksum.
 *
 * Output: one line of JSON on stdout,
 *   {"pattern":"rand","size_mib":256,"passes":3,"write_pct":20,"seed":1,
 *    "checksum":"<16 hex digits>","fill_s":..,"access_s":..,"ns_per_page":..}
 * checksum depends only on the arguments (never on timing or where the
 * pages lived); fill_s and access_s are CLOCK_MONOTONIC seconds of the two
 * phases; ns_per_page = access_s / (passes * pages). Exit status 0, or 2 on
 * a usage error, 1 if memory cannot be allocated. This CLI is used by other
 * harnesses: keep it stable (new keys may be added, none removed). */
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define PAGE 4096u
#define WORDS_PER_PAGE (PAGE / sizeof(uint64_t))

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

/* The word of page p that pass k reads (pass k-1 may have written it). */
static size_t word_of(uint64_t p, unsigned k)
{
	return (size_t)((p * 31u + (uint64_t)k * 17u) % WORDS_PER_PAGE);
}

static void usage(void)
{
	fprintf(stderr, "usage: pager_bench --pattern seq|rand --size-mib N [--passes K] [--write-pct W] [--seed S]\n");
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

int main(int argc, char **argv)
{
	const char *pattern = NULL;
	unsigned long long size_mib = 0, passes = 3, write_pct = 0, seed = 1;
	bool rnd;

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
		else
			usage();
	}
	if (!pattern || (strcmp(pattern, "seq") && strcmp(pattern, "rand")) || !size_mib)
		usage();
	rnd = !strcmp(pattern, "rand");

	size_t bytes = (size_t)size_mib << 20, npages = bytes / PAGE, nwords = bytes / sizeof(uint64_t);
	uint64_t *mem = malloc(bytes);
	uint32_t *order = rnd ? malloc(npages * sizeof(*order)) : NULL;

	if (!mem || (rnd && !order)) {
		fprintf(stderr, "pager_bench: cannot allocate %llu MiB\n", size_mib);
		return 1;
	}

	/* fill: the first touch of every page */
	double t0 = now_s();
	for (size_t w = 0; w < nwords; w++)
		mem[w] = mix(seed, w);
	double fill_s = now_s() - t0;

	/* access */
	uint64_t sum = 0x1234567887654321ull ^ seed, rng = seed * 0x2545f4914f6cdd1dull + 7;
	double access_s = 0;

	for (unsigned k = 0; k < passes; k++) {
		if (rnd) { /* Fisher-Yates, outside the clock */
			for (size_t i = 0; i < npages; i++)
				order[i] = (uint32_t)i;
			for (size_t i = npages - 1; i > 0; i--) {
				size_t j = (size_t)(splitmix(&rng) % (i + 1));
				uint32_t t = order[i];

				order[i] = order[j];
				order[j] = t;
			}
		}
		t0 = now_s();
		for (size_t i = 0; i < npages; i++) {
			uint64_t p = rnd ? order[i] : i;
			uint64_t *page = mem + p * WORDS_PER_PAGE;
			uint64_t v = page[word_of(p, k)];

			sum = (sum ^ v) * 0x100000001b3ull + p;
			if (write_pct && mix(seed ^ ((uint64_t)k << 40), p) % 100 < write_pct)
				page[word_of(p, k + 1)] = sum;
		}
		access_s += now_s() - t0;
	}

	printf("{\"pattern\":\"%s\",\"size_mib\":%llu,\"passes\":%llu,\"write_pct\":%llu,\"seed\":%llu,"
	       "\"checksum\":\"%016" PRIx64 "\",\"fill_s\":%.6f,\"access_s\":%.6f,\"ns_per_page\":%.1f}\n",
	       pattern, size_mib, passes, write_pct, seed, sum, fill_s, access_s,
	       passes ? access_s * 1e9 / ((double)passes * (double)npages) : 0.0);
	free(order);
	free(mem);
	return 0;
}

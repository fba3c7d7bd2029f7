/* crypt_bench [--pages N] [--runs R]: the cost per 4 KiB page of what a page
 * pays on its way out and back beyond the transfer: the XXH3-128 checksum
 * (always, pagesum.h), and with option encrypt AES-256-GCM seal and open
 * (pagecrypt.h), next to a plain 4 KiB copy. Each run walks N pages (a
 * 64 MiB working set by default: out of the caches, as evicted pages are);
 * prints one JSON object with the median over R runs of ns per page:
 *   {"schema":"comex-bench-crypt/1","pages":N,"runs":R,
 *    "ns_per_page":{"copy":..,"xxh3_128":..,"gcm_seal":..,"gcm_open":..},
 *    "runs_ns_per_page":{...each run...}} */
#define XXH_INLINE_ALL
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <xxhash.h>

#include "pagecrypt.h"

#define PAGE PAGECRYPT_PAGE
#define MAX_RUNS 64

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double median(double *v, int n)
{
	double s[MAX_RUNS];

	memcpy(s, v, n * sizeof(*v));
	qsort(s, n, sizeof(*s), cmp_double);
	return n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

enum { COPY, XXH, SEAL, OPEN, NOPS };
static const char *const names[NOPS] = { "copy", "xxh3_128", "gcm_seal", "gcm_open" };

int main(int argc, char **argv)
{
	size_t pages = 16384;
	int runs = 5;
	double ns[NOPS][MAX_RUNS];
	uint64_t sink = 0;

	for (int i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--pages"))
			pages = strtoul(argv[i + 1], NULL, 0);
		else if (!strcmp(argv[i], "--runs"))
			runs = atoi(argv[i + 1]);
	}
	if (!pages || runs < 3 || runs > MAX_RUNS) {
		fprintf(stderr, "usage: crypt_bench [--pages N>0] [--runs 3..%d]\n", MAX_RUNS);
		return 2;
	}
	uint8_t *src = malloc(pages * PAGE), *dst = malloc(pages * PAGE);
	struct pagecrypt_meta *meta = calloc(pages, sizeof(*meta));
	struct pagecrypt *pc;

	if (!src || !dst || !meta || pagecrypt_create(&pc))
		return 1;
	for (size_t i = 0; i < pages * PAGE; i++)
		src[i] = (uint8_t)(i * 2654435761u >> 13);
	memset(dst, 0, pages * PAGE);
	for (int r = 0; r < runs; r++) {
		double t0 = now_ns();

		for (size_t p = 0; p < pages; p++)
			memcpy(dst + p * PAGE, src + p * PAGE, PAGE);
		double t1 = now_ns();
		for (size_t p = 0; p < pages; p++)
			sink += XXH3_128bits(src + p * PAGE, PAGE).low64;
		double t2 = now_ns();
		for (size_t p = 0; p < pages; p++)
			if (pagecrypt_seal(pc, 0, (uint32_t)p, src + p * PAGE, dst + p * PAGE, &meta[p]))
				return 1;
		double t3 = now_ns();
		for (size_t p = 0; p < pages; p++)
			if (pagecrypt_open(pc, 0, (uint32_t)p, dst + p * PAGE, &meta[p]))
				return 1;
		double t4 = now_ns();
		if (memcmp(src, dst, pages * PAGE)) {
			fprintf(stderr, "crypt_bench: a page did not survive seal and open\n");
			return 1;
		}
		ns[COPY][r] = (t1 - t0) / pages;
		ns[XXH][r] = (t2 - t1) / pages;
		ns[SEAL][r] = (t3 - t2) / pages;
		ns[OPEN][r] = (t4 - t3) / pages;
	}
	printf("{\"schema\":\"comex-bench-crypt/1\",\"pages\":%zu,\"runs\":%d,\"ns_per_page\":{", pages, runs);
	for (int o = 0; o < NOPS; o++)
		printf("%s\"%s\":%.1f", o ? "," : "", names[o], median(ns[o], runs));
	printf("},\"runs_ns_per_page\":{");
	for (int o = 0; o < NOPS; o++) {
		printf("%s\"%s\":[", o ? "," : "", names[o]);
		for (int r = 0; r < runs; r++)
			printf("%s%.1f", r ? "," : "", ns[o][r]);
		printf("]");
	}
	printf("},\"sink\":%llu}\n", (unsigned long long)(sink & 1));
	pagecrypt_destroy(pc);
	free(src);
	free(dst);
	free(meta);
	return 0;
}

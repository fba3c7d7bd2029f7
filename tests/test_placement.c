/* test_placement: the placement policies' choices (hash, p2c, weighted) and the balance they leave on unequal pools. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "placement.h"
#include "testing.h"

#define N 8
#define DRAWS 80000

/* hash ignores room; one node is always node 0; rehash walks every node once. */
static void test_hash(void)
{
	uint64_t room[N] = { 0, 100, 0, 5, 0, 0, 0, 9999 }, rng = 1;
	unsigned seen = 0;

	for (int i = 0; i < 100; i++)
		CHECK(placement_pick(PLACEMENT_HASH, 2, room, N, &rng) == 2);
	CHECK(placement_pick(PLACEMENT_P2C, 0, room, 1, &rng) == 0);
	CHECK(placement_pick(PLACEMENT_WEIGHTED, 0, room, 1, &rng) == 0);
	for (unsigned a = 0; a < N; a++)
		seen |= 1u << placement_choice(5, a, N);
	CHECK(seen == (1u << N) - 1 && placement_choice(5, 0, N) == 5);
	CHECK(placement_preferred(7, 1234, N) < N && placement_preferred(7, 1234, N) == placement_preferred(7, 1234, N));
}

/* How often each node is picked in DRAWS picks. */
static void histogram(enum placement_policy p, const uint64_t *room, unsigned n, unsigned *count)
{
	uint64_t rng = 0x1234567;

	for (unsigned i = 0; i < n; i++)
		count[i] = 0;
	for (int i = 0; i < DRAWS; i++) {
		unsigned k = placement_pick(p, 3, room, n, &rng);

		CHECK(k < n);
		count[k]++;
	}
}

/* p2c: two distinct nodes, the one with more room. With distinct rooms the
 * emptiest node wins every pair it is in (2/n of the picks), the fullest
 * none; with two nodes the roomier one always. No room anywhere: preferred;
 * two drawn without room: the roomiest of all. */
static void test_p2c(void)
{
	uint64_t room[N] = { 10, 20, 30, 40, 50, 60, 70, 80 }, two[2] = { 5, 6 }, none[N] = { 0 };
	uint64_t one[N] = { 0, 0, 0, 0, 0, 7, 0, 0 }, rng = 99;
	unsigned count[N];

	histogram(PLACEMENT_P2C, room, N, count);
	CHECK(count[0] == 0);
	CHECK(count[7] > DRAWS * 2 / N * 95 / 100 && count[7] < DRAWS * 2 / N * 105 / 100);
	for (unsigned i = 1; i < N; i++) /* node i wins against the i smaller ones: (2i/(n(n-1))) */
		CHECK(count[i] > count[i - 1]);
	histogram(PLACEMENT_P2C, two, 2, count);
	CHECK(count[1] == DRAWS && count[0] == 0);
	for (int i = 0; i < 1000; i++) {
		CHECK(placement_pick(PLACEMENT_P2C, 6, none, N, &rng) == 6);
		CHECK(placement_pick(PLACEMENT_P2C, 2, one, N, &rng) == 5);
	}
}

/* weighted: a node's share of the picks is its share of the room (within
 * 5 % of the expectation here); a node without room is never picked. */
static void test_weighted(void)
{
	uint64_t room[N] = { 1000, 0, 3000, 1000, 0, 2000, 1000, 2000 }, none[N] = { 0 }, total = 10000, rng = 5;
	unsigned count[N];

	histogram(PLACEMENT_WEIGHTED, room, N, count);
	for (unsigned i = 0; i < N; i++) {
		double want = (double)DRAWS * room[i] / total;

		CHECK(count[i] >= want * 0.95 && count[i] <= want * 1.05);
	}
	for (int i = 0; i < 1000; i++)
		CHECK(placement_pick(PLACEMENT_WEIGHTED, 4, none, N, &rng) == 4);
}

/* A model of the benchmark: 8 memnodes with pools of 1..8 units, 4
 * programs each placing runs of 64 frames until 60 % of all frames are
 * taken; a program sees a node's room as it was when it last took from it
 * (what the piggybacked counts give) and rehashes past a full node. The
 * imbalance is max/mean of frames per node. hash puts each program on one
 * node (up to 8/4 = 2 with four distinct ones) and fills small nodes first;
 * p2c and weighted spread by room. */
static double imbalance(enum placement_policy p, double *max_fill)
{
	enum { PROGS = 4, RUN = 64, UNIT = 4096 };
	uint64_t pool[N], used[N] = { 0 }, seen[PROGS][N], rng[PROGS], total = 0, placed = 0, max = 0;
	unsigned pref[PROGS];

	for (unsigned i = 0; i < N; i++)
		total += pool[i] = (uint64_t)(i + 1) * UNIT;
	for (unsigned c = 0; c < PROGS; c++) {
		pref[c] = placement_preferred(0x4242, 1000 + c * 7, N);
		rng[c] = 77 + c;
		for (unsigned i = 0; i < N; i++)
			seen[c][i] = pool[i];
	}
	while (placed < total * 6 / 10) {
		for (unsigned c = 0; c < PROGS; c++) {
			unsigned first = placement_pick(p, pref[c], seen[c], N, &rng[c]), k = first;

			for (unsigned a = 0; a < N && pool[k] - used[k] < RUN; a++)
				seen[c][k] = 0, k = placement_choice(first, a + 1, N);
			CHECK(pool[k] - used[k] >= RUN);
			used[k] += RUN;
			placed += RUN;
			seen[c][k] = pool[k] - used[k];
		}
	}
	*max_fill = 0;
	for (unsigned i = 0; i < N; i++) {
		max = used[i] > max ? used[i] : max;
		if ((double)used[i] / pool[i] > *max_fill)
			*max_fill = (double)used[i] / pool[i];
	}
	return (double)max / ((double)placed / N);
}

static void test_balance(void)
{
	double fill_h, fill_p, fill_w, h = imbalance(PLACEMENT_HASH, &fill_h), p = imbalance(PLACEMENT_P2C, &fill_p),
	       w = imbalance(PLACEMENT_WEIGHTED, &fill_w);

	printf("model imbalance (max/mean frames per node): hash %.2f p2c %.2f weighted %.2f\n", h, p, w);
	printf("model fullest node (used/pool): hash %.2f p2c %.2f weighted %.2f\n", fill_h, fill_p, fill_w);
	CHECK(p < h && w < h);
	CHECK(fill_p < fill_h && fill_w < fill_h);
	/* both fill nodes in proportion to their pools: no node far above the 60 % average */
	CHECK(fill_p < 0.75 && fill_w < 0.75);
}

/* The cost of one decision (taken once per run of flush-run frames). */
static void report_cost(void)
{
	uint64_t room[N] = { 10, 20, 30, 40, 50, 60, 70, 80 }, rng = 3;
	const char *names[] = { "hash", "p2c", "weighted" };
	unsigned sink = 0;

	for (int p = PLACEMENT_HASH; p <= PLACEMENT_WEIGHTED; p++) {
		struct timespec a, b;

		clock_gettime(CLOCK_MONOTONIC, &a);
		for (int i = 0; i < 1000000; i++)
			sink += placement_pick((enum placement_policy)p, 1, room, N, &rng);
		clock_gettime(CLOCK_MONOTONIC, &b);
		printf("%s: %.1f ns per pick over %d nodes\n", names[p],
		       ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / 1e6, N);
	}
	CHECK(sink > 0);
}

int main(void)
{
	test_hash();
	test_p2c();
	test_weighted();
	test_balance();
	report_cost();
	printf("test_placement: ok\n");
	return 0;
}

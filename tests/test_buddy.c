/* test_buddy: buddy allocator against a per-frame owner model: randomized alloc/free/free_owner on odd and power-of-two pools, fixed and growing, errors, full coalescing. */
#include "buddy.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "testing.h"

#define NORDERS (BUDDY_MAX_ORDER + 1)
#define NOWNERS 5u /* owners are 1..NOWNERS */

static uint64_t rng_state;

static uint64_t rnd(void) /* splitmix64 */
{
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint32_t rnd_below(uint64_t n)
{
	return (uint32_t)(rnd() % n);
}

/* The reference: who owns each frame, plus for every aligned 2^k run that
 * lies inside [0, n) how many of its frames are free, and how many such runs
 * are entirely free. Every aligned run inside [0, n) lies inside one of the
 * pool's seeded blocks (check_seed_structure() verifies it), so with full
 * coalescing an order-k alloc must succeed iff nfull[k] > 0, and the free
 * blocks of order k are the entirely free runs whose parent run is not: that
 * is nfull[k] - 2 * nfull[k + 1]. */
struct model {
	uint32_t n;
	uint32_t *owner;
	uint32_t *freecnt[NORDERS]; /* [k][i]: free frames in [i << k, (i + 1) << k) */
	uint32_t nfull[NORDERS];
	uint32_t free_frames;
	uint64_t owned[NOWNERS + 1];
};

static void model_init(struct model *m, uint32_t n)
{
	memset(m, 0, sizeof(*m));
	m->n = n;
	m->owner = calloc(n, sizeof(*m->owner));
	CHECK(m->owner);
	for (int k = 0; k < NORDERS; k++) {
		uint32_t nruns = n >> k;

		m->freecnt[k] = malloc((nruns + 1) * sizeof(uint32_t));
		CHECK(m->freecnt[k]);
		for (uint32_t i = 0; i < nruns; i++)
			m->freecnt[k][i] = 1u << k;
		m->nfull[k] = nruns;
	}
	m->free_frames = n;
}

static void model_fini(struct model *m)
{
	for (int k = 0; k < NORDERS; k++)
		free(m->freecnt[k]);
	free(m->owner);
}

/* Adds delta (+1 or -1) free frames at pfn to every run containing it. */
static void model_count_free(struct model *m, uint32_t pfn, int delta)
{
	for (int k = 0; k < NORDERS; k++) {
		uint32_t i = pfn >> k, full = 1u << k;

		if (i >= (m->n >> k))
			continue;
		if (m->freecnt[k][i] == full)
			m->nfull[k]--;
		m->freecnt[k][i] += delta;
		if (m->freecnt[k][i] == full)
			m->nfull[k]++;
	}
	m->free_frames += delta;
}

static void model_set(struct model *m, uint32_t pfn, uint32_t count, uint32_t owner)
{
	for (uint32_t p = pfn; p < pfn + count; p++) {
		uint32_t old = m->owner[p];

		m->owned[old]--;
		m->owned[owner]++;
		m->owner[p] = owner;
		if (old == BUDDY_NO_OWNER && owner != BUDDY_NO_OWNER)
			model_count_free(m, p, -1);
		else if (old != BUDDY_NO_OWNER && owner == BUDDY_NO_OWNER)
			model_count_free(m, p, +1);
	}
}

static void expected_stats(const struct model *m, struct buddy_stats *st)
{
	memset(st, 0, sizeof(*st));
	st->nframes = m->n;
	st->free_frames = m->free_frames;
	st->largest_free_order = -1;
	for (int k = 0; k < NORDERS; k++) {
		uint32_t parents = k < BUDDY_MAX_ORDER ? m->nfull[k + 1] : 0;

		st->free_blocks[k] = m->nfull[k] - 2 * parents;
		if (m->nfull[k])
			st->largest_free_order = k;
	}
}

static bool stats_equal(const struct buddy_stats *a, const struct buddy_stats *b)
{
	if (a->nframes != b->nframes || a->free_frames != b->free_frames ||
	    a->largest_free_order != b->largest_free_order)
		return false;
	for (int k = 0; k < NORDERS; k++)
		if (a->free_blocks[k] != b->free_blocks[k])
			return false;
	return true;
}

static void print_stats(const char *what, const struct buddy_stats *st)
{
	fprintf(stderr, "%s: nframes %u free %u largest %d blocks", what, st->nframes,
		st->free_frames, st->largest_free_order);
	for (int k = 0; k < NORDERS; k++)
		fprintf(stderr, " %u", st->free_blocks[k]);
	fprintf(stderr, "\n");
}

static void check_stats(const struct buddy *b, const struct model *m)
{
	struct buddy_stats got, want;

	buddy_stats(b, &got);
	expected_stats(m, &want);
	if (!stats_equal(&got, &want)) {
		print_stats("got ", &got);
		print_stats("want", &want);
		CHECK(!"stats match the model");
	}
}

static void check_owners(const struct buddy *b, const struct model *m, uint32_t pfn, uint32_t count)
{
	for (uint32_t p = pfn; p < pfn + count && p < m->n; p++)
		CHECK(buddy_owner(b, p) == m->owner[p]);
}

static void check_all(const struct buddy *b, const struct model *m)
{
	check_stats(b, m);
	check_owners(b, m, 0, m->n);
	CHECK(buddy_owner(b, m->n) == BUDDY_NO_OWNER);
	CHECK(buddy_owner(b, UINT32_MAX) == BUDDY_NO_OWNER);
}

/* Fully coalesced: the binary decomposition of n, order-10 blocks first. */
static void check_coalesced(const struct buddy *b, uint32_t n)
{
	struct buddy_stats st;

	buddy_stats(b, &st);
	CHECK(st.nframes == n && st.free_frames == n);
	CHECK(st.free_blocks[BUDDY_MAX_ORDER] == n >> BUDDY_MAX_ORDER);
	for (int k = 0; k < BUDDY_MAX_ORDER; k++)
		CHECK(st.free_blocks[k] == ((n >> k) & 1));
	if (n >> BUDDY_MAX_ORDER)
		CHECK(st.largest_free_order == BUDDY_MAX_ORDER);
	else
		CHECK(st.largest_free_order == 31 - __builtin_clz(n));
}

/* The seeded blocks (binary decomposition of n from PFN 0, largest first)
 * contain every aligned 2^k run inside [0, n), the premise of the model. */
static void check_seed_structure(uint32_t n)
{
	uint32_t *block = malloc(n * sizeof(*block));
	uint32_t pfn = 0, id = 0;

	CHECK(block);
	for (int k = BUDDY_MAX_ORDER; k >= 0; k--) {
		while (n - pfn >= (1u << k)) {
			for (uint32_t i = 0; i < (1u << k); i++)
				block[pfn + i] = id;
			pfn += 1u << k;
			id++;
		}
	}
	CHECK(pfn == n);
	for (int k = 0; k < NORDERS; k++)
		for (uint32_t i = 0; i < (n >> k); i++)
			CHECK(block[i << k] == block[((i + 1) << k) - 1]);
	free(block);
}

static bool frame_wanted(const struct model *m, uint32_t pfn, bool want_owned)
{
	return (m->owner[pfn] != BUDDY_NO_OWNER) == want_owned;
}

/* First frame in [from, to) satisfying want_owned, or -1; skips order-10 runs
 * without one. */
static int64_t scan_frames(const struct model *m, uint32_t from, uint32_t to, bool want_owned)
{
	const uint32_t big = 1u << BUDDY_MAX_ORDER, none = want_owned ? big : 0;

	for (uint32_t p = from; p < to; p++) {
		uint32_t i = p >> BUDDY_MAX_ORDER;

		if (p % big == 0 && i < (m->n >> BUDDY_MAX_ORDER) &&
		    m->freecnt[BUDDY_MAX_ORDER][i] == none) {
			p += big - 1;
			continue;
		}
		if (frame_wanted(m, p, want_owned))
			return p;
	}
	return -1;
}

/* Random frame satisfying want_owned, or -1 when there is none. */
static int64_t pick_frame(const struct model *m, bool want_owned)
{
	uint32_t start = rnd_below(m->n);
	int64_t found;

	for (int tries = 0; tries < 32; tries++) {
		uint32_t p = rnd_below(m->n);

		if (frame_wanted(m, p, want_owned))
			return p;
	}
	found = scan_frames(m, start, m->n, want_owned);
	return found >= 0 ? found : scan_frames(m, 0, start, want_owned);
}

/* Frames from pfn on with pfn's owner, at most max. */
static uint32_t same_owner_extent(const struct model *m, uint32_t pfn, uint32_t max)
{
	uint32_t e = 1;

	while (e < max && pfn + e < m->n && m->owner[pfn + e] == m->owner[pfn])
		e++;
	return e;
}

/* Geometric: order k with probability 2^-(k+1), the rest at order 10. */
static unsigned random_order(void)
{
	return __builtin_ctzll(rnd() | (1ull << BUDDY_MAX_ORDER));
}

static void op_alloc(struct buddy *b, struct model *m)
{
	unsigned order = random_order();
	uint32_t owner = 1 + rnd_below(NOWNERS), pfn = UINT32_MAX;
	int rc = buddy_alloc(b, order, owner, &pfn);

	if (m->nfull[order] == 0) {
		CHECK(rc == -ENOSPC);
		CHECK(pfn == UINT32_MAX);
		return;
	}
	CHECK(rc == 0);
	CHECK(pfn % (1u << order) == 0);
	CHECK((uint64_t)pfn + (1u << order) <= m->n);
	for (uint32_t i = 0; i < (1u << order); i++)
		CHECK(m->owner[pfn + i] == BUDDY_NO_OWNER);
	model_set(m, pfn, 1u << order, owner);
	check_owners(b, m, pfn, 1u << order);
}

/* A rejected free must leave stats and the run's owners as they were. */
static void expect_rejected(struct buddy *b, const struct model *m, uint32_t pfn,
			    uint32_t count, uint32_t owner, int err)
{
	struct buddy_stats before, after;

	buddy_stats(b, &before);
	CHECK(buddy_free(b, pfn, count, owner) == err);
	buddy_stats(b, &after);
	CHECK(stats_equal(&before, &after));
	if (pfn < m->n)
		check_owners(b, m, pfn, count < 4096 ? count : 4096);
}

static void op_free_run(struct buddy *b, struct model *m)
{
	int64_t found = pick_frame(m, true);
	uint32_t pfn, owner, extent, count;

	if (found < 0)
		return;
	pfn = (uint32_t)found;
	owner = m->owner[pfn];
	extent = same_owner_extent(m, pfn, 3000);
	switch (rnd_below(3)) {
	case 0: count = 1; break;
	case 1: count = extent; break;
	default: count = 1 + rnd_below(extent); break;
	}
	if (rnd_below(4) == 0)
		expect_rejected(b, m, pfn, count, owner % NOWNERS + 1, -EPERM);
	if (rnd_below(4) == 0 && pfn + extent < m->n)
		expect_rejected(b, m, pfn, extent + 1, owner, -EPERM);
	if (rnd_below(8) == 0)
		expect_rejected(b, m, pfn, count, BUDDY_NO_OWNER, -EPERM);
	CHECK(buddy_free(b, pfn, count, owner) == 0);
	model_set(m, pfn, count, BUDDY_NO_OWNER);
	check_owners(b, m, pfn, count);
	if (rnd_below(4) == 0)
		expect_rejected(b, m, pfn, count, owner, -EPERM);
}

static void op_free_free(struct buddy *b, struct model *m)
{
	int64_t found = pick_frame(m, false);
	uint32_t pfn, count;

	if (found < 0)
		return;
	pfn = (uint32_t)found;
	count = 1 + rnd_below(4);
	if (count > m->n - pfn)
		count = m->n - pfn;
	expect_rejected(b, m, pfn, count, 1 + rnd_below(NOWNERS), -EPERM);
}

static void op_out_of_range(struct buddy *b, struct model *m)
{
	uint32_t owner = 1 + rnd_below(NOWNERS), pfn = rnd_below(m->n);

	expect_rejected(b, m, m->n, 1, owner, -ERANGE);
	expect_rejected(b, m, pfn, m->n - pfn + 1, owner, -ERANGE);
	expect_rejected(b, m, UINT32_MAX, 2, owner, -ERANGE);
	expect_rejected(b, m, 1, UINT32_MAX, owner, -ERANGE);
	expect_rejected(b, m, pfn, 0, owner, -EINVAL);
}

static void op_free_owner_of(struct buddy *b, struct model *m, uint32_t owner)
{
	int64_t want = (int64_t)m->owned[owner];

	CHECK(buddy_free_owner(b, owner) == want);
	for (uint32_t p = 0; p < m->n; p++)
		if (m->owner[p] == owner)
			model_set(m, p, 1, BUDDY_NO_OWNER);
	CHECK(m->owned[owner] == 0);
	CHECK(buddy_free_owner(b, owner) == 0);
}

static void op_free_owner(struct buddy *b, struct model *m)
{
	op_free_owner_of(b, m, 1 + rnd_below(NOWNERS));
}

/* Frees what is left as runs of random length, then by owner. */
static void free_everything(struct buddy *b, struct model *m)
{
	for (uint32_t p = 0; p < m->n;) {
		uint32_t owner = m->owner[p], count;

		if (owner == BUDDY_NO_OWNER || owner == NOWNERS) {
			p++;
			continue;
		}
		count = 1 + rnd_below(same_owner_extent(m, p, 5000));
		CHECK(buddy_free(b, p, count, owner) == 0);
		model_set(m, p, count, BUDDY_NO_OWNER);
		p += count;
	}
	check_all(b, m);
	op_free_owner_of(b, m, NOWNERS);
}

/* The model of a pool grown to n frames: same owners, more free frames. */
static void model_grow(struct model *m, uint32_t n)
{
	struct model g;

	model_init(&g, n);
	for (uint32_t p = 0; p < m->n; p++)
		if (m->owner[p] != BUDDY_NO_OWNER)
			model_set(&g, p, 1, m->owner[p]);
	model_fini(m);
	*m = g;
}

/* Grows the pool by a random step towards max (every grow_every ops). */
static void op_grow(struct buddy *b, struct model *m, uint32_t max)
{
	uint32_t n = m->n + 1 + rnd_below(max - m->n);

	CHECK(buddy_grow(b, max + 1) == -EINVAL);
	CHECK(buddy_grow(b, m->n - 1) == -EINVAL);
	CHECK(buddy_grow(b, n) == 0);
	model_grow(m, n);
	check_all(b, m);
}

/* Phases alternate between filling (mostly allocs, reaching -ENOSPC) and
 * draining (mostly frees). With max > n the pool starts at n frames and
 * grows to max in random steps along the way (a memnode's pool-max). */
static void run_random(uint32_t n, uint32_t max, uint64_t seed, unsigned nops)
{
	unsigned check_every = max / 64 > 256 ? max / 64 : 256;
	unsigned grow_every = nops / 8;
	struct buddy *b;
	struct model m;

	rng_state = seed;
	check_seed_structure(n);
	CHECK(buddy_create_max(n, max, &b) == 0);
	model_init(&m, n);
	check_coalesced(b, n);
	check_all(b, &m);
	for (unsigned i = 0; i < nops; i++) {
		if (m.n < max && i % grow_every == grow_every - 1)
			op_grow(b, &m, max);
		unsigned alloc_pct = (i / 2000) % 2 ? 25 : 75, r = rnd_below(1000);

		if (r < alloc_pct * 10)
			op_alloc(b, &m);
		else if (r < 990)
			op_free_run(b, &m);
		else if (r < 995)
			op_free_free(b, &m);
		else if (r < 999)
			op_out_of_range(b, &m);
		else
			op_free_owner(b, &m);
		check_stats(b, &m);
		if (i % check_every == 0)
			check_all(b, &m);
	}
	if (m.n < max)
		op_grow(b, &m, max);
	while (m.n < max)
		op_grow(b, &m, max);
	free_everything(b, &m);
	check_all(b, &m);
	check_coalesced(b, max);
	buddy_destroy(b);
	model_fini(&m);
}

static void test_bad_args(void)
{
	static char sentinel_storage;
	struct buddy *sentinel = (struct buddy *)&sentinel_storage, *b = sentinel;
	uint32_t pfn = 7;

	CHECK(buddy_create(0, &b) == -EINVAL);
	CHECK(buddy_create_max(5, 4, &b) == -EINVAL);
	CHECK(b == sentinel);
	CHECK(buddy_create(5, &b) == 0);
	CHECK(buddy_alloc(b, BUDDY_MAX_ORDER + 1, 1, &pfn) == -EINVAL);
	CHECK(buddy_alloc(b, 0, BUDDY_NO_OWNER, &pfn) == -EINVAL);
	CHECK(pfn == 7);
	CHECK(buddy_alloc(b, 3, 1, &pfn) == -ENOSPC); /* 5 = 4 + 1 */
	CHECK(buddy_free(b, 0, 1, 1) == -EPERM);
	CHECK(buddy_free(b, 0, 1, BUDDY_NO_OWNER) == -EPERM);
	CHECK(buddy_free(b, 4, 2, 1) == -ERANGE);
	CHECK(buddy_free_owner(b, BUDDY_NO_OWNER) == 0);
	CHECK(buddy_free_owner(b, 1) == 0);
	check_coalesced(b, 5);
	buddy_destroy(b);
	buddy_destroy(NULL);
}

/* -ENOSPC with enough free frames that are not an aligned run; partial frees
 * of a block coalesce back. */
static void test_fragmentation(void)
{
	struct buddy *b;
	uint32_t pfn, got[8];

	CHECK(buddy_create(8, &b) == 0);
	for (int i = 0; i < 8; i++) {
		CHECK(buddy_alloc(b, 0, 1, &got[i]) == 0);
		CHECK(buddy_owner(b, got[i]) == 1);
	}
	CHECK(buddy_alloc(b, 0, 1, &pfn) == -ENOSPC);
	CHECK(buddy_free(b, 1, 2, 1) == 0);        /* frames 1, 2: no aligned pair */
	CHECK(buddy_alloc(b, 1, 2, &pfn) == -ENOSPC);
	CHECK(buddy_free(b, 3, 1, 1) == 0);        /* 2, 3 pair up */
	CHECK(buddy_alloc(b, 1, 2, &pfn) == 0 && pfn == 2);
	CHECK(buddy_free(b, 0, 4, 1) == -EPERM);   /* 2, 3 now belong to owner 2 */
	CHECK(buddy_free(b, 2, 2, 2) == 0);
	CHECK(buddy_free(b, 4, 4, 1) == 0);
	CHECK(buddy_alloc(b, 3, 2, &pfn) == -ENOSPC); /* frame 0 still used */
	CHECK(buddy_free(b, 0, 1, 1) == 0);
	check_coalesced(b, 8);
	CHECK(buddy_alloc(b, 3, 2, &pfn) == 0 && pfn == 0);
	for (uint32_t p = 7; p < 8; p--)           /* one by one, from the top */
		CHECK(buddy_free(b, p, 1, 2) == 0);
	check_coalesced(b, 8);
	buddy_destroy(b);
}

/* The tail of 6 = 4 + 2 is its own block: no order-3 block ever exists. */
static void test_odd_tail(void)
{
	struct buddy *b;
	uint32_t pfn;

	CHECK(buddy_create(6, &b) == 0);
	CHECK(buddy_alloc(b, 3, 1, &pfn) == -ENOSPC);
	CHECK(buddy_alloc(b, 2, 1, &pfn) == 0 && pfn == 0);
	CHECK(buddy_alloc(b, 2, 1, &pfn) == -ENOSPC);
	CHECK(buddy_alloc(b, 1, 1, &pfn) == 0 && pfn == 4);
	CHECK(buddy_free(b, 3, 2, 1) == 0);        /* across the two blocks */
	CHECK(buddy_alloc(b, 1, 1, &pfn) == -ENOSPC);
	CHECK(buddy_alloc(b, 0, 2, &pfn) == 0);
	CHECK(pfn == 3 || pfn == 4);
	CHECK(buddy_free_owner(b, 1) == 4); /* 0..2 and 5 */
	CHECK(buddy_free_owner(b, 2) == 1);
	check_coalesced(b, 6);
	buddy_destroy(b);
}

static void test_free_owner(void)
{
	struct buddy *b;
	uint32_t pfn;
	int64_t owned[4] = { 0 };

	CHECK(buddy_create(4096 + 37, &b) == 0);
	for (unsigned i = 0; i < 300; i++) {
		uint32_t owner = 1 + i % 3;
		unsigned order = i % 5;

		CHECK(buddy_alloc(b, order, owner, &pfn) == 0);
		owned[owner] += 1 << order;
	}
	CHECK(buddy_free_owner(b, 2) == owned[2]);
	CHECK(buddy_free_owner(b, 2) == 0);
	for (uint32_t p = 0; p < 4096 + 37; p++)
		CHECK(buddy_owner(b, p) != 2);
	CHECK(buddy_free_owner(b, 1) == owned[1]);
	CHECK(buddy_free_owner(b, 3) == owned[3]);
	check_coalesced(b, 4096 + 37);
	buddy_destroy(b);
}

/* A 4 GiB pool plus a tail, filled largest orders first by two owners
 * alternately, then emptied by owner. */
static void test_large(void)
{
	const uint32_t n = (1u << 20) + 5;
	struct buddy_stats st;
	struct buddy *b;
	uint64_t total = 0;
	uint32_t pfn, next_owner = 1;

	CHECK(buddy_create(n, &b) == 0);
	for (int k = BUDDY_MAX_ORDER; k >= 0; k--) {
		while (buddy_alloc(b, k, next_owner, &pfn) == 0) {
			CHECK(pfn % (1u << k) == 0 && buddy_owner(b, pfn) == next_owner);
			total += 1u << k;
			next_owner = 3 - next_owner;
		}
	}
	CHECK(total == n);
	buddy_stats(b, &st);
	CHECK(st.free_frames == 0 && st.largest_free_order == -1);
	CHECK(buddy_free_owner(b, 1) + buddy_free_owner(b, 2) == n);
	check_coalesced(b, n);
	buddy_destroy(b);
}

int main(void)
{
	static const uint32_t sizes[] = {
		1, 2, 3, 7, 1000, 1024, 1025, 4095, 4096 + 37, 3 * 1024 + 1, 1 << 16,
		(1 << 16) + 1023,
	};
	clock_t start = clock();

	test_bad_args();
	test_fragmentation();
	test_odd_tail();
	test_free_owner();
	test_large();
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
		for (uint64_t seed = 1; seed <= 3; seed++)
			run_random(sizes[i], sizes[i], seed * 1000003 + sizes[i], 25000);
	for (size_t i = 0; i + 1 < sizeof(sizes) / sizeof(sizes[0]); i++)
		run_random(sizes[i], sizes[i + 1] + sizes[i] / 2, 77 + sizes[i], 25000);
	printf("test_buddy: ok (%.2f s cpu)\n", (double)(clock() - start) / CLOCKS_PER_SEC);
	return 0;
}

/* test_rt_tables: the pager's tables (ranges, rbuf, wbuf, evict, pagetab) against simple models, and pagesum's builds. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "evict.h"
#include "pagesum.h"
#include "pagetab.h"
#include "ranges.h"
#include "rbuf.h"
#include "wbuf.h"
#include "testing.h"

/* Random alloc/take/claim/free/release and the span lookups against a byte map: no overlap, frees coalesce back to one extent. */
static void test_ranges(void)
{
	enum { N = 4096 };
	static unsigned char used[N];
	struct ranges *r;
	uint64_t s;

	CHECK(ranges_create(N, &r) == 0);
	srand(1);
	for (int it = 0; it < 20000; it++) {
		uint64_t len = 1 + (uint64_t)rand() % 64, st = (uint64_t)rand() % (N - 64);
		int op = rand() % 6;

		if (op == 0 && ranges_alloc(r, len, &s) == 0) {
			for (uint64_t i = s; i < s + len; i++) { CHECK(!used[i]); used[i] = 1; }
		} else if (op == 1) {
			bool free_all = true;
			for (uint64_t i = st; i < st + len; i++) free_all &= !used[i];
			CHECK((ranges_take(r, st, len) == 0) == free_all);
			if (free_all) memset(used + st, 1, len);
		} else if (op == 2) {
			CHECK(ranges_claim(r, st, len) == 0);
			memset(used + st, 1, len);
		} else if (op == 4) {
			CHECK(ranges_release(r, st, len) == 0);
			memset(used + st, 0, len);
		} else if (op == 5) {
			uint64_t a, b;
			int got = ranges_taken_span(r, st, &a, &b);

			CHECK((got == 0) == !!used[st]);
			if (!got) {
				for (uint64_t i = a; i < b; i++) CHECK(used[i]);
				CHECK((a == 0 || !used[a - 1]) && (b == N || !used[b]));
			}
			got = ranges_next_free(r, st, &a, &b);
			uint64_t f = st;
			while (f < N && used[f]) f++;
			CHECK((got == 0) == (f < N));
			if (!got) {
				CHECK(a <= f && f < a + b && (a == st || a == f || !used[st]));
				for (uint64_t i = a; i < a + b; i++) CHECK(!used[i]);
			}
		} else {
			bool all_used = true;
			for (uint64_t i = st; i < st + len; i++) all_used &= used[i];
			if (all_used) { CHECK(ranges_free(r, st, len) == 0); memset(used + st, 0, len); }
			else if (!used[st]) CHECK(ranges_free(r, st, 1) == -EINVAL);
		}
	}
	uint64_t nused = 0;
	for (uint64_t i = 0; i < N; i++)
		nused += used[i];
	CHECK(ranges_free_pages(r) == N - nused);
	for (uint64_t i = 0; i < N; i++)
		if (used[i]) CHECK(ranges_free(r, i, 1) == 0);
	CHECK(ranges_free_pages(r) == N);
	CHECK(ranges_alloc(r, N, &s) == 0 && s == 0); /* fully coalesced */
	ranges_destroy(r);
}

static void test_rbuf(void)
{
	struct rbuf *rb;
	char *slot;

	CHECK(rbuf_create(64, 16, &rb) == 0); /* 4 slots */
	CHECK(rbuf_create(64, 12, &(struct rbuf *){0}) == -EINVAL);
	for (uint64_t w = 0; w < 4; w++) {
		slot = rbuf_slot(rb, w * 16 + 3);
		memset(slot + 5 * 4096, (int)w + 1, 4096);
		rbuf_mark(rb, w * 16 + 5);
	}
	CHECK(!rbuf_lookup(rb, 3)); /* slot exists but page 3 invalid */
	CHECK(((const char *)rbuf_lookup(rb, 5))[0] == 1);  /* window 0 now most recent */
	rbuf_slot(rb, 4 * 16);                              /* recycles LRU: window 1 */
	CHECK(!rbuf_lookup(rb, 16 + 5));
	CHECK(((const char *)rbuf_lookup(rb, 32 + 5))[0] == 3);
	rbuf_drop(rb, 5);
	CHECK(!rbuf_lookup(rb, 5));
	rbuf_destroy(rb);
}

static void test_wbuf(void)
{
	struct wbuf *wb;
	uint32_t pfn, count;
	const void *data;
	uint64_t idx;
	bool cancelled;

	CHECK(wbuf_create(8, 4, 0, &wb) == 0);
	CHECK(!wbuf_must_flush_before(wb, 100));
	for (uint32_t i = 0; i < 3; i++)
		memset(wbuf_add(wb, 10 + i, 100 + i), (int)i + 1, 4096);
	CHECK(!wbuf_ready(wb));
	CHECK(wbuf_must_flush_before(wb, 200));      /* not contiguous */
	CHECK(!wbuf_must_flush_before(wb, 103));
	wbuf_add(wb, 13, 103);
	CHECK(wbuf_ready(wb));                       /* run of flush_run */
	CHECK(((char *)wbuf_find(wb, 11, true))[0] == 2);
	CHECK(!wbuf_find(wb, 99, false));
	wbuf_run(wb, &pfn, &count, &data);
	CHECK(pfn == 100 && count == 4 && ((const char *)data)[3 * 4096] == 0);
	wbuf_entry(wb, 1, &idx, &cancelled);
	CHECK(idx == 11 && cancelled);
	wbuf_entry(wb, 2, &idx, &cancelled);
	CHECK(idx == 12 && !cancelled);
	wbuf_clear(wb);
	wbuf_run(wb, &pfn, &count, &data);
	CHECK(count == 0);
	wbuf_destroy(wb);
}

static void make_resident(struct pagetab *pt, uint64_t idx, unsigned gen, struct evict *ev)
{
	pagetab_set_pte(pt, idx, (pte_t)PTE_DIRTY | ((pte_t)gen << PTE_GEN_SHIFT));
	evict_push(ev, pt, idx, gen);
}

/* Victims in ring order, stale items skipped, second chance under clock, compaction. */
static void test_evict(bool clock)
{
	struct pagetab pt;
	struct evict *ev;
	uint64_t v[8];

	CHECK(pagetab_init(&pt, 64) == 0);
	CHECK(evict_create(16, clock, &ev) == 0);
	for (uint64_t i = 0; i < 8; i++)
		make_resident(&pt, i, 1, ev);
	pagetab_set_pte(&pt, 0, pagetab_pte(&pt, 0) | PTE_REF); /* written: a second chance under clock */
	pagetab_set_pte(&pt, 1, pte_set_state(pagetab_pte(&pt, 1), PTE_REMOTE)); /* evicted meanwhile: stale */
	make_resident(&pt, 2, 2, ev);           /* came back: the old item is stale */
	CHECK(evict_pick(ev, &pt, 2, v) == 2);
	if (clock)
		CHECK(v[0] == 3 && v[1] == 4 && !(pagetab_pte(&pt, 0) & PTE_REF));
	else
		CHECK(v[0] == 0 && v[1] == 3);
	for (int i = 0; i < 3000; i++)         /* compaction keeps the ring usable */
		make_resident(&pt, 10 + i % 50, (unsigned)(3 + i), ev);
	CHECK(evict_pick(ev, &pt, 8, v) == 8);
	evict_destroy(ev);
	pagetab_fini(&pt);
}

/* Random writes, reads and drops of entries over 1 TiB of pages, clustered and
 * scattered, against a list model; a copy reads the same; dropped leaves are
 * reused, and all dropped leaves free the table; a page touched alone costs
 * under 1 KiB of table. */
static void test_pagetab(void)
{
	enum { N = 6000, NPAGES_SHIFT = 28 };
	static struct { uint64_t idx; pte_t e; pagesum_t s; } m[N];
	struct pagetab t, c;
	uint64_t grown;

	CHECK(pagetab_init(&t, 1ull << NPAGES_SHIFT) == 0);
	CHECK(pagetab_pte(&t, 12345) == 0 && pagetab_bytes(&t) == 0);
	srand(3);
	for (int i = 0; i < N; i++) {
		/* half in a few dense clusters, half alone anywhere */
		m[i].idx = i % 2 ? ((uint64_t)rand() << 8 ^ (uint64_t)rand()) & ((1ull << NPAGES_SHIFT) - 1)
				 : (uint64_t)(i % 7) * (1ull << 24) + (uint64_t)rand() % 4096;
		for (int j = 0; j < i; j++)
			if (m[j].idx == m[i].idx)
				m[i].idx = m[j].idx = 0; /* duplicates: both become page 0, written last wins */
	}
	for (int i = 0; i < N; i++) {
		m[i].e = ((pte_t)rand() << 20 | (pte_t)rand()) | 1;
		m[i].s = (pagesum_t){ (uint64_t)rand(), (uint64_t)i };
		pagetab_set_pte(&t, m[i].idx, m[i].e);
		pagetab_set_sum(&t, m[i].idx, m[i].s);
	}
	for (int i = N - 1; i >= 0; i--) {
		bool last = true;

		for (int j = i + 1; j < N; j++)
			last &= m[j].idx != m[i].idx;
		if (last)
			CHECK(pagetab_pte(&t, m[i].idx) == m[i].e && pagesum_eq(pagetab_sum(&t, m[i].idx), m[i].s));
	}
	CHECK(pagetab_bytes(&t) < (uint64_t)N / 2 * 1024 + 7 * 4096 * 24);
	CHECK(pagetab_copy(&t, &c) == 0);
	for (int i = 0; i < N; i++)
		CHECK(pagetab_pte(&c, m[i].idx) == pagetab_pte(&t, m[i].idx));
	pagetab_fini(&c);
	/* unmap everything the scattered half wrote, leaf by whole leaf */
	grown = pagetab_bytes(&t);
	for (int i = 1; i < N; i += 2) {
		uint64_t lo = m[i].idx & ~15ull;

		for (uint64_t k = lo; k < lo + 16; k++)
			pagetab_set_pte(&t, k, 0);
		pagetab_drop(&t, lo, lo + 16);
		CHECK(pagetab_pte(&t, m[i].idx) == 0);
	}
	for (int i = 0; i < N; i += 2) { /* the clusters stay, but where they shared a dropped leaf */
		bool shared = false;

		for (int j = 1; j < N; j += 2)
			shared |= m[j].idx >> 4 == m[i].idx >> 4;
		if (!shared)
			CHECK(pagetab_pte(&t, m[i].idx) != 0);
	}
	for (int i = 1; i < N; i += 2)
		pagetab_set_pte(&t, m[i].idx, 5);
	CHECK(pagetab_bytes(&t) == grown); /* the freed leaves and blocks were reused */
	pagetab_drop(&t, 0, 1ull << NPAGES_SHIFT); /* entries not all free: a contract breach, but must not crash */
	CHECK(pagetab_bytes(&t) == 0 && pagetab_pte(&t, m[0].idx) == 0); /* and every slot went back */
	pagetab_fini(&t);
}

/* pagesum_of, whichever build its first call picked (AVX2 here), is XXH3-128 as
 * this file's own build of xxhash computes it (SSE2), for random pages. */
static void test_pagesum(void)
{
	static uint8_t page[4096];

	srand(3);
	for (int it = 0; it < 64; it++) {
		XXH128_hash_t h;
		pagesum_t s;

		for (unsigned i = 0; i < sizeof(page); i++)
			page[i] = it ? (uint8_t)rand() : 0;
		h = XXH3_128bits(page, sizeof(page));
		s = pagesum_of(page);
		CHECK(s.lo == h.low64 && s.hi == h.high64);
	}
}

int main(void)
{
	test_pagesum();
	test_ranges();
	test_rbuf();
	test_wbuf();
	test_evict(false);
	test_evict(true);
	test_pagetab();
	return 0;
}

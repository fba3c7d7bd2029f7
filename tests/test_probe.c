/* test_probe: prefetch probes sample prefetched pages evenly, are judged used on their fault, wasted once they outlive the budget's evictions (never while their slot could still be reached), and each verdict reaches its plan's class. */
#include <stdint.h>
#include <string.h>

#include "pagesum.h"
#include "prefetch.h"
#include "probe.h"
#include "testing.h"

#define LIFE 1000 /* budget, pages */
#define PER 64    /* pages per probe: the largest plan */

static uint8_t page[4096] __attribute__((aligned(4096)));

/* Plans of PER pages (the fault in slot 0) at eviction clock `clock` until
 * one is picked (63 in 64 are); the probe is then kept for page idx. */
static void keep_one(uint64_t idx, uint64_t clock)
{
	uint32_t slot = 0;
	int plans = 1;

	while (!probe_pick(PER, 0, clock, LIFE, false, &slot)) {
		CHECK(plans < 8);
		plans++;
	}
	CHECK(slot >= 1 && slot < PER); /* never the fault's own slot */
	page[0] = (uint8_t)idx;
	probe_keep(idx, (pte_t)idx, page, 6, false);
}

static void counts(uint64_t want_used, uint64_t want_wasted)
{
	uint64_t used, wasted;

	probe_counts(&used, &wasted);
	CHECK(used == want_used && wasted == want_wasted);
}

/* Plans at eviction clock `clock` until the table is full: the probes kept
 * (pages from idx on). */
static int fill(uint64_t idx, uint64_t clock)
{
	int kept = 0;

	for (;; idx++, kept++) {
		uint32_t s;
		int plans = 0;

		while (!probe_pick(PER, 0, clock, LIFE, false, &s) && plans < 64)
			plans++;
		if (plans == 64)
			return kept; /* full: no pick in 64 plans */
		page[0] = (uint8_t)idx;
		probe_keep(idx, (pte_t)idx, page, 6, false);
		CHECK(kept < 10000);
	}
}

int main(void)
{
	struct prefetch *pf;
	uint32_t slot;
	const uint8_t *copy;
	uint64_t used0 = 0;
	struct prefetch_plan p;
	int kept;

	CHECK(!prefetch_create(PREFETCH_ADAPTIVE, PER, 80, &pf));
	CHECK(!probe_init(pf, PER));

	/* never from a plan of a single page; each prefetched page with the same
	 * chance, 1 in PER: 4-page plans give one in about 21, 64-page ones
	 * nearly always (the taken probe served at once, to keep slots free) */
	for (int i = 0; i < 200; i++)
		CHECK(!probe_pick(1, 0, 0, LIFE, false, &slot));
	for (int size = 4; size <= PER; size *= 4) {
		int picks = 0;

		for (int i = 0; i < 6400; i++) {
			if (!probe_pick((uint32_t)size, 0, 0, LIFE, false, &slot))
				continue;
			picks++;
			page[0] = 5;
			probe_keep(5, (pte_t)5, page, 6, false);
			CHECK(probe_take(5, (pte_t)5, pagesum_of(page)));
		}
		CHECK(picks > 6400 * (size - 1) / PER * 8 / 10 && picks < 6400 * (size - 1) / PER * 12 / 10);
		used0 += (uint64_t)picks;
	}
	counts(used0, 0);
	keep_one(100, 0);

	/* used: its fault takes the copy back, once, with the same entry and content */
	page[0] = 100;
	copy = probe_take(100, (pte_t)100, pagesum_of(page));
	CHECK(copy && copy[0] == 100);
	CHECK(!probe_take(100, (pte_t)100, pagesum_of(page)));
	counts(used0 + 1, 0);

	/* changed since, by generation or by content: no copy, no verdict */
	keep_one(200, 0);
	page[0] = 200;
	CHECK(!probe_take(200, (pte_t)201, pagesum_of(page)));
	keep_one(201, 0);
	page[0] = 202;
	CHECK(!probe_take(201, (pte_t)201, pagesum_of(page)));
	counts(used0 + 1, 0);

	/* kept again (mapped and evicted since): the newer copy serves */
	keep_one(210, 0);
	while (!probe_pick(PER, 0, 0, LIFE, false, &slot))
		;
	page[0] = 77;
	probe_keep(210, (pte_t)211, page, 6, false);
	copy = probe_take(210, (pte_t)211, pagesum_of(page));
	CHECK(copy && copy[0] == 77);
	counts(used0 + 2, 0);

	/* alive until LIFE pages were evicted after it was kept, then wasted */
	keep_one(300, 10);
	CHECK(!probe_pick(1, 0, 10 + LIFE - 1, LIFE, false, &slot));
	counts(used0 + 2, 0);
	CHECK(!probe_pick(1, 0, 10 + LIFE, LIFE, false, &slot));
	counts(used0 + 2, 1);
	page[0] = 44; /* 300 & 0xff */
	CHECK(!probe_take(300, (pte_t)300, pagesum_of(page))); /* gone: its fault reads it remotely */

	/* every slot alive: no new probe however many plans come, a used one
	 * frees its slot, and each expires on its own clock (an old one does
	 * not hold the younger ones back) */
	keep_one(999, 1500);
	kept = fill(1000, 2000);
	CHECK(kept == 63); /* 64 slots, 999 among them */
	page[0] = (uint8_t)1003;
	CHECK(probe_take(1003, (pte_t)1003, pagesum_of(page)));
	counts(used0 + 3, 1);
	CHECK(fill(2000, 2000) == 1);
	CHECK(fill(3000, 2499) == 0);
	CHECK(fill(3000, 2500) == 1); /* 999 expired, the others live */
	counts(used0 + 3, 2);
	CHECK(!probe_pick(1, 0, 3000, LIFE, false, &slot));
	counts(used0 + 3, 2 + 63);

	/* a trial plan always leaves a probe (while a slot is free), even of
	 * two pages; its verdict reaches its class but not the counts */
	for (int i = 0; i < 20; i++) {
		CHECK(probe_pick(2, 0, 3000, LIFE, true, &slot) && slot == 1);
		page[0] = 9;
		probe_keep(9, (pte_t)9, page, 5, true);
		CHECK(probe_take(9, (pte_t)9, pagesum_of(page)));
	}
	counts(used0 + 3, 2 + 63);

	/* the verdicts reached class 6, windows of 32: 65 wasted against the
	 * used ones (class 6 too) leave it below the floor, so a stream's window
	 * stops at 16 */
	prefetch_fault(pf, 100000, &p);
	for (uint64_t at = 100001, n = 0; n < 5; n++, at = p.hi)
		prefetch_fault(pf, at, &p);
	CHECK(p.hi - p.lo == 16);
	prefetch_destroy(pf);
	return 0;
}

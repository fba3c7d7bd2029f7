/* test_probe: prefetch probes are judged used on their fault, wasted once they outlive the budget's evictions, and never while their slot could still be reached. */
#include <stdint.h>
#include <string.h>

#include "pagesum.h"
#include "prefetch.h"
#include "probe.h"
#include "testing.h"

#define LIFE 1000 /* budget, pages */

static uint8_t page[4096] __attribute__((aligned(4096)));

/* Plans of 4 pages (the fault in slot 0) at eviction clock `clock` until one
 * is picked; the probe is then kept for page idx. Returns the plans asked. */
static int keep_one(uint64_t idx, uint64_t clock)
{
	uint32_t slot = 0;
	int plans = 1;

	while (!probe_pick(4, 0, clock, LIFE, &slot)) {
		CHECK(plans < 64);
		plans++;
	}
	CHECK(slot >= 1 && slot <= 3); /* never the fault's own slot */
	page[0] = (uint8_t)idx;
	probe_keep(idx, (pte_t)idx, page);
	return plans;
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

		while (!probe_pick(4, 0, clock, LIFE, &s) && plans < 64)
			plans++;
		if (plans == 64)
			return kept; /* full: no pick in 64 plans */
		page[0] = (uint8_t)idx;
		probe_keep(idx, (pte_t)idx, page);
		CHECK(kept < 10000);
	}
}

int main(void)
{
	struct prefetch *pf;
	uint32_t slot;
	const uint8_t *copy;
	int kept;

	CHECK(!prefetch_create(PREFETCH_ADAPTIVE, 64, &pf));
	CHECK(!probe_init(pf));

	/* one plan in several of two or more pages, never one of a single page */
	for (int i = 0; i < 200; i++)
		CHECK(!probe_pick(1, 0, 0, LIFE, &slot));
	CHECK(keep_one(100, 0) > 1);

	/* used: its fault takes the copy back, once, with the same entry and content */
	page[0] = 100;
	copy = probe_take(100, (pte_t)100, pagesum_of(page));
	CHECK(copy && copy[0] == 100);
	CHECK(!probe_take(100, (pte_t)100, pagesum_of(page)));
	counts(1, 0);

	/* changed since, by generation or by content: no copy, no verdict */
	keep_one(200, 0);
	page[0] = 200;
	CHECK(!probe_take(200, (pte_t)201, pagesum_of(page)));
	keep_one(201, 0);
	page[0] = 202;
	CHECK(!probe_take(201, (pte_t)201, pagesum_of(page)));
	counts(1, 0);

	/* kept again (mapped and evicted since): the newer copy serves */
	keep_one(210, 0);
	while (!probe_pick(4, 0, 0, LIFE, &slot))
		;
	page[0] = 77;
	probe_keep(210, (pte_t)211, page);
	copy = probe_take(210, (pte_t)211, pagesum_of(page));
	CHECK(copy && copy[0] == 77);
	counts(2, 0);

	/* alive until LIFE pages were evicted after it was kept, then wasted */
	keep_one(300, 10);
	CHECK(!probe_pick(1, 0, 10 + LIFE - 1, LIFE, &slot));
	counts(2, 0);
	CHECK(!probe_pick(1, 0, 10 + LIFE, LIFE, &slot));
	counts(2, 1);
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
	counts(3, 1);
	CHECK(fill(2000, 2000) == 1);
	CHECK(fill(3000, 2499) == 0);
	CHECK(fill(3000, 2500) == 1); /* 999 expired, the others live */
	counts(3, 2);
	CHECK(!probe_pick(1, 0, 3000, LIFE, &slot));
	counts(3, 2 + 63);
	prefetch_destroy(pf);
	return 0;
}

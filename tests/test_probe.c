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

int main(void)
{
	struct prefetch *pf;
	uint32_t slot;
	const uint8_t *copy;
	int kept = 0;

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

	/* changed since (another generation): no copy, no verdict */
	keep_one(200, 0);
	page[0] = 200;
	CHECK(!probe_take(200, (pte_t)201, pagesum_of(page)));
	counts(1, 0);

	/* alive until LIFE pages were evicted after it was kept, then wasted */
	keep_one(300, 10);
	CHECK(!probe_pick(1, 0, 10 + LIFE - 1, LIFE, &slot));
	counts(1, 0);
	CHECK(!probe_pick(1, 0, 10 + LIFE, LIFE, &slot));
	counts(1, 1);
	page[0] = 44; /* 300 & 0xff */
	CHECK(!probe_take(300, (pte_t)300, pagesum_of(page))); /* gone: its fault reads it remotely */

	/* every slot alive: no new probe, however many plans come; a used one
	 * in the middle leaves a hole that only the head's expiry frees */
	for (uint64_t idx = 1000; kept < 10000; idx++, kept++) {
		uint32_t s;
		int plans = 0;

		while (!probe_pick(4, 0, 2000, LIFE, &s) && plans < 64)
			plans++;
		if (plans == 64)
			break; /* full */
		page[0] = (uint8_t)idx;
		probe_keep(idx, (pte_t)idx, page);
	}
	CHECK(kept >= 8 && kept < 10000);
	page[0] = (uint8_t)1003;
	CHECK(probe_take(1003, (pte_t)1003, pagesum_of(page)));
	counts(2, 1);
	for (int i = 0; i < 200; i++)
		CHECK(!probe_pick(4, 0, 2000, LIFE, &slot));
	/* the head (1000, kept at 2000) expires at 3000, and every one after it */
	CHECK(!probe_pick(1, 0, 3000, LIFE, &slot));
	counts(2, 1 + (uint64_t)kept - 1);
	keep_one(5000, 3000);
	counts(2, 1 + (uint64_t)kept - 1);
	prefetch_destroy(pf);
	return 0;
}

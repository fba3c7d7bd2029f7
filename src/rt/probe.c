/* probe: a direct-mapped table of PROBE_SLOTS kept copies, keyed by page
 * index. A probe is resolved when its page faults (used) or when a newer
 * probe takes its slot (wasted: by then PROBE_SLOTS * PROBE_EVERY plans, at
 * least 256 remote faults, came and went, so a stream that would still
 * reach the page is far behind it). A copy whose page changed meanwhile
 * is forgotten without a verdict when it is looked up, or counted wasted
 * when its slot is taken: a small bias towards waste, never a stale page
 * (the entry's generation and the page hash both have to match). */
#include "probe.h"

#include <errno.h>
#include <string.h>

#include "pagesum.h"
#include "prefetch.h"
#include "rtmem.h"

#define PROBE_EVERY 8    /* one plan in 8: a used probe costs a minor fault (~3 us) where a plan read costs 10-300 */
#define PROBE_SLOTS 64   /* 256 KiB of copies */
#define FEEDBACK_BATCH 8 /* verdicts per prefetch_feedback: a majority of 8 decides */
#define PAGE 4096u
#define NONE UINT64_MAX

static struct {
	uint64_t idx[PROBE_SLOTS];
	pte_t e[PROBE_SLOTS];
	uint8_t *copies;       /* PROBE_SLOTS pages */
	struct prefetch *pf;
	uint32_t plans, rng;
	uint32_t batch_used, batch_wasted;
	uint64_t used, wasted;
} S;

int probe_init(struct prefetch *pf)
{
	S.copies = rt_alloc((size_t)PROBE_SLOTS * PAGE);
	if (!S.copies)
		return -ENOMEM;
	for (unsigned i = 0; i < PROBE_SLOTS; i++)
		S.idx[i] = NONE;
	S.pf = pf;
	S.rng = 0x9e3779b9u;
	return 0;
}

static unsigned slot_of(uint64_t idx)
{
	return (unsigned)((idx * 0x9e3779b97f4a7c15ull) >> 58); /* 64 slots */
}

static void verdict(bool used)
{
	if (used)
		S.used++, S.batch_used++;
	else
		S.wasted++, S.batch_wasted++;
	if (S.batch_used + S.batch_wasted < FEEDBACK_BATCH)
		return;
	prefetch_feedback(S.pf, S.batch_used, S.batch_wasted);
	S.batch_used = S.batch_wasted = 0;
}

bool probe_pick(uint32_t slots, uint32_t fault, uint32_t *slot)
{
	uint32_t k;

	if (!S.copies || slots < 2 || ++S.plans % PROBE_EVERY)
		return false;
	S.rng ^= S.rng << 13, S.rng ^= S.rng >> 17, S.rng ^= S.rng << 5; /* xorshift32 */
	k = S.rng % (slots - 1); /* uniform over the plan's other pages */
	*slot = k < fault ? k : k + 1;
	return true;
}

void probe_keep(uint64_t idx, pte_t e, const void *copy)
{
	unsigned s = slot_of(idx);

	if (S.idx[s] != NONE && S.idx[s] != idx)
		verdict(false);
	S.idx[s] = idx;
	S.e[s] = e;
	memcpy(S.copies + (size_t)s * PAGE, copy, PAGE);
}

const void *probe_take(uint64_t idx, pte_t e, pagesum_t sum)
{
	unsigned s = slot_of(idx);
	const uint8_t *copy = S.copies ? S.copies + (size_t)s * PAGE : NULL;

	if (!copy || S.idx[s] != idx)
		return NULL;
	S.idx[s] = NONE;
	if (S.e[s] != e || !pagesum_eq(pagesum_of(copy), sum))
		return NULL; /* the page changed since: no verdict */
	verdict(true);
	return copy;
}

void probe_counts(uint64_t *used, uint64_t *wasted)
{
	*used = S.used;
	*wasted = S.wasted;
}

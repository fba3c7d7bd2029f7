/* probe: a first-in first-out ring of PROBE_SLOTS kept copies. A probe is
 * resolved when its page faults (used) or when it has lived as long as its
 * page would have stayed resident had it been mapped (wasted): once the
 * pager has evicted as many pages as its budget holds since the probe was
 * kept, a prefetched page nobody touched has gone round the eviction order
 * and out. While every slot holds a live probe no new one is taken, so each
 * probe gets its whole lifetime and the share used stays unbiased: the
 * sampling thins instead (a direct-mapped table that a newer probe could
 * take a slot of at any time judged a third of python's and sqlite's used
 * probes wasted, docs/DECISIONS.md D88). A copy whose page changed
 * meanwhile is forgotten without a verdict when it is looked up, or counted
 * wasted when it expires: a small bias towards waste, never a stale page
 * (the entry's generation and the page hash both have to match). */
#include "probe.h"

#include <errno.h>
#include <string.h>

#include "pagesum.h"
#include "prefetch.h"
#include "rtmem.h"

#define PROBE_EVERY 8    /* one plan in 8: a used probe costs a minor fault (~3 us) where a plan read costs 10-300 */
#define PROBE_SLOTS 64   /* 256 KiB of copies, outside the region: runtime memory within every budget */
#define FEEDBACK_BATCH 8 /* verdicts per prefetch_feedback: a majority of 8 decides */
#define PAGE 4096u
#define NONE UINT64_MAX

static struct {
	uint64_t idx[PROBE_SLOTS]; /* NONE: resolved (a hole until the head passes it) */
	pte_t e[PROBE_SLOTS];
	uint64_t born[PROBE_SLOTS]; /* the eviction clock when kept */
	unsigned head, n;          /* the oldest probe's slot; slots in use, holes too */
	uint64_t clock, life;      /* from the last probe_pick */
	uint8_t *copies;           /* PROBE_SLOTS pages */
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
	S.head = S.n = 0; /* a forked child's start anew: its eviction clock does too */
	S.pf = pf;
	S.rng = 0x9e3779b9u;
	return 0;
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

/* Resolves the probes at the head that are holes or have outlived life. */
static void expire(void)
{
	while (S.n && (S.idx[S.head] == NONE || S.clock - S.born[S.head] >= S.life)) {
		if (S.idx[S.head] != NONE)
			verdict(false);
		S.idx[S.head] = NONE;
		S.head = (S.head + 1) % PROBE_SLOTS;
		S.n--;
	}
}

bool probe_pick(uint32_t slots, uint32_t fault, uint64_t clock, uint64_t life, uint32_t *slot)
{
	uint32_t k;

	if (!S.copies)
		return false;
	S.clock = clock;
	S.life = life ? life : 1;
	expire();
	if (slots < 2 || ++S.plans % PROBE_EVERY || S.n == PROBE_SLOTS)
		return false;
	S.rng ^= S.rng << 13, S.rng ^= S.rng >> 17, S.rng ^= S.rng << 5; /* xorshift32 */
	k = S.rng % (slots - 1); /* uniform over the plan's other pages */
	*slot = k < fault ? k : k + 1;
	return true;
}

void probe_keep(uint64_t idx, pte_t e, const void *copy)
{
	unsigned s = (S.head + S.n) % PROBE_SLOTS;

	if (S.n == PROBE_SLOTS) /* only after a probe_pick that said yes */
		return;
	S.idx[s] = idx;
	S.e[s] = e;
	S.born[s] = S.clock;
	memcpy(S.copies + (size_t)s * PAGE, copy, PAGE);
	S.n++;
}

const void *probe_take(uint64_t idx, pte_t e, pagesum_t sum)
{
	for (unsigned i = 0; i < S.n; i++) {
		unsigned s = (S.head + i) % PROBE_SLOTS;
		const uint8_t *copy = S.copies + (size_t)s * PAGE;

		if (S.idx[s] != idx)
			continue;
		S.idx[s] = NONE; /* a hole, passed by expire() */
		if (S.e[s] != e || !pagesum_eq(pagesum_of(copy), sum))
			return NULL; /* the page changed since: no verdict */
		verdict(true);
		return copy;
	}
	return NULL;
}

void probe_counts(uint64_t *used, uint64_t *wasted)
{
	*used = S.used;
	*wasted = S.wasted;
}

/* probe: a table of PROBE_SLOTS kept copies. A probe is resolved when its
 * page faults (used) or when it has lived as long as its page would have
 * stayed resident had it been mapped (wasted): once the pager has evicted as
 * many pages as its budget holds since the probe was kept, a prefetched
 * page nobody touched has gone round the eviction order and out. While
 * every slot holds a live probe no new one is taken, so each probe gets its
 * whole lifetime and the share used stays unbiased: the sampling thins
 * instead (a direct-mapped table, where a newer probe took an older one's
 * slot at any age, judged used probes wasted: docs/DECISIONS.md D14). A
 * copy whose page changed meanwhile is forgotten without a verdict when it
 * is looked up, or counted wasted when it expires: a small bias towards
 * waste, never a stale page (the entry's generation and the page hash both
 * have to match). The table is scanned whole (64 entries) on every remote
 * fault: a few tens of ns against the fault's microseconds. */
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
	uint64_t idx[PROBE_SLOTS]; /* NONE: a free slot */
	pte_t e[PROBE_SLOTS];
	uint64_t born[PROBE_SLOTS]; /* the eviction clock when kept */
	unsigned n;                /* live probes */
	uint64_t clock;            /* pages evicted, from the last probe_pick */
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
	S.n = 0; /* a forked child's start anew: its eviction clock does too */
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

static void forget(unsigned s)
{
	S.idx[s] = NONE;
	S.n--;
}

/* Resolves the probes that have outlived life (pages evicted): wasted. */
static void expire(uint64_t life)
{
	for (unsigned s = 0; s < PROBE_SLOTS && S.n; s++)
		if (S.idx[s] != NONE && S.clock - S.born[s] >= life) {
			forget(s);
			verdict(false);
		}
}

bool probe_pick(uint32_t slots, uint32_t fault, uint64_t clock, uint64_t life, uint32_t *slot)
{
	uint32_t k;

	if (!S.copies)
		return false;
	S.clock = clock;
	expire(life ? life : 1);
	if (slots < 2 || ++S.plans % PROBE_EVERY || S.n == PROBE_SLOTS)
		return false;
	S.rng ^= S.rng << 13, S.rng ^= S.rng >> 17, S.rng ^= S.rng << 5; /* xorshift32 */
	k = S.rng % (slots - 1); /* uniform over the plan's other pages */
	*slot = k < fault ? k : k + 1;
	return true;
}

void probe_keep(uint64_t idx, pte_t e, const void *copy)
{
	unsigned s, free = PROBE_SLOTS;

	for (s = 0; s < PROBE_SLOTS; s++) {
		if (S.idx[s] == idx)
			forget(s); /* kept before, then mapped and evicted since: that copy's entry is old */
		if (S.idx[s] == NONE && free == PROBE_SLOTS)
			free = s;
	}
	if (free == PROBE_SLOTS) /* only after a probe_pick that said yes */
		return;
	S.idx[free] = idx;
	S.e[free] = e;
	S.born[free] = S.clock;
	memcpy(S.copies + (size_t)free * PAGE, copy, PAGE);
	S.n++;
}

const void *probe_take(uint64_t idx, pte_t e, pagesum_t sum)
{
	for (unsigned s = 0; s < PROBE_SLOTS && S.n; s++) {
		const uint8_t *copy = S.copies + (size_t)s * PAGE;

		if (S.idx[s] != idx)
			continue;
		forget(s);
		if (S.e[s] != e || !pagesum_eq(pagesum_of(copy), sum))
			return NULL; /* the page changed since: no verdict (probe_keep left no other) */
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

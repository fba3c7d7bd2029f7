/* probe: a table of PROBE_SLOTS kept copies. Each prefetched page is a probe
 * with the same chance, 1 in `per` (the largest plan's size): a plan of n
 * pages, its fault and n - 1 others, gives one with chance (n - 1) / per,
 * so the share used is that of pages mapped, not of plans (one probe per
 * 8 plans, as before, weighed a 4-page plan as much as a 64-page one and
 * hid the largest windows' waste). A probe is resolved when its
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

#define PROBE_SLOTS 64   /* 256 KiB of copies, outside the region: runtime memory within every budget */
#define PAGE 4096u
#define NONE UINT64_MAX

static struct {
	uint64_t idx[PROBE_SLOTS]; /* NONE: a free slot */
	pte_t e[PROBE_SLOTS];
	uint64_t born[PROBE_SLOTS]; /* the eviction clock when kept */
	uint8_t cls[PROBE_SLOTS];   /* the class of the plan it came from */
	bool trial[PROBE_SLOTS];    /* from a trial plan (nothing mapped): not counted */
	unsigned n;                /* live probes */
	uint64_t clock;            /* pages evicted, from the last probe_pick */
	uint8_t *copies;           /* PROBE_SLOTS pages */
	struct prefetch *pf;
	uint32_t per, rng;
	uint64_t used, wasted;
} S;

int probe_init(struct prefetch *pf, uint32_t per)
{
	S.copies = rt_alloc((size_t)PROBE_SLOTS * PAGE);
	if (!S.copies)
		return -ENOMEM;
	for (unsigned i = 0; i < PROBE_SLOTS; i++)
		S.idx[i] = NONE;
	S.n = 0; /* a forked child's start anew: its eviction clock does too */
	S.pf = pf;
	S.per = per ? per : 1;
	S.rng = 0x9e3779b9u;
	return 0;
}

static void verdict(unsigned s, bool used)
{
	if (S.trial[s])
		; /* its plan mapped nothing: it tells the class, not the accuracy */
	else if (used)
		S.used++;
	else
		S.wasted++;
	prefetch_feedback(S.pf, S.cls[s], used);
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
			verdict(s, false);
		}
}

static uint32_t next_rand(void)
{
	S.rng ^= S.rng << 13, S.rng ^= S.rng >> 17, S.rng ^= S.rng << 5; /* xorshift32 */
	return S.rng;
}

bool probe_pick(uint32_t slots, uint32_t fault, uint64_t clock, uint64_t life, bool trial, uint32_t *slot)
{
	uint32_t k;

	if (!S.copies)
		return false;
	S.clock = clock;
	expire(life ? life : 1);
	if (slots < 2 || S.n == PROBE_SLOTS || (!trial && next_rand() % S.per >= slots - 1))
		return false;
	k = next_rand() % (slots - 1); /* uniform over the plan's other pages */
	*slot = k < fault ? k : k + 1;
	return true;
}

void probe_keep(uint64_t idx, pte_t e, const void *copy, uint32_t cls, bool trial)
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
	S.cls[free] = (uint8_t)cls;
	S.trial[free] = trial;
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
		verdict(s, true);
		return copy;
	}
	return NULL;
}

void probe_counts(uint64_t *used, uint64_t *wasted)
{
	*used = S.used;
	*wasted = S.wasted;
}

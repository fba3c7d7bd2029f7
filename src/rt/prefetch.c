/* prefetch: a fault history voted on for the trend and a few remembered plans
 * (streams) whose continuation grows their window.
 *
 * One fault, in this order:
 *  1. Stream hit: idx continues one of the last STREAMS plans past its end,
 *     within that plan's window, in the plan's direction and on its stride
 *     (a single-page plan on p is continued by p + 1 forward or p - 1
 *     backward; a trend plan's stream wins over a single page's, then the
 *     more recent). The plan was used, so its stream's window doubles (up to
 *     max_window), unless waste was reported since (then it stays). This
 *     keeps interleaved streams (two arrays, a few threads) apart where the
 *     global vote sees only alternating deltas, and it follows a stream whose
 *     faults come one growing window apart (deltas 4, 8, 16: no majority).
 *  2. Trend: the majority delta d of the last 8 deltas, else 16, else 32
 *     (Leap; majority is strictly more than half; fewer recorded: all of
 *     them, at least 2), that idx itself follows: idx - d is one of the
 *     faults voted on. A stray fault right after a stream then gets no
 *     prefetch, while the stream's next fault does. The window starts at
 *     START_WINDOW.
 *  3. Neither: just idx (the window collapses to 1).
 *
 * The window policy keeps only the last STREAMS windows fetched: a fault
 * within a window's width of one of them streams and gets its whole aligned
 * window, another just its page. The read-buffer policy always gets the
 * window. Both take one read: idx's run of consecutive frames.
 *
 * Not thread-safe: one object per pager lock (or per thread). */
#include "prefetch.h"

#include <errno.h>
#include <stdbool.h>

#include "rtmem.h"

#define HIST 32          /* deltas kept (Leap's H_size): 33 fault indices */
#define RING 64          /* power of two > HIST: the index ring */
#define VOTE_FIRST 8     /* first vote window; doubles to HIST */
#define STREAMS 8        /* plans remembered: a few threads or arrays each */
#define START_WINDOW 4   /* a new trend: 4 pages, 16 KiB; as Linux's first readahead */
#define IDX_LIMIT (1ull << 52) /* 4 KiB pages of a 64-bit space: deltas and spans fit int64 */

struct stream {
	uint64_t start;   /* the fault the plan was made for */
	int64_t next;     /* first page past the plan, in its direction (may be < 0) */
	int64_t stride;   /* 0: a single page, continued by either neighbour */
	uint32_t pages;   /* pages the plan named (after clamping at page 0) */
	uint32_t window;  /* the stream's window: the plan's, halved on waste */
	bool hold;        /* waste reported since: the next hit does not double */
	bool used;        /* the stream continued past this plan */
	uint64_t stamp;   /* fault number of the last use, 0 unused: LRU */
};

struct prefetch {
	enum prefetch_policy policy;
	uint32_t max_window, start_window;
	uint32_t open_window;     /* a new stream's first window: start_window, halved (to 1) on waste */
	uint64_t win_lo[STREAMS]; /* window policy: the last windows fetched, a ring (0..0: none) */
	uint64_t win_hi[STREAMS];
	unsigned win_next;
	uint32_t nhist;           /* indices recorded, at most HIST + 1 */
	uint64_t nfaults;         /* faults seen: head of the ring, stream stamps */
	uint64_t hist[RING];      /* fault k is at hist[k % RING] */
	struct stream s[STREAMS];
	uint64_t hits, wasted;
};

int prefetch_create(enum prefetch_policy policy, uint32_t max_window, struct prefetch **out)
{
	struct prefetch *pf;

	if (!max_window || max_window > PREFETCH_MAX_WINDOW || (max_window & (max_window - 1)) ||
	    policy > PREFETCH_READ_BUFFER)
		return -EINVAL;
	/* The one allocation: runtime memory outside the managed region, since
	 * the fault handler reads this object (rtmem.h). */
	pf = rt_alloc(sizeof(*pf));
	if (!pf)
		return -ENOMEM;
	pf->policy = policy;
	pf->max_window = max_window;
	pf->start_window = max_window < START_WINDOW ? max_window : START_WINDOW;
	pf->open_window = pf->start_window;
	*out = pf;
	return 0;
}

void prefetch_destroy(struct prefetch *pf)
{
	rt_free(pf, sizeof(*pf));
}

/* The k-th most recent fault index, 0 being the current one. */
static uint64_t recent(const struct prefetch *pf, uint32_t k)
{
	return pf->hist[(pf->nfaults - 1 - k) % RING];
}

/* The delta of more than half of the last n (Boyer-Moore), or 0. */
static int64_t majority(const struct prefetch *pf, uint32_t n)
{
	int64_t cand = 0, d;
	uint32_t votes = 0;

	for (uint32_t i = 0; i < n; i++) {
		d = (int64_t)(recent(pf, i) - recent(pf, i + 1));
		if (!votes)
			cand = d;
		votes += d == cand ? 1 : (uint32_t)-1;
	}
	votes = 0;
	for (uint32_t i = 0; i < n; i++)
		votes += (int64_t)(recent(pf, i) - recent(pf, i + 1)) == cand;
	return votes * 2 > n ? cand : 0;
}

/* The trend idx follows (step 2 above), or 0. A zero majority delta (the
 * same page again) is no trend. */
static int64_t trend(const struct prefetch *pf, uint64_t idx)
{
	uint32_t have = pf->nhist - 1, n;
	int64_t d;

	if (have < 2)
		return 0;
	for (uint32_t w = VOTE_FIRST;; w *= 2) {
		n = w < have ? w : have;
		d = majority(pf, n);
		if (d) {
			for (uint32_t k = 1; k <= n; k++)
				if ((int64_t)recent(pf, k) == (int64_t)idx - d)
					return d;
			return 0;
		}
		if (n == have || w >= HIST)
			return 0;
	}
}

/* Whether idx is on stride's lattice from base, j steps on (0 <= j < lim). */
static bool on_lattice(int64_t base, int64_t stride, uint64_t idx, uint32_t lim)
{
	int64_t diff = (int64_t)idx - base;

	return diff % stride == 0 && diff / stride >= 0 && diff / stride < lim;
}

/* Whether stream x ranks above best: a trend over a single page (a refault
 * inside a stream's plan must not hide the stream's end from it), then the
 * more recent. */
static bool better(const struct stream *x, const struct stream *best)
{
	if (!best || !x->stride != !best->stride)
		return !best || x->stride;
	return x->stamp > best->stamp;
}

/* The stream idx continues past its end (step 1), or NULL; *dir is the
 * stride to go on with. */
static struct stream *continued(struct prefetch *pf, uint64_t idx, int64_t *dir)
{
	struct stream *best = NULL, *x;
	int64_t d = 0;

	for (unsigned i = 0; i < STREAMS; i++) {
		x = &pf->s[i];
		if (!x->stamp || !better(x, best))
			continue;
		if (!x->stride && (idx == x->start + 1 || idx + 1 == x->start))
			d = idx > x->start ? 1 : -1;
		else if (x->stride && on_lattice(x->next, x->stride, idx, x->window))
			d = x->stride;
		else
			continue;
		best = x;
		*dir = d;
	}
	return best;
}

/* Where to record a plan of stride d for idx: the stream whose plan already
 * named idx (a refault inside it: the same stream, not a new one), else the
 * least recently used. */
static struct stream *slot_for(struct prefetch *pf, uint64_t idx, int64_t d)
{
	struct stream *lru = &pf->s[0];

	for (unsigned i = 0; i < STREAMS; i++) {
		struct stream *x = &pf->s[i];

		if (d && x->stamp && x->stride == d && on_lattice((int64_t)x->start, d, idx, x->pages))
			return x;
		if (x->stamp < lru->stamp)
			lru = x;
	}
	/* A plan dropped before its stream continued past it brought its
	 * pages for nothing. Reads of mapped pages are invisible to user space
	 * (no accessed bits), so this is what "wasted" can mean here. */
	if (lru->stamp && !lru->used && lru->pages > 1)
		pf->wasted += lru->pages - 1;
	return lru;
}

/* Fills *out with w pages of stride d from idx; returns how many fit above
 * page 0. Spans stay below 2^61 (idx, |d| < 2^52; w <= 256). */
static uint32_t make_plan(uint64_t idx, int64_t d, uint32_t w, struct prefetch_plan *out)
{
	uint64_t step = (uint64_t)(d < 0 ? -d : d), span;

	if (d < 0 && (uint64_t)(w - 1) * step > idx)
		w = (uint32_t)(idx / step) + 1;
	span = (uint64_t)(w - 1) * step;
	out->lo = d < 0 ? idx - span : idx;
	out->hi = d < 0 ? idx + 1 : idx + span + 1;
	out->stride = d;
	out->reads = PREFETCH_MAX_READS;
	return w;
}

/* The window and read-buffer policies (see the top). */
static void fixed_window(struct prefetch *pf, uint64_t idx, struct prefetch_plan *out)
{
	uint64_t w = pf->max_window, wlo = idx - idx % w;
	bool hit = pf->policy == PREFETCH_READ_BUFFER;

	for (unsigned i = 0; i < STREAMS && !hit; i++)
		hit = pf->win_hi[i] && idx + w >= pf->win_lo[i] && idx < pf->win_hi[i] + w;
	pf->win_lo[pf->win_next] = wlo;
	pf->win_hi[pf->win_next] = wlo + w;
	pf->win_next = (pf->win_next + 1) % STREAMS;
	*out = hit ? (struct prefetch_plan){ wlo, wlo + w, 1, 1 } : (struct prefetch_plan){ idx, idx + 1, 1, 1 };
}

void prefetch_fault(struct prefetch *pf, uint64_t idx, struct prefetch_plan *out)
{
	struct stream *x;
	int64_t d = 0;
	uint32_t w = 1;

	if (idx >= IDX_LIMIT) { /* no real page: no history either */
		make_plan(idx, 1, 1, out);
		return;
	}
	if (pf->policy != PREFETCH_ADAPTIVE) {
		fixed_window(pf, idx, out);
		return;
	}
	pf->hist[pf->nfaults++ % RING] = idx;
	if (pf->nhist <= HIST)
		pf->nhist++;
	x = continued(pf, idx, &d);
	if (x) {
		pf->hits += x->pages - 1; /* the plan's pages besides its own fault */
		x->used = true;
		w = !x->stride ? pf->open_window : x->hold ? x->window : x->window * 2;
		if (w > pf->max_window)
			w = pf->max_window;
	} else if ((d = trend(pf, idx))) {
		x = slot_for(pf, idx, d);
		w = pf->open_window;
	} else {
		x = slot_for(pf, idx, 0);
	}
	x->pages = make_plan(idx, d ? d : 1, w, out);
	x->start = idx;
	x->stride = d;
	x->window = w;
	x->next = (int64_t)idx + (int64_t)x->pages * d;
	x->hold = false;
	x->used = false;
	x->stamp = pf->nfaults;
}

/* Waste outweighing use halves every stream's window (down to 1), and their
 * next hit keeps it rather than doubling: as swap readahead shrinks its
 * window when its pages go unused. It also halves the window new streams
 * open with (down to 1: a new stream then costs a fault per page until it
 * has continued twice), so that a program whose faults only look like
 * streams (a random one touching neighbouring pages: redis read 3 wasted
 * pages for each used) stops fetching them; use clearly outweighing waste
 * (more than twice) doubles it back, up to START_WINDOW. Otherwise use only
 * counts: a stream's window grows when the stream is seen to continue.
 * Feedback cannot say which plan the pages came from, so it applies to all.
 * The verdicts are samples (probe.h), not pages: they change no counter. */
void prefetch_feedback(struct prefetch *pf, uint32_t used, uint32_t wasted)
{
	if (wasted <= used) {
		if (used > 2 * wasted && pf->open_window < pf->start_window)
			pf->open_window *= 2;
		return;
	}
	if (pf->open_window > 1)
		pf->open_window /= 2;
	for (unsigned i = 0; i < STREAMS; i++) {
		struct stream *x = &pf->s[i];

		if (x->stamp && x->stride) {
			x->window = x->window > 1 ? x->window / 2 : 1;
			x->hold = true;
		}
	}
}

void prefetch_counters(const struct prefetch *pf, uint64_t *hits, uint64_t *wasted)
{
	*hits = pf->hits;
	*wasted = pf->wasted;
}

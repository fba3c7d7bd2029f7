/* prefetch: which pages to read along with a remote fault, for every policy.
 * adaptive: a majority vote over recent fault deltas finds the trend (Leap),
 * remembered plans catch interleaved streams, and the window grows while used
 * (Linux swap readahead); window: a fixed aligned window while faults stream;
 * read-buffer: COMEX's aligned window on every fault. A new policy goes here. */
#ifndef COMEX_RT_PREFETCH_H
#define COMEX_RT_PREFETCH_H

#include <stdint.h>

/* Option prefetch-policy's values, in its order; then PREFETCH_READ_BUFFER,
 * what prefetch-map=false selects (COMEX §4.4: the pages land in the read
 * buffer and wait there for their own faults, so the whole window is read). */
enum prefetch_policy { PREFETCH_ADAPTIVE, PREFETCH_WINDOW, PREFETCH_READ_BUFFER };

#define PREFETCH_MAX_WINDOW 256 /* pages (1 MiB): one remote read per fault stays short */
#define PREFETCH_MAX_READS 16   /* remote reads one plan may take */

struct prefetch;

/* Pages to fetch: idx, idx + stride, ... while within [lo, hi). stride 1 is
 * contiguous, -1 backward, k strided; hi - lo == 1 (just idx, stride 1) when
 * there is no trend. lo never underflows; the caller clamps hi to the region
 * and skips pages that are not remote. reads: at most this many remote reads
 * (1: only idx's run of consecutive frames on its memnode). */
struct prefetch_plan { uint64_t lo, hi; int64_t stride; uint32_t reads; };

/* max_window: most pages one plan names, a power of two from 1 to
 * PREFETCH_MAX_WINDOW. */
int prefetch_create(enum prefetch_policy policy, uint32_t max_window, struct prefetch **out);
void prefetch_destroy(struct prefetch *pf);
/* A remote fault on page idx that no prefetch served: records it, sets *out. */
void prefetch_fault(struct prefetch *pf, uint64_t idx, struct prefetch_plan *out);
/* Verdicts on sampled prefetched pages (probe.h): used (touched) and wasted
 * (never touched); when waste outweighs use, windows shrink. */
void prefetch_feedback(struct prefetch *pf, uint32_t used, uint32_t wasted);
/* hits: pages of plans whose stream continued; wasted: of plans dropped before it did. */
void prefetch_counters(const struct prefetch *pf, uint64_t *hits, uint64_t *wasted);

#endif

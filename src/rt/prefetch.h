/* prefetch: which pages to read along with a remote fault, for every policy.
 * adaptive: a majority vote over recent fault deltas finds the trend (Leap),
 * remembered plans catch interleaved streams, and the window grows while used
 * and while windows of its size are measured to pay (probe.h); window: a fixed
 * aligned window while faults stream; read-buffer: COMEX's aligned window on
 * every fault. A new policy goes here. */
#ifndef COMEX_RT_PREFETCH_H
#define COMEX_RT_PREFETCH_H

#include <stdbool.h>
#include <stdint.h>

/* Option prefetch-policy's values, in its order; then PREFETCH_READ_BUFFER,
 * what prefetch-map=false selects (COMEX §4.4: the pages land in the read
 * buffer and wait there for their own faults, so the whole window is read). */
enum prefetch_policy { PREFETCH_ADAPTIVE, PREFETCH_WINDOW, PREFETCH_READ_BUFFER };

#define PREFETCH_MAX_WINDOW 256 /* pages (1 MiB): one remote read per fault stays short */
#define PREFETCH_MAX_READS 16   /* remote reads one plan may take */
#define PREFETCH_CLASSES 10     /* what a plan's verdicts are charged to: 0 a new stream's opening, 1 + log2(w) a continued window w */

struct prefetch;

/* Pages to fetch: idx, idx + stride, ... while within [lo, hi). stride 1 is
 * contiguous, -1 backward, k strided; hi - lo == 1 (just idx, stride 1) when
 * there is no trend. lo never underflows; the caller clamps hi to the region
 * and skips pages that are not remote. reads: at most this many remote reads
 * (1: only idx's run of consecutive frames on its memnode). cls: the class
 * (< PREFETCH_CLASSES) to give this plan's verdicts to (prefetch_feedback).
 * trial: a plan of a class refused for waste, read again now and then to
 * measure it anew: its pages are not mapped, one is kept as a probe. */
struct prefetch_plan { uint64_t lo, hi; int64_t stride; uint32_t reads, cls; bool trial; };

/* max_window: most pages one plan names, a power of two from 1 to
 * PREFETCH_MAX_WINDOW. floor: percent (0-100) of a class's sampled pages
 * that must have been used for the adaptive policy to make plans of it. */
int prefetch_create(enum prefetch_policy policy, uint32_t max_window, uint32_t floor, struct prefetch **out);
void prefetch_destroy(struct prefetch *pf);
/* A remote fault on page idx that no prefetch served: records it, sets *out. */
void prefetch_fault(struct prefetch *pf, uint64_t idx, struct prefetch_plan *out);
/* A verdict on one sampled prefetched page (probe.h) of a plan of class cls:
 * used (touched) or wasted (never touched). */
void prefetch_feedback(struct prefetch *pf, uint32_t cls, bool used);
/* hits: pages of plans whose stream continued; wasted: of plans dropped before it did. */
void prefetch_counters(const struct prefetch *pf, uint64_t *hits, uint64_t *wasted);

#endif

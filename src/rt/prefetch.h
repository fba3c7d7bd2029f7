/* prefetch: which pages to read along with a remote fault. A majority vote
 * over recent fault deltas finds the trend (Leap), remembered plans catch
 * interleaved streams, and the window grows while used (Linux swap readahead). */
#ifndef COMEX_RT_PREFETCH_H
#define COMEX_RT_PREFETCH_H

#include <stdint.h>

/* Option prefetch-policy's values, in its order. */
enum prefetch_policy { PREFETCH_ADAPTIVE, PREFETCH_WINDOW };

struct prefetch;

/* Pages to fetch: idx, idx + stride, ... while within [lo, hi). stride 1 is
 * contiguous, -1 backward, k strided; hi - lo == 1 (just idx, stride 1) when
 * there is no trend. lo never underflows; the caller clamps hi to the region
 * and skips pages that are not remote. */
struct prefetch_plan { uint64_t lo, hi; int64_t stride; };

/* max_window: most pages one plan names, a power of two from 1 to 256. */
int prefetch_create(uint32_t max_window, struct prefetch **out);
void prefetch_destroy(struct prefetch *pf);
/* A remote fault on page idx that no prefetch served: records it, sets *out. */
void prefetch_fault(struct prefetch *pf, uint64_t idx, struct prefetch_plan *out);
/* used / wasted pages that plans brought in (touched / evicted untouched). */
void prefetch_feedback(struct prefetch *pf, uint32_t used, uint32_t wasted);
/* hits: pages counted as used (feedback and continued streams); wasted: as reported. */
void prefetch_counters(const struct prefetch *pf, uint64_t *hits, uint64_t *wasted);

#endif

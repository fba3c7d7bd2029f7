/* pagesum: a page's 128-bit content hash (XXH3-128), kept for every page
 * that has a remote copy. It proves a page unchanged when the write-protect
 * bits cannot (a write racing the move of an eviction), and checks every
 * page that comes back from a memnode (docs/DECISIONS.md D21). */
#ifndef COMEX_RT_PAGESUM_H
#define COMEX_RT_PAGESUM_H

#include <stdbool.h>
#include <stdint.h>

typedef struct { uint64_t lo, hi; } pagesum_t;

/* The hash of the 4096 bytes at page: the AVX2 build on a CPU that has
 * AVX2 (0.10 us a page in cache here, against 0.30 for SSE2), chosen at
 * the first call. */
pagesum_t pagesum_of(const void *page);

static inline bool pagesum_eq(pagesum_t a, pagesum_t b) { return a.lo == b.lo && a.hi == b.hi; }

#endif

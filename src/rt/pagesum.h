/* pagesum: a page's 128-bit content hash (XXH3-128, libxxhash), kept for
 * every page that has a remote copy. It proves a page unchanged when the
 * write-protect bits cannot (a write racing the move of an eviction), and
 * checks every page that comes back from a memnode. 0.1-0.2 us per page
 * here; 2^-128 is the chance that a changed page passes for unchanged. */
#ifndef COMEX_RT_PAGESUM_H
#define COMEX_RT_PAGESUM_H

#include <stdbool.h>
#include <stdint.h>
#include <xxhash.h>

typedef struct { uint64_t lo, hi; } pagesum_t;

static inline pagesum_t pagesum_of(const void *page)
{
	XXH128_hash_t h = XXH3_128bits(page, 4096);

	return (pagesum_t){ h.low64, h.high64 };
}

static inline bool pagesum_eq(pagesum_t a, pagesum_t b) { return a.lo == b.lo && a.hi == b.hi; }

#endif

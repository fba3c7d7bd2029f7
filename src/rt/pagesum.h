/* pagesum: a page's 128-bit content hash (XXH3-128, libxxhash), kept for
 * every page that has a remote copy. It proves a page unchanged when the
 * write-protect bits cannot (a write racing the move of an eviction), and
 * checks every page that comes back from a memnode. 2^-128 is the chance
 * that a changed page passes for unchanged. On x86-64 the library's
 * dispatching entry picks AVX2/AVX-512 where the CPU has them: 0.10 us a
 * page in cache here, against 0.30 for the SSE2 build Debian ships as
 * XXH3_128bits (the same hash either way; docs/DECISIONS.md D21). */
#ifndef COMEX_RT_PAGESUM_H
#define COMEX_RT_PAGESUM_H

#include <stdbool.h>
#include <stdint.h>
#include <xxhash.h>
#if defined(__x86_64__)
#include <xxh_x86dispatch.h>
#define PAGESUM_XXH3 XXH3_128bits_dispatch
#else
#define PAGESUM_XXH3 XXH3_128bits
#endif

typedef struct { uint64_t lo, hi; } pagesum_t;

static inline pagesum_t pagesum_of(const void *page)
{
	XXH128_hash_t h = PAGESUM_XXH3(page, 4096);

	return (pagesum_t){ h.low64, h.high64 };
}

static inline bool pagesum_eq(pagesum_t a, pagesum_t b) { return a.lo == b.lo && a.hi == b.hi; }

#endif

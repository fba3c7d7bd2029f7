/* pagesum: XXH3-128 compiled into the runtime (header-only xxhash), not
 * linked from libxxhash.so: one shared object fewer for every process that
 * comex run execs, paging or not (docs/DECISIONS.md D21). This file is
 * compiled twice: as it is, and with -mavx2 -DPAGESUM_AVX2 (CMakeLists.txt),
 * which makes xxhash pick its AVX2 kernel; an ifunc picks one at load, as
 * libxxhash's own dispatcher did. */
#include "pagesum.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

#define PAGESUM_DEFINE(name)                                      \
	pagesum_t name(const void *page)                          \
	{                                                         \
		XXH128_hash_t h = XXH3_128bits(page, 4096);       \
                                                                  \
		return (pagesum_t){ h.low64, h.high64 };          \
	}

#ifdef PAGESUM_AVX2
PAGESUM_DEFINE(pagesum_of_avx2)
#else
#if defined(__x86_64__)
pagesum_t pagesum_of_avx2(const void *page);
static PAGESUM_DEFINE(pagesum_of_sse2)

/* Runs while the dynamic linker relocates, before any constructor: only
 * the CPU's features, which __builtin_cpu_init reads first. Not
 * instrumented (a sanitizer's runtime is not set up yet); used: clang does
 * not count the ifunc as a use. */
__attribute__((used, no_sanitize("address", "undefined"))) static pagesum_t (*resolve_pagesum(void))(const void *)
{
	__builtin_cpu_init();
	return __builtin_cpu_supports("avx2") ? pagesum_of_avx2 : pagesum_of_sse2;
}

pagesum_t pagesum_of(const void *page) __attribute__((ifunc("resolve_pagesum")));
#else
PAGESUM_DEFINE(pagesum_of)
#endif
#endif

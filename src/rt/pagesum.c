/* pagesum: XXH3-128 compiled into the runtime (header-only xxhash), not
 * linked from libxxhash.so: one shared object fewer for every process that
 * comex run execs, paging or not (docs/DECISIONS.md D21). This file is
 * compiled twice: as it is, and with -mavx2 -DPAGESUM_AVX2 (CMakeLists.txt),
 * which makes xxhash pick its AVX2 kernel; the first sum picks one. Not an
 * ifunc and not __builtin_cpu_supports: those ask the CPU at every load
 * (libgcc's constructor runs a dozen cpuid, each an exit to the hypervisor
 * in a VM: about 25 us of every exec'd process, paging or not). */
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
#include <cpuid.h>

pagesum_t pagesum_of_avx2(const void *page);
static PAGESUM_DEFINE(pagesum_of_sse2)

/* AVX2 in the CPU, and its registers saved by the kernel (XCR0 bits 1, 2) */
static bool has_avx2(void)
{
	unsigned a, b, c, d, xcr0_lo, xcr0_hi;

	if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & bit_OSXSAVE) || !(c & bit_AVX))
		return false;
	__asm__ volatile("xgetbv" : "=a"(xcr0_lo), "=d"(xcr0_hi) : "c"(0));
	(void)xcr0_hi;
	return (xcr0_lo & 6) == 6 && __get_cpuid_count(7, 0, &a, &b, &c, &d) && (b & bit_AVX2);
}

static pagesum_t (*chosen)(const void *); /* relaxed: every thread would choose the same */

pagesum_t pagesum_of(const void *page)
{
	pagesum_t (*f)(const void *) = __atomic_load_n(&chosen, __ATOMIC_RELAXED);

	if (!f) {
		f = has_avx2() ? pagesum_of_avx2 : pagesum_of_sse2;
		__atomic_store_n(&chosen, f, __ATOMIC_RELAXED);
	}
	return f(page);
}
#else
PAGESUM_DEFINE(pagesum_of)
#endif
#endif

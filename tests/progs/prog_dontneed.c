/* prog_dontneed [MiB=128]: MADV_DONTNEED on an anonymous private mapping
 * larger than local memory, over ranges whose pages are remote, resident or
 * both (one page, the first and last pages, a span across the middle, a
 * never-touched range, twice the same range), after a first pass that reads
 * half of it as never-written zeros: the discarded pages read back
 * zero, every other page is intact, and discarded pages can be written again.
 * The same inside a big malloc'd block; MADV_FREE'd pages read back either
 * intact or zero (page by page) and keep what is written after. */
#include <sys/mman.h>

#include "common.h"

static uint64_t *m;
static size_t words, pages;
static unsigned char *gone; /* per page: 1 if discarded (expected zero) */

#define WPP (PAGE / 8)

static void discard(size_t first, size_t n)
{
	if (madvise((char *)m + first * PAGE, n * PAGE, MADV_DONTNEED))
		die("madvise(DONTNEED) pages %zu+%zu: %s", first, n, strerror(errno));
	memset(gone + first, 1, n);
}

static void verify(const char *when)
{
	char what[128];
	for (size_t p = 0; p < pages; p++) {
		const uint64_t *w = m + p * WPP;
		if (gone[p]) {
			for (size_t i = 0; i < WPP; i++)
				if (w[i])
					die("%s: discarded page %zu word %zu is %016" PRIx64 ", expected 0", when, p, i, w[i]);
		} else {
			snprintf(what, sizeof what, "%s: kept page %zu", when, p);
			expect(w, WPP, 0xd0, p * WPP, what);
		}
	}
}

int main(int argc, char **argv)
{
	size_t size = arg_mib(argc, argv, 1, 128);
	words = size / 8;
	pages = size / PAGE;
	m = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	gone = calloc(pages, 1);
	if (m == MAP_FAILED || !gone)
		die("mmap");
	/* first touches by reads in address order are a stream of zero fills,
	 * which comex maps as populated pages (DECISIONS.md D29): all must read zero */
	for (size_t i = 0; i < words / 2; i++)
		if (m[i])
			die("never-written word %zu reads %016" PRIx64 ", expected 0", i, m[i]);
	/* the last 8 MiB are never touched before the first discard */
	size_t untouched = 8 * MiB / PAGE;
	fill(m, words - untouched * WPP, 0xd0, 0);
	discard(pages - untouched, untouched);       /* never touched */
	discard(0, 1);                               /* first page (remote by now) */
	discard(777, 1);                             /* one page */
	discard(pages / 4, 10 * MiB / PAGE);         /* a span early on (remote) */
	discard(pages / 2 + 3, 24 * MiB / PAGE + 5); /* a span reaching the most recently written pages */
	discard(pages - untouched - 3, 3);           /* the last written pages (resident) */
	discard(pages / 4 + 100, 200);               /* again, inside the first span */
	verify("after discarding");
	verify("reading everything again");
	/* write the discarded pages back with their pattern, in two steps */
	for (size_t p = 0; p < pages; p++)
		if (gone[p] && p % 2 == 0) {
			fill(m + p * WPP, WPP, 0xd0, p * WPP);
			gone[p] = 0;
		}
	verify("after rewriting half the discarded pages");
	for (size_t p = 0; p < pages; p++)
		if (gone[p]) {
			fill(m + p * WPP, WPP, 0xd0, p * WPP);
			gone[p] = 0;
		}
	verify("after rewriting all of them");
	uint64_t h = sum64(m, size, 0);

	/* inside a big malloc'd block */
	size_t bsz = 48 * MiB;
	uint64_t *b = malloc(bsz);
	if (!b)
		die("malloc");
	fill(b, bsz / 8, 0xbe, 0);
	fill(m, words, 0xd1, 0); /* push the block out */
	uintptr_t lo = ((uintptr_t)b + 5 * PAGE + PAGE - 1) & ~(PAGE - 1);
	size_t dlen = 16 * MiB;
	if (madvise((void *)lo, dlen, MADV_DONTNEED))
		die("madvise in malloc'd block: %s", strerror(errno));
	size_t lw = (lo - (uintptr_t)b) / 8, dw = dlen / 8;
	expect(b, lw, 0xbe, 0, "malloc'd block before the discarded range");
	if (!all_zero(b + lw, dlen))
		die("discarded range of the malloc'd block is not zero");
	expect(b + lw + dw, bsz / 8 - lw - dw, 0xbe, lw + dw, "malloc'd block after the discarded range");
	free(b);

	/* MADV_FREE: each page intact or zero; later writes stick */
	fill(m, words, 0xd2, 0);
	if (madvise((char *)m + PAGE * 100, 32 * MiB, MADV_FREE))
		die("madvise(FREE): %s", strerror(errno));
	size_t zeroed = 0;
	for (size_t p = 100; p < 100 + 32 * MiB / PAGE; p++) {
		uint64_t *w = m + p * WPP;
		if (check(w, WPP, 0xd2, p * WPP) == WPP)
			continue;
		if (!all_zero(w, PAGE))
			die("MADV_FREE'd page %zu is neither intact nor zero", p);
		zeroed++;
	}
	fill(m + 100 * WPP, 32 * MiB / 8, 0xd3, 0);
	fill(m + 100 * WPP + 32 * MiB / 8, words - 100 * WPP - 32 * MiB / 8, 0xd4, 0); /* push out */
	expect(m, 100 * WPP, 0xd2, 0, "pages before the MADV_FREE range");
	expect(m + 100 * WPP, 32 * MiB / 8, 0xd3, 0, "MADV_FREE'd pages written again");
	expect(m + 100 * WPP + 32 * MiB / 8, words - 100 * WPP - 32 * MiB / 8, 0xd4, 0, "pages after the MADV_FREE range");
	printf("dontneed: %zu MiB, checksum %016" PRIx64 ", ok\n", size / MiB, h);
	return 0;
}

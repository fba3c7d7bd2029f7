/* prog_mremap [MiB=48]: anonymous private mappings of several times the given
 * size grown (contents kept, the new part zero), shrunk (the cut part is gone:
 * growing again shows zeros), moved to a fixed address, split by moving a
 * middle piece out, and moved with MREMAP_DONTUNMAP (the source then reads
 * zero); big malloc blocks grown and shrunk with realloc. Everything is
 * verified after another mapping has pushed it out of memory. */
#include <sys/mman.h>

#include "common.h"

#ifndef MREMAP_DONTUNMAP
#define MREMAP_DONTUNMAP 4
#endif

static size_t U; /* the unit: argv[1] MiB */
static uint64_t *pusher;

static void push_out(void)
{
	push_out_with(pusher, 2 * U);
}

static void zero(const void *p, size_t len, const char *what)
{
	const uint64_t *w = p;
	for (size_t i = 0; i < len / 8; i++)
		if (w[i])
			die("%s: word %zu (page %zu) is %016" PRIx64 ", expected 0", what, i, i * 8 / PAGE, w[i]);
}

int main(int argc, char **argv)
{
	U = arg_mib(argc, argv, 1, 48);
	size_t W = U / 8; /* words per unit */
	uint64_t h = 0;
	pusher = map_anon(2 * U);

	/* grow: contents kept, the new part zero */
	uint64_t *m = map_anon(U);
	fill(m, W, 1, 0);
	push_out();
	m = mremap(m, U, 2 * U, MREMAP_MAYMOVE);
	if (m == MAP_FAILED)
		die("mremap grow: %s", strerror(errno));
	push_out();
	expect(m, W, 1, 0, "grown mapping, old part");
	zero(m + W, U, "grown mapping, new part");
	fill(m + W, W, 1, W);
	push_out();
	expect(m, 2 * W, 1, 0, "grown mapping, both parts");

	/* shrink in place, then grow again: what was cut off must come back as zeros */
	if (mremap(m, 2 * U, U / 2, 0) != m)
		die("mremap shrink: %s", strerror(errno));
	push_out();
	expect(m, W / 2, 1, 0, "shrunk mapping");
	m = mremap(m, U / 2, U + U / 2, MREMAP_MAYMOVE);
	if (m == MAP_FAILED)
		die("mremap regrow: %s", strerror(errno));
	push_out();
	expect(m, W / 2, 1, 0, "regrown mapping, kept part");
	zero(m + W / 2, U, "regrown mapping, part that had been cut off");
	fill(m + W / 2, W, 1, W / 2);

	/* move to a fixed address (over a reserved range) */
	size_t len = U + U / 2;
	uint64_t *target = mmap(NULL, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (target == MAP_FAILED)
		die("reserve");
	push_out();
	if (mremap(m, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, target) != target)
		die("mremap fixed: %s", strerror(errno));
	m = target;
	push_out();
	expect(m, len / 8, 1, 0, "mapping moved to a fixed address");

	/* move a middle piece out (and grow it): the mapping is split in three */
	uint64_t *mid = m + W / 4;
	uint64_t *piece = mremap(mid, U / 4, U / 2, MREMAP_MAYMOVE);
	if (piece == MAP_FAILED)
		die("mremap middle piece: %s", strerror(errno));
	push_out();
	expect(m, W / 4, 1, 0, "part before the moved piece");
	expect(m + W / 2, len / 8 - W / 2, 1, W / 2, "part after the moved piece");
	expect(piece, W / 4, 1, W / 4, "moved piece");
	zero(piece + W / 4, U / 4, "moved piece, grown part");
	/* fill the hole with a new fixed mapping */
	if (mmap(mid, U / 4, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) != mid)
		die("mmap fixed into the hole: %s", strerror(errno));
	zero(mid, U / 4, "new mapping in the hole");
	memcpy(mid, piece, U / 4);
	push_out();
	expect(m, len / 8, 1, 0, "mapping with its hole filled again");
	h = sum64(m, len, h);
	munmap(piece, U / 2);
	munmap(m, len);

	/* MREMAP_DONTUNMAP: the data moves, the source stays mapped and reads zero */
	uint64_t *src = map_anon(U / 2);
	fill(src, W / 2, 7, 0);
	push_out();
	uint64_t *dst = mremap(src, U / 2, U / 2, MREMAP_MAYMOVE | MREMAP_DONTUNMAP, NULL); /* the kernel reads the hint */
	if (dst == MAP_FAILED) {
		printf("dontunmap: unsupported (%s)\n", strerror(errno));
	} else {
		push_out();
		expect(dst, W / 2, 7, 0, "MREMAP_DONTUNMAP destination");
		zero(src, U / 2, "MREMAP_DONTUNMAP source");
		fill(src, W / 2, 8, 0);
		push_out();
		expect(dst, W / 2, 7, 0, "MREMAP_DONTUNMAP destination after writing the source");
		expect(src, W / 2, 8, 0, "MREMAP_DONTUNMAP source rewritten");
		h = sum64(dst, U / 2, h);
		munmap(dst, U / 2);
		printf("dontunmap: ok\n");
	}
	munmap(src, U / 2);

	/* realloc of big malloc blocks */
	uint64_t *r = malloc(U);
	if (!r)
		die("malloc");
	fill(r, W, 9, 0);
	push_out();
	if (!(r = realloc(r, 2 * U + 12345)))
		die("realloc grow");
	push_out();
	expect(r, W, 9, 0, "realloc grown");
	fill(r + W, W, 9, W);
	if (!(r = realloc(r, U / 3)))
		die("realloc shrink");
	push_out();
	expect(r, U / 3 / 8, 9, 0, "realloc shrunk");
	if (!(r = realloc(r, 2 * U)))
		die("realloc regrow");
	push_out();
	expect(r, U / 3 / 8, 9, 0, "realloc regrown");
	h = sum64(r, U / 3 / 8 * 8, h);
	free(r);
	munmap(pusher, 2 * U);
	printf("mremap: unit %zu MiB, checksum %016" PRIx64 ", ok\n", U / MiB, h);
	return 0;
}

/* prog_foreign [MiB=32]: a memfd and a file mapped MAP_FIXED over parts of a
 * filled anonymous reservation of 4x the given size (as V8 maps its builtins
 * and ZGC its heap views), the memfd at two addresses at once; then
 * MAP_FIXED_NOREPLACE (EEXIST over mapped pages, success over a hole),
 * madvise of the foreign parts, munmap and anonymous memory mapped back in
 * their place, mremap of a foreign mapping (grow, move) and of anonymous
 * memory onto a foreign one. Every part is verified after another mapping
 * has pushed the anonymous pages out of memory. */
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common.h"

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif

static size_t U; /* the unit: argv[1] MiB */
static uint64_t *pusher;

static void push_out(void)
{
	push_out_with(pusher, 2 * U);
}

static void *map_at(void *at, size_t len, int flags, int fd, const char *what)
{
	void *p = mmap(at, len, PROT_READ | PROT_WRITE, flags, fd, 0);
	if (p == MAP_FAILED || (at && (flags & (MAP_FIXED | MAP_FIXED_NOREPLACE)) && p != at))
		die("mmap %s: %s", what, strerror(errno));
	return p;
}

static void zero(const void *p, size_t len, const char *what)
{
	if (!all_zero(p, len))
		die("%s: not zero", what);
}

int main(int argc, char **argv)
{
	U = arg_mib(argc, argv, 1, 32);
	size_t W = U / 8, S = U / 2, SW = S / 8; /* words per unit; a foreign mapping's size */
	char *r, *hole;
	uint64_t *m;
	int mfd, ffd;
	char path[] = "/tmp/comex-foreign-XXXXXX";

	pusher = map_at(NULL, 2 * U, MAP_PRIVATE | MAP_ANONYMOUS, -1, "pusher");
	/* the reservation: 4 units, filled, pushed out (remote under comex) */
	r = map_at(NULL, 4 * U, MAP_PRIVATE | MAP_ANONYMOUS, -1, "reservation");
	fill((uint64_t *)r, 4 * W, 1, 0);
	push_out();

	/* a memfd over [U, U+S) and again over [2U, 2U+S): one memory, two views */
	mfd = memfd_create("prog_foreign", 0);
	if (mfd < 0 || ftruncate(mfd, (off_t)(2 * S)))
		die("memfd: %s", strerror(errno));
	map_at(r + U, S, MAP_SHARED | MAP_FIXED, mfd, "memfd view 1");
	map_at(r + 2 * U, S, MAP_SHARED | MAP_FIXED, mfd, "memfd view 2");
	zero(r + U, S, "fresh memfd view");
	fill((uint64_t *)(r + U), SW, 2, 0);
	expect((uint64_t *)(r + 2 * U), SW, 2, 0, "memfd written through view 1, read through view 2");
	/* a file, private, over [3U, 3U+S) */
	ffd = mkstemp(path);
	if (ffd < 0)
		die("mkstemp: %s", strerror(errno));
	unlink(path);
	m = map_at(NULL, S, MAP_SHARED, ffd, "file writer");
	if (ftruncate(ffd, (off_t)S))
		die("ftruncate: %s", strerror(errno));
	fill(m, SW, 3, 0);
	munmap(m, S);
	map_at(r + 3 * U, S, MAP_PRIVATE | MAP_FIXED, ffd, "file, private");
	push_out();
	expect((uint64_t *)(r + 3 * U), SW, 3, 0, "private file mapping");
	fill((uint64_t *)(r + 3 * U), SW / 2, 4, 0); /* copy on write: the file keeps pattern 3 */
	expect((uint64_t *)r, W, 1, 0, "unit 0, before the memfd");
	expect((uint64_t *)(r + U + S), (U - S) / 8, 1, (U + S) / 8, "anonymous part after view 1");
	expect((uint64_t *)(r + 2 * U + S), (U - S) / 8, 1, (2 * U + S) / 8, "anonymous part after view 2");
	expect((uint64_t *)(r + 3 * U + S), (U - S) / 8, 1, (3 * U + S) / 8, "anonymous part after the file");
	expect((uint64_t *)(r + 2 * U), SW, 2, 0, "memfd view 2 after eviction of its neighbours");

	/* MAP_FIXED_NOREPLACE: mapped pages (foreign or anonymous) say EEXIST */
	errno = 0;
	if (mmap(r + U, PAGE, PROT_READ, MAP_SHARED | MAP_FIXED_NOREPLACE, mfd, 0) != MAP_FAILED || errno != EEXIST)
		die("MAP_FIXED_NOREPLACE over a memfd view: %s, expected EEXIST", strerror(errno));
	errno = 0;
	if (mmap(r, PAGE, PROT_READ, MAP_SHARED | MAP_FIXED_NOREPLACE, mfd, 0) != MAP_FAILED || errno != EEXIST)
		die("MAP_FIXED_NOREPLACE over anonymous memory: %s, expected EEXIST", strerror(errno));
	errno = 0;
	if (mmap(r, PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0) != MAP_FAILED ||
	    errno != EEXIST)
		die("anonymous MAP_FIXED_NOREPLACE over anonymous memory: %s, expected EEXIST", strerror(errno));
	/* over a hole it succeeds: the memfd's second half in the last page of unit 0 */
	hole = r + U - PAGE;
	if (munmap(hole, PAGE))
		die("munmap: %s", strerror(errno));
	if (mmap(hole, PAGE, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED_NOREPLACE, mfd, (off_t)S) != hole)
		die("MAP_FIXED_NOREPLACE over a hole: %s", strerror(errno));
	((uint64_t *)hole)[0] = 77;

	/* madvise: the shared memfd keeps its data, the private file mapping
	 * returns to the file's, anonymous memory reads zero */
	if (madvise(r + U, S, MADV_DONTNEED) || madvise(r + 3 * U, S, MADV_DONTNEED) || madvise(r, PAGE, MADV_DONTNEED))
		die("madvise: %s", strerror(errno));
	expect((uint64_t *)(r + 2 * U), SW, 2, 0, "memfd after MADV_DONTNEED");
	expect((uint64_t *)(r + 3 * U), SW, 3, 0, "private file after MADV_DONTNEED");
	zero(r, PAGE, "anonymous page after MADV_DONTNEED");
	fill((uint64_t *)r, PAGE / 8, 1, 0);

	/* view 1 unmapped, then anonymous memory in its place: zero, and paged */
	if (munmap(r + U, S))
		die("munmap view 1: %s", strerror(errno));
	map_at(r + U, S, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, "anonymous over view 1's place");
	zero(r + U, S, "anonymous memory where view 1 was");
	fill((uint64_t *)(r + U), SW, 5, 0);
	push_out();
	expect((uint64_t *)(r + U), SW, 5, 0, "anonymous memory where view 1 was, after eviction");
	/* the private file mapping replaced by anonymous memory directly */
	map_at(r + 3 * U, S, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, "anonymous over the file");
	zero(r + 3 * U, S, "anonymous memory where the file was");
	fill((uint64_t *)(r + 3 * U), SW, 6, 0);

	/* mremap of a foreign mapping: move view 2 away (its place reads zero
	 * once mapped anonymous again), then grow the moved view */
	void *v2 = mremap(r + 2 * U, S, S, MREMAP_MAYMOVE | MREMAP_FIXED, pusher);
	if (v2 != pusher)
		die("mremap view 2 onto the pusher: %s", strerror(errno));
	expect(v2, SW, 2, 0, "memfd view 2 after mremap");
	void *v3 = mremap(v2, S, 2 * S, MREMAP_MAYMOVE);
	if (v3 == MAP_FAILED)
		die("mremap grow view 2: %s", strerror(errno));
	expect(v3, SW, 2, 0, "memfd view 2 grown");
	if (((uint64_t *)v3)[SW] != 77)
		die("memfd view 2 grown: second half lacks the word written through the hole mapping");
	pusher = map_at(NULL, 2 * U, MAP_PRIVATE | MAP_ANONYMOUS, -1, "pusher again");
	map_at(r + 2 * U, S, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, "anonymous where view 2 was");
	zero(r + 2 * U, S, "anonymous memory where view 2 was");
	/* anonymous memory moved onto a foreign mapping replaces it */
	uint64_t *a = map_at(NULL, S, MAP_PRIVATE | MAP_ANONYMOUS, -1, "anonymous to move");
	fill(a, SW, 7, 0);
	map_at(r + 2 * U, S, MAP_SHARED | MAP_FIXED, mfd, "memfd view 3");
	push_out();
	if (mremap(a, S, S, MREMAP_MAYMOVE | MREMAP_FIXED, r + 2 * U) != r + 2 * U)
		die("mremap anonymous onto view 3: %s", strerror(errno));
	push_out();
	expect((uint64_t *)(r + 2 * U), SW, 7, 0, "anonymous memory moved onto view 3");

	/* everything once more after eviction */
	push_out();
	expect((uint64_t *)r, PAGE / 8, 1, 0, "page 0");
	expect((uint64_t *)r + PAGE / 8, W - 2 * PAGE / 8, 1, PAGE / 8, "unit 0");
	if (((uint64_t *)hole)[0] != 77)
		die("the NOREPLACE memfd page lost its word");
	expect((uint64_t *)(r + U), SW, 5, 0, "where view 1 was");
	expect((uint64_t *)(r + 2 * U), SW, 7, 0, "where view 2 was");
	expect((uint64_t *)(r + 3 * U), SW, 6, 0, "where the file was");
	for (int u = 1; u < 4; u++)
		expect((uint64_t *)(r + u * U + S), (U - S) / 8, 1, (u * U + S) / 8, "anonymous tails");
	printf("prog_foreign: %zu MiB reservation, memfd (2 views), file, NOREPLACE, madvise, munmap, mremap: ok %016" PRIx64 "\n",
	       4 * U / MiB, sum64(r, 4 * U, 0));
	return 0;
}

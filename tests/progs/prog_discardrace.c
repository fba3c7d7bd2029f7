/* prog_discardrace: reader threads stream through a mapping larger than local
 * memory while a mutator thread discards chunks of it (MADV_DONTNEED, or
 * munmap + mmap MAP_FIXED) and rewrites them with a new generation. Each
 * chunk has a lock, so a reader never looks at a chunk being rewritten; but
 * a reader's fault in one chunk makes the pager fetch neighbours in the next
 * ones, which the mutator may be discarding at that moment: a neighbour
 * mapped from a stale copy shows as an old generation (or a non-zero page
 * right after a discard).
 *   prog_discardrace MIB [READERS [ROUNDS]]
 * Prints the chunk generations' checksum and the memory's; exits 1 at the
 * first mismatch. */
#include <pthread.h>
#include <sys/mman.h>

#include "common.h"

#define CHUNK_PAGES 16
#define WPP (PAGE / 8)

static uint64_t *mem;
static size_t nchunks;
static unsigned nreaders, rounds;
static pthread_mutex_t *lock;
static uint64_t *gen; /* per chunk, under its lock */
static volatile int stop;

static uint64_t *chunk(size_t c) { return mem + c * CHUNK_PAGES * WPP; }

static void write_chunk(size_t c)
{
	fill(chunk(c), CHUNK_PAGES * WPP, gen[c], c * CHUNK_PAGES * WPP);
}

static void verify_chunk(size_t c, const char *who)
{
	char what[96];

	snprintf(what, sizeof what, "%s: chunk %zu generation %" PRIu64, who, c, gen[c]);
	expect(chunk(c), CHUNK_PAGES * WPP, gen[c], c * CHUNK_PAGES * WPP, what);
}

/* Readers walk the chunks in order from a thread-specific start, so their
 * faults form streams that the pager prefetches ahead of. */
static void *reader(void *arg)
{
	size_t c = (size_t)(uintptr_t)arg * nchunks / nreaders;

	while (!stop) {
		pthread_mutex_lock(&lock[c]);
		verify_chunk(c, "reader");
		pthread_mutex_unlock(&lock[c]);
		c = (c + 1) % nchunks;
	}
	return NULL;
}

/* Discards a chunk one of two ways; it must then read as zero. */
static void discard(size_t c, uint64_t r)
{
	size_t len = CHUNK_PAGES * PAGE;

	if (r % 2) {
		if (madvise(chunk(c), len, MADV_DONTNEED))
			die("madvise(DONTNEED) chunk %zu: %s", c, strerror(errno));
	} else if (munmap(chunk(c), len) ||
		   mmap(chunk(c), len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) !=
			   chunk(c)) {
		die("munmap + mmap(MAP_FIXED) chunk %zu: %s", c, strerror(errno));
	}
	if (!all_zero(chunk(c), len))
		die("chunk %zu is not zero right after it was discarded", c);
}

static void mutate(void)
{
	uint64_t rng = 12345;

	for (uint64_t r = 0; r < rounds; r++) {
		size_t c = (size_t)(mix64(rng++) % nchunks);

		pthread_mutex_lock(&lock[c]);
		discard(c, r);
		gen[c]++;
		write_chunk(c);
		pthread_mutex_unlock(&lock[c]);
	}
}

int main(int argc, char **argv)
{
	size_t mib = argc > 1 ? strtoul(argv[1], NULL, 10) : 96;
	pthread_t t[16];
	uint64_t gsum = 0, msum = 0;

	nreaders = argc > 2 ? (unsigned)atoi(argv[2]) : 2;
	rounds = argc > 3 ? (unsigned)atoi(argv[3]) : 3000;
	if (!mib || !nreaders || nreaders > 16)
		die("usage: prog_discardrace MIB [READERS<=16 [ROUNDS]]");
	nchunks = mib * MiB / (CHUNK_PAGES * PAGE);
	mem = mmap(NULL, mib * MiB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	lock = calloc(nchunks, sizeof(*lock));
	gen = calloc(nchunks, sizeof(*gen));
	if (mem == MAP_FAILED || !lock || !gen)
		die("cannot allocate %zu MiB", mib);
	for (size_t c = 0; c < nchunks; c++) {
		pthread_mutex_init(&lock[c], NULL);
		write_chunk(c);
	}
	for (unsigned i = 0; i < nreaders; i++)
		if (pthread_create(&t[i], NULL, reader, (void *)(uintptr_t)i))
			die("pthread_create");
	mutate();
	stop = 1;
	for (unsigned i = 0; i < nreaders; i++)
		pthread_join(t[i], NULL);
	for (size_t c = 0; c < nchunks; c++) {
		verify_chunk(c, "final");
		gsum = mix64(gsum ^ gen[c]);
		msum = sum64(chunk(c), CHUNK_PAGES * PAGE, msum);
	}
	printf("discardrace: %zu chunks, %u readers, %u rounds, generations %016" PRIx64 ", memory %016" PRIx64 "\n",
	       nchunks, nreaders, rounds, gsum, msum);
	return 0;
}

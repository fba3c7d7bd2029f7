/* prog_mt [MiB=160] [passes=4]: 4 threads share one big malloc'd array cut
 * into 256 KiB slices. In pass p thread t takes the slices s with
 * (s + p) % 4 == t: it verifies the pattern the previous pass left there
 * (written by another thread) and writes the pattern of pass p. Each thread
 * also fills and keeps a private set of small blocks from its own malloc
 * arena. Prints a checksum of the final array. */
#include <pthread.h>

#include "common.h"

#define THREADS 4
#define SLICE (256 * 1024ul)
#define SW (SLICE / 8)

static uint64_t *arr;
static size_t nslices;
static int passes;
static pthread_barrier_t bar;

static uint64_t seed_of(int pass, size_t slice) { return 0x6d74000000000000ull ^ ((uint64_t)pass << 32) ^ slice; }

static void *worker(void *arg)
{
	int t = (int)(intptr_t)arg;
	char what[96];
	/* private small blocks: served from this thread's own malloc arena */
	enum { NB = 96, BS = 48 * 1024 };
	uint64_t *blk[NB];
	for (int i = 0; i < NB; i++) {
		if (!(blk[i] = malloc(BS)))
			die("thread %d: malloc", t);
		fill(blk[i], BS / 8, 0xb10c0000ull + (uint64_t)t * 1000 + i, 0);
	}
	for (int p = 0; p < passes; p++) {
		for (size_t s = 0; s < nslices; s++) {
			if ((s + (size_t)p) % THREADS != (size_t)t)
				continue;
			if (p > 0) {
				snprintf(what, sizeof what, "thread %d pass %d slice %zu", t, p, s);
				expect(arr + s * SW, SW, seed_of(p - 1, s), 0, what);
			}
			fill(arr + s * SW, SW, seed_of(p, s), 0);
		}
		pthread_barrier_wait(&bar);
	}
	for (int i = 0; i < NB; i++) {
		snprintf(what, sizeof what, "thread %d private block %d", t, i);
		expect(blk[i], BS / 8, 0xb10c0000ull + (uint64_t)t * 1000 + i, 0, what);
		free(blk[i]);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	size_t size = arg_mib(argc, argv, 1, 160);
	passes = argc > 2 ? atoi(argv[2]) : 4;
	nslices = size / SLICE;
	if (!(arr = malloc(size)))
		die("malloc %zu", size);
	pthread_barrier_init(&bar, NULL, THREADS);
	pthread_t th[THREADS];
	for (int t = 0; t < THREADS; t++)
		if (pthread_create(&th[t], NULL, worker, (void *)(intptr_t)t))
			die("pthread_create");
	for (int t = 0; t < THREADS; t++)
		pthread_join(th[t], NULL);
	uint64_t h = 0;
	for (size_t s = 0; s < nslices; s++) {
		char what[64];
		snprintf(what, sizeof what, "final slice %zu", s);
		expect(arr + s * SW, SW, seed_of(passes - 1, s), 0, what);
		h = sum64(arr + s * SW, SLICE, h);
	}
	free(arr);
	printf("mt: %zu MiB, %d threads, %d passes, checksum %016" PRIx64 "\n", size / MiB, THREADS, passes, h);
	return 0;
}

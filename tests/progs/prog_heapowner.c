/* prog_heapowner: rounds of a worker thread that allocates many small
 * blocks and ends, whose blocks the main thread then frees. The first
 * worker's allocations are the ones that start a waiting runtime (the lazy
 * start, D87), so under comex the allocator is loaded by a thread that
 * ends; a thread made after it and alive to the end takes its stack and
 * descriptor (the C library caches them), so that no later worker has its
 * thread identity. Prints a checksum and whether memory was reused across
 * rounds: the blocks of rounds 2 to the last span at most twice the
 * addresses round 2's did (the first round's start in the C library's heap
 * and end in comex's region, so it is left out; an allocator that never
 * took freed blocks back would place every round further on, which the
 * resident size would not show under comex: it evicts what is not used). */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BLOCKS 16384
#define BLOCK 2000 /* 32 MiB a round */
#define ROUNDS 6

static unsigned char *blk[BLOCKS];
static uint64_t sum;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

/* Holds the first worker's stack until main unlocks. */
static void *sitter(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&lock);
	pthread_mutex_unlock(&lock);
	return NULL;
}

static void *worker(void *arg)
{
	unsigned round = (unsigned)(uintptr_t)arg;

	for (unsigned i = 0; i < BLOCKS; i++) {
		if (!(blk[i] = malloc(BLOCK)))
			return (void *)1;
		memset(blk[i], (int)(i + round), BLOCK);
	}
	return NULL;
}

static uintptr_t lo = UINTPTR_MAX, hi;

static void note_span(void)
{
	for (unsigned i = 0; i < BLOCKS; i++) {
		if ((uintptr_t)blk[i] < lo)
			lo = (uintptr_t)blk[i];
		if ((uintptr_t)blk[i] + BLOCK > hi)
			hi = (uintptr_t)blk[i] + BLOCK;
	}
}

int main(void)
{
	uintptr_t first = 0;
	pthread_t sit;

	pthread_mutex_lock(&lock);
	for (unsigned r = 0; r < ROUNDS; r++) {
		pthread_t t;
		void *ret;

		if (pthread_create(&t, NULL, worker, (void *)(uintptr_t)r) || pthread_join(t, &ret) || ret)
			return puts("worker failed"), 1;
		if (r)
			note_span();
		for (unsigned i = 0; i < BLOCKS; i++) {
			sum = sum * 31 + blk[i][i % BLOCK];
			free(blk[i]);
		}
		if (r == 1)
			first = hi - lo;
		if (!r) {
			if (pthread_create(&sit, NULL, sitter, NULL))
				return puts("thread failed"), 1;
		}
	}
	pthread_mutex_unlock(&lock);
	pthread_join(sit, NULL);
	printf("checksum %llu\n", (unsigned long long)sum);
	printf("memory %s\n", hi - lo <= 2 * first ? "reused" : "not reused");
	if (hi - lo > 2 * first)
		fprintf(stderr, "blocks spanned %zu KiB in round 2, %zu KiB in rounds 2-%d\n", (size_t)(first >> 10),
			(size_t)((hi - lo) >> 10), ROUNDS);
	return 0;
}

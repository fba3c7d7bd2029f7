/* prog_wprace: writer threads race the pager's reclaimer: every round each
 * thread checks then increments a counter in every page it owns, spread over
 * MIB MiB, so pages are written while they are being evicted (and while they
 * come back clean). A lost or stale write shows as a counter one behind.
 *   prog_wprace MIB [THREADS [ROUNDS]]
 * Prints one line per thread and a total; exits 1 at the first mismatch. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PAGE 4096
#define WORDS (PAGE / sizeof(uint64_t))

static uint64_t *mem;
static size_t npages;
static unsigned nthreads, rounds;

struct worker { unsigned id; uint64_t sum; int bad; };

/* Each round walks the thread's pages in a different order (stride), so a
 * page is written at every distance from the reclaimer's current victims.
 * Two words per page: the first and the last, so a half-copied page shows. */
static void *work(void *arg)
{
	struct worker *w = arg;
	size_t mine = (npages - w->id + nthreads - 1) / nthreads;

	for (unsigned r = 0; r < rounds && !w->bad; r++) {
		size_t step = (r % 2) ? 1 : 7919; /* prime: visits every page once */
		for (size_t k = 0, j = 0; k < mine; k++, j = (j + step) % mine) {
			uint64_t *p = mem + (j * nthreads + w->id) * WORDS;
			if (p[0] != r || p[WORDS - 1] != r * 3) {
				fprintf(stderr, "thread %u round %u page %zu: %lu/%lu, expected %u/%u\n", w->id, r,
					j * nthreads + w->id, (unsigned long)p[0], (unsigned long)p[WORDS - 1], r, r * 3);
				w->bad = 1;
				break;
			}
			p[0] = r + 1;
			p[WORDS - 1] = (r + 1) * 3;
			w->sum += p[0] + p[WORDS / 2];
		}
	}
	return NULL;
}

int main(int argc, char **argv)
{
	size_t mib = argc > 1 ? strtoul(argv[1], NULL, 10) : 64;
	struct worker w[16];
	pthread_t t[16];
	uint64_t total = 0;
	int bad = 0;

	nthreads = argc > 2 ? (unsigned)atoi(argv[2]) : 3;
	rounds = argc > 3 ? (unsigned)atoi(argv[3]) : 6;
	if (!mib || nthreads < 1 || nthreads > 16)
		return 2;
	npages = mib * 1024 * 1024 / PAGE;
	mem = malloc(npages * PAGE);
	if (!mem)
		return 1;
	for (size_t i = 0; i < npages; i++) { /* zeros would be dropped: a pattern */
		memset(mem + i * WORDS, 0, PAGE);
		mem[i * WORDS + WORDS / 2] = i * 2654435761u;
	}
	for (unsigned i = 0; i < nthreads; i++) {
		w[i] = (struct worker){ .id = i };
		pthread_create(&t[i], NULL, work, &w[i]);
	}
	for (unsigned i = 0; i < nthreads; i++) {
		pthread_join(t[i], NULL);
		printf("thread %u: sum %016llx%s\n", i, (unsigned long long)w[i].sum, w[i].bad ? " MISMATCH" : "");
		total += w[i].sum;
		bad |= w[i].bad;
	}
	printf("total %016llx\n", (unsigned long long)total);
	free(mem);
	return bad;
}

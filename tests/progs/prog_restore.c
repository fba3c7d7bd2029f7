/* prog_restore: writes that change nothing. Every round visits every page
 * in a different order, checks it, writes a marker into one word and puts
 * the old value back (as GNU sort does with each line's end when it writes
 * the line out): the page was written but is unchanged, so its remote copy
 * stays valid. One page in seven of each round is really changed, so a
 * changed page taken for unchanged shows as a mismatch the next time round.
 *   prog_restore MIB [ROUNDS]
 * Prints a checksum of the memory; exits 1 at the first mismatch. */
#include "common.h"

int main(int argc, char **argv)
{
	size_t mib = argc > 1 ? strtoul(argv[1], NULL, 10) : 64;
	unsigned rounds = argc > 2 ? (unsigned)atoi(argv[2]) : 4;
	size_t npages = mib * MiB / PAGE, words = PAGE / 8;
	uint64_t *mem, *ver, sum = 0;

	if (!npages)
		return 2;
	mem = malloc(npages * PAGE);
	ver = calloc(npages, sizeof(*ver)); /* times each page was really changed */
	if (!mem || !ver)
		return 2;
	fill(mem, npages * words, 1, 0);
	for (unsigned r = 0; r < rounds; r++) {
		size_t step = r % 2 ? 1 : 7919; /* prime: visits every page once */

		for (size_t k = 0, p = 0; k < npages; k++, p = (p + step) % npages) {
			volatile uint64_t *w = mem + p * words;
			uint64_t want = pat(1, p * words) + ver[p], old = w[0];

			if (old != want || check(mem + p * words + 1, words - 1, 1, p * words + 1) != words - 1) {
				fprintf(stderr, "MISMATCH round %u page %zu: %" PRIx64 ", expected %" PRIx64 "\n", r, p, old,
					want);
				return 1;
			}
			w[0] = ~old; /* the marker */
			w[0] = old;  /* and back: written, unchanged */
			if (mix64(p ^ (uint64_t)r << 40) % 7 == 0) {
				w[0] = old + 1;
				ver[p]++;
			}
		}
	}
	for (size_t i = 0; i < npages * words; i++)
		sum = sum * 31 + mem[i];
	printf("prog_restore %zu MiB, %u rounds: checksum %016" PRIx64 "\n", mib, rounds, sum);
	return 0;
}

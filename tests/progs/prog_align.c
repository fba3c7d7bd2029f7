/* prog_align: memalign, aligned_alloc and posix_memalign of every power of
 * two from 16 to 64 KiB, for sizes that are multiples of it and sizes that
 * are not, each block written whole; prints how many were misaligned (0
 * natively) and a checksum of what was read back. */
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(void)
{
	unsigned long bad = 0, total = 0;
	uint64_t sum = 0;

	for (size_t a = 16; a <= 65536; a *= 2)
		for (size_t k = 1; k <= 24; k++)
			for (int how = 0; how < 3; how++) {
				size_t n = k * a / (k % 3 ? 1 : 2) + (k % 4 == 0 ? 8 : 0);
				unsigned char *p = NULL;

				if (how == 0)
					p = memalign(a, n);
				else if (how == 1)
					p = aligned_alloc(a, (n + a - 1) / a * a);
				else if (posix_memalign((void **)&p, a, n))
					p = NULL;
				if (!p)
					return printf("allocation of %zu bytes aligned to %zu failed\n", n, a), 1;
				total++;
				if ((uintptr_t)p % a) {
					bad++;
					fprintf(stderr, "misaligned: %zu bytes aligned to %zu at %p (how %d)\n", n, a,
						(void *)p, how);
				}
				memset(p, (int)(k + how), n);
				sum = sum * 31 + p[n - 1] + p[0];
				if (k % 2)
					free(p); /* the others stay: later blocks come from fresh pages too */
			}
	printf("aligned blocks %lu, misaligned %lu, sum %llu\n", total, bad, (unsigned long long)sum);
	return bad != 0;
}

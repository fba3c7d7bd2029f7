/* prog_watchdog [MiB=128] [passes=3]: fills memory, prints "filled", then
 * verifies and rewrites all of it in each pass, and prints "ok". The failure
 * tests run it with a fault handler that stops serving or a memnode that dies
 * part way: it must then be stopped with a message, never hang and never
 * print "ok" (its data is gone). */
#include "common.h"

int main(int argc, char **argv)
{
	size_t size = arg_mib(argc, argv, 1, 128);
	long passes = argc > 2 ? atol(argv[2]) : 3;
	size_t words = size / 8;
	uint64_t *m = malloc(size);
	if (!m)
		die("malloc");
	fill(m, words, 0x3000, 0);
	printf("filled\n");
	fflush(stdout);
	for (long p = 1; p <= passes; p++) {
		char what[64];
		snprintf(what, sizeof what, "pass %ld", p);
		expect(m, words, 0x3000 + (uint64_t)p - 1, 0, what);
		fill(m, words, 0x3000 + (uint64_t)p, 0);
	}
	printf("watchdog: %zu MiB, %ld passes, checksum %016" PRIx64 ", ok\n", size / MiB, passes, sum64(m, size, 0));
	return 0;
}

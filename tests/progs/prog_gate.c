/* prog_gate MiB GATE [idle]: fills MiB of memory, prints "filled", then
 * verifies and rewrites all of it pass after pass (idle: sleeps, touching
 * nothing) until the file GATE exists, then
 * verifies once more and prints a checksum of a final fill. The output does
 * not depend on how many passes ran, so a run under comex while memnodes
 * leave, die or come back (the test opens the gate once they have) must
 * print exactly what the native run (gate already open) prints; any page
 * lost or stale stops it with MISMATCH. */
#include <unistd.h>

#include "common.h"

int main(int argc, char **argv)
{
	size_t size = arg_mib(argc, argv, 1, 64), words = size / 8;
	const char *gate = argc > 2 ? argv[2] : "/";
	int idle = argc > 3 && !strcmp(argv[3], "idle");
	uint64_t *m = malloc(size);
	uint64_t p = 0;

	if (!m)
		die("malloc");
	fill(m, words, 0x6a7e, 0);
	printf("filled\n");
	fflush(stdout);
	while (idle && access(gate, F_OK))
		usleep(20000); /* waiting for the test, not timing anything */
	do {
		char what[64];

		snprintf(what, sizeof what, "pass %" PRIu64, p + 1);
		expect(m, words, 0x6a7e + p, 0, what);
		fill(m, words, 0x6a7e + p + 1, 0);
		p++;
	} while (access(gate, F_OK));
	expect(m, words, 0x6a7e + p, 0, "after the gate");
	fill(m, words, 0xf1a1, 0);
	printf("gate: %zu MiB, ok, checksum %016" PRIx64 "\n", size / MiB, sum64(m, size, 0));
	return 0;
}

/* prog_tools MiB MODE: what debuggers and core dumps see. Fills a global
 * array `a` of MiB with a[i] = i * 2654435761 (mod 2^64), so that a tool
 * can check any word of it, then
 *   abort   calls abort(): the core must hold every word of `a`;
 *   wait    prints "ready PID WORDS" and waits for a line on stdin (a
 *           debugger attaches meanwhile), then checks `a` and prints its
 *           checksum. */
#include <signal.h>
#include <unistd.h>

#include "common.h"

#define KNUTH 2654435761ull

uint64_t *a; /* global: gdb finds it by name */
size_t words;

int main(int argc, char **argv)
{
	const char *mode = argc > 2 ? argv[2] : "wait";
	char line[16];

	words = arg_mib(argc, argv, 1, 128) / 8;
	a = map_anon(words * 8);
	for (size_t i = 0; i < words; i++)
		a[i] = i * KNUTH;
	if (!strcmp(mode, "abort"))
		abort();
	printf("ready %d %zu\n", (int)getpid(), words);
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin))
		die("stdin closed before the go-ahead");
	for (size_t i = 0; i < words; i++)
		if (a[i] != i * KNUTH)
			die("a[%zu] is %016" PRIx64 " after the debugger", i, a[i]);
	printf("%s: %zu words, checksum %016" PRIx64 "\n", mode, words, sum64(a, words * 8, 0));
	return 0;
}

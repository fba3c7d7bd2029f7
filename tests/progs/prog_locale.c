/* prog_locale [MiB=128]: sets a locale loaded from files (glibc mallocs its
 * tables, so under comex they live in managed memory), then streams through
 * MiB for several passes so that those tables are evicted while the runtime
 * keeps talking to its memnode, and finally formats numbers in that locale.
 * Under comex with a short UCX keepalive interval this checks that libc calls
 * made by the runtime (UCX's keepalive parses /proc with sscanf) never read
 * the program's evicted locale: the fault handler would wait for itself. */
#include <locale.h>

#include "common.h"

int main(int argc, char **argv)
{
	size_t mib = argc > 1 ? strtoul(argv[1], NULL, 0) : 128, words = mib * MiB / 8;
	uint64_t *p = malloc(mib * MiB), sum = 0;
	const char *loc = setlocale(LC_ALL, "C.UTF-8");

	if (!p)
		die("cannot allocate %zu MiB", mib);
	if (!loc)
		loc = setlocale(LC_ALL, ""); /* whatever the environment names */
	for (unsigned pass = 0; pass < 6; pass++) {
		fill(p, words, 0x10c + pass, 0);
		size_t bad = check(p, words, 0x10c + pass, 0);
		if (bad != words)
			die("pass %u: word %zu differs", pass, bad);
		for (size_t i = 0; i < words; i += 512)
			sum += p[i];
	}
	/* the locale's tables are read again here, after all that paging */
	printf("locale %s sum %'llu %.3f\n", loc ? "set" : "unset", (unsigned long long)(sum % 1000000007u),
	       (double)(sum % 1000) / 7);
	free(p);
	return 0;
}

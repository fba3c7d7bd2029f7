/* Helpers shared by the tests/progs programs. These are plain programs: they
 * know nothing of comex, run the same natively and under `comex run`, verify
 * their own memory, print a deterministic result on stdout and exit non-zero
 * on any mismatch (printing "MISMATCH ..." on stderr). */
#ifndef COMEX_TEST_PROGS_COMMON_H
#define COMEX_TEST_PROGS_COMMON_H

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define MiB (1024ul * 1024ul)
#define PAGE 4096ul

static inline uint64_t mix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/* The pattern word at index i of a buffer tagged seed. */
static inline uint64_t pat(uint64_t seed, uint64_t i) { return mix64(i * 0x100000001b3ull ^ seed); }

static inline void fill(uint64_t *p, size_t words, uint64_t seed, uint64_t first)
{
	for (size_t i = 0; i < words; i++)
		p[i] = pat(seed, first + i);
}

/* Index of the first word that differs from the pattern, or words. */
static inline size_t check(const uint64_t *p, size_t words, uint64_t seed, uint64_t first)
{
	for (size_t i = 0; i < words; i++)
		if (p[i] != pat(seed, first + i))
			return i;
	return words;
}

static inline uint64_t sum64(const void *buf, size_t len, uint64_t h)
{
	const uint64_t *p = buf;
	for (size_t i = 0; i < len / 8; i++)
		h = mix64(h ^ p[i]);
	return h;
}

static inline int all_zero(const void *buf, size_t len)
{
	const uint64_t *p = buf;
	for (size_t i = 0; i < len / 8; i++)
		if (p[i])
			return 0;
	return 1;
}

__attribute__((noreturn, format(printf, 1, 2)))
static void die(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("MISMATCH/ERROR: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	exit(1);
}

/* Verifies words [0, words) of p against (seed, first); dies naming where. */
static inline void expect(const uint64_t *p, size_t words, uint64_t seed, uint64_t first, const char *what)
{
	size_t bad = check(p, words, seed, first);
	if (bad != words)
		die("%s: word %zu (byte offset %zu, page %zu) is %016" PRIx64 ", expected %016" PRIx64,
		    what, bad, bad * 8, bad * 8 / PAGE, p[bad], pat(seed, first + bad));
}

/* A fresh anonymous private read-write mapping of len bytes, or die. */
static inline void *map_anon(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		die("mmap %zu: %s", len, strerror(errno));
	return p;
}

/* Rewrites buf (bytes long) with a new pattern on each call: under a small
 * local-mem this pushes whatever else the program touched out of memory. */
static inline void push_out_with(uint64_t *buf, size_t bytes)
{
	static uint64_t round;
	fill(buf, bytes / 8, 0xf00 + ++round, 0);
}

static inline size_t arg_mib(int argc, char **argv, int i, size_t dflt)
{
	return (argc > i ? strtoul(argv[i], NULL, 0) : dflt) * MiB;
}

#endif

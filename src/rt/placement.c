/* placement: FNV-1a for the host name, a 64-bit mix for (nid, pid),
 * xorshift64* for the random choices of p2c and weighted. */
#include "placement.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

uint16_t placement_local_nid(void)
{
	char host[256] = "";
	uint32_t h = 2166136261u;

	gethostname(host, sizeof(host) - 1);
	for (const char *p = host; *p; p++)
		h = (h ^ (uint8_t)*p) * 16777619u;
	return (uint16_t)(h ^ (h >> 16));
}

unsigned placement_preferred(uint16_t nid, uint32_t pid, unsigned n)
{
	uint64_t x = ((uint64_t)nid << 32 | pid) * 0x9e3779b97f4a7c15ull;

	x ^= x >> 29;
	return n ? (unsigned)(x % n) : 0;
}

unsigned placement_choice(unsigned first, unsigned attempt, unsigned n)
{
	return n ? (first + attempt) % n : 0;
}

/* A uniform draw in [0, n) (n >= 1); the modulo bias is below n / 2^64. */
static uint64_t draw(uint64_t *rng, uint64_t n)
{
	uint64_t x = *rng ? *rng : 0x9e3779b97f4a7c15ull;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*rng = x;
	return (x * 0x2545f4914f6cdd1dull) % n;
}

/* Two distinct nodes at random, the one with more room (the first on a tie);
 * when neither has any, the node with the most room of all. */
static unsigned two_choices(unsigned preferred, const uint64_t *room, unsigned n, uint64_t *rng)
{
	unsigned a = (unsigned)draw(rng, n), b = (a + 1 + (unsigned)draw(rng, n - 1)) % n, best = preferred;

	if (room[a] || room[b])
		return room[b] > room[a] ? b : a;
	for (unsigned i = 0; i < n; i++)
		if (room[i] > room[best])
			best = i;
	return best;
}

static unsigned weighted(unsigned preferred, const uint64_t *room, unsigned n, uint64_t *rng)
{
	uint64_t total = 0, r;

	for (unsigned i = 0; i < n; i++)
		total += room[i];
	if (!total)
		return preferred;
	r = draw(rng, total);
	for (unsigned i = 0; i < n; i++) {
		if (r < room[i])
			return i;
		r -= room[i];
	}
	return preferred; /* not reached: r < total */
}

unsigned placement_pick(enum placement_policy p, unsigned preferred, const uint64_t *room, unsigned n,
			uint64_t *rng)
{
	if (n <= 1)
		return 0;
	if (p == PLACEMENT_P2C)
		return two_choices(preferred, room, n, rng);
	if (p == PLACEMENT_WEIGHTED)
		return weighted(preferred, room, n, rng);
	return preferred;
}

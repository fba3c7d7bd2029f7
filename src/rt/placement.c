/* placement: FNV-1a for the host name, a 64-bit mix for (nid, pid). */
#include "placement.h"

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

unsigned placement_choice(unsigned preferred, unsigned attempt, unsigned n)
{
	return n ? (preferred + attempt) % n : 0;
}

/* evict: a power-of-two ring of (index << 12 | generation) items. */
#include "evict.h"

#include <errno.h>
#include <stdlib.h>

#include "rtmem.h"

struct evict {
	uint64_t cap, head, tail; /* items live in [head, tail) mod cap */
	bool clock;
	uint64_t *item;
};

int evict_create(uint64_t capacity, bool clock, struct evict **out)
{
	struct evict *ev = rt_alloc(sizeof(*ev));
	uint64_t cap = 1024;

	if (!ev)
		return -ENOMEM;
	while (cap < capacity)
		cap <<= 1;
	ev->cap = cap;
	ev->clock = clock;
	ev->item = rt_alloc(cap * sizeof(uint64_t));
	if (!ev->item) {
		rt_free(ev, sizeof(*ev));
		return -ENOMEM;
	}
	*out = ev;
	return 0;
}

void evict_destroy(struct evict *ev)
{
	if (!ev)
		return;
	rt_free(ev->item, ev->cap * sizeof(uint64_t));
	rt_free(ev, sizeof(*ev));
}

static bool live(const struct pagetab *pt, uint64_t item)
{
	pte_t e = pagetab_pte(pt, item >> 12);

	return pte_resident(e) && pte_gen(e) == (item & PTE_GEN_MASK);
}

/* Drops stale items in place; the ring holds every resident page at most
 * once per generation, so after compaction it has room unless more pages are
 * resident than its capacity (sized at 2x the budget). */
static void compact(struct evict *ev, const struct pagetab *pt)
{
	uint64_t w = ev->head;

	for (uint64_t r = ev->head; r != ev->tail; r++)
		if (live(pt, ev->item[r & (ev->cap - 1)]))
			ev->item[w++ & (ev->cap - 1)] = ev->item[r & (ev->cap - 1)];
	ev->tail = w;
}

void evict_push(struct evict *ev, const struct pagetab *pt, uint64_t idx, unsigned gen)
{
	if (ev->tail - ev->head == ev->cap)
		compact(ev, pt);
	if (ev->tail - ev->head == ev->cap)
		ev->head++; /* over capacity: forget the oldest (it stays resident) */
	ev->item[ev->tail++ & (ev->cap - 1)] = idx << 12 | (gen & PTE_GEN_MASK);
}

static int by_index(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

uint32_t evict_pick(struct evict *ev, struct pagetab *pt, uint32_t want, uint64_t *victims)
{
	uint32_t n = 0;
	uint64_t budget = 2 * (ev->tail - ev->head); /* each item is passed at most twice */

	while (n < want && ev->head != ev->tail && budget--) {
		uint64_t item = ev->item[ev->head++ & (ev->cap - 1)];
		uint64_t idx = item >> 12;
		pte_t e = pagetab_pte(pt, idx);

		if (!live(pt, item) || (e & PTE_LOCKED)) /* munlock puts it back */
			continue;
		if (ev->clock && (e & PTE_REF)) {
			pagetab_set_pte(pt, idx, e & ~PTE_REF);
			ev->item[ev->tail++ & (ev->cap - 1)] = item;
			continue;
		}
		victims[n++] = idx;
	}
	qsort(victims, n, sizeof(*victims), by_index);
	/* a page must be evicted once: a stale item whose 12-bit generation
	 * came round again could name it twice */
	uint32_t u = 0;
	for (uint32_t i = 0; i < n; i++)
		if (!u || victims[i] != victims[u - 1])
			victims[u++] = victims[i];
	return u;
}

/* rbuf: slots on an LRU list and in a chained hash by window number. */
#include "rbuf.h"

#include <errno.h>

#include "pte.h"
#include "rtmem.h"

#define NONE UINT32_MAX

struct slot {
	uint64_t window;   /* page index / P; UINT64_MAX when unused */
	uint64_t valid;    /* bit i: page i of the window holds data */
	uint32_t prev, next, hnext;
};

struct rbuf {
	uint32_t nslots, window, shift, nbuckets;
	uint32_t head, tail; /* head: most recently used */
	struct slot *s;
	uint32_t *bucket;
	char *data;
	uint64_t meta_len;
};

static uint32_t hash(const struct rbuf *rb, uint64_t w)
{
	return (uint32_t)((w * 0x9e3779b97f4a7c15ull) >> 32) & (rb->nbuckets - 1);
}

static void unlink_lru(struct rbuf *rb, uint32_t i)
{
	struct slot *x = &rb->s[i];

	if (x->prev != NONE) rb->s[x->prev].next = x->next; else rb->head = x->next;
	if (x->next != NONE) rb->s[x->next].prev = x->prev; else rb->tail = x->prev;
}

static void push_front(struct rbuf *rb, uint32_t i)
{
	struct slot *x = &rb->s[i];

	x->prev = NONE;
	x->next = rb->head;
	if (rb->head != NONE) rb->s[rb->head].prev = i; else rb->tail = i;
	rb->head = i;
}

int rbuf_create(uint32_t pages, uint32_t window, struct rbuf **out)
{
	struct rbuf *rb;
	uint32_t nslots;

	if (!window || window > 64 || (window & (window - 1)) || pages < window)
		return -EINVAL;
	nslots = pages / window;
	rb = rt_alloc(sizeof(*rb));
	if (!rb)
		return -ENOMEM;
	rb->nslots = nslots;
	rb->window = window;
	rb->shift = (uint32_t)__builtin_ctz(window);
	for (rb->nbuckets = 1; rb->nbuckets < 2 * nslots; rb->nbuckets <<= 1)
		;
	rb->meta_len = nslots * sizeof(struct slot) + rb->nbuckets * sizeof(uint32_t);
	rb->s = rt_alloc(rb->meta_len);
	rb->data = rt_alloc((uint64_t)nslots * window * PAGE_SIZE);
	if (!rb->s || !rb->data) {
		rbuf_destroy(rb);
		return -ENOMEM;
	}
	rb->bucket = (uint32_t *)(rb->s + nslots);
	for (uint32_t i = 0; i < rb->nbuckets; i++)
		rb->bucket[i] = NONE;
	rb->head = rb->tail = NONE;
	for (uint32_t i = 0; i < nslots; i++) {
		rb->s[i].window = UINT64_MAX;
		rb->s[i].hnext = NONE;
		push_front(rb, i);
	}
	*out = rb;
	return 0;
}

void rbuf_destroy(struct rbuf *rb)
{
	if (!rb)
		return;
	rt_free(rb->s, rb->meta_len);
	rt_free(rb->data, (uint64_t)rb->nslots * rb->window * PAGE_SIZE);
	rt_free(rb, sizeof(*rb));
}

static uint32_t find(const struct rbuf *rb, uint64_t w)
{
	uint32_t i = rb->bucket[hash(rb, w)];

	while (i != NONE && rb->s[i].window != w)
		i = rb->s[i].hnext;
	return i;
}

static void unhash(struct rbuf *rb, uint32_t i)
{
	uint32_t *p = &rb->bucket[hash(rb, rb->s[i].window)];

	while (*p != i)
		p = &rb->s[*p].hnext;
	*p = rb->s[i].hnext;
	rb->s[i].window = UINT64_MAX;
}

static char *page_of(const struct rbuf *rb, uint32_t slot, uint64_t idx)
{
	return rb->data + (((uint64_t)slot << rb->shift) + (idx & (rb->window - 1))) * PAGE_SIZE;
}

const void *rbuf_lookup(struct rbuf *rb, uint64_t idx)
{
	uint32_t i = find(rb, idx >> rb->shift);

	if (i == NONE || !(rb->s[i].valid & (1ull << (idx & (rb->window - 1)))))
		return NULL;
	unlink_lru(rb, i);
	push_front(rb, i);
	return page_of(rb, i, idx);
}

void *rbuf_slot(struct rbuf *rb, uint64_t idx)
{
	uint64_t w = idx >> rb->shift;
	uint32_t i = find(rb, w);

	if (i == NONE) {
		i = rb->tail;
		if (rb->s[i].window != UINT64_MAX)
			unhash(rb, i);
		rb->s[i].window = w;
		rb->s[i].valid = 0;
		rb->s[i].hnext = rb->bucket[hash(rb, w)];
		rb->bucket[hash(rb, w)] = i;
	}
	unlink_lru(rb, i);
	push_front(rb, i);
	return page_of(rb, i, idx & ~(uint64_t)(rb->window - 1));
}

void rbuf_mark(struct rbuf *rb, uint64_t idx)
{
	uint32_t i = find(rb, idx >> rb->shift);

	if (i != NONE)
		rb->s[i].valid |= 1ull << (idx & (rb->window - 1));
}

void rbuf_drop(struct rbuf *rb, uint64_t idx)
{
	uint32_t i;

	if (!rb)
		return;
	i = find(rb, idx >> rb->shift);
	if (i != NONE)
		rb->s[i].valid &= ~(1ull << (idx & (rb->window - 1)));
}

uint64_t rbuf_bytes(const struct rbuf *rb)
{
	if (!rb)
		return 0;
	return (uint64_t)rb->nslots * rb->window * PAGE_SIZE;
}

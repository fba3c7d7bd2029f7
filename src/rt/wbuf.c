/* wbuf: a flat array of page copies plus their page indices. */
#include "wbuf.h"

#include <errno.h>

#include "pte.h"
#include "rtmem.h"

#define CANCELLED (1ull << 63)

struct wbuf {
	uint32_t cap, flush_run, n, first_pfn, naux;
	uint64_t *idx;     /* page index | CANCELLED */
	uint64_t *aux;     /* naux words per page, or NULL */
	char *data;
};

int wbuf_create(uint32_t pages, uint32_t flush_run, uint32_t aux, struct wbuf **out)
{
	struct wbuf *wb;

	if (!pages || !flush_run)
		return -EINVAL;
	wb = rt_alloc(sizeof(*wb));
	if (!wb)
		return -ENOMEM;
	wb->cap = pages;
	wb->flush_run = flush_run < pages ? flush_run : pages;
	wb->idx = rt_alloc(pages * sizeof(uint64_t));
	wb->data = rt_alloc((uint64_t)pages * PAGE_SIZE);
	wb->naux = aux;
	wb->aux = aux ? rt_alloc((size_t)pages * aux * sizeof(uint64_t)) : NULL;
	if (!wb->idx || !wb->data || (aux && !wb->aux)) {
		wbuf_destroy(wb);
		return -ENOMEM;
	}
	*out = wb;
	return 0;
}

void wbuf_destroy(struct wbuf *wb)
{
	if (!wb)
		return;
	rt_free(wb->idx, wb->cap * sizeof(uint64_t));
	rt_free(wb->data, (uint64_t)wb->cap * PAGE_SIZE);
	rt_free(wb->aux, (size_t)wb->cap * wb->naux * sizeof(uint64_t));
	rt_free(wb, sizeof(*wb));
}

bool wbuf_must_flush_before(const struct wbuf *wb, uint32_t pfn)
{
	return wb->n && (wb->n == wb->cap || pfn != wb->first_pfn + wb->n);
}

void *wbuf_add(struct wbuf *wb, uint64_t idx, uint32_t pfn)
{
	if (!wb->n)
		wb->first_pfn = pfn;
	wb->idx[wb->n] = idx;
	for (uint32_t k = 0; k < wb->naux; k++)
		wb->aux[(size_t)wb->n * wb->naux + k] = 0;
	return wb->data + (uint64_t)wb->n++ * PAGE_SIZE;
}

bool wbuf_ready(const struct wbuf *wb)
{
	return wb->n >= wb->flush_run;
}

void *wbuf_find(struct wbuf *wb, uint64_t idx, bool cancel)
{
	for (uint32_t i = 0; i < wb->n; i++) {
		if (wb->idx[i] != idx)
			continue;
		if (cancel)
			wb->idx[i] |= CANCELLED;
		return wb->data + (uint64_t)i * PAGE_SIZE;
	}
	return NULL;
}

void wbuf_run(const struct wbuf *wb, uint32_t *pfn, uint32_t *count, const void **data)
{
	*pfn = wb->first_pfn;
	*count = wb->n;
	*data = wb->data;
}

void wbuf_entry(const struct wbuf *wb, uint32_t i, uint64_t *idx, bool *cancelled)
{
	*idx = wb->idx[i] & ~CANCELLED;
	*cancelled = wb->idx[i] & CANCELLED;
}

void wbuf_clear(struct wbuf *wb)
{
	wb->n = 0;
}

uint64_t *wbuf_aux(struct wbuf *wb, uint32_t i)
{
	return wb->aux + (size_t)i * wb->naux;
}

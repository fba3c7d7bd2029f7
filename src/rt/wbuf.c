/* wbuf: a flat array of page copies plus their page indices. */
#include "wbuf.h"

#include <errno.h>

#include "pte.h"
#include "rtmem.h"

#define CANCELLED (1ull << 63)

struct wbuf {
	uint32_t cap, flush_run, n, first_pfn;
	uint64_t *idx;     /* page index | CANCELLED */
	char *data;
};

int wbuf_create(uint32_t pages, uint32_t flush_run, struct wbuf **out)
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
	if (!wb->idx || !wb->data) {
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

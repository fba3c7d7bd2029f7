/* wbuf: a per-memnode write buffer (COMEX §4.2-4.3). Evicted pages are
 * copied in with their remote frame already reserved; the buffer always holds
 * one run of consecutive frames, so a flush is one transfer. It must be
 * flushed when the next page's frame does not continue the run, when the run
 * reaches the flush length, or when it is full. Not thread-safe (pager lock). */
#ifndef COMEX_RT_WBUF_H
#define COMEX_RT_WBUF_H

#include <stdbool.h>
#include <stdint.h>

struct wbuf;

/* aux: words kept per page for the caller (replica.c's extra copies), 0-2. */
int wbuf_create(uint32_t pages, uint32_t flush_run, uint32_t aux, struct wbuf **out);
void wbuf_destroy(struct wbuf *wb);
/* True when adding a page for frame pfn requires flushing first. */
bool wbuf_must_flush_before(const struct wbuf *wb, uint32_t pfn);
/* Appends page idx bound for frame pfn; returns where to copy its 4 KiB.
 * Call only when wbuf_must_flush_before() is false. */
void *wbuf_add(struct wbuf *wb, uint64_t idx, uint32_t pfn);
/* True when the buffer should be flushed now (run long enough or full). */
bool wbuf_ready(const struct wbuf *wb);
/* The buffered copy of page idx (a write-buffer hit), or NULL. cancel marks
 * it as no longer backing the page: its frame is released after the flush. */
void *wbuf_find(struct wbuf *wb, uint64_t idx, bool cancel);
/* The run to write: first frame, page count, data; count 0 when empty. */
void wbuf_run(const struct wbuf *wb, uint32_t *pfn, uint32_t *count, const void **data);
/* Page i of the run: its index and whether it was cancelled. */
void wbuf_entry(const struct wbuf *wb, uint32_t i, uint64_t *idx, bool *cancelled);
void wbuf_clear(struct wbuf *wb);
/* Page i's aux words (zeroed by wbuf_add). */
uint64_t *wbuf_aux(struct wbuf *wb, uint32_t i);

#endif

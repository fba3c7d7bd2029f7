/* rbuf: the shared read buffer (COMEX §4.4). Remote reads land here a window
 * of P pages at a time (the faulting page and its neighbours); later faults on
 * the neighbours are served from it. B pages in B/P slots, LRU replacement.
 * Keys are page indices in the managed region. Not thread-safe (pager lock). */
#ifndef COMEX_RT_RBUF_H
#define COMEX_RT_RBUF_H

#include <stdint.h>

struct rbuf;

/* pages: B; window: P, a power of two from 1 to 64, at most pages. */
int rbuf_create(uint32_t pages, uint32_t window, struct rbuf **out);
void rbuf_destroy(struct rbuf *rb);
/* The copy of page idx, or NULL; a hit makes its window most recently used. */
const void *rbuf_lookup(struct rbuf *rb, uint64_t idx);
/* The slot for idx's window (recycling the least recently used one), where
 * page idx of the window lives at offset (idx % P) * 4 KiB. Its pages are
 * invalid until rbuf_mark() says otherwise. */
void *rbuf_slot(struct rbuf *rb, uint64_t idx);
void rbuf_mark(struct rbuf *rb, uint64_t idx);
/* Forgets page idx (it was installed, discarded or moved). rb NULL (the
 * prefetch policy keeps no read buffer): nothing to forget, 0 bytes. */
void rbuf_drop(struct rbuf *rb, uint64_t idx);
uint64_t rbuf_bytes(const struct rbuf *rb);

#endif

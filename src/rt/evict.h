/* evict: victim selection without kernel accessed bits. Pages enter a ring
 * in the order they become resident; "fifo" evicts in that order, "clock"
 * gives a page whose referenced bit is set (it was written after coming back,
 * seen as a write-protect fault) a second pass. Items carry the page's
 * generation so that stale ones (page evicted or discarded since) are
 * skipped. Not thread-safe (pager lock). */
#ifndef COMEX_RT_EVICT_H
#define COMEX_RT_EVICT_H

#include <stdbool.h>
#include <stdint.h>

#include "pagetab.h"

/* Option evict-policy's values, in its order. */
enum evict_policy { EVICT_CLOCK, EVICT_FIFO };

struct evict;

int evict_create(uint64_t capacity, bool clock, struct evict **out);
void evict_destroy(struct evict *ev);
/* Records that page idx became resident with generation gen. */
void evict_push(struct evict *ev, const struct pagetab *pt, uint64_t idx, unsigned gen);
/* Up to want resident victims, sorted by index; returns how many. */
uint32_t evict_pick(struct evict *ev, struct pagetab *pt, uint32_t want, uint64_t *victims);

#endif

/* probe: prefetch's ground truth. A sample of prefetched pages, each page
 * with the same chance, is left unmapped and its copy kept here; its own
 * fault, served from the copy, proves that page was used, and its copy
 * outliving the time the page would have stayed resident proves it was
 * not. The share used estimates prefetch accuracy (used / mapped), and each
 * verdict goes to prefetch_feedback for its plan's class. Under the pager lock. */
#ifndef COMEX_RT_PROBE_H
#define COMEX_RT_PROBE_H

#include <stdbool.h>
#include <stdint.h>

#include "pagetab.h"

struct prefetch;

/* per: pages prefetched per probe, at least the most a plan names less one
 * (a plan of n pages gives one with chance (n - 1) / per). */
int probe_init(struct prefetch *pf, uint32_t per);
/* For every plan, whose pages are slots 0..slots-1, the fault in slot
 * fault: true when this plan leaves one (in *slot, never fault) as a probe;
 * a trial plan (prefetch_plan) always does while a slot is free.
 * clock: pages evicted so far; life: the budget, in pages: a probe kept
 * life evictions ago is judged wasted now. */
bool probe_pick(uint32_t slots, uint32_t fault, uint64_t clock, uint64_t life, bool trial, uint32_t *slot);
/* Keeps page idx's copy (the page is remote, entry e), of a plan of class
 * cls (prefetch_plan), in place of an older one of idx; it is counted
 * wasted once it outlives the life given to probe_pick. A trial's probe
 * tells its class only: probe_counts leaves it out (nothing was mapped). */
void probe_keep(uint64_t idx, pte_t e, const void *copy, uint32_t cls, bool trial);
/* Page idx's copy when one is kept and idx's entry is still e (the page
 * has not come back, been discarded or moved since: the generation in e
 * says so) and the copy matches sum; counted as used and forgotten. NULL
 * otherwise. Valid until the next probe call. */
const void *probe_take(uint64_t idx, pte_t e, pagesum_t sum);
/* Probes resolved so far: used, wasted. */
void probe_counts(uint64_t *used, uint64_t *wasted);

#endif

/* probe: prefetch's ground truth. One page of every PROBE_EVERY-th plan of
 * two or more pages is left unmapped and its copy kept here; its own fault,
 * served from the copy, proves that page of the plan was used, and its copy
 * outliving the time the page would have stayed resident proves it was not. The share used is an unbiased sample
 * of prefetch accuracy, and its verdicts feed prefetch_feedback, which
 * shrinks the windows of a program whose prefetched pages go unused (Leap).
 * Under the pager lock. */
#ifndef COMEX_RT_PROBE_H
#define COMEX_RT_PROBE_H

#include <stdbool.h>
#include <stdint.h>

#include "pagetab.h"

struct prefetch;

int probe_init(struct prefetch *pf);
/* For every plan, whose pages are slots 0..slots-1, the fault in slot
 * fault: true when this plan leaves one (in *slot, never fault) as a probe.
 * clock: pages evicted so far; life: the budget, in pages: a probe kept
 * life evictions ago is judged wasted now. */
bool probe_pick(uint32_t slots, uint32_t fault, uint64_t clock, uint64_t life, uint32_t *slot);
/* Keeps page idx's copy (the page is remote, entry e), in place of an
 * older one of idx; it is counted wasted once it outlives the life given
 * to probe_pick. */
void probe_keep(uint64_t idx, pte_t e, const void *copy);
/* Page idx's copy when one is kept and idx's entry is still e (the page
 * has not come back, been discarded or moved since: the generation in e
 * says so) and the copy matches sum; counted as used and forgotten. NULL
 * otherwise. Valid until the next probe call. */
const void *probe_take(uint64_t idx, pte_t e, pagesum_t sum);
/* Probes resolved so far: used, wasted. */
void probe_counts(uint64_t *used, uint64_t *wasted);

#endif

/* budget: how many pages the program may keep resident now. local-mem's
 * bound, less the anonymous memory the process holds outside the managed
 * region (docs/DECISIONS.md D50); or, with cgroup-follow, the cgroup's room (D49). */
#ifndef COMEX_RT_BUDGET_H
#define COMEX_RT_BUDGET_H

/* With cgroup-follow: the budget follows the cgroup's room (at most every
 * 20 ms). Pager lock held (the fault path calls it before making room). */
void budget_follow(void);
/* Without it: measures the memory outside the region and takes it off the
 * budget. Called by the home thread every tick, without the pager lock. */
void budget_count_outside(void);
/* At the program's end: says once, as a warning, when local-mem could not
 * be kept because of memory outside the region. */
void budget_report(void);

#endif

/* placement: which memnode a process's pages go to (COMEX §3.3.4, Fig. 4).
 * The preferred node is hash(compute NID, PID) so that one process's pages
 * stay together (and prefetch finds neighbours); a node that is full or has
 * failed is skipped by rehashing to the next one. */
#ifndef COMEX_RT_PLACEMENT_H
#define COMEX_RT_PLACEMENT_H

#include <stdint.h>

/* The compute node's 16-bit id: a hash of its host name. */
uint16_t placement_local_nid(void);
/* Preferred node index among n for this process. */
unsigned placement_preferred(uint16_t nid, uint32_t pid, unsigned n);
/* The attempt-th choice (0 = preferred) among n nodes. */
unsigned placement_choice(unsigned preferred, unsigned attempt, unsigned n);

#endif

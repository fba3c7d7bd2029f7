/* placement: which memnode an evicted page's frame comes from (docs/PLACEMENT.md).
 * hash: the node of hash(compute NID, PID), so one process's pages stay
 * together (COMEX §3.3.4, Fig. 4); p2c: the one of two random nodes with more
 * room (Infiniswap §4.1); weighted: a node drawn in proportion to its room.
 * Room is what each memnode's last reply said it could still grant. A node
 * that is full or has failed is skipped by trying the next one. Pure logic. */
#ifndef COMEX_RT_PLACEMENT_H
#define COMEX_RT_PLACEMENT_H

#include <stdint.h>

/* Option placement's values, in its order. */
enum placement_policy { PLACEMENT_HASH, PLACEMENT_P2C, PLACEMENT_WEIGHTED };

/* The compute node's 16-bit id: a hash of its host name. */
uint16_t placement_local_nid(void);
/* Preferred node index among n for this process. */
unsigned placement_preferred(uint16_t nid, uint32_t pid, unsigned n);
/* The attempt-th choice (0 = first) among n nodes, starting from first. */
unsigned placement_choice(unsigned first, unsigned attempt, unsigned n);
/* The node for the next run of frames among n (n >= 1), room[i] the frames
 * node i could grant (0: full, failed or leaving). hash always gives
 * preferred; the others give preferred only when no node has room. *rng is
 * the caller's random state (any non-zero seed), advanced. */
unsigned placement_pick(enum placement_policy p, unsigned preferred, const uint64_t *room, unsigned n,
			uint64_t *rng);

#endif

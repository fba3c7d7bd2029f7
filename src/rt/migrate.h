/* migrate: pages and memnodes that go away. A leaving memnode (its EVICT,
 * docs/PROTOCOL.md "Planned departure") has every page with a frame there
 * moved to another memnode, or mapped home when none has room, and is told
 * DONE; a failed one is forgotten: resident pages lose their copy there,
 * remote ones are marked lost. Called from the membership thread. */
#ifndef COMEX_RT_MIGRATE_H
#define COMEX_RT_MIGRATE_H

#include <stdint.h>

int migrate_init(void);
/* Moves every page off node d (which said EVICT), then says DONE. */
void migrate_off(unsigned d);
/* Moves every page with a frame in [pfn, pfn + count) on node d (which said
 * SHRINK) elsewhere and gives those frames back; d stays in use. */
void migrate_range(unsigned d, uint32_t pfn, uint32_t count);
/* Node d failed or left: no page refers to it afterwards (pages_lost). */
void migrate_forget(unsigned d);

#endif

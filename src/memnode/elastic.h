/* elastic: a memnode that gives pool memory back to its host (option
 * host-reserve; issue 11 item 2). It folds the host's available
 * memory into an EWMA, as Infiniswap's HeadRoom does, takes free 4 MiB blocks
 * out of service and returns their memory to the kernel while the host has
 * less than host-reserve, and takes them back once it has enough again.
 * Blocks that hold clients' pages are vacated by their clients first
 * (SHRINK, docs/PROTOCOL.md "Elastic shrink"). */
#ifndef COMEX_ELASTIC_H
#define COMEX_ELASTIC_H

#include <stdbool.h>
#include <stdint.h>

/* The time clients get to move their pages off a range after a SHRINK
 * (sent in the message; the memnode tries another range after it). */
#define ELASTIC_SHRINK_TIMEOUT_MS 30000u

struct elastic;
struct serve;

/* base: the pool's frame 0; max_frames: its PFN range; lock: blocks taken
 * back are locked in RAM again. */
int elastic_create(struct serve *s, uint8_t *base, uint32_t max_frames, uint64_t reserve, bool lock,
		   struct elastic **out);
/* Looks at the host if a look is due; returns when the next one is
 * (monotonic ns). */
uint64_t elastic_tick(struct elastic *e, uint64_t now_ns);
void elastic_destroy(struct elastic *e);

#endif

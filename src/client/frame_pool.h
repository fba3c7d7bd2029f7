/* frame_pool: a client's free remote frames on one memnode (COMEX §3.3.3), kept
 * as chunks of contiguous PFNs so that runs of evicted pages land in
 * contiguous frames and can be written and prefetched with one transfer.
 * Fixed capacity, no allocation after init (usable from the fault path). */
#ifndef COMEX_FRAME_POOL_H
#define COMEX_FRAME_POOL_H

#include <stdint.h>

#define FRAME_POOL_MAX_CHUNKS 256

struct frame_pool {
	struct { uint32_t pfn, count; } chunk[FRAME_POOL_MAX_CHUNKS]; /* FIFO ring */
	uint32_t head, nchunks;
	uint64_t frames; /* total free frames held */
};

void frame_pool_init(struct frame_pool *fp);
/* Adds a run; merges with the tail chunk when contiguous. -ENOSPC when full. */
int frame_pool_add(struct frame_pool *fp, uint32_t pfn, uint32_t count);
/* Takes 1..want contiguous frames from the oldest chunk. -ENOENT when empty. */
int frame_pool_take(struct frame_pool *fp, uint32_t want, uint32_t *pfn_out, uint32_t *count_out);

#endif

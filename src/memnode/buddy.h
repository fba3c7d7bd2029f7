/* buddy: allocator of 4 KiB frame numbers (PFNs) in a memnode's pool, orders
 * 0..BUDDY_MAX_ORDER as in COMEX §3.3.2, with an owner per allocated frame so
 * that a client can only free what it was given. Metadata lives outside the
 * pool (the pool holds client data). Not thread-safe: the memnode is one thread. */
#ifndef COMEX_BUDDY_H
#define COMEX_BUDDY_H

#include <stdint.h>

#define BUDDY_MAX_ORDER 10
#define BUDDY_NO_OWNER 0u

struct buddy;

/* nframes may be any value >= 1 (need not be a power of two); the tail that
 * does not fill an order-10 block is managed as smaller blocks. */
int buddy_create(uint32_t nframes, struct buddy **out);
/* As buddy_create, with room to grow to max_frames (>= nframes) by
 * buddy_grow. The metadata is sized for max_frames but only touched as the
 * pool grows (calloc'd: pages beyond the pool stay unmapped zero pages). */
int buddy_create_max(uint32_t nframes, uint32_t max_frames, struct buddy **out);
/* Adds frames [current nframes, nframes) to the pool as free blocks, merged
 * with free buddies below them. -EINVAL if nframes is below the current size
 * or above max_frames. */
int buddy_grow(struct buddy *b, uint32_t nframes);
void buddy_destroy(struct buddy *b);

/* Allocates one aligned block of 2^order frames for owner (!= BUDDY_NO_OWNER).
 * -ENOSPC when no block of that order (or larger, to split) is free;
 * -EINVAL for a bad order or owner. */
int buddy_alloc(struct buddy *b, unsigned order, uint32_t owner, uint32_t *pfn_out);

/* Frees [pfn, pfn+count) which need not be one allocated block: any run of
 * frames all owned by owner. Coalesces with free buddies. Validates the whole
 * run first: -ERANGE if outside the pool, -EPERM if any frame is free or owned
 * by someone else; on error nothing is freed. */
int buddy_free(struct buddy *b, uint32_t pfn, uint32_t count, uint32_t owner);

/* Frees every frame owned by owner (client gone); returns how many, >= 0. */
int64_t buddy_free_owner(struct buddy *b, uint32_t owner);

/* Owner of one frame (BUDDY_NO_OWNER when free or out of range). */
uint32_t buddy_owner(const struct buddy *b, uint32_t pfn);

struct buddy_stats {
	uint32_t nframes;
	uint32_t free_frames;
	uint32_t free_blocks[BUDDY_MAX_ORDER + 1]; /* free blocks per order */
	int largest_free_order;                    /* -1 when nothing is free */
};
void buddy_stats(const struct buddy *b, struct buddy_stats *out);

#endif

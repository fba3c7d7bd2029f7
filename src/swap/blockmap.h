/* blockmap: the swap device's 4 KiB blocks and where each one lives, a
 * frame on a memnode or nowhere (it reads as zeros), over the shared client
 * (docs/SWAP.md S3). A write takes new frames and gives the old ones back in
 * batches; a discard gives them back; reads go by runs of consecutive
 * frames. Thread-safe; the table is allocated whole at creation. */
#ifndef COMEX_SWAP_BLOCKMAP_H
#define COMEX_SWAP_BLOCKMAP_H

#include <stdint.h>

#define BLOCKMAP_BLOCK 4096u /* bytes: the kernel's page, the memnode's frame */

struct comex_client;
struct blockmap;

/* A map of blocks blocks, none stored, over client c (which it does not own). */
int blockmap_create(struct comex_client *c, uint64_t blocks, struct blockmap **out);
/* Gives every frame back (and waits for the memnodes to take them). */
void blockmap_destroy(struct blockmap *m);
/* Stores count blocks from block on, from src; returns once they are in
 * memnode memory. -ENOSPC when every memnode is full (nothing changed for
 * the blocks not written), -EINVAL out of range, another -errno when a
 * memnode failed. */
int blockmap_write(struct blockmap *m, uint64_t block, uint32_t count, const void *src);
/* Reads count blocks from block on into dst (never stored: zeros). */
int blockmap_read(struct blockmap *m, uint64_t block, uint32_t count, void *dst);
/* Forgets count blocks from block on (they read as zeros) and gives their frames back. */
int blockmap_discard(struct blockmap *m, uint64_t block, uint64_t count);
/* Blocks stored now. */
uint64_t blockmap_stored(struct blockmap *m);

#endif

/* blockmap: the swap device's 4 KiB blocks and where each one lives, a
 * frame on a memnode or nowhere (it reads as zeros), over the shared client
 * (docs/DECISIONS.md D55), in one or more copies on different memnodes (D57). A
 * write takes new frames and gives the old ones back in batches; a discard
 * gives them back; reads go by runs of consecutive frames, failing over to
 * the next copy. Thread-safe; the tables are allocated whole at creation. */
#ifndef COMEX_SWAP_BLOCKMAP_H
#define COMEX_SWAP_BLOCKMAP_H

#include <stdint.h>

#define BLOCKMAP_BLOCK 4096u /* bytes: the kernel's page, the memnode's frame */
#define BLOCKMAP_MAX_COPIES 3 /* option replicas' limit */

struct comex_client;
struct blockmap;

/* A map of blocks blocks, none stored, over client c (which it does not
 * own), keeping copies (1..BLOCKMAP_MAX_COPIES) of each on as many memnodes.
 * repair_delay_ns: the test hook test-repair-delay (0 otherwise). */
int blockmap_create(struct comex_client *c, uint64_t blocks, unsigned copies, uint64_t repair_delay_ns,
		    struct blockmap **out);
/* Gives every frame back (and waits for the memnodes to take them). */
void blockmap_destroy(struct blockmap *m);
/* Stores count blocks from block on, from src; returns once they are in
 * memnode memory. -ENOSPC when every memnode is full (nothing changed for
 * the blocks not written), -EINVAL out of range, another -errno when a
 * memnode failed. */
int blockmap_write(struct blockmap *m, uint64_t block, uint32_t count, const void *src);
/* Reads count blocks from block on into dst (never stored: zeros), from
 * another copy where a memnode fails; -errno when every copy failed. */
int blockmap_read(struct blockmap *m, uint64_t block, uint32_t count, void *dst);
/* Forgets count blocks from block on (they read as zeros) and gives their frames back. */
int blockmap_discard(struct blockmap *m, uint64_t block, uint64_t count);
/* One pass over the map (not concurrent with another): every stored block
 * whose copies are fewer than asked for, or on a memnode out of use, gets
 * its copies there dropped and new ones made from a surviving copy on
 * memnodes that hold none of its copies, as far as they have room. Blocks
 * written or discarded meanwhile are left to their writer. *made_out:
 * copies made; *short_out: blocks left with fewer copies than asked for. */
int blockmap_repair(struct blockmap *m, uint64_t *made_out, uint64_t *short_out);
/* Blocks stored now, and how many of them have fewer copies than asked
 * for (written while memnodes were lost, or not repaired yet). */
void blockmap_counts(struct blockmap *m, uint64_t *stored_out, uint64_t *degraded_out);
/* Runs of blocks read from another copy, and written to another memnode,
 * because their memnode was late or suspect (hedged), since creation. */
void blockmap_hedged(struct blockmap *m, uint64_t *reads_out, uint64_t *writes_out);

#endif

/* pool: the memnode's memory, populated and locked. A fixed pool is all
 * there from the start; a growing one (pool-max) reserves its address range
 * and commits it step by step, a step ahead of need on a thread of its own. */
#ifndef COMEX_POOL_H
#define COMEX_POOL_H

#include <stdbool.h>
#include <stdint.h>

struct pool;

/* A growing pool grows in whole order-10 blocks: bytes and max are multiples. */
#define POOL_GROW_ALIGN (4ull << 20)

/* bytes committed now (whole 4 MiB steps when max > bytes), up to max;
 * lock: mlock what is committed; host_reserve: growth leaves at least this
 * much of the host's available memory alone; fd: a file (memfd) of at
 * least max bytes that holds the pool, shared with the client that reads
 * it directly (D38), or -1 for private memory. */
int pool_create(uint64_t bytes, uint64_t max, bool huge, bool lock, uint64_t host_reserve, int fd, struct pool **out);
/* Gives the memory of [at, at + len) of a pool back to the host (shared
 * memory punched out, private memory dropped); it reads as zero after. */
void pool_discard(uint8_t *at, uint64_t len);
void pool_destroy(struct pool *p);
uint8_t *pool_base(const struct pool *p);

/* serve's grow() (serve.h): at least need frames more than the pool's
 * frames now, from the step grown ahead when there is one; *frames_out is
 * the new total. Called from the serving thread only. */
int pool_grow(void *pool, uint32_t frames, uint32_t need, uint32_t *frames_out);
/* serve's grow_ahead(): with fewer than a step's worth of free frames left,
 * starts committing the next step in the background. Never blocks. */
void pool_grow_ahead(void *pool, uint32_t frames, uint32_t free_frames);

#endif

/* elastic: every TICK_NS the available memory (sysmem_available(): MemAvailable,
 * or less when our cgroup's limit leaves less) goes into an EWMA. When the
 * EWMA is below the reserve, the memnode gives back what the host lacks now
 * (reserve - available, not the EWMA's lagging figure, so it does not give
 * back twice what one dip needs), at most MAX_STEP per tick; when both are
 * above reserve + SLACK, it takes one block back per tick. The EWMA keeps a
 * short dip from costing the pool anything. */
#include "elastic.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "log.h"
#include "pool.h"
#include "proto.h"
#include "serve.h"
#include "sysmem.h"

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

#define BLOCK_FRAMES 1024u                  /* one order-10 block */
#define BLOCK_BYTES (BLOCK_FRAMES * 4096ull) /* 4 MiB */
#define TICK_NS 100000000ull                /* 100 ms */
#define EWMA_WEIGHT 0.25                    /* ~0.4 s to follow a step */
#define MAX_STEP 64u                        /* blocks given back per tick: 256 MiB */
#define SLACK (2 * BLOCK_BYTES)             /* hysteresis before taking memory back */
#define SHRINK_BLOCKS 16u                   /* blocks vacated per SHRINK at most: 64 MiB */

struct elastic {
	struct serve *s;
	uint8_t *base;
	uint64_t reserve;
	bool lock, stuck_logged, shrinking;
	uint64_t shrink_until;              /* monotonic ns: the clients' time to vacate the range */
	uint32_t shrink_pfn, shrink_count;
	double ewma;
	uint64_t next_ns;
	uint32_t ngiven, cap;
	uint32_t given[];                   /* PFNs of the blocks given back, a stack */
};

int elastic_create(struct serve *s, uint8_t *base, uint32_t max_frames, uint64_t reserve, bool lock,
		   struct elastic **out)
{
	uint32_t cap = max_frames / BLOCK_FRAMES;
	struct elastic *e = calloc(1, sizeof(*e) + (size_t)cap * sizeof(e->given[0]));

	if (!e)
		return -ENOMEM;
	*e = (struct elastic){ .s = s, .base = base, .reserve = reserve, .lock = lock, .cap = cap };
	*out = e;
	return 0;
}

void elastic_destroy(struct elastic *e)
{
	free(e);
}

/* Enough is given back: clients may allocate here again. */
static void end_shrink(struct elastic *e)
{
	if (!e->shrinking)
		return;
	serve_shrink_end(e->s);
	e->shrinking = false;
	log_info("host memory: enough given back; the pool takes new pages again");
}

/* Still `want` bytes short with no free block left: the clients holding the
 * cheapest range move their pages off it (SHRINK), and its blocks are taken
 * on later ticks as they come free. */
static void shrink(struct elastic *e, uint64_t want, uint64_t avail, uint64_t now_ns)
{
	uint32_t blocks = (uint32_t)((want + BLOCK_BYTES - 1) / BLOCK_BYTES), pfn, count;
	int rc;

	if (blocks > SHRINK_BLOCKS)
		blocks = SHRINK_BLOCKS;
	rc = serve_shrink_start(e->s, blocks, &pfn, &count);
	if (rc == -EBUSY && now_ns < e->shrink_until)
		return; /* the clients are moving their pages */
	if (rc == -EBUSY) {
		log_warn("host memory low (%llu MiB available, reserve %llu MiB): clients did not vacate frames "
			 "%u-%u within %u s; trying again", (unsigned long long)(avail >> 20),
			 (unsigned long long)(e->reserve >> 20), e->shrink_pfn, e->shrink_pfn + e->shrink_count - 1,
			 ELASTIC_SHRINK_TIMEOUT_MS / 1000);
		serve_shrink_end(e->s);
		e->shrinking = false;
		return;
	}
	if (rc) {
		if (!e->stuck_logged)
			log_warn("host memory low (%llu MiB available, reserve %llu MiB) and the whole pool is given "
				 "back already", (unsigned long long)(avail >> 20), (unsigned long long)(e->reserve >> 20));
		e->stuck_logged = true;
		return;
	}
	e->shrinking = true;
	e->shrink_until = now_ns + ELASTIC_SHRINK_TIMEOUT_MS * 1000000ull;
	e->shrink_pfn = pfn;
	e->shrink_count = count;
	log_info("host memory low (%llu MiB available, reserve %llu MiB) and no free 4 MiB block left: asking "
		 "the clients holding frames %u-%u (%u MiB) to move their pages elsewhere",
		 (unsigned long long)(avail >> 20), (unsigned long long)(e->reserve >> 20), pfn, pfn + count - 1,
		 count / 256);
}

static void give_back(struct elastic *e, uint64_t want, uint64_t avail, uint64_t now_ns)
{
	uint32_t n = 0, pfn;

	while (want > (uint64_t)n * BLOCK_BYTES && n < MAX_STEP && e->ngiven < e->cap &&
	       !serve_host_take(e->s, &pfn)) {
		uint8_t *at = e->base + (uint64_t)pfn * PROTO_FRAME_SIZE;

		if (e->lock)
			munlock(at, BLOCK_BYTES);
		pool_discard(at, BLOCK_BYTES);
		e->given[e->ngiven++] = pfn;
		n++;
	}
	if (n) {
		log_info("host memory low (%llu MiB available, %.0f MiB on average, reserve %llu MiB): gave "
			 "%u MiB of the pool back (%u MiB out of service)", (unsigned long long)(avail >> 20),
			 e->ewma / (1 << 20), (unsigned long long)(e->reserve >> 20), n * 4, e->ngiven * 4);
		e->stuck_logged = false;
	}
	if (want > (uint64_t)n * BLOCK_BYTES && n < MAX_STEP)
		shrink(e, want - (uint64_t)n * BLOCK_BYTES, avail, now_ns);
	else
		end_shrink(e);
}

static void take_back(struct elastic *e, uint64_t avail)
{
	uint32_t pfn = e->given[e->ngiven - 1];
	uint8_t *at = e->base + (uint64_t)pfn * PROTO_FRAME_SIZE;

	if (madvise(at, BLOCK_BYTES, MADV_POPULATE_WRITE) && errno != EINVAL) {
		pool_discard(at, BLOCK_BYTES); /* tried again next tick */
		return;
	}
	if (e->lock)
		mlock(at, BLOCK_BYTES); /* a failure was warned about at start */
	if (serve_host_return(e->s, pfn)) {
		log_error("the pool refused block %u back; it stays out of service", pfn);
		return;
	}
	e->ngiven--;
	if (!e->ngiven || e->ngiven % 16 == 0)
		log_info("host memory back (%llu MiB available): %u MiB of the pool still out of service",
			 (unsigned long long)(avail >> 20), e->ngiven * 4);
}

uint64_t elastic_tick(struct elastic *e, uint64_t now_ns)
{
	uint64_t avail;

	if (now_ns < e->next_ns)
		return e->next_ns;
	e->next_ns = now_ns + TICK_NS;
	avail = sysmem_available();
	e->ewma = e->ewma ? e->ewma + EWMA_WEIGHT * ((double)avail - e->ewma) : (double)avail;
	if (e->ewma < (double)e->reserve && avail < e->reserve) {
		give_back(e, e->reserve - avail, avail, now_ns);
		return e->next_ns;
	}
	end_shrink(e);
	if (e->ngiven && e->ewma > (double)(e->reserve + SLACK) && avail > e->reserve + SLACK)
		take_back(e, avail);
	return e->next_ns;
}

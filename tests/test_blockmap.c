/* test_blockmap: the swap device's block map over two real memnodes: random writes (runs of 1-300 blocks), rewrites, discards and reads against a model; never-written and discarded blocks read as zeros; the frames the memnodes hold for us are exactly the blocks stored; full memnodes give -ENOSPC and leave other blocks as they were; destroying a map gives every frame back. */
#include "blockmap.h"
#include "e2e.h"

#define BLOCKS 8192u /* 32 MiB */
#define MAX_RUN 300u

static char token[256];

#include "blockmap_model.h"

/* Blocks the map stores; none has fewer copies than asked for. */
static uint64_t counts(struct blockmap *m)
{
	uint64_t stored, degraded;

	blockmap_counts(m, &stored, &degraded);
	CHECK(degraded == 0);
	return stored;
}

int main(void)
{
	struct memnode_proc a, b;
	struct comex_client *c;
	struct blockmap *m;
	uint64_t *buf = malloc((size_t)MAX_RUN * BLOCKMAP_BLOCK), stored = 0;

	CHECK(buf);
	e2e_init();
	e2e_token("token", token, sizeof(token));
	memnode_start(&a, (const char *[]){ "--pool", "24M", "--token-file", token, NULL });
	memnode_start(&b, (const char *[]){ "--pool", "24M", "--token-file", token, NULL });
	char both[160];
	snprintf(both, sizeof(both), "%s,%s", a.addr, b.addr);
	CHECK(client_for((const char *[]){ "--memnode", both, "--token-file", token, "--replenish-threshold", "64",
					   "--replenish-order", "6", NULL }, &c) == 0);
	CHECK(blockmap_create(c, BLOCKS, 1, 0, &m) == 0);
	CHECK(blockmap_write(m, BLOCKS - 1, 2, buf) == -EINVAL && blockmap_read(m, BLOCKS, 1, buf) == -EINVAL);
	check_all(m, buf); /* nothing stored: zeros */

	for (uint32_t step = 0; step < 3000; step++) {
		uint64_t r = mix64(step + 17), blk = r % BLOCKS;
		uint32_t n = 1 + (uint32_t)(r >> 20) % MAX_RUN;

		if (n > BLOCKS - blk)
			n = (uint32_t)(BLOCKS - blk);
		if (r >> 60 < 10) { /* write (or rewrite) */
			for (uint32_t i = 0; i < n; i++) {
				stored += !version[blk + i];
				version[blk + i] = step + 1;
				fill_page(buf + (size_t)i * 512, (uint32_t)(blk + i), step + 1);
			}
			CHECK(blockmap_write(m, blk, n, buf) == 0);
		} else if (r >> 60 < 12) { /* discard */
			for (uint32_t i = 0; i < n; i++) {
				stored -= !!version[blk + i];
				version[blk + i] = 0;
			}
			CHECK(blockmap_discard(m, blk, n) == 0);
		} else { /* read */
			CHECK(blockmap_read(m, blk, n, buf) == 0);
			for (uint32_t i = 0; i < n; i++)
				CHECK(block_ok(buf + (size_t)i * 512, blk + i));
		}
	}
	check_all(m, buf);
	CHECK(counts(m) == stored);
	CHECK(frames_in_use(c, 0) == stored);

	/* a second map as large as both pools together: writing all of it
	 * must end in -ENOSPC, leaving the first map's blocks as they were and
	 * every frame accounted for */
	struct blockmap *m2;
	int err = 0;
	uint64_t blk;

	CHECK(blockmap_create(c, 2 * BLOCKS, 1, 0, &m2) == 0);
	for (blk = 0; blk < 2 * BLOCKS && !err; blk += MAX_RUN) {
		uint32_t n = 2 * BLOCKS - blk < MAX_RUN ? (uint32_t)(2 * BLOCKS - blk) : MAX_RUN;

		memset(buf, 0x5a, (size_t)n * BLOCKMAP_BLOCK);
		err = blockmap_write(m2, blk, n, buf);
	}
	CHECK(err == -ENOSPC);
	check_all(m, buf);
	CHECK(frames_in_use(c, 0) == stored + counts(m2));
	blockmap_destroy(m2);
	CHECK(frames_in_use(c, 0) == stored);
	blockmap_destroy(m);
	CHECK(frames_in_use(c, 0) == 0);
	client_close(c);
	memnode_stop(&a);
	memnode_stop(&b);
	free(buf);
	fprintf(stderr, "blockmap: ok (%llu blocks stored, the second map refused at block %llu)\n", (unsigned long long)stored, (unsigned long long)(blk - MAX_RUN));
	return 0;
}

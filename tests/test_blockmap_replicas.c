/* test_blockmap_replicas: the block map with 2 copies over three real memnodes: every block's copies on two different memnodes (frames held = 2 x blocks stored); one memnode SIGKILLed: every block still reads back right (failover to the other copy), writes go on with the copies the memnodes left allow, counted as degraded, and read back right; discards give every frame back. */
#include "blockmap.h"
#include "e2e.h"

#define BLOCKS 4096u /* 16 MiB */
#define MAX_RUN 300u

static char token[256];

#include "blockmap_model.h"

/* steps random writes and discards from seed on; blocks stored after */
static void churn(struct blockmap *m, uint64_t *buf, uint32_t seed, uint32_t steps)
{
	for (uint32_t step = seed; step < seed + steps; step++) {
		uint64_t r = mix64(step + 17), blk = r % BLOCKS;
		uint32_t n = 1 + (uint32_t)(r >> 20) % MAX_RUN;

		if (n > BLOCKS - blk)
			n = (uint32_t)(BLOCKS - blk);
		if (r >> 60 < 12) {
			for (uint32_t i = 0; i < n; i++) {
				version[blk + i] = step + 1;
				fill_page(buf + (size_t)i * 512, (uint32_t)(blk + i), step + 1);
			}
			CHECK(blockmap_write(m, blk, n, buf) == 0);
		} else {
			for (uint32_t i = 0; i < n; i++)
				version[blk + i] = 0;
			CHECK(blockmap_discard(m, blk, n) == 0);
		}
	}
}

static uint64_t model_stored(void)
{
	uint64_t n = 0;

	for (unsigned b = 0; b < BLOCKS; b++)
		n += version[b] != 0;
	return n;
}

int main(void)
{
	struct memnode_proc mn[3];
	struct comex_client *c;
	struct blockmap *m;
	uint64_t *buf = malloc((size_t)MAX_RUN * BLOCKMAP_BLOCK), stored, degraded;
	char all[240];

	CHECK(buf);
	e2e_init();
	e2e_token("token", token, sizeof(token));
	for (int i = 0; i < 3; i++)
		memnode_start(&mn[i], (const char *[]){ "--pool", "24M", "--token-file", token, NULL });
	snprintf(all, sizeof(all), "%s,%s,%s", mn[0].addr, mn[1].addr, mn[2].addr);
	CHECK(client_for((const char *[]){ "--memnode", all, "--token-file", token, "--replenish-threshold", "64",
					   "--replenish-order", "6", "--op-timeout", "2s", NULL }, &c) == 0);
	CHECK(blockmap_create(c, BLOCKS, 4, &m) == -EINVAL);
	CHECK(blockmap_create(c, BLOCKS, 2, &m) == 0);
	churn(m, buf, 0, 800);
	check_all(m, buf);
	blockmap_counts(m, &stored, &degraded);
	CHECK(stored == model_stored() && degraded == 0);
	CHECK(frames_in_use(c, 0) == 2 * stored);

	/* node 1 lost with its copies: everything still reads back */
	kill(mn[1].pid, SIGKILL);
	CHECK(waitpid(mn[1].pid, NULL, 0) == mn[1].pid);
	check_all(m, buf);
	churn(m, buf, 800, 400); /* two memnodes left: still two copies */
	check_all(m, buf);
	blockmap_counts(m, &stored, &degraded);
	CHECK(stored == model_stored());
	fprintf(stderr, "blockmap_replicas: node 1 killed, %llu blocks stored, %llu with one copy\n",
		(unsigned long long)stored, (unsigned long long)degraded);

	/* and a second one: one copy of what is written now */
	kill(mn[2].pid, SIGKILL);
	CHECK(waitpid(mn[2].pid, NULL, 0) == mn[2].pid);
	for (uint32_t i = 0; i < BLOCKS; i++) /* blocks whose only surviving copy was on node 2 are lost with it: */
		version[i] = 0;                /* rewrite all, then read back from node 0 alone */
	CHECK(blockmap_discard(m, 0, BLOCKS) == 0);
	churn(m, buf, 1200, 400);
	check_all(m, buf);
	blockmap_counts(m, &stored, &degraded);
	CHECK(stored == model_stored() && degraded == stored && stored > 0);
	CHECK(frames_in_use(c, 6) == stored); /* nodes 1 and 2 are gone: node 0 holds them all */
	CHECK(blockmap_discard(m, 0, BLOCKS) == 0);
	blockmap_counts(m, &stored, &degraded);
	CHECK(stored == 0 && degraded == 0);
	blockmap_destroy(m);
	client_close(c);
	memnode_stop(&mn[0]);
	free(buf);
	fprintf(stderr, "blockmap_replicas: ok\n");
	return 0;
}

/* test_blockmap_replicas: the block map with 2 copies over three real memnodes: every block's copies on two different memnodes (frames held = 2 x blocks stored); one memnode SIGKILLed: every block still reads back right (failover to the other copy); a repair gives every block its two copies on the two left (frames held = 2 x stored), so a second memnode SIGKILLed loses nothing; writes then get one copy, counted as degraded, and read back right; discards give every frame back. */
#include <pthread.h>

#include "blockmap.h"
#include "e2e.h"

#define BLOCKS 4096u /* 16 MiB */
#define MAX_RUN 300u

static char token[256];

#include "blockmap_model.h"

/* steps random writes and discards from seed on, in blocks [0, span);
 * blocks stored after */
static void churn(struct blockmap *m, uint64_t *buf, uint32_t seed, uint32_t steps, uint64_t span)
{
	for (uint32_t step = seed; step < seed + steps; step++) {
		uint64_t r = mix64(step + 17), blk = r % span;
		uint32_t n = 1 + (uint32_t)(r >> 20) % MAX_RUN;

		if (n > span - blk)
			n = (uint32_t)(span - blk);
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

static uint64_t repaired;

/* Repairs until a pass finds nothing to do (within 100 passes), beside
 * the churn. */
static void *repairing(void *arg)
{
	uint64_t made, short_blocks;
	int passes = 0;

	do {
		CHECK(++passes <= 100);
		CHECK(blockmap_repair(arg, &made, &short_blocks) == 0);
		repaired += made;
	} while (made || short_blocks);
	return NULL;
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
	uint64_t *buf = malloc((size_t)MAX_RUN * BLOCKMAP_BLOCK), stored, degraded, made, short_blocks;
	char all[240];
	pthread_t tid;

	CHECK(buf);
	e2e_init();
	e2e_token("token", token, sizeof(token));
	for (int i = 0; i < 3; i++)
		memnode_start(&mn[i], (const char *[]){ "--pool", "24M", "--token-file", token, NULL });
	snprintf(all, sizeof(all), "%s,%s,%s", mn[0].addr, mn[1].addr, mn[2].addr);
	CHECK(client_for((const char *[]){ "--memnode", all, "--token-file", token, "--replenish-threshold", "64",
					   "--replenish-order", "6", "--op-timeout", "2s", NULL }, &c) == 0);
	CHECK(blockmap_create(c, BLOCKS, 4, 0, &m) == -EINVAL);
	CHECK(blockmap_create(c, BLOCKS, 2, 500000, &m) == 0); /* test-repair-delay 500us: writes come in during repairs */
	churn(m, buf, 0, 800, BLOCKS);
	check_all(m, buf);
	blockmap_counts(m, &stored, &degraded);
	CHECK(stored == model_stored() && degraded == 0);
	CHECK(frames_in_use(c, 0) == 2 * stored);

	/* node 1 lost with its copies: everything still reads back */
	kill(mn[1].pid, SIGKILL);
	CHECK(waitpid(mn[1].pid, NULL, 0) == mn[1].pid);
	check_all(m, buf);
	/* and the client knows it is out before the repairs start (a pass
	 * that does not yet know would find nothing to do, and end) */
	for (int tries = 0;; tries++) {
		struct client_health h;

		client_poll(c, &h);
		if (h.out >> 1 & 1)
			break;
		CHECK(tries < 1000); /* 10 s: the kernel closed its sockets at the kill */
		usleep(10000);
	}

	/* repaired while writes and discards go on (a block rewritten during
	 * its repair keeps the writer's copies; no frame leaks): every block
	 * has its two copies on nodes 0 and 2 again. The writes keep to the
	 * first half: the second half's lost copies only a repair can make
	 * again, however the two threads are scheduled (CI, beside a build:
	 * the writes alone had rewritten every block) */
	CHECK(pthread_create(&tid, NULL, repairing, m) == 0);
	churn(m, buf, 800, 400, BLOCKS / 2);
	CHECK(pthread_join(tid, NULL) == 0);
	fprintf(stderr, "blockmap_replicas: node 1 killed; repairs beside writes made %llu copies\n",
		(unsigned long long)repaired);
	CHECK(repaired > 0);
	CHECK(blockmap_repair(m, &made, &short_blocks) == 0 && made == 0 && short_blocks == 0);
	blockmap_counts(m, &stored, &degraded);
	CHECK(stored == model_stored() && degraded == 0);
	CHECK(frames_in_use(c, 2) == 2 * stored);
	check_all(m, buf);

	/* and a second one: nothing lost, since every block was repaired;
	 * with one memnode left a repair can only drop the lost copies */
	kill(mn[2].pid, SIGKILL);
	CHECK(waitpid(mn[2].pid, NULL, 0) == mn[2].pid);
	check_all(m, buf);
	CHECK(blockmap_repair(m, &made, &short_blocks) == 0 && made == 0);
	blockmap_counts(m, &stored, &degraded);
	CHECK(stored == model_stored() && short_blocks == stored && degraded == stored);
	check_all(m, buf);
	churn(m, buf, 1200, 400, BLOCKS); /* one copy of what is written now */
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

/* blockmap_model.h: what the block-map tests share: a model of each
 * block's content (version[b], 0: reads as zeros), the check of one block
 * and of the whole map against it, and the frames the memnodes hold for
 * the client. Include after e2e.h with BLOCKS and MAX_RUN defined. */
#ifndef COMEX_TESTS_BLOCKMAP_MODEL_H
#define COMEX_TESTS_BLOCKMAP_MODEL_H

static uint32_t version[BLOCKS];

/* Block b's content: e2e.h's page pattern for its version, or zeros. */
static bool block_ok(const uint64_t *p, uint64_t block)
{
	if (version[block])
		return page_ok(p, (uint32_t)block, version[block]);
	for (unsigned i = 0; i < BLOCKMAP_BLOCK / 8; i++)
		if (p[i])
			return false;
	return true;
}

/* Frames the memnodes not in skip (bit i: node i, gone) hold for us beyond
 * our local frame pools: what the map stores. */
static uint64_t frames_in_use(struct comex_client *c, unsigned skip)
{
	uint64_t n = 0;

	CHECK(client_flush(c) == 0 || skip);
	for (unsigned i = 0; i < client_nodes(c); i++) {
		struct client_node_stats st;

		if (skip >> i & 1)
			continue;
		CHECK(client_node_stats(c, i, &st) == 0);
		n += st.frames_held - st.pool_free_frames;
	}
	return n;
}

/* Every block of the map reads back as the model says. */
static void check_all(struct blockmap *m, uint64_t *buf)
{
	for (uint64_t b = 0; b < BLOCKS; b += MAX_RUN) {
		uint32_t n = BLOCKS - b < MAX_RUN ? (uint32_t)(BLOCKS - b) : MAX_RUN;

		CHECK(blockmap_read(m, b, n, buf) == 0);
		for (uint32_t i = 0; i < n; i++)
			CHECK(block_ok(buf + (size_t)i * 512, b + i));
	}
}

#endif

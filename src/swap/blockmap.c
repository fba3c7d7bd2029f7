/* blockmap: one 64-bit entry per block (docs/SWAP.md S3): stored bit, the
 * memnode's number in the client, the frame. A write goes to the memnode
 * with the most room the client knows of (no round trip; a full one is
 * skipped for the next), in runs of consecutive frames, one client write
 * each; the frames the blocks had before are released (the client sends
 * them in batches). One lock: the kernel's swap I/O is already batched
 * into requests of up to 1 MiB, and the client serialises transfers. */
#include "blockmap.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "client.h"
#include "log.h"
#include "options.h"
#include "proto.h"

_Static_assert(BLOCKMAP_BLOCK == PROTO_FRAME_SIZE, "a block is one frame");

#define STORED (1ull << 63)
#define NODE_SHIFT 32
#define NODE_MASK 0xffffull

struct blockmap {
	struct comex_client *c;
	pthread_mutex_t lock;
	uint64_t nblocks, stored;
	uint64_t *e; /* nblocks entries */
};

static uint64_t entry(unsigned node, uint32_t pfn) { return STORED | (uint64_t)node << NODE_SHIFT | pfn; }
static unsigned e_node(uint64_t e) { return (unsigned)(e >> NODE_SHIFT & NODE_MASK); }
static uint32_t e_pfn(uint64_t e) { return (uint32_t)e; }

int blockmap_create(struct comex_client *c, uint64_t blocks, struct blockmap **out)
{
	struct blockmap *m = calloc(1, sizeof(*m));
	size_t bytes = blocks * sizeof(uint64_t);

	if (!m)
		return -ENOMEM;
	m->e = mmap(NULL, bytes ? bytes : 1, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (m->e == MAP_FAILED) {
		log_error("cannot map the table of %llu blocks (%zu bytes): %m", (unsigned long long)blocks, bytes);
		free(m);
		return -ENOMEM;
	}
	m->c = c;
	m->nblocks = blocks;
	pthread_mutex_init(&m->lock, NULL);
	*out = m;
	return 0;
}

static void forget(struct blockmap *m, uint64_t b)
{
	uint64_t e = m->e[b];

	if (!(e & STORED))
		return;
	client_release(m->c, e_node(e), e_pfn(e), 1); /* queued: sent release-batch at a time */
	m->e[b] = 0;
	m->stored--;
}

void blockmap_destroy(struct blockmap *m)
{
	if (!m)
		return;
	for (uint64_t b = 0; b < m->nblocks; b++)
		forget(m, b);
	client_flush(m->c);
	munmap(m->e, m->nblocks ? m->nblocks * sizeof(uint64_t) : 1);
	pthread_mutex_destroy(&m->lock);
	free(m);
}

/* The memnode with the most room the client knows of, not in tried. */
static int roomiest(struct blockmap *m, uint64_t tried, unsigned *node_out)
{
	uint64_t room[OPT_MEMNODE_MAX];
	unsigned n = client_nodes(m->c);
	int best = -1;

	client_room(m->c, room, n);
	for (unsigned i = 0; i < n; i++)
		if (!(tried >> i & 1) && (best < 0 || room[i] > room[best]))
			best = (int)i;
	if (best < 0)
		return -ENOSPC;
	*node_out = (unsigned)best;
	return 0;
}

/* Frames for up to want blocks, on one memnode: 1..want consecutive ones. */
static int take_frames(struct blockmap *m, uint32_t want, unsigned *node_out, uint32_t *pfn_out, uint32_t *got_out)
{
	uint64_t tried = 0;
	unsigned node;
	int err;

	while (!(err = roomiest(m, tried, &node))) {
		err = client_alloc(m->c, node, want, pfn_out, got_out);
		if (!err) {
			*node_out = node;
			return 0;
		}
		tried |= 1ull << node; /* full (-ENOSPC), leaving or failed: the next one */
	}
	return err;
}

static bool in_range(const struct blockmap *m, uint64_t block, uint64_t count)
{
	return block <= m->nblocks && count <= m->nblocks - block;
}

int blockmap_write(struct blockmap *m, uint64_t block, uint32_t count, const void *src)
{
	const uint8_t *p = src;
	int err = 0;

	if (!in_range(m, block, count))
		return -EINVAL;
	pthread_mutex_lock(&m->lock);
	for (uint32_t done = 0, got = 0; done < count && !err; done += got) {
		unsigned node;
		uint32_t pfn;

		got = 0;
		err = take_frames(m, count - done, &node, &pfn, &got);
		if (!err && (err = client_write(m->c, node, pfn, got, p + (size_t)done * BLOCKMAP_BLOCK)))
			client_release(m->c, node, pfn, got);
		for (uint32_t i = 0; i < got && !err; i++) {
			forget(m, block + done + i);
			m->e[block + done + i] = entry(node, pfn + i);
			m->stored++;
		}
	}
	pthread_mutex_unlock(&m->lock);
	if (err)
		log_error("writing %u blocks at block %llu failed: %s", count, (unsigned long long)block, strerror(-err));
	return err;
}

/* Blocks from b on that one read fetches: the same memnode, consecutive frames. */
static uint32_t run_at(const struct blockmap *m, uint64_t b, uint32_t left)
{
	uint32_t n = 1;

	while (n < left && m->e[b + n] == m->e[b] + n)
		n++;
	return n;
}

int blockmap_read(struct blockmap *m, uint64_t block, uint32_t count, void *dst)
{
	uint8_t *p = dst;
	int err = 0;

	if (!in_range(m, block, count))
		return -EINVAL;
	pthread_mutex_lock(&m->lock);
	for (uint32_t done = 0, n; done < count && !err; done += n) {
		uint64_t e = m->e[block + done];

		if (!(e & STORED)) {
			memset(p + (size_t)done * BLOCKMAP_BLOCK, 0, BLOCKMAP_BLOCK);
			n = 1;
			continue;
		}
		n = run_at(m, block + done, count - done);
		err = client_read(m->c, e_node(e), e_pfn(e), n, p + (size_t)done * BLOCKMAP_BLOCK);
	}
	pthread_mutex_unlock(&m->lock);
	if (err)
		log_error("reading %u blocks at block %llu failed: %s", count, (unsigned long long)block, strerror(-err));
	return err;
}

int blockmap_discard(struct blockmap *m, uint64_t block, uint64_t count)
{
	if (!in_range(m, block, count))
		return -EINVAL;
	pthread_mutex_lock(&m->lock);
	for (uint64_t b = block; b < block + count; b++)
		forget(m, b);
	pthread_mutex_unlock(&m->lock);
	return 0;
}

uint64_t blockmap_stored(struct blockmap *m)
{
	uint64_t n;

	pthread_mutex_lock(&m->lock);
	n = m->stored;
	pthread_mutex_unlock(&m->lock);
	return n;
}

/* blockmap: per copy, one 64-bit entry per block (docs/DECISIONS.md D55, D57):
 * stored bit, the memnode's number in the client, the frame. A write goes
 * to the memnode with the most room the client knows of (no round trip; a
 * full one is skipped for the next), each further copy of a block to a
 * memnode none of its other copies is on, in runs of consecutive frames,
 * one client write each; the frames the blocks had before are released
 * (the client sends them in batches) only once every new copy is in. A read
 * takes copy 0 and fails over, run by run, to the next copy. The map's lock
 * covers the tables and counts only, never a transfer: a write fills its
 * new frames unlocked and installs them under the lock; a read copies its
 * entries under the lock and reads unlocked (straight from the embedded
 * memnode's pool where it is mapped), so a swap-in never waits behind a
 * 1 MiB swap-out. The kernel never reads a block while it writes or
 * discards it (the page is in its swap cache meanwhile). */
#include "blockmap.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "client.h"
#include "clock.h"
#include "log.h"
#include "options.h"
#include "proto.h"
#include "transport.h"

_Static_assert(BLOCKMAP_BLOCK == PROTO_FRAME_SIZE, "a block is one frame");

#define STORED (1ull << 63)
#define REPAIRING (1ull << 62) /* on copy 0's entry while blockmap_repair copies the block: gone if a write or discard came */
#define NODE_SHIFT 32
#define NODE_MASK 0xffffull
#define CHUNK 256 /* blocks a write stages at once: 1 MiB, FUSE's largest request */

struct blockmap {
	struct comex_client *c;
	pthread_mutex_t lock;
	uint64_t nblocks, stored, degraded;
	unsigned copies;
	bool warned;                            /* about writing fewer copies (atomic) */
	uint64_t *e[BLOCKMAP_MAX_COPIES];       /* nblocks entries each */
	uint8_t *repair_buf;                    /* one block: what blockmap_repair copies through */
	uint64_t repair_delay_ns;               /* test hook test-repair-delay (docs/TESTING.md) */
	uint64_t reads_hedged, writes_hedged;   /* atomic: runs served by another copy or memnode (late) */
};

/* A write's new entries, or a read's copy of its entries: per call. */
typedef uint64_t stage_t[BLOCKMAP_MAX_COPIES][CHUNK];

static uint64_t entry(unsigned node, uint32_t pfn) { return STORED | (uint64_t)node << NODE_SHIFT | pfn; }
static unsigned e_node(uint64_t e) { return (unsigned)(e >> NODE_SHIFT & NODE_MASK); }
static uint32_t e_pfn(uint64_t e) { return (uint32_t)e; }
static size_t table_bytes(uint64_t blocks) { return blocks ? blocks * sizeof(uint64_t) : 1; }

int blockmap_create(struct comex_client *c, uint64_t blocks, unsigned copies, uint64_t repair_delay_ns,
		    struct blockmap **out)
{
	struct blockmap *m;

	if (copies < 1 || copies > BLOCKMAP_MAX_COPIES)
		return -EINVAL;
	if (!(m = calloc(1, sizeof(*m))))
		return -ENOMEM;
	for (unsigned k = 0; k < copies; k++) {
		m->e[k] = mmap(NULL, table_bytes(blocks), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE,
			       -1, 0);
		if (m->e[k] == MAP_FAILED) {
			log_error("cannot map the table of %llu blocks (%zu bytes): %m", (unsigned long long)blocks,
				  table_bytes(blocks));
			m->e[k] = NULL;
			goto unmap;
		}
	}
	m->repair_buf = mmap(NULL, BLOCKMAP_BLOCK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (m->repair_buf == MAP_FAILED) {
		log_error("cannot map the block map's repair buffer (%u bytes): %m", BLOCKMAP_BLOCK);
		m->repair_buf = NULL;
		goto unmap;
	}
	m->repair_delay_ns = repair_delay_ns;
	m->c = c;
	m->nblocks = blocks;
	m->copies = copies;
	pthread_mutex_init(&m->lock, NULL);
	*out = m;
	return 0;
unmap:
	for (unsigned k = 0; k < copies && m->e[k]; k++)
		munmap(m->e[k], table_bytes(blocks));
	free(m);
	return -ENOMEM;
}

static void release(struct blockmap *m, uint64_t e)
{
	if (e & STORED)
		client_release(m->c, e_node(e), e_pfn(e), 1); /* queued: sent release-batch at a time */
}

/* Block b stores nothing any more (every copy's frame released). */
static void forget(struct blockmap *m, uint64_t b)
{
	if (!(m->e[0][b] & STORED))
		return;
	m->degraded -= !(m->e[m->copies - 1][b] & STORED);
	for (unsigned k = 0; k < m->copies; k++) {
		release(m, m->e[k][b]);
		m->e[k][b] = 0;
	}
	m->stored--;
}

void blockmap_destroy(struct blockmap *m)
{
	if (!m)
		return;
	for (uint64_t b = 0; b < m->nblocks; b++)
		forget(m, b);
	client_flush(m->c);
	for (unsigned k = 0; k < m->copies; k++)
		munmap(m->e[k], table_bytes(m->nblocks));
	munmap(m->repair_buf, BLOCKMAP_BLOCK);
	pthread_mutex_destroy(&m->lock);
	free(m);
}

/* Frames for up to want blocks on one memnode not in avoid: 1..want
 * consecutive ones. */
static int take_frames(struct blockmap *m, uint64_t avoid, uint32_t want, unsigned *node_out, uint32_t *pfn_out,
		       uint32_t *got_out)
{
	uint64_t tried = avoid;
	unsigned node;
	int err;

	while (!(err = client_copy_target(m->c, tried, &node, NULL))) {
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

/* The memnodes copies 0..k-1 of staged block i are on, and how many staged
 * blocks from i on have their copies on those same memnodes. */
static uint64_t placed(stage_t st, unsigned k, uint32_t i, uint32_t count, uint32_t *same_out)
{
	uint64_t avoid = 0;
	uint32_t n = 1;

	for (unsigned j = 0; j < k; j++)
		avoid |= 1ull << e_node(st[j][i]);
	for (bool same = true; same && i + n < count; n += same)
		for (unsigned j = 0; j < k && same; j++)
			same = e_node(st[j][i + n]) == e_node(st[j][i]);
	*same_out = n;
	return avoid;
}

/* n frames from src onto node; with other copies (hedged), given up once
 * late (-ETIME: the memnode is suspect then, and the caller writes them
 * elsewhere). */
static int put_frames(struct blockmap *m, unsigned node, uint32_t pfn, uint32_t n, const uint8_t *src, bool hedged)
{
	return hedged ? client_write_hedged(m->c, node, pfn, n, src) : client_write(m->c, node, pfn, n, src);
}

/* Copy k of count staged blocks from src, each on a memnode its copies
 * 0..k-1 are not on. With replicas, a write late on its memnode goes to
 * another one; when every one left was late, they are waited for. */
static int stage_copy(struct blockmap *m, stage_t st, unsigned k, uint32_t count, const uint8_t *src)
{
	uint64_t late = 0;
	bool hedged = m->copies > 1;

	for (uint32_t i = 0, got; i < count; i += got) {
		uint32_t want, pfn;
		unsigned node = 0;
		uint64_t avoid = placed(st, k, i, count, &want);
		int err = take_frames(m, avoid | late, want, &node, &pfn, &got);

		if (err && late) { /* none in time: wait on them */
			late = 0, hedged = false, got = 0;
			continue;
		}
		if (!err && (err = put_frames(m, node, pfn, got, src + (size_t)i * BLOCKMAP_BLOCK, hedged)))
			client_release(m->c, node, pfn, got);
		if (err == -ETIME) { /* late: suspect now, placed on another memnode */
			__atomic_fetch_add(&m->writes_hedged, 1, __ATOMIC_RELAXED);
			late |= 1ull << node, got = 0;
			continue;
		}
		if (err)
			return err;
		for (uint32_t t = 0; t < got; t++)
			st[k][i + t] = entry(node, pfn + t);
	}
	return 0;
}

/* How many copies a write makes now: all, or (warned once) as many as
 * there are memnodes in use, when memnodes were lost. */
static unsigned copies_now(struct blockmap *m)
{
	struct client_health h;
	unsigned n = client_nodes(m->c), live = 0;

	if (m->copies == 1)
		return 1;
	client_poll(m->c, &h);
	for (unsigned i = 0; i < n; i++)
		live += !((h.out | client_avoided(m->c)) >> i & 1);
	if (live >= m->copies)
		return m->copies;
	if (!__atomic_exchange_n(&m->warned, true, __ATOMIC_RELAXED))
		log_warn("only %u memnode%s in use for %u copies: pages swapped out now get %u cop%s until memnodes come "
			 "back", live, live == 1 ? "" : "s", m->copies, live ? live : 1, live > 1 ? "ies" : "y");
	return live ? live : 1;
}

/* count <= CHUNK blocks from block on: every copy staged (unlocked), then
 * installed and the old frames released (under the lock). */
static int write_chunk(struct blockmap *m, uint64_t block, uint32_t count, const uint8_t *src)
{
	unsigned copies = copies_now(m), k;
	stage_t st = { { 0 } }; /* entries not staged stay 0: not stored */
	int err = 0;

	for (k = 0; k < copies && !err; k++)
		err = stage_copy(m, st, k, count, src);
	if (err && k > 1) { /* a memnode was lost or is late: fewer copies, made again by blockmap_repair */
		for (uint32_t i = 0; i < count; i++) {
			release(m, st[k - 1][i]);
			st[k - 1][i] = 0;
		}
		copies = k - 1;
		err = 0;
	}
	if (err) { /* what was staged, whole copies and the part of copy k - 1 */
		for (unsigned j = 0; j < k; j++)
			for (uint32_t i = 0; i < count; i++)
				release(m, st[j][i]);
		return err;
	}
	pthread_mutex_lock(&m->lock);
	for (uint32_t i = 0; i < count; i++) {
		forget(m, block + i);
		for (k = 0; k < m->copies; k++)
			m->e[k][block + i] = k < copies ? st[k][i] : 0;
		m->stored++;
		m->degraded += copies < m->copies; /* its last copy's entry stays empty */
	}
	pthread_mutex_unlock(&m->lock);
	return 0;
}

int blockmap_write(struct blockmap *m, uint64_t block, uint32_t count, const void *src)
{
	const uint8_t *p = src;
	int err = 0;

	if (!in_range(m, block, count))
		return -EINVAL;
	for (uint32_t done = 0, n; done < count && !err; done += n) {
		n = count - done < CHUNK ? count - done : CHUNK;
		err = write_chunk(m, block + done, n, p + (size_t)done * BLOCKMAP_BLOCK);
	}
	if (err)
		log_error("writing %u blocks at block %llu failed: %s", count, (unsigned long long)block, strerror(-err));
	return err;
}

/* Of count entries e, how many one read fetches: the same memnode,
 * consecutive frames. */
static uint32_t run_at(const uint64_t *e, uint32_t left)
{
	uint32_t n = 1;

	while (n < left && e[n] == e[0] + n)
		n++;
	return n;
}

/* Option round of fetch: round 0 for the last copy (client_read_last). */
#define ROUND_LAST (-2)

/* n frames of one memnode into dst: from the mapped pool where there is
 * one, else one client read, plain (round -1), hedged in that round, or
 * round 0 from the last copy (ROUND_LAST). */
static int fetch(struct blockmap *m, uint64_t e, uint32_t n, uint8_t *dst, int round)
{
	const void *at = client_frames_at(m->c, e_node(e), e_pfn(e), n);

	if (!at && round == ROUND_LAST)
		return client_read_last(m->c, e_node(e), e_pfn(e), n, dst);
	if (!at && round >= 0)
		return client_read_hedged(m->c, e_node(e), e_pfn(e), n, dst, (unsigned)round);
	if (!at)
		return client_read(m->c, e_node(e), e_pfn(e), n, dst);
	memcpy(dst, at, (size_t)n * BLOCKMAP_BLOCK);
	return 0;
}

/* count blocks (st's entries from i on) into dst from copy k, each run
 * that fails or is late (hedged in round, with more than one copy) from
 * the next copy; -ETIME when every copy of a run was late (the caller
 * tries a next round), and a copy is waited for when none other has it.
 * In round 0 a copy refused at once (suspect or slow) is read after all as
 * a last one (ROUND_LAST) when the later ones were late or refused too: a
 * slow copy is read rather than a next round waited out on a stopped
 * memnode (D85). */
static int read_copy(struct blockmap *m, stage_t st, unsigned k, uint32_t i, uint32_t count, uint8_t *dst,
		     unsigned round)
{
	int err = 0;

	for (uint32_t done = 0, n; done < count && !err; done += n) {
		uint64_t e = st[k][i + done];
		uint8_t *at = dst + (size_t)done * BLOCKMAP_BLOCK;
		bool late;

		n = 1;
		if (!(st[0][i + done] & STORED)) {
			memset(at, 0, BLOCKMAP_BLOCK); /* never written, or discarded */
			continue;
		}
		if (!(e & STORED)) { /* written with fewer copies */
			err = -EIO;
		} else {
			n = run_at(&st[k][i + done], count - done);
			err = fetch(m, e, n, at, m->copies == 1 ? -1 : !round && k + 1 == m->copies ? ROUND_LAST : (int)round);
		}
		late = err == -ETIME || err == -EAGAIN;
		if (late && !round)
			__atomic_fetch_add(&m->reads_hedged, 1, __ATOMIC_RELAXED);
		if (err && k + 1 < m->copies) {
			int other = read_copy(m, st, k + 1, i + done, n, at, round);

			if (other == -ETIME && err == -EAGAIN && !round && !fetch(m, e, n, at, ROUND_LAST))
				other = 0;
			err = other && late && other != -ETIME ? fetch(m, e, n, at, -1) : other;
		} else if (late) {
			err = -ETIME;
		}
	}
	return err;
}

int blockmap_read(struct blockmap *m, uint64_t block, uint32_t count, void *dst)
{
	uint8_t *p = dst;
	stage_t st;
	int err = 0;

	if (!in_range(m, block, count))
		return -EINVAL;
	for (uint32_t done = 0, n; done < count && !err; done += n) {
		n = count - done < CHUNK ? count - done : CHUNK;
		pthread_mutex_lock(&m->lock);
		for (unsigned k = 0; k < m->copies; k++)
			memcpy(st[k], m->e[k] + block + done, n * sizeof(uint64_t));
		pthread_mutex_unlock(&m->lock);
		err = read_copy(m, st, 0, 0, n, p + (size_t)done * BLOCKMAP_BLOCK, 0);
		for (unsigned r = 1; err == -ETIME; r++) /* every copy late: all again, more patiently */
			err = read_copy(m, st, 0, 0, n, p + (size_t)done * BLOCKMAP_BLOCK, r);
	}
	if (err)
		log_error("reading %u blocks at block %llu failed (every copy): %s", count, (unsigned long long)block,
			  strerror(-err));
	return err;
}

/* Block b's copies now: the usable ones (stored, on a memnode in use)
 * first in good, the number of them returned; 0 when it needs nothing
 * (not stored, being repaired, or every copy usable) or has no usable copy
 * left. Under the lock. */
static unsigned usable_copies(struct blockmap *m, uint64_t b, uint64_t out, uint64_t *good)
{
	unsigned n = 0;

	if ((m->e[0][b] & (STORED | REPAIRING)) != STORED)
		return 0;
	for (unsigned k = 0; k < m->copies; k++)
		if ((m->e[k][b] & STORED) && !(out >> e_node(m->e[k][b]) & 1))
			good[n++] = m->e[k][b];
	return n < m->copies ? n : 0;
}

/* New copies of the block in m->repair_buf after its n usable ones in e,
 * each on a memnode none of its copies is on and not in unusable (suspect:
 * a repair can wait); how many it made. */
static unsigned add_copies(struct blockmap *m, uint64_t *e, unsigned n, uint64_t unusable)
{
	unsigned k = n;

	for (; k < m->copies; k++) {
		uint64_t avoid = unusable;
		uint32_t pfn, got;
		unsigned node;

		for (unsigned j = 0; j < k; j++)
			avoid |= 1ull << e_node(e[j]);
		if (take_frames(m, avoid, 1, &node, &pfn, &got))
			break; /* no room elsewhere: the block stays short */
		if (client_write_hedged(m->c, node, pfn, 1, m->repair_buf)) { /* a stuck memnode: a later pass */
			client_release(m->c, node, pfn, 1);
			break;
		}
		e[k] = entry(node, pfn);
	}
	return k - n;
}

/* Puts block b's copies e (n usable, made new) in place of its old ones,
 * unless a write or discard replaced them meanwhile (then the new frames
 * go back). Under the lock. */
static void install_copies(struct blockmap *m, uint64_t b, uint64_t *e, unsigned n, unsigned made)
{
	uint64_t was = m->e[0][b];

	if (!(was & REPAIRING)) {
		for (unsigned k = n; k < n + made; k++)
			release(m, e[k]);
		return;
	}
	m->e[0][b] = was & ~REPAIRING;
	m->degraded -= !(m->e[m->copies - 1][b] & STORED);
	for (unsigned k = 0; k < m->copies; k++) {
		bool kept = false;

		for (unsigned j = 0; j < n && !kept; j++)
			kept = m->e[k][b] == e[j];
		if (!kept)
			release(m, m->e[k][b]); /* a memnode out of use has freed it already */
		m->e[k][b] = k < n + made ? e[k] : 0;
	}
	m->degraded += n + made < m->copies;
}

/* Whether a memnode none of the n copies e is on has room (no round trip):
 * a pass over a map no memnode can take more of reads nothing. */
static bool has_room(struct blockmap *m, const uint64_t *e, unsigned n)
{
	uint64_t avoid = 0, room;
	unsigned node;

	for (unsigned j = 0; j < n; j++)
		avoid |= 1ull << e_node(e[j]);
	return !client_copy_target(m->c, avoid, &node, &room) && room;
}

/* Block b repaired as far as it can be; the copies made, or -1 when it
 * needed nothing. */
static int repair_block(struct blockmap *m, uint64_t b, uint64_t out, uint64_t suspect)
{
	uint64_t e[BLOCKMAP_MAX_COPIES];
	unsigned n, made = 0;

	pthread_mutex_lock(&m->lock);
	if ((n = usable_copies(m, b, out, e)))
		m->e[0][b] |= REPAIRING;
	pthread_mutex_unlock(&m->lock);
	if (!n)
		return -1;
	if (has_room(m, e, n) && !fetch(m, e[0], 1, m->repair_buf, ROUND_LAST)) /* never waits on a late memnode */
		made = add_copies(m, e, n, suspect); /* else its unusable copies are only dropped */
	if (m->repair_delay_ns)
		sleep_s((double)m->repair_delay_ns / 1e9); /* widens the window a write or discard of b may come in */
	pthread_mutex_lock(&m->lock);
	install_copies(m, b, e, n, made);
	pthread_mutex_unlock(&m->lock);
	return (int)made;
}

int blockmap_repair(struct blockmap *m, uint64_t *made_out, uint64_t *short_out)
{
	struct client_health h;
	uint64_t made = 0, degraded;

	if (m->copies == 1) {
		*made_out = *short_out = 0;
		return 0;
	}
	client_poll(m->c, &h);
	for (uint64_t b = 0; b < m->nblocks; b++) {
		int r = repair_block(m, b, h.out, h.suspect);

		made += r > 0 ? (uint64_t)r : 0;
	}
	client_flush(m->c); /* the frames of dropped copies on memnodes still in use */
	pthread_mutex_lock(&m->lock);
	degraded = m->degraded;
	pthread_mutex_unlock(&m->lock);
	*made_out = made;
	*short_out = degraded;
	return 0;
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

void blockmap_counts(struct blockmap *m, uint64_t *stored_out, uint64_t *degraded_out)
{
	pthread_mutex_lock(&m->lock);
	*stored_out = m->stored;
	*degraded_out = m->degraded;
	pthread_mutex_unlock(&m->lock);
}

void blockmap_hedged(struct blockmap *m, uint64_t *reads_out, uint64_t *writes_out)
{
	*reads_out = __atomic_load_n(&m->reads_hedged, __ATOMIC_RELAXED);
	*writes_out = __atomic_load_n(&m->writes_hedged, __ATOMIC_RELAXED);
}

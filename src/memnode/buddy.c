/* Buddy allocator over PFNs [0, nframes). The pool is seeded as the binary
 * decomposition of nframes: order-10 blocks from PFN 0, then at most one block
 * of each smaller order. Every aligned 2^k run inside [0, nframes) then lies
 * inside one seeded block, so a block's buddy exists exactly when their
 * aligned parent fits in the pool, and with full coalescing a block of order k
 * is allocatable exactly when some aligned 2^k run of the pool is all free.
 *
 * Metadata, all outside the pool, 8.5 bytes per frame:
 *   owner[pfn]  4 B per frame: connection id, BUDDY_NO_OWNER iff the frame is free.
 *   link[pair]  8 B per pair of frames (pfn >> 1): free-list neighbours (PFNs).
 *   head[pair]  1 B per pair: order of the free block starting in the pair.
 * Per-pair storage suffices because a pair holds at most one free-block start:
 * a block of order >= 1 covers its pair, and two order-0 free blocks in one
 * pair would be buddies, which coalescing never leaves apart. */
#include "buddy.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>

#define NIL UINT32_MAX /* never a PFN: PFNs are < nframes <= UINT32_MAX */

/* head[] byte: HEAD_FREE | (HEAD_ODD if the block starts at the pair's odd
 * frame) | order in the low 4 bits; 0 when no free block starts in the pair. */
#define HEAD_FREE 0x80u
#define HEAD_ODD 0x10u

struct link {
	uint32_t next, prev; /* PFNs of free blocks of the same order, or NIL */
};

struct buddy {
	uint32_t nframes;
	uint32_t max_frames;      /* metadata is sized for this many */
	uint32_t free_frames;
	uint32_t *owner;
	struct link *link;
	uint8_t *head;
	uint32_t list[BUDDY_MAX_ORDER + 1];   /* first free block per order, or NIL */
	uint32_t nfree[BUDDY_MAX_ORDER + 1];  /* free blocks per order */
};

static uint8_t head_tag(uint32_t pfn, unsigned order)
{
	return (uint8_t)(HEAD_FREE | ((pfn & 1) ? HEAD_ODD : 0) | order);
}

static bool is_free_block(const struct buddy *b, uint32_t pfn, unsigned order)
{
	return b->head[pfn >> 1] == head_tag(pfn, order);
}

static void list_add(struct buddy *b, uint32_t pfn, unsigned order)
{
	uint32_t first = b->list[order];

	b->link[pfn >> 1] = (struct link){ .next = first, .prev = NIL };
	if (first != NIL)
		b->link[first >> 1].prev = pfn;
	b->list[order] = pfn;
	b->head[pfn >> 1] = head_tag(pfn, order);
	b->nfree[order]++;
	b->free_frames += 1u << order;
}

static void list_del(struct buddy *b, uint32_t pfn, unsigned order)
{
	struct link l = b->link[pfn >> 1];

	if (l.prev != NIL)
		b->link[l.prev >> 1].next = l.next;
	else
		b->list[order] = l.next;
	if (l.next != NIL)
		b->link[l.next >> 1].prev = l.prev;
	b->head[pfn >> 1] = 0;
	b->nfree[order]--;
	b->free_frames -= 1u << order;
}

/* True when the order-(order+1) block containing pfn is inside the pool, i.e.
 * pfn's order-`order` block has a buddy it may merge with. */
static bool has_buddy(const struct buddy *b, uint32_t pfn, unsigned order)
{
	uint64_t size = 2ull << order;
	uint64_t parent = pfn & ~(size - 1);

	return order < BUDDY_MAX_ORDER && parent + size <= b->nframes;
}

/* Puts the aligned block [pfn, pfn + 2^order), whose frames are all
 * unowned and in no free block, on the free lists, merged with free buddies. */
static void release_block(struct buddy *b, uint32_t pfn, unsigned order)
{
	while (has_buddy(b, pfn, order)) {
		uint32_t buddy = pfn ^ (1u << order);

		if (!is_free_block(b, buddy, order))
			break;
		list_del(b, buddy, order);
		pfn &= ~(1u << order);
		order++;
	}
	list_add(b, pfn, order);
}

static unsigned floor_log2(uint64_t x)
{
	return 63 - __builtin_clzll(x);
}

/* Order of the largest aligned block starting at pfn that fits in count >= 1
 * frames. */
static unsigned run_order(uint32_t pfn, uint64_t count)
{
	unsigned order = floor_log2(count);

	if (pfn && (unsigned)__builtin_ctz(pfn) < order)
		order = __builtin_ctz(pfn);
	return order < BUDDY_MAX_ORDER ? order : BUDDY_MAX_ORDER;
}

/* Frees [pfn, pfn + count), already validated as owned and inside the pool,
 * as maximal aligned blocks. */
static void release_run(struct buddy *b, uint32_t pfn, uint32_t count)
{
	for (uint32_t i = 0; i < count; i++)
		b->owner[pfn + i] = BUDDY_NO_OWNER;
	while (count) {
		unsigned order = run_order(pfn, count);

		release_block(b, pfn, order);
		pfn += 1u << order;
		count -= 1u << order;
	}
}

/* Seeds the binary decomposition of nframes. The order-10 blocks are added
 * from the top so that allocation starts at low PFNs. */
static void seed(struct buddy *b)
{
	uint64_t full = b->nframes >> BUDDY_MAX_ORDER;
	uint64_t pfn = full << BUDDY_MAX_ORDER;

	for (uint64_t i = full; i > 0; i--)
		list_add(b, (uint32_t)((i - 1) << BUDDY_MAX_ORDER), BUDDY_MAX_ORDER);
	for (int order = BUDDY_MAX_ORDER - 1; order >= 0; order--) {
		if (b->nframes & (1u << order)) {
			list_add(b, (uint32_t)pfn, order);
			pfn += 1u << order;
		}
	}
}

int buddy_create_max(uint32_t nframes, uint32_t max_frames, struct buddy **out)
{
	size_t npairs = ((size_t)max_frames + 1) / 2;
	struct buddy *b;

	if (nframes == 0 || max_frames < nframes)
		return -EINVAL;
	b = calloc(1, sizeof(*b));
	if (!b)
		return -ENOMEM;
	b->nframes = nframes;
	b->max_frames = max_frames;
	b->owner = calloc(max_frames, sizeof(*b->owner));
	if (!b->owner)
		goto free_buddy;
	b->link = malloc(npairs * sizeof(*b->link));
	if (!b->link)
		goto free_owner;
	b->head = calloc(npairs, sizeof(*b->head));
	if (!b->head)
		goto free_link;
	for (int order = 0; order <= BUDDY_MAX_ORDER; order++)
		b->list[order] = NIL;
	seed(b);
	*out = b;
	return 0;

free_link:
	free(b->link);
free_owner:
	free(b->owner);
free_buddy:
	free(b);
	return -ENOMEM;
}

int buddy_create(uint32_t nframes, struct buddy **out)
{
	return buddy_create_max(nframes, nframes, out);
}

/* The new frames are unowned (owner[] is zeroed up to max_frames and a
 * frame beyond nframes is never handed out), so releasing them as a run
 * merges them with free buddies exactly as a FREE would: with nframes raised,
 * has_buddy() admits the parents that now fit. */
int buddy_grow(struct buddy *b, uint32_t nframes)
{
	uint32_t old = b->nframes;

	if (nframes < old || nframes > b->max_frames)
		return -EINVAL;
	b->nframes = nframes;
	if (nframes > old)
		release_run(b, old, nframes - old);
	return 0;
}

void buddy_destroy(struct buddy *b)
{
	if (!b)
		return;
	free(b->head);
	free(b->link);
	free(b->owner);
	free(b);
}

/* Smallest order >= order with a free block, or -1. */
static int smallest_free_order(const struct buddy *b, unsigned order)
{
	for (unsigned k = order; k <= BUDDY_MAX_ORDER; k++)
		if (b->list[k] != NIL)
			return k;
	return -1;
}

int buddy_alloc(struct buddy *b, unsigned order, uint32_t owner, uint32_t *pfn_out)
{
	int k;
	uint32_t pfn;

	if (order > BUDDY_MAX_ORDER || owner == BUDDY_NO_OWNER)
		return -EINVAL;
	k = smallest_free_order(b, order);
	if (k < 0)
		return -ENOSPC;
	pfn = b->list[k];
	list_del(b, pfn, k);
	while ((unsigned)k > order) { /* return the upper halves, largest first */
		k--;
		list_add(b, pfn + (1u << k), k);
	}
	for (uint32_t i = 0; i < (1u << order); i++)
		b->owner[pfn + i] = owner;
	*pfn_out = pfn;
	return 0;
}

/* True when every frame of [pfn, pfn + count), inside the pool, is allocated
 * to owner. Free frames have owner BUDDY_NO_OWNER, so that owner owns nothing. */
static bool run_owned_by(const struct buddy *b, uint32_t pfn, uint32_t count, uint32_t owner)
{
	if (owner == BUDDY_NO_OWNER)
		return false;
	for (uint32_t i = 0; i < count; i++)
		if (b->owner[pfn + i] != owner)
			return false;
	return true;
}

/* count 0 is -EINVAL: the protocol never sends an empty range. */
int buddy_free(struct buddy *b, uint32_t pfn, uint32_t count, uint32_t owner)
{
	if (count == 0)
		return -EINVAL;
	if ((uint64_t)pfn + count > b->nframes)
		return -ERANGE;
	if (!run_owned_by(b, pfn, count, owner))
		return -EPERM;
	release_run(b, pfn, count);
	return 0;
}

int64_t buddy_free_owner(struct buddy *b, uint32_t owner)
{
	int64_t freed = 0;
	uint32_t start = 0;

	if (owner == BUDDY_NO_OWNER)
		return 0;
	while (start < b->nframes) {
		uint32_t end;

		if (b->owner[start] != owner) {
			start++;
			continue;
		}
		for (end = start + 1; end < b->nframes && b->owner[end] == owner; end++)
			;
		release_run(b, start, end - start);
		freed += end - start;
		start = end;
	}
	return freed;
}

uint32_t buddy_owner(const struct buddy *b, uint32_t pfn)
{
	return pfn < b->nframes ? b->owner[pfn] : BUDDY_NO_OWNER;
}

void buddy_stats(const struct buddy *b, struct buddy_stats *out)
{
	out->nframes = b->nframes;
	out->free_frames = b->free_frames;
	out->largest_free_order = -1;
	for (int order = 0; order <= BUDDY_MAX_ORDER; order++) {
		out->free_blocks[order] = b->nfree[order];
		if (b->nfree[order])
			out->largest_free_order = order;
	}
}

/* pagetab: the pager's per-page records (a pte and its page's hash) in
 * leaves of 16 pages, found through a top array and directory blocks of 64
 * leaves, so that a page touched alone costs about half a KiB of table, not
 * two 4 KiB pages of flat arrays (D51). Writers hold the pager lock; anyone
 * may read, and a page without a leaf reads as 0. */
#ifndef COMEX_RT_PAGETAB_H
#define COMEX_RT_PAGETAB_H

#include <stddef.h>
#include <stdint.h>

#include "pagesum.h"
#include "pte.h"

#define PAGETAB_LEAF_SHIFT  4 /* pages a leaf: 384 bytes, the cost of a page touched alone */
#define PAGETAB_BLOCK_SHIFT 6 /* leaves a directory block: 256 bytes for 4 MiB of address space */

/* Slots of one size, numbered from 1 (0 means none); freed slots are zeroed
 * and the lowest is reused first. Slots never move (readers hold no lock);
 * the pages above the highest slot in use go back to the kernel (D51). */
struct pagetab_slab {
	char *base;
	uint64_t *free, *summary; /* bit n: slot n (below top) is free; bit w: free[w] is not 0 */
	uint32_t size, top, nfree, cap;
	uint32_t low;             /* summary words below this one are 0 */
};

struct pagetab {
	uint32_t *top;            /* per 4 MiB of pages: its directory block, or 0 */
	struct pagetab_slab blocks, leaves;
	uint64_t npages;
	uint64_t top_hi;          /* top entries above this were never used */
};

struct pagetab_leaf {
	pte_t pte[1u << PAGETAB_LEAF_SHIFT];
	pagesum_t sum[1u << PAGETAB_LEAF_SHIFT];
};

int pagetab_init(struct pagetab *t, uint64_t npages);
void pagetab_fini(struct pagetab *t);
/* A copy of from for reading (a lazy fork's snapshot); all-zero pages of
 * its arrays are not copied. */
int pagetab_copy(const struct pagetab *from, struct pagetab *out);
/* Leaves (and blocks) whose pages all lie in [lo, hi) go back to the slabs;
 * their entries must all be PTE_FREE (they read 0 afterwards). */
void pagetab_drop(struct pagetab *t, uint64_t lo, uint64_t hi);
/* The leaf of page idx, made if missing (writers only). */
struct pagetab_leaf *pagetab_make(struct pagetab *t, uint64_t idx);
/* Bytes of table in use: leaves and blocks handed out, free ones included. */
uint64_t pagetab_bytes(const struct pagetab *t);

/* Acquire: a leaf published by pagetab_make is seen zeroed or later. */
static inline struct pagetab_leaf *pagetab_leaf(const struct pagetab *t, uint64_t idx)
{
	uint32_t b = __atomic_load_n(&t->top[idx >> (PAGETAB_LEAF_SHIFT + PAGETAB_BLOCK_SHIFT)], __ATOMIC_ACQUIRE);
	const uint32_t *dir;
	uint32_t l;

	if (!b)
		return NULL;
	dir = (const uint32_t *)(t->blocks.base + (size_t)b * t->blocks.size);
	l = __atomic_load_n(&dir[(idx >> PAGETAB_LEAF_SHIFT) & ((1u << PAGETAB_BLOCK_SHIFT) - 1)], __ATOMIC_ACQUIRE);
	return l ? (struct pagetab_leaf *)(t->leaves.base + (size_t)l * t->leaves.size) : NULL;
}

#define PAGETAB_SLOT(idx) ((idx) & ((1u << PAGETAB_LEAF_SHIFT) - 1))

static inline pte_t pagetab_pte(const struct pagetab *t, uint64_t idx)
{
	const struct pagetab_leaf *l = pagetab_leaf(t, idx);

	return l ? __atomic_load_n(&l->pte[PAGETAB_SLOT(idx)], __ATOMIC_RELAXED) : 0;
}

/* Relaxed: lock-free readers take an entry as a hint only. Writing 0 where
 * there is no leaf makes none. */
static inline void pagetab_set_pte(struct pagetab *t, uint64_t idx, pte_t e)
{
	struct pagetab_leaf *l = pagetab_leaf(t, idx);

	if (!l && !e)
		return;
	if (!l)
		l = pagetab_make(t, idx);
	__atomic_store_n(&l->pte[PAGETAB_SLOT(idx)], e, __ATOMIC_RELAXED);
}

/* Only meaningful while the page has a frame (its leaf exists then). */
static inline pagesum_t pagetab_sum(const struct pagetab *t, uint64_t idx)
{
	const struct pagetab_leaf *l = pagetab_leaf(t, idx);

	return l ? l->sum[PAGETAB_SLOT(idx)] : (pagesum_t){ 0, 0 };
}

static inline void pagetab_set_sum(struct pagetab *t, uint64_t idx, pagesum_t s)
{
	struct pagetab_leaf *l = pagetab_leaf(t, idx);

	if (!l)
		l = pagetab_make(t, idx);
	l->sum[PAGETAB_SLOT(idx)] = s;
}

#endif

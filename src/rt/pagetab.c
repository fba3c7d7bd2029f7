/* pagetab: three levels of the pager's page records (pagetab.h, D51). The
 * arrays are lazily backed reservations (rtmem.h) sized for the whole
 * region, so nothing here can fail once made but the kernel's memory. */
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "pagetab.h"
#include "rtmem.h"
#include "os.h"

#define LEAF_PAGES  (1ull << PAGETAB_LEAF_SHIFT)
#define BLOCK_PAGES (1ull << (PAGETAB_LEAF_SHIFT + PAGETAB_BLOCK_SHIFT))
#define BLOCK_LEAVES (1u << PAGETAB_BLOCK_SHIFT)
#define SUMMARY_SLOTS 4096u /* slots one summary word covers: 64 map words of 64 */

static uint64_t ntop(uint64_t npages) { return (npages + BLOCK_PAGES - 1) / BLOCK_PAGES; }

static size_t slab_bytes(const struct pagetab_slab *s) { return (size_t)(s->cap + 1) * s->size; }
static size_t map_words(const struct pagetab_slab *s) { return ((size_t)s->cap + 64) / 64; }
static size_t summary_words(const struct pagetab_slab *s) { return (map_words(s) + 63) / 64; }
static size_t page_up(size_t n) { return (n + PAGE_SIZE - 1) & ~(PAGE_SIZE - 1); }

static int slab_init(struct pagetab_slab *s, uint32_t size, uint64_t cap)
{
	*s = (struct pagetab_slab){ .size = size, .top = 1, .cap = (uint32_t)cap };
	s->base = rt_alloc(slab_bytes(s));
	s->free = rt_alloc(map_words(s) * sizeof(uint64_t));
	s->summary = rt_alloc(summary_words(s) * sizeof(uint64_t));
	if (!s->base || !s->free || !s->summary)
		return -ENOMEM;
	/* the runtime's tables are not the program's: out of its core dumps */
	os_madvise(s->base, slab_bytes(s), MADV_DONTDUMP);
	return 0;
}

static void slab_fini(struct pagetab_slab *s)
{
	rt_free(s->base, slab_bytes(s));
	rt_free(s->free, map_words(s) * sizeof(uint64_t));
	rt_free(s->summary, summary_words(s) * sizeof(uint64_t));
	*s = (struct pagetab_slab){ 0 };
}

static bool slot_free(const struct pagetab_slab *s, uint32_t n) { return s->free[n / 64] >> (n % 64) & 1; }

static void clear_free(struct pagetab_slab *s, uint32_t n)
{
	if (!(s->free[n / 64] &= ~(1ull << (n % 64))))
		s->summary[n / SUMMARY_SLOTS] &= ~(1ull << (n / 64 % 64));
	s->nfree--;
}

/* A zeroed slot: the lowest free one, so that what is in use gathers at
 * the bottom and a freed top can go back to the kernel (slab_trim). */
static uint32_t slab_get(struct pagetab_slab *s)
{
	uint64_t w;
	uint32_t n;

	if (!s->nfree)
		return s->top++;
	while (!s->summary[s->low]) /* a free slot lies at or above low */
		s->low++;
	w = (uint64_t)s->low * 64 + (uint64_t)__builtin_ctzll(s->summary[s->low]);
	n = (uint32_t)(w * 64 + (uint64_t)__builtin_ctzll(s->free[w]));
	clear_free(s, n);
	return n;
}

static void slab_put(struct pagetab_slab *s, uint32_t n)
{
	memset(s->base + (size_t)n * s->size, 0, s->size);
	s->free[n / 64] |= 1ull << (n % 64);
	s->summary[n / SUMMARY_SLOTS] |= 1ull << (n / 64 % 64);
	if (n / SUMMARY_SLOTS < s->low)
		s->low = n / SUMMARY_SLOTS;
	s->nfree++;
}

/* Free slots at the top are given up, and the pages they leave whole go
 * back to the kernel. */
static void slab_trim(struct pagetab_slab *s)
{
	size_t had = page_up((size_t)s->top * s->size), now;

	while (s->top > 1 && slot_free(s, s->top - 1))
		clear_free(s, --s->top);
	now = page_up((size_t)s->top * s->size);
	if (now < had)
		os_madvise(s->base + now, had - now, MADV_DONTNEED);
}

int pagetab_init(struct pagetab *t, uint64_t npages)
{
	int err;

	*t = (struct pagetab){ .npages = npages };
	t->top = rt_alloc(ntop(npages) * sizeof(uint32_t));
	if (!t->top)
		return -ENOMEM;
	if ((err = slab_init(&t->blocks, BLOCK_LEAVES * sizeof(uint32_t), ntop(npages))) ||
	    (err = slab_init(&t->leaves, sizeof(struct pagetab_leaf), (npages + LEAF_PAGES - 1) / LEAF_PAGES))) {
		pagetab_fini(t);
		return err;
	}
	return 0;
}

void pagetab_fini(struct pagetab *t)
{
	rt_free(t->top, ntop(t->npages) * sizeof(uint32_t));
	slab_fini(&t->blocks);
	slab_fini(&t->leaves);
	t->top = NULL;
}

static uint32_t *block_dir(const struct pagetab *t, uint32_t b)
{
	return (uint32_t *)(t->blocks.base + (size_t)b * t->blocks.size);
}

/* The slot is zero before it is published (release), so a reader never
 * sees an old leaf's entries under a new page. */
struct pagetab_leaf *pagetab_make(struct pagetab *t, uint64_t idx)
{
	uint32_t *topp = &t->top[idx / BLOCK_PAGES], b = *topp, *dirp, l;

	if (!b) {
		b = slab_get(&t->blocks);
		__atomic_store_n(topp, b, __ATOMIC_RELEASE);
		if (idx / BLOCK_PAGES >= t->top_hi)
			t->top_hi = idx / BLOCK_PAGES + 1;
	}
	dirp = &block_dir(t, b)[(idx / LEAF_PAGES) % BLOCK_LEAVES];
	if (!(l = *dirp)) {
		l = slab_get(&t->leaves);
		__atomic_store_n(dirp, l, __ATOMIC_RELEASE);
	}
	return (struct pagetab_leaf *)(t->leaves.base + (size_t)l * t->leaves.size);
}

static bool block_empty(const uint32_t *dir)
{
	for (unsigned i = 0; i < BLOCK_LEAVES; i++)
		if (dir[i])
			return false;
	return true;
}

/* Unpublished first (release), then zeroed into the slab: a lock-free
 * reader that fetched the leaf just before reads entries of pages being
 * unmapped, which are free (or 0) either way. */
void pagetab_drop(struct pagetab *t, uint64_t lo, uint64_t hi)
{
	uint64_t first = (lo + LEAF_PAGES - 1) / LEAF_PAGES, end = hi / LEAF_PAGES; /* whole leaves */

	if (end > t->top_hi * BLOCK_LEAVES)
		end = t->top_hi * BLOCK_LEAVES;
	for (uint64_t bi = first / BLOCK_LEAVES; first < end && bi <= (end - 1) / BLOCK_LEAVES; bi++) {
		uint32_t b = t->top[bi], *dir;
		uint64_t a = bi * BLOCK_LEAVES, z = a + BLOCK_LEAVES;

		if (!b)
			continue;
		dir = block_dir(t, b);
		for (uint64_t li = a < first ? first : a; li < (z < end ? z : end); li++) {
			uint32_t l = dir[li % BLOCK_LEAVES];

			if (!l)
				continue;
			__atomic_store_n(&dir[li % BLOCK_LEAVES], 0, __ATOMIC_RELEASE);
			slab_put(&t->leaves, l);
		}
		if (block_empty(dir)) {
			__atomic_store_n(&t->top[bi], 0, __ATOMIC_RELEASE);
			slab_put(&t->blocks, b);
		}
	}
	slab_trim(&t->leaves);
	slab_trim(&t->blocks);
}

/* Copies len bytes at the same offsets into a fresh (zero) array, skipping
 * the source's all-zero pages: a sparse table stays sparse in the copy. */
static void copy_sparse(char *to, const char *from, size_t len)
{
	static const uint64_t zero[PAGE_SIZE / 8];

	for (size_t off = 0; off < len;) {
		size_t n = PAGE_SIZE - ((uintptr_t)(from + off) & (PAGE_SIZE - 1));

		if (n > len - off)
			n = len - off;
		if (memcmp(from + off, zero, n))
			memcpy(to + off, from + off, n);
		off += n;
	}
}

/* Only what readers use is copied: top, blocks and leaves below their tops. */
int pagetab_copy(const struct pagetab *from, struct pagetab *out)
{
	struct pagetab t;
	int err = pagetab_init(&t, from->npages);

	if (err)
		return err;
	copy_sparse((char *)t.top, (const char *)from->top, from->top_hi * sizeof(uint32_t));
	copy_sparse(t.blocks.base, from->blocks.base, (size_t)from->blocks.top * from->blocks.size);
	copy_sparse(t.leaves.base, from->leaves.base, (size_t)from->leaves.top * from->leaves.size);
	t.blocks.top = from->blocks.top;
	t.leaves.top = from->leaves.top;
	t.top_hi = from->top_hi;
	*out = t;
	return 0;
}

uint64_t pagetab_bytes(const struct pagetab *t)
{
	return (uint64_t)(t->blocks.top - 1) * t->blocks.size + (uint64_t)(t->leaves.top - 1) * t->leaves.size;
}

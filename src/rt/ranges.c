/* ranges: sorted array of free extents. Programs keep few extents (mmap'd
 * buffers, allocator chunks), so linear first fit and memmove are cheap; the
 * table holds MAX_EXTENTS, beyond which a free that would split further fails. */
#include "ranges.h"

#include <errno.h>
#include <string.h>

#include "rtmem.h"

#define MAX_EXTENTS (1u << 18) /* 4 MiB of table, mapped lazily */

struct extent { uint64_t start, len; };

struct ranges {
	uint64_t npages, nfree;
	uint32_t n;
	struct extent *e;
};

int ranges_create(uint64_t npages, struct ranges **out)
{
	struct ranges *r = rt_alloc(sizeof(*r));

	if (!r)
		return -ENOMEM;
	r->e = rt_alloc(MAX_EXTENTS * sizeof(struct extent));
	if (!r->e) {
		rt_free(r, sizeof(*r));
		return -ENOMEM;
	}
	r->npages = r->nfree = npages;
	r->n = 1;
	r->e[0] = (struct extent){ 0, npages };
	*out = r;
	return 0;
}

void ranges_destroy(struct ranges *r)
{
	if (!r)
		return;
	rt_free(r->e, MAX_EXTENTS * sizeof(struct extent));
	rt_free(r, sizeof(*r));
}

static void remove_at(struct ranges *r, uint32_t i)
{
	memmove(&r->e[i], &r->e[i + 1], (r->n - i - 1) * sizeof(struct extent));
	r->n--;
}

static int insert_at(struct ranges *r, uint32_t i, struct extent x)
{
	if (r->n == MAX_EXTENTS)
		return -ENOMEM;
	memmove(&r->e[i + 1], &r->e[i], (r->n - i) * sizeof(struct extent));
	r->e[i] = x;
	r->n++;
	return 0;
}

int ranges_alloc(struct ranges *r, uint64_t len, uint64_t *start_out)
{
	if (!len)
		return -EINVAL;
	for (uint32_t i = 0; i < r->n; i++) {
		struct extent *x = &r->e[i];

		if (x->len < len)
			continue;
		*start_out = x->start;
		x->start += len;
		x->len -= len;
		if (!x->len)
			remove_at(r, i);
		r->nfree -= len;
		return 0;
	}
	return -ENOMEM;
}

/* Index of the first extent starting after page p. */
static uint32_t upper(const struct ranges *r, uint64_t p)
{
	uint32_t lo = 0, hi = r->n;

	while (lo < hi) {
		uint32_t mid = (lo + hi) / 2;

		if (r->e[mid].start <= p)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

int ranges_take(struct ranges *r, uint64_t start, uint64_t len)
{
	uint32_t i = upper(r, start);
	struct extent *x;
	uint64_t end = start + len;

	if (!len || !i)
		return -EBUSY;
	x = &r->e[i - 1];
	if (x->start + x->len < end)
		return -EBUSY;
	if (x->start + x->len > end && x->start < start) {
		struct extent tail = { end, x->start + x->len - end };

		if (insert_at(r, i, tail))
			return -ENOMEM;
		x = &r->e[i - 1];
		x->len = start - x->start;
	} else if (x->start == start) {
		x->start += len;
		x->len -= len;
		if (!x->len)
			remove_at(r, i - 1);
	} else {
		x->len = start - x->start;
	}
	r->nfree -= len;
	return 0;
}

/* Clips [start, end) out of the extent before index i (which starts at or
 * before start) and returns the index of the first extent after start. */
static int clip_first(struct ranges *r, uint32_t i, uint64_t start, uint64_t end, uint32_t *next)
{
	struct extent *x = &r->e[i - 1];
	uint64_t xend = x->start + x->len;

	*next = i;
	if (xend <= start)
		return 0;
	if (xend > end) { /* x covers the whole claim and more on the right */
		if (x->start < start && insert_at(r, i, (struct extent){ end, xend - end }))
			return -ENOMEM;
		x = &r->e[i - 1];
		if (x->start < start) {
			x->len = start - x->start;
		} else {
			x->start = end;
			x->len = xend - end;
		}
		r->nfree -= end - start;
		*next = r->n; /* nothing left to clip */
		return 0;
	}
	r->nfree -= xend - start;
	if (x->start < start) {
		x->len = start - x->start;
	} else {
		remove_at(r, i - 1);
		*next = i - 1;
	}
	return 0;
}

int ranges_claim(struct ranges *r, uint64_t start, uint64_t len)
{
	uint64_t end = start + len;
	uint32_t i = upper(r, start);
	int err;

	if (i && (err = clip_first(r, i, start, end, &i)))
		return err;
	while (i < r->n && r->e[i].start < end) {
		struct extent *x = &r->e[i];
		uint64_t xend = x->start + x->len;

		if (xend <= end) {
			r->nfree -= x->len;
			remove_at(r, i);
			continue;
		}
		r->nfree -= end - x->start;
		x->len = xend - end;
		x->start = end;
		break;
	}
	return 0;
}

int ranges_free(struct ranges *r, uint64_t start, uint64_t len)
{
	uint32_t i = upper(r, start);
	uint64_t end = start + len;
	struct extent *prev = i ? &r->e[i - 1] : NULL, *next = i < r->n ? &r->e[i] : NULL;

	if (!len || end > r->npages)
		return -EINVAL;
	if ((prev && prev->start + prev->len > start) || (next && next->start < end))
		return -EINVAL;
	r->nfree += len;
	if (prev && prev->start + prev->len == start) {
		prev->len += len;
		if (next && next->start == end) {
			prev->len += next->len;
			remove_at(r, i);
		}
		return 0;
	}
	if (next && next->start == end) {
		next->start = start;
		next->len += len;
		return 0;
	}
	if (insert_at(r, i, (struct extent){ start, len })) {
		r->nfree -= len;
		return -ENOMEM;
	}
	return 0;
}

uint64_t ranges_free_pages(const struct ranges *r)
{
	return r->nfree;
}

int ranges_release(struct ranges *r, uint64_t start, uint64_t len)
{
	uint64_t p = start, end = start + len;

	if (end > r->npages)
		return -EINVAL;
	while (p < end) {
		uint32_t i = upper(r, p);
		uint64_t stop = i < r->n && r->e[i].start < end ? r->e[i].start : end;
		int err;

		if (i && r->e[i - 1].start + r->e[i - 1].len > p) { /* p is free already */
			p = r->e[i - 1].start + r->e[i - 1].len;
			continue;
		}
		if ((err = ranges_free(r, p, stop - p)))
			return err;
		p = stop;
	}
	return 0;
}

int ranges_next_free(const struct ranges *r, uint64_t from, uint64_t *start_out, uint64_t *len_out)
{
	uint32_t i = upper(r, from);

	if (i && r->e[i - 1].start + r->e[i - 1].len > from)
		i--;
	if (i == r->n)
		return -ENOENT;
	*start_out = r->e[i].start;
	*len_out = r->e[i].len;
	return 0;
}

int ranges_taken_span(const struct ranges *r, uint64_t p, uint64_t *lo_out, uint64_t *hi_out)
{
	uint32_t i = upper(r, p);

	if (p >= r->npages || (i && r->e[i - 1].start + r->e[i - 1].len > p))
		return -ENOENT;
	*lo_out = i ? r->e[i - 1].start + r->e[i - 1].len : 0;
	*hi_out = i < r->n ? r->e[i].start : r->npages;
	return 0;
}

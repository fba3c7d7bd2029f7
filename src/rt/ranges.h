/* ranges: first-fit allocator of page ranges inside the mmap area of the
 * managed region, for the program's anonymous mmaps. Free extents are kept
 * sorted and coalesced in a fixed table (no malloc). Not thread-safe: the
 * pager lock serialises callers. Units: pages (index from the area start). */
#ifndef COMEX_RT_RANGES_H
#define COMEX_RT_RANGES_H

#include <stdint.h>

struct ranges;

int ranges_create(uint64_t npages, struct ranges **out);
void ranges_destroy(struct ranges *r);
/* First fit; -ENOMEM when no free extent is long enough. */
int ranges_alloc(struct ranges *r, uint64_t len, uint64_t *start_out);
/* Takes exactly [start, start+len) if all of it is free, else -EBUSY. */
int ranges_take(struct ranges *r, uint64_t start, uint64_t len);
/* Takes whatever of [start, start+len) is still free (MAP_FIXED, MREMAP_FIXED
 * replace what was there); -ENOMEM only if the extent table is full. */
int ranges_claim(struct ranges *r, uint64_t start, uint64_t len);
/* Returns [start, start+len); freeing pages that are already free is -EINVAL
 * (nothing changed). */
int ranges_free(struct ranges *r, uint64_t start, uint64_t len);
/* Returns whatever of [start, start+len) is taken (munmap of a range that
 * may hold holes); -ENOMEM if the extent table filled part way. */
int ranges_release(struct ranges *r, uint64_t start, uint64_t len);
uint64_t ranges_free_pages(const struct ranges *r);
/* The free extent that holds page from, else the first one after it;
 * -ENOENT when there is none. */
int ranges_next_free(const struct ranges *r, uint64_t from, uint64_t *start_out, uint64_t *len_out);
/* The run of taken pages around page p: [lo, hi); -ENOENT if p is free. */
int ranges_taken_span(const struct ranges *r, uint64_t p, uint64_t *lo_out, uint64_t *hi_out);

#endif

/* pagemap: which pages of a range were written since they were last
 * write-protected, learned and re-protected in one atomic step with the
 * PAGEMAP_SCAN ioctl (Linux 6.7+). Pairs with UFFD_FEATURE_WP_ASYNC, under
 * which the kernel resolves writes to protected pages without a message.
 * Also which pages of a range are mapped at all, and how much anonymous
 * memory a range holds. */
#ifndef COMEX_RT_PAGEMAP_H
#define COMEX_RT_PAGEMAP_H

#include <stddef.h>
#include <stdint.h>

#define PAGEMAP_MAX_PAGES 256 /* pages one call scans: the largest eviction batch */

/* Opens /proc/self/pagemap; -errno (logged) on failure. */
int pagemap_open(int *fd_out);
/* For the npages (<= PAGEMAP_MAX_PAGES) pages at addr, sets bit i of
 * written[] when page i was written since its last protection (or is not
 * mapped), clears it otherwise; every written page is write-protected again
 * before the call returns. -EOPNOTSUPP when the kernel has no PAGEMAP_SCAN. */
int pagemap_written(int fd, void *addr, size_t npages, uint64_t written[PAGEMAP_MAX_PAGES / 64]);
/* How many of the npages (<= PAGEMAP_MAX_PAGES) pages from addr, counted
 * from the first, have a page (present or swapped out). */
int pagemap_mapped_prefix(int fd, const void *addr, size_t npages, size_t *count_out);
/* Bytes of anonymous memory present in [start, end) (page-aligned): not
 * a file's or shared memory's, not the shared zero page; holes skipped. */
int pagemap_anon_bytes(int fd, uintptr_t start, uintptr_t end, uint64_t *bytes_out);

#endif

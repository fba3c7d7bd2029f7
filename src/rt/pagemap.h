/* pagemap: which pages of a range are mapped at all (/proc/self/pagemap
 * entries), which are present and how much anonymous memory a range holds
 * (the PAGEMAP_SCAN ioctl, Linux 6.7+). */
#ifndef COMEX_RT_PAGEMAP_H
#define COMEX_RT_PAGEMAP_H

#include <stddef.h>
#include <stdint.h>

#define PAGEMAP_MAX_PAGES 256 /* pages one call scans: the largest eviction batch */

/* Opens /proc/self/pagemap; -errno (logged) on failure. */
int pagemap_open(int *fd_out);
/* How many of the npages (<= PAGEMAP_MAX_PAGES) pages from addr, counted
 * from the first, have a page (present or swapped out). */
int pagemap_mapped_prefix(int fd, const void *addr, size_t npages, size_t *count_out);
/* Bytes of anonymous memory present in [start, end) (page-aligned): not
 * a file's or shared memory's, not the shared zero page; holes skipped. */
int pagemap_anon_bytes(int fd, uintptr_t start, uintptr_t end, uint64_t *bytes_out);
/* Calls fn for each run [lo, hi) of present pages in [start, end), the
 * shared zero page included; -EOPNOTSUPP (kernel before 6.7), -errno. */
int pagemap_present(int fd, uintptr_t start, uintptr_t end, void (*fn)(uintptr_t lo, uintptr_t hi, void *arg),
		    void *arg);

#endif

/* pagemap: PAGEMAP_SCAN with PM_SCAN_WP_MATCHING as a bitmap of written
 * pages; the classic 8-byte entries for which pages are mapped. */
#include "pagemap.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "pte.h"
#include "os.h"

#define REGIONS 32 /* one call returns at most this many runs of written pages */

int pagemap_open(int *fd_out)
{
	int fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);

	if (fd < 0) {
		log_error("cannot open /proc/self/pagemap (written pages, memory outside the region): %m");
		return -errno;
	}
	*fd_out = fd;
	return 0;
}

static void set_bits(uint64_t *bits, uint64_t lo, uint64_t hi)
{
	for (uint64_t i = lo; i < hi; i++)
		bits[i / 64] |= 1ull << (i % 64);
}

int pagemap_written(int fd, void *addr, size_t npages, uint64_t written[PAGEMAP_MAX_PAGES / 64])
{
	uint64_t start = (uintptr_t)addr, end = start + (npages << PAGE_SHIFT);
	struct page_region vec[REGIONS];

	if (npages > PAGEMAP_MAX_PAGES)
		return -EINVAL;
	memset(written, 0, PAGEMAP_MAX_PAGES / 8);
	while (start < end) {
		struct pm_scan_arg a = {
			.size = sizeof(a), .flags = PM_SCAN_WP_MATCHING | PM_SCAN_CHECK_WPASYNC,
			.start = start, .end = end, .vec = (uintptr_t)vec, .vec_len = REGIONS,
			.category_mask = PAGE_IS_WRITTEN, .return_mask = PAGE_IS_WRITTEN,
		};
		long n = ioctl(fd, PAGEMAP_SCAN, &a);

		if (n < 0)
			return errno == ENOTTY ? -EOPNOTSUPP : -errno;
		for (long i = 0; i < n; i++)
			set_bits(written, (vec[i].start - (uintptr_t)addr) >> PAGE_SHIFT,
				 (vec[i].end - (uintptr_t)addr) >> PAGE_SHIFT);
		if (a.walk_end <= start)
			return -EIO; /* no progress: never loop forever */
		start = a.walk_end;
	}
	return 0;
}

#define PM_PRESENT (1ull << 63)
#define PM_SWAPPED (1ull << 62)

int pagemap_mapped_prefix(int fd, const void *addr, size_t npages, size_t *count_out)
{
	uint64_t e[PAGEMAP_MAX_PAGES];
	size_t n = 0;
	ssize_t r;

	if (npages > PAGEMAP_MAX_PAGES)
		return -EINVAL;
	r = pread(fd, e, npages * sizeof(e[0]), (off_t)((uintptr_t)addr >> PAGE_SHIFT) * (off_t)sizeof(e[0]));
	if (r != (ssize_t)(npages * sizeof(e[0])))
		return r < 0 ? -errno : -EIO;
	while (n < npages && (e[n] & (PM_PRESENT | PM_SWAPPED)))
		n++;
	*count_out = n;
	return 0;
}

int pagemap_anon_bytes(int fd, uintptr_t start, uintptr_t end, uint64_t *bytes_out)
{
	struct page_region vec[REGIONS];
	uint64_t bytes = 0;

	while (start < end) {
		/* present, and neither a file's (shared memory included) nor
		 * the shared zero page: what the process has of its own */
		struct pm_scan_arg a = {
			.size = sizeof(a), .start = start, .end = end, .vec = (uintptr_t)vec, .vec_len = REGIONS,
			.category_inverted = PAGE_IS_FILE | PAGE_IS_PFNZERO,
			.category_mask = PAGE_IS_PRESENT | PAGE_IS_FILE | PAGE_IS_PFNZERO,
			.return_mask = PAGE_IS_PRESENT,
		};
		long n = ioctl(fd, PAGEMAP_SCAN, &a);

		if (n < 0)
			return errno == ENOTTY ? -EOPNOTSUPP : -errno;
		for (long i = 0; i < n; i++)
			bytes += vec[i].end - vec[i].start;
		if (a.walk_end <= start)
			return -EIO; /* no progress: never loop forever */
		start = a.walk_end;
	}
	*bytes_out = bytes;
	return 0;
}

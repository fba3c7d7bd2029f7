/* pagemap: the classic 8-byte entries for which pages are mapped;
 * PAGEMAP_SCAN for how much anonymous memory a range holds. */
#include "pagemap.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "pte.h"
#include "os.h"

#define REGIONS 32 /* one PAGEMAP_SCAN call returns at most this many runs of pages */

int pagemap_open(int *fd_out)
{
	int fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);

	if (fd < 0) {
		log_error("cannot open /proc/self/pagemap (pages moved out, memory outside the region): %m");
		return -errno;
	}
	*fd_out = fd;
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

/* Calls fn for every run of pages in [start, end) that is present and not
 * in excluded (PAGE_IS_* categories); -EOPNOTSUPP without PAGEMAP_SCAN. */
static int scan(int fd, uintptr_t start, uintptr_t end, uint64_t excluded,
		void (*fn)(uintptr_t lo, uintptr_t hi, void *arg), void *arg)
{
	struct page_region vec[REGIONS];

	while (start < end) {
		struct pm_scan_arg a = {
			.size = sizeof(a), .start = start, .end = end, .vec = (uintptr_t)vec, .vec_len = REGIONS,
			.category_inverted = excluded, .category_mask = PAGE_IS_PRESENT | excluded,
			.return_mask = PAGE_IS_PRESENT,
		};
		long n = os_ioctl(fd, PAGEMAP_SCAN, &a);

		if (n < 0)
			return errno == ENOTTY ? -EOPNOTSUPP : -errno;
		for (long i = 0; i < n; i++)
			fn(vec[i].start, vec[i].end, arg);
		if (a.walk_end <= start)
			return -EIO; /* no progress: never loop forever */
		start = a.walk_end;
	}
	return 0;
}

static void add_bytes(uintptr_t lo, uintptr_t hi, void *arg)
{
	*(uint64_t *)arg += hi - lo;
}

int pagemap_anon_bytes(int fd, uintptr_t start, uintptr_t end, uint64_t *bytes_out)
{
	uint64_t bytes = 0;
	/* neither a file's (shared memory included) nor the shared zero
	 * page: what the process has of its own */
	int err = scan(fd, start, end, PAGE_IS_FILE | PAGE_IS_PFNZERO, add_bytes, &bytes);

	if (!err)
		*bytes_out = bytes;
	return err;
}

int pagemap_present(int fd, uintptr_t start, uintptr_t end, void (*fn)(uintptr_t lo, uintptr_t hi, void *arg),
		    void *arg)
{
	return scan(fd, start, end, 0, fn, arg);
}

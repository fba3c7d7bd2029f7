/* uapi: the userfaultfd and pagemap kernel interfaces newer than Debian 12's
 * headers (Linux 6.7: UFFD_FEATURE_WP_ASYNC, PAGEMAP_SCAN; 6.8: UFFDIO_MOVE;
 * 6.11: PROCMAP_QUERY).
 * Defined here only when the installed headers lack them; the values are the
 * kernel's ABI and never change. */
#ifndef COMEX_RT_UAPI_H
#define COMEX_RT_UAPI_H

#include <linux/fs.h>
#include <linux/types.h>
#include <linux/userfaultfd.h>
#include <sys/ioctl.h>

#ifndef UFFD_FEATURE_WP_ASYNC
#define UFFD_FEATURE_WP_ASYNC (1 << 15)
#endif

#ifndef UFFD_FEATURE_MOVE
#define UFFD_FEATURE_MOVE (1 << 16)
#define UFFDIO_MOVE_MODE_DONTWAKE        (1 << 0)
#define UFFDIO_MOVE_MODE_ALLOW_SRC_HOLES (1 << 1)
struct uffdio_move {
	__u64 dst, src, len, mode;
	__s64 move; /* out: bytes moved, or -errno */
};
#define UFFDIO_MOVE _IOWR(UFFDIO, 0x05, struct uffdio_move)
#endif

#ifndef PAGEMAP_SCAN
#define PAGE_IS_WPALLOWED (1 << 0)
#define PAGE_IS_WRITTEN   (1 << 1)
#define PAGE_IS_FILE      (1 << 2)
#define PAGE_IS_PRESENT   (1 << 3)
#define PAGE_IS_SWAPPED   (1 << 4)
#define PAGE_IS_PFNZERO   (1 << 5)
struct page_region {
	__u64 start, end, categories;
};
#define PM_SCAN_WP_MATCHING   (1 << 0)
#define PM_SCAN_CHECK_WPASYNC (1 << 1)
struct pm_scan_arg {
	__u64 size, flags, start, end, walk_end, vec, vec_len, max_pages;
	__u64 category_inverted, category_mask, category_anyof_mask, return_mask;
};
#define PAGEMAP_SCAN _IOWR('f', 16, struct pm_scan_arg)
#endif

#ifndef PROCMAP_QUERY /* Linux 6.11: one mapping of /proc/PID/maps by address */
#define PROCMAP_QUERY_VMA_READABLE   0x01
#define PROCMAP_QUERY_VMA_WRITABLE   0x02
#define PROCMAP_QUERY_VMA_EXECUTABLE 0x04
struct procmap_query {
	__u64 size, query_flags, query_addr;
	__u64 vma_start, vma_end, vma_flags, vma_page_size, vma_offset, inode; /* out */
	__u32 dev_major, dev_minor, vma_name_size, build_id_size;
	__u64 vma_name_addr, build_id_addr;
};
#define PROCMAP_QUERY _IOWR('f', 17, struct procmap_query)
#endif

#ifndef MCL_ONFAULT /* Linux 4.4, mlockall: lock pages as they fault in */
#define MCL_ONFAULT 4
#endif
#ifndef MLOCK_ONFAULT /* Linux 4.4, mlock2 */
#define MLOCK_ONFAULT 1
#endif

#endif

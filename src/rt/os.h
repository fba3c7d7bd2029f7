/* os: the runtime's one door to the kernel and the CPU (as mimalloc's prim):
 * the raw system call and typed calls for what the runtime asks of memory and
 * threads, the kernel ABI newer than Debian 12's headers, and the spin-wait
 * hint. Everything architecture-specific is here and nowhere else in rt/. */
#ifndef COMEX_RT_OS_H
#define COMEX_RT_OS_H

#include <errno.h>
#include <stddef.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <time.h>

/* The kernel's system call n, bypassing the C library: the runtime
 * interposes syscall() (interpose_fd.c), so the code behind that, and the
 * registry of the runtime's descriptors it calls, must not call back into
 * it. Returns the kernel's value (-errno on failure); sys_ret turns it into
 * the C library's convention. */
static inline long raw6(long n, long a, long b, long c, long d, long e, long f)
{
#if defined(__x86_64__)
	register long r10 __asm__("r10") = d, r8 __asm__("r8") = e, r9 __asm__("r9") = f;
	long ret;

	__asm__ volatile("syscall" : "=a"(ret) : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
			 : "rcx", "r11", "memory");
	return ret;
#elif defined(__aarch64__)
	register long x8 __asm__("x8") = n, x0 __asm__("x0") = a, x1 __asm__("x1") = b, x2 __asm__("x2") = c,
		      x3 __asm__("x3") = d, x4 __asm__("x4") = e, x5 __asm__("x5") = f;

	__asm__ volatile("svc 0" : "+r"(x0) : "r"(x8), "r"(x1), "r"(x2), "r"(x3), "r"(x4), "r"(x5) : "memory");
	return x0;
#else
#error "os: no raw system calls for this architecture"
#endif
}

/* One step of a spin-wait: lets the sibling hyperthread run and saves power. */
static inline void cpu_relax(void)
{
#if defined(__x86_64__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ volatile("yield" ::: "memory");
#else
	__asm__ volatile("" ::: "memory");
#endif
}

/* -1 with errno set for a kernel error value, else the value */
static inline long sys_ret(long r)
{
	if (r < 0 && r > -4096) {
		errno = (int)-r;
		return -1;
	}
	return r;
}

/* The calls the runtime makes on memory and threads, in the C library's
 * convention (-1 with errno on failure; mmap and mremap return the address
 * as a long). They make no descriptor, so they need none of the interposed
 * syscall()'s bookkeeping; one that makes a descriptor (userfaultfd,
 * pidfd_open) goes through syscall() so that the runtime's descriptor
 * registry sees it. */
#define OS_CALL(n, a, b, c, d, e, f) sys_ret(raw6(n, (long)(a), (long)(b), (long)(c), (long)(d), (long)(e), (long)(f)))

static inline long os_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	return OS_CALL(SYS_mmap, addr, len, prot, flags, fd, off);
}
static inline long os_mremap(void *old, size_t oldlen, size_t newlen, int flags, void *newaddr)
{
	return OS_CALL(SYS_mremap, old, oldlen, newlen, flags, newaddr, 0);
}
static inline int os_munmap(void *addr, size_t len) { return (int)OS_CALL(SYS_munmap, addr, len, 0, 0, 0, 0); }
static inline int os_madvise(void *addr, size_t len, int advice)
{
	return (int)OS_CALL(SYS_madvise, addr, len, advice, 0, 0, 0);
}
static inline int os_mprotect(void *addr, size_t len, int prot)
{
	return (int)OS_CALL(SYS_mprotect, addr, len, prot, 0, 0, 0);
}
static inline int os_mlock2(const void *addr, size_t len, unsigned flags)
{
	return (int)OS_CALL(SYS_mlock2, addr, len, flags, 0, 0, 0);
}
static inline int os_munlock(const void *addr, size_t len) { return (int)OS_CALL(SYS_munlock, addr, len, 0, 0, 0, 0); }
static inline int os_mlockall(int flags) { return (int)OS_CALL(SYS_mlockall, flags, 0, 0, 0, 0, 0); }
static inline int os_munlockall(void) { return (int)OS_CALL(SYS_munlockall, 0, 0, 0, 0, 0, 0); }
static inline int os_ioctl(int fd, unsigned long req, void *arg) { return (int)OS_CALL(SYS_ioctl, fd, req, arg, 0, 0, 0); }
static inline long os_getdents64(int fd, void *buf, size_t len) { return OS_CALL(SYS_getdents64, fd, buf, len, 0, 0, 0); }
static inline int os_mincore(void *addr, size_t len, unsigned char *vec)
{
	return (int)OS_CALL(SYS_mincore, addr, len, vec, 0, 0, 0);
}
/* FUTEX_WAIT on *addr while it holds val, at most ts (NULL: no limit) */
static inline int os_futex_wait(void *addr, unsigned val, const struct timespec *ts)
{
	return (int)OS_CALL(SYS_futex, addr, 0 /* FUTEX_WAIT */, val, ts, 0, 0);
}
static inline int os_futex_wake(void *addr, int n) { return (int)OS_CALL(SYS_futex, addr, 1 /* FUTEX_WAKE */, n, 0, 0, 0); }
static inline int os_gettid(void) { return (int)raw6(SYS_gettid, 0, 0, 0, 0, 0, 0); }

/* ---- kernel ABI newer than Debian 12's headers ----
 * userfaultfd and pagemap (Linux 6.7: UFFD_FEATURE_WP_ASYNC, PAGEMAP_SCAN;
 * 6.8: UFFDIO_MOVE; 6.11: PROCMAP_QUERY), mlock flags. Defined only when the
 * installed headers lack them; the values are the kernel's ABI and never
 * change. */
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

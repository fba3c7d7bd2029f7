/* uffd: the userfaultfd calls the pager uses, as 0-or-negative-errno
 * functions. One descriptor covers the whole managed region, registered for
 * missing-page and write-protect faults; kernel-mode faults are required so
 * that system calls writing into evicted memory (read(2)) work. */
#ifndef COMEX_RT_UFFD_H
#define COMEX_RT_UFFD_H

#include <stdbool.h>
#include <stddef.h>

/* Opens a non-blocking descriptor with write-protect support; with
 * want_async also asynchronous write-protection and UFFDIO_MOVE (6.8+) when
 * the kernel has both (*async_out says whether it did); with want_fork,
 * forked children stay registered (UFFD_EVENT_FORK). -EPERM when
 * kernel-mode faults are not allowed; the message says how to allow them. */
int uffd_open(bool want_async, bool want_fork, int *fd_out, bool *async_out);
/* Explains -EPERM/-ENOSYS from uffd_open to a human (for the launcher). */
const char *uffd_permission_help(int err);
/* Registers for write-protect faults, and for missing pages when missing. */
int uffd_register(int fd, void *addr, size_t len, bool missing);
/* Installs len bytes from src at dst (missing pages); wp maps them
 * write-protected. On an error, *copied_out (may be NULL) says how many
 * bytes were installed before it: those pages are mapped. */
int uffd_copy(int fd, void *dst, const void *src, size_t len, int wp, size_t *copied_out);
/* Maps the zero page over len bytes at dst; *zeroed_out as uffd_copy's. */
int uffd_zero(int fd, void *dst, size_t len, size_t *zeroed_out);
/* on: write-protect; off: unprotect and wake writers waiting on it. */
int uffd_unregister(int fd, void *addr, size_t len);
int uffd_wp(int fd, void *addr, size_t len, int on);
int uffd_wake(int fd, void *addr, size_t len);
/* Moves the pages of [src, +len) to dst (which must be unpopulated and
 * registered with fd) without copying; holes in src stay holes. *moved_out:
 * bytes moved before any error (-EBUSY: a page shared with another process). */
int uffd_move(int fd, void *dst, const void *src, size_t len, size_t *moved_out);

#endif

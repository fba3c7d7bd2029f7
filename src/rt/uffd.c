/* uffd: thin wrappers; every kernel status becomes a negative errno here. */
#include "uffd.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "log.h"
#include "rtfd.h"
#include "os.h"

#ifndef USERFAULTFD_IOC_NEW
#define USERFAULTFD_IOC_NEW _IO(0xAA, 0x00)
#endif

/* /dev/userfaultfd (5.11+) grants kernel-mode faults to whoever may open it,
 * without vm.unprivileged_userfaultfd; the syscall is the fallback. */
static int open_raw(void)
{
	int dev = open("/dev/userfaultfd", O_RDWR | O_CLOEXEC);
	int fd;

	if (dev >= 0) {
		fd = os_ioctl(dev, USERFAULTFD_IOC_NEW, (void *)(long)(O_CLOEXEC | O_NONBLOCK));
		close(dev);
		if (fd >= 0)
			return rtfd_adopt(fd);
	}
	fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
	return fd >= 0 ? rtfd_adopt(fd) : -errno;
}

/* One UFFDIO_API handshake per descriptor: asking for a feature the kernel
 * lacks fails the handshake, so each attempt uses a fresh descriptor. */
static int open_with(uint64_t features, int *fd_out)
{
	struct uffdio_api api = { .api = UFFD_API, .features = features };
	int fd = open_raw();

	if (fd < 0)
		return fd;
	if (os_ioctl(fd, UFFDIO_API, &api)) {
		int err = -errno;

		close(fd);
		return err;
	}
	*fd_out = fd;
	return 0;
}

int uffd_open(bool want_async, bool want_fork, int *fd_out, bool *async_out)
{
	uint64_t async = UFFD_FEATURE_WP_ASYNC | UFFD_FEATURE_MOVE;
	/* THREAD_ID: the faulting thread, which per-CPU handlers follow (listener) */
	uint64_t base = UFFD_FEATURE_PAGEFAULT_FLAG_WP | UFFD_FEATURE_THREAD_ID |
			(want_fork ? UFFD_FEATURE_EVENT_FORK : 0);
	int fd, err = -EINVAL;

	if (want_async && !(err = open_with(base | async, &fd))) {
		*fd_out = fd;
		*async_out = true;
		return 0;
	}
	if (err == -EPERM || err == -ENOSYS)
		return err;
	if ((err = open_with(base, &fd))) {
		errno = -err;
		if (err != -EPERM && err != -ENOSYS)
			log_error("userfaultfd: UFFDIO_API with write-protect failed (kernel 5.7+ needed): %m");
		return err;
	}
	*fd_out = fd;
	*async_out = false;
	return 0;
}

const char *uffd_permission_help(int err)
{
	if (err == -ENOSYS)
		return "this kernel has no userfaultfd (CONFIG_USERFAULTFD); comex cannot run here";
	return "userfaultfd is not allowed to handle kernel-mode faults for this user. Fix one of: "
	       "run as root; or give this user read-write access to /dev/userfaultfd "
	       "(e.g. 'setfacl -m u:$USER:rw /dev/userfaultfd'); or 'sysctl -w vm.unprivileged_userfaultfd=1'";
}

int uffd_register(int fd, void *addr, size_t len, bool missing)
{
	struct uffdio_register r = {
		.range = { (uintptr_t)addr, len },
		.mode = (missing ? UFFDIO_REGISTER_MODE_MISSING : 0) | UFFDIO_REGISTER_MODE_WP,
	};

	if (os_ioctl(fd, UFFDIO_REGISTER, &r)) {
		log_error("userfaultfd: register %p+%zu: %m", addr, len);
		return -errno;
	}
	return 0;
}

int uffd_unregister(int fd, void *addr, size_t len)
{
	struct uffdio_range r = { (uintptr_t)addr, len };

	if (os_ioctl(fd, UFFDIO_UNREGISTER, &r)) {
		log_error("userfaultfd: unregister %p+%zu: %m", addr, len);
		return -errno;
	}
	return 0;
}

int uffd_copy(int fd, void *dst, const void *src, size_t len, int wp, size_t *copied_out)
{
	struct uffdio_copy c = {
		.dst = (uintptr_t)dst, .src = (uintptr_t)src, .len = len,
		.mode = wp ? UFFDIO_COPY_MODE_WP : 0,
	};
	int err = os_ioctl(fd, UFFDIO_COPY, &c) ? -errno : 0;

	if (copied_out)
		*copied_out = err ? (c.copy > 0 ? (size_t)c.copy : 0) : len;
	return err;
}

int uffd_zero(int fd, void *dst, size_t len, size_t *zeroed_out)
{
	struct uffdio_zeropage z = { .range = { (uintptr_t)dst, len } };
	int err = os_ioctl(fd, UFFDIO_ZEROPAGE, &z) ? -errno : 0;

	*zeroed_out = err ? (z.zeropage > 0 ? (size_t)z.zeropage : 0) : len;
	return err;
}

int uffd_wp(int fd, void *addr, size_t len, int on)
{
	struct uffdio_writeprotect w = {
		.range = { (uintptr_t)addr, len },
		.mode = on ? UFFDIO_WRITEPROTECT_MODE_WP : 0,
	};

	if (os_ioctl(fd, UFFDIO_WRITEPROTECT, &w))
		return -errno;
	return 0;
}

int uffd_wake(int fd, void *addr, size_t len)
{
	struct uffdio_range r = { (uintptr_t)addr, len };

	if (os_ioctl(fd, UFFDIO_WAKE, &r))
		return -errno;
	return 0;
}

int uffd_move(int fd, void *dst, const void *src, size_t len, size_t *moved_out)
{
	struct uffdio_move m = {
		.dst = (uintptr_t)dst, .src = (uintptr_t)src, .len = len,
		.mode = UFFDIO_MOVE_MODE_ALLOW_SRC_HOLES,
	};
	int err = os_ioctl(fd, UFFDIO_MOVE, &m) ? -errno : 0;

	*moved_out = m.move > 0 ? (size_t)m.move : 0;
	return err;
}

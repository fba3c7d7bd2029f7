/* uffd: thin wrappers; every kernel status becomes a negative errno here. */
#include "uffd.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <stdint.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "log.h"

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
		fd = ioctl(dev, USERFAULTFD_IOC_NEW, O_CLOEXEC | O_NONBLOCK);
		close(dev);
		if (fd >= 0)
			return fd;
	}
	fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
	return fd >= 0 ? fd : -errno;
}

int uffd_open(int *fd_out)
{
	struct uffdio_api api = { .api = UFFD_API, .features = UFFD_FEATURE_PAGEFAULT_FLAG_WP };
	int fd = open_raw();

	if (fd < 0)
		return fd;
	if (ioctl(fd, UFFDIO_API, &api)) {
		int err = -errno;

		log_error("userfaultfd: UFFDIO_API with write-protect failed (kernel 5.7+ needed): %m");
		close(fd);
		return err;
	}
	*fd_out = fd;
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

int uffd_register(int fd, void *addr, size_t len)
{
	struct uffdio_register r = {
		.range = { (uintptr_t)addr, len },
		.mode = UFFDIO_REGISTER_MODE_MISSING | UFFDIO_REGISTER_MODE_WP,
	};

	if (ioctl(fd, UFFDIO_REGISTER, &r)) {
		log_error("userfaultfd: register %p+%zu: %m", addr, len);
		return -errno;
	}
	return 0;
}

int uffd_copy(int fd, void *dst, const void *src, size_t len, int wp)
{
	struct uffdio_copy c = {
		.dst = (uintptr_t)dst, .src = (uintptr_t)src, .len = len,
		.mode = wp ? UFFDIO_COPY_MODE_WP : 0,
	};

	if (ioctl(fd, UFFDIO_COPY, &c))
		return -errno;
	return 0;
}

int uffd_zero(int fd, void *dst, size_t len)
{
	struct uffdio_zeropage z = { .range = { (uintptr_t)dst, len } };

	if (ioctl(fd, UFFDIO_ZEROPAGE, &z))
		return -errno;
	return 0;
}

int uffd_wp(int fd, void *addr, size_t len, int on)
{
	struct uffdio_writeprotect w = {
		.range = { (uintptr_t)addr, len },
		.mode = on ? UFFDIO_WRITEPROTECT_MODE_WP : 0,
	};

	if (ioctl(fd, UFFDIO_WRITEPROTECT, &w))
		return -errno;
	return 0;
}

int uffd_wake(int fd, void *addr, size_t len)
{
	struct uffdio_range r = { (uintptr_t)addr, len };

	if (ioctl(fd, UFFDIO_WAKE, &r))
		return -errno;
	return 0;
}

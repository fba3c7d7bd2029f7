/* procfile: one read of a small /proc file into a caller's buffer, with
 * plain system calls (safe on the fault path: no malloc, no stdio). */
#ifndef COMEX_PROCFILE_H
#define COMEX_PROCFILE_H

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <unistd.h>

/* The file's first cap - 1 bytes, NUL-terminated; their count, or -errno
 * (-ENOENT: a task that is gone). */
static inline int procfile_read(const char *path, char *buf, size_t cap)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), err;
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = read(fd, buf, cap - 1);
	err = errno;
	close(fd);
	if (n < 0)
		return -err;
	buf[n] = 0;
	return (int)n;
}

#endif

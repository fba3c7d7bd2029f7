/* procfile: one read of a small /proc file into a caller's buffer, with
 * plain system calls (safe on the fault path: no malloc, no stdio). */
#ifndef COMEX_PROCFILE_H
#define COMEX_PROCFILE_H

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <unistd.h>

/* The first cap - 1 bytes of the file open at fd, read again from its start
 * (a sampled file kept open), NUL-terminated; their count, or -errno. */
static inline int procfile_pread(int fd, char *buf, size_t cap)
{
	ssize_t n = pread(fd, buf, cap - 1, 0);

	if (n < 0)
		return -errno;
	buf[n] = 0;
	return (int)n;
}

/* The file's first cap - 1 bytes, NUL-terminated; their count, or -errno
 * (-ENOENT: a task that is gone). */
static inline int procfile_read(const char *path, char *buf, size_t cap)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), n;

	if (fd < 0)
		return -errno;
	n = procfile_pread(fd, buf, cap);
	close(fd);
	return n;
}

#endif

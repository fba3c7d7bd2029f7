/* rtmem: memory for the runtime's own tables. It must never live in the
 * managed region (the fault handler would fault on itself), so it comes from
 * raw mmap system calls that bypass comex's own mmap interposer. */
#ifndef COMEX_RT_RTMEM_H
#define COMEX_RT_RTMEM_H

#include <stddef.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Zeroed, lazily backed memory; NULL on failure (errno set). */
static inline void *rt_alloc(size_t len)
{
	long p = syscall(SYS_mmap, NULL, len, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	return p == -1 ? NULL : (void *)p;
}

static inline void rt_free(void *p, size_t len)
{
	if (p)
		syscall(SYS_munmap, p, len);
}

#endif

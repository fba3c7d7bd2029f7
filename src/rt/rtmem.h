/* rtmem: memory for the runtime's own tables. It must never live in the
 * managed region (the fault handler would fault on itself), so it comes from
 * raw mmap system calls that bypass comex's own mmap interposer. */
#ifndef COMEX_RT_RTMEM_H
#define COMEX_RT_RTMEM_H

#include <stddef.h>
#include <sys/mman.h>

#include "os.h"

/* Zeroed, lazily backed memory; NULL on failure (errno set). Backed by
 * 4 KiB pages, never transparent huge pages: a table touched sparsely must
 * grow by 4 KiB as page tables do (with THP, 6144 pieces of 64 KiB spread
 * over 256 GiB made the page table alone 537 MiB resident; D50). Not in
 * core dumps: a core holds the program's memory, not the pager's tables
 * and buffers (D48). */
static inline void *rt_alloc(size_t len)
{
	long p = os_mmap(NULL, len, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	if (p == -1)
		return NULL;
	if (len >= (2ul << 20))
		os_madvise((void *)p, len, MADV_NOHUGEPAGE);
	os_madvise((void *)p, len, MADV_DONTDUMP);
	return (void *)p;
}

static inline void rt_free(void *p, size_t len)
{
	if (p)
		os_munmap(p, len);
}

#endif

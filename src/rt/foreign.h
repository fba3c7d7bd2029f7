/* foreign: mappings the program places over the managed region that the
 * pager does not manage (a file, a memfd, shared memory), made as the kernel
 * would make them; the pager forgets what was there (docs/DECISIONS.md D42). */
#ifndef COMEX_RT_FOREIGN_H
#define COMEX_RT_FOREIGN_H

#include <stddef.h>
#include <sys/types.h>

/* MAP_FIXED or MAP_FIXED_NOREPLACE (-EEXIST over pages the program has
 * mapped) of anything but anonymous private memory over part of the region. */
int foreign_map(void *addr, size_t len, int prot, int flags, int fd, off_t off, void **out);

/* Before the program registers [addr, +len) with its own userfaultfd: the
 * pager brings those pages home and stops managing them. */
int foreign_release_to_program(void *addr, size_t len);

#endif

/* prot: the program's protections and locks over the managed region
 * (mprotect, mlock, mlockall): made by the kernel as asked, and recorded in
 * the page table so that eviction knows how each victim can leave, or that
 * it must stay (docs/DECISIONS.md D43). */
#ifndef COMEX_RT_PROT_H
#define COMEX_RT_PROT_H

#include <stddef.h>

int prot_mprotect(void *addr, size_t len, int prot);
/* flags: MLOCK_ONFAULT or 0 (mlock2) */
int prot_mlock(void *addr, size_t len, unsigned flags);
int prot_munlock(void *addr, size_t len);
int prot_mlockall(int flags);
int prot_munlockall(void);

#endif

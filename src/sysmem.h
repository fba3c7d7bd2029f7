/* sysmem: the memory of this host and of the cgroup we run in, for sizing
 * local-mem (comex run) and a growing memnode pool. */
#ifndef COMEX_SYSMEM_H
#define COMEX_SYSMEM_H

#include <stdint.h>

/* MemTotal in bytes (0 if /proc/meminfo is unreadable). */
uint64_t sysmem_total(void);
/* The memory limit that binds us: our cgroup's or an ancestor's, the
 * smallest (memcg: v1 memory controller or v2); UINT64_MAX when none. */
uint64_t sysmem_cgroup_limit(void);
/* Bytes that can still be made resident without reclaiming what others
 * use: MemAvailable, or less when the cgroup limit leaves less. */
uint64_t sysmem_available(void);

#endif

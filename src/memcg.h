/* memcg: the memory cgroup whose limit binds us, and the room left in it, so
 * that with local-mem auto the budget follows it (docs/DECISIONS.md D49) instead
 * of a headroom fixed at start; the launcher and the memnode size themselves
 * by it too. The cgroup read is the one whose limit binds:
 * the program's own or an ancestor's (v1 memory controller or v2). Plain
 * system calls and stack buffers only: it is read from the fault path. */
#ifndef COMEX_MEMCG_H
#define COMEX_MEMCG_H

#include <stdint.h>

/* Set by comex run in the program's environment when local-mem is auto: the
 * runtime, inside the program's cgroup, then follows it. */
#define MEMCG_AUTO_ENV "COMEX_LOCAL_MEM_AUTO"

/* Finds the binding cgroup and keeps its files open for memcg_room; its
 * limit in bytes. -ENOENT when the program runs under no memory limit. */
int memcg_open(uint64_t *limit_out);
/* Closes what memcg_open kept open (a start that failed after it). */
void memcg_close(void);
/* The binding cgroup's limit and usage now (usage_out may be NULL), in
 * bytes, opening nothing that stays open (for the launcher and the
 * memnode); -ENOENT when no limit. */
int memcg_usage(uint64_t *limit_out, uint64_t *usage_out);
/* Bytes the cgroup can still charge without an OOM kill: its limit minus
 * its usage, plus the page cache the kernel would reclaim first (file pages
 * neither mapped, dirty nor under writeback). Negative when over. When the
 * limit is gone (lifted, or the program moved), the binding cgroup is found
 * again; -ENOENT when there is none. */
int memcg_room(int64_t *room_out);

#endif

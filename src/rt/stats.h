/* stats: the pager's counters, in a shared-memory file
 * /dev/shm/comex-stats.PID so that `comex stats PID` reads them live, and
 * written as JSON at exit (--stats-json). Counters are updated with relaxed
 * atomics by the pager; readers see a consistent-enough snapshot. */
#ifndef COMEX_RT_STATS_H
#define COMEX_RT_STATS_H

#include <stddef.h>
#include <stdint.h>

#define STATS_MAX_NODES 16

/* Every counter, in JSON order: name (also the JSON key), unit. */
#define STATS_COUNTERS(X) \
	X(faults_zero) X(faults_wbuf_hit) X(faults_rbuf_hit) X(faults_remote) \
	X(faults_wp) X(faults_spurious) X(pages_prefetch_mapped) X(prefetch_hits) X(prefetch_wasted) \
	X(pages_evicted) X(pages_written) X(pages_dropped_clean) X(pages_dropped_zero) \
	X(pages_written_clean) X(pages_unmovable) X(pages_unshared) X(pages_corrupt) X(direct_reclaims) \
	X(pages_discarded) X(frames_released) X(remote_reads) X(remote_writes) \
	X(bytes_read) X(bytes_written) \
	X(ns_zero) X(ns_wbuf_hit) X(ns_rbuf_hit) X(ns_remote) X(ns_read) X(ns_evict) \
	X(resident_bytes) X(resident_peak_bytes) X(local_mem_bytes) \
	X(rbuf_bytes) X(wbuf_bytes) X(budget_overshoots) \
	X(outside_rss_bytes) X(managed_bytes) \
	X(memnodes_drained) X(pages_migrated) X(pages_migrated_home) X(pages_lost) X(memnodes_rejoined)

struct stats {
	uint64_t magic;
	int32_t pid, nodes;
#define X(name) uint64_t name;
	STATS_COUNTERS(X)
#undef X
	uint64_t frames_held[STATS_MAX_NODES];
	char node_addr[STATS_MAX_NODES][64];
};

#define STATS_MAGIC 0x3153544154535843ull /* "CXSTATS1" little-endian */

/* Creates the shared file for this process; falls back to private memory
 * (logged) so that a missing /dev/shm never stops the program. */
int stats_create(struct stats **out);
/* Maps another process's counters read-only; -ESRCH if it has none. */
int stats_open(int pid, const struct stats **out);
void stats_unlink(int pid);
/* Renders s as a JSON object into buf; returns the length or -ENOSPC. */
int stats_json(const struct stats *s, char *buf, size_t cap);
/* Writes the JSON to path atomically (temp file + rename). */
int stats_write_json(const struct stats *s, const char *path);

#define STAT_ADD(s, f, v) __atomic_fetch_add(&(s)->f, (v), __ATOMIC_RELAXED)

#endif

/* stats: the pager's counters, in a shared-memory file
 * /dev/shm/comex-stats.PID so that `comex stats PID` reads them live, and
 * written as JSON at exit (--stats-json). Counters are updated with relaxed
 * atomics by the pager; readers see a consistent-enough snapshot. */
#ifndef COMEX_RT_STATS_H
#define COMEX_RT_STATS_H

#include <stddef.h>
#include <stdint.h>

#include "options.h" /* OPT_MEMNODE_MAX: the per-memnode counters */

#define STATS_HIST_BUCKETS 32

/* Every counter, in JSON order: name (also the JSON key), unit. */
#define STATS_COUNTERS(X) \
	X(faults_zero) X(pages_zero_populated) X(faults_wbuf_hit) X(faults_rbuf_hit) X(faults_remote) \
	X(faults_wp) X(faults_spurious) X(pages_prefetch_mapped) X(prefetch_hits) X(prefetch_wasted) \
	X(prefetch_probes_used) X(prefetch_probes_wasted) \
	X(pages_evicted) X(pages_written) X(pages_dropped_clean) X(pages_dropped_zero) \
	X(pages_written_clean) X(pages_written_unchanged) X(pages_written_fill) X(frames_renewed) X(pages_unmovable) X(pages_unshared) X(pages_moved_uncounted) X(pages_corrupt) X(direct_reclaims) \
	X(pages_discarded) X(frames_released) X(remote_reads) X(remote_writes) \
	X(bytes_read) X(bytes_written) \
	X(ns_zero) X(ns_wbuf_hit) X(ns_rbuf_hit) X(ns_remote) X(ns_read) X(ns_evict) \
	X(resident_bytes) X(resident_peak_bytes) X(local_mem_bytes) X(budget_bytes) \
	X(rbuf_bytes) X(wbuf_bytes) X(budget_overshoots) \
	X(outside_rss_bytes) X(managed_bytes) \
	X(memnodes_drained) X(pages_migrated) X(pages_migrated_home) X(pages_lost) X(memnodes_rejoined) \
	X(forks_lazy) X(forks_lazy_ended) X(pages_child_served) \
	X(pages_failed_over) X(pages_rereplicated) X(pages_backup_written) X(pages_backup_read) X(preferred_node) \
	X(locked_bytes) X(locked_all) X(pages_copied_out) X(children_unmanaged) \
	X(pages_brought_home) X(home_held) X(bytes_mapped_outside) X(children_handed) \
	X(outside_anon_bytes) X(outside_anon_peak_bytes) X(budget_unkept_ms) \
	X(reads_hedged) X(writes_hedged) X(reads_steered) X(plans_unlocked) X(plan_waits)

/* What the client library says of its memnodes, written by it as it happens
 * (client_board), read by comex top, stats and the exporter. */
struct stats_board {
	uint64_t waiting_node;       /* 1 + the memnode a wait has lasted over 0.5 s on; 0: none */
	uint64_t waiting_since_ns;   /* when that wait began (now_ns(), CLOCK_MONOTONIC) */
	uint64_t suspect_nodes;      /* bit i: memnode i is suspect (late: steered around) */
	uint64_t memnodes_suspected; /* times a memnode became suspect */
};

struct stats {
	uint64_t magic;
	int32_t pid, nodes;
#define X(name) uint64_t name;
	STATS_COUNTERS(X)
#undef X
	uint64_t frames_held[OPT_MEMNODE_MAX]; /* frames our evicted pages occupy on each memnode */
	char node_addr[OPT_MEMNODE_MAX][64];
	/* Remote-fault latency (fault to mapped page, ns): bucket i counts
	 * latencies in [2^i, 2^(i+1)) ns, bucket 0 also 0 and 1 ns, the last
	 * everything from 2^(STATS_HIST_BUCKETS-1) ns (2.1 s) up. */
	uint64_t hist_remote_ns[STATS_HIST_BUCKETS];
	/* Written by `comex home PID` (1: bring every page home and hold it
	 * there, 0: let go), read by the runtime's home thread, which answers
	 * in home_held (module home). */
	uint64_t home_request;
	struct stats_board board;
};

/* home_held: 0 no, or: */
#define HOME_HELD_YES 1     /* every page is home and eviction paused */
#define HOME_HELD_REFUSED 2 /* asked, but the memory left is too short for the pages away */

#define STATS_MAGIC 0x4353544154535843ull /* "CXSTATSC" little-endian (1: no histogram, 2: no pages_moved_uncounted,
					  * 3: no locked_bytes, 4: no frames_renewed, 5: no budget_bytes,
					  * 6: no children_unmanaged, 7: no outside_anon_bytes,
					  * 8: no prefetch_probes_*, 9: no *_hedged, board,
					  * A: no reads_steered, B: no plans_unlocked,
					  * plan_waits) */

/* Creates the shared file for this process; falls back to private memory
 * (logged) so that a missing /dev/shm never stops the program. */
int stats_create(struct stats **out);
/* Maps another process's counters read-only; -ESRCH if it has none. */
int stats_open(int pid, const struct stats **out);
void stats_close(const struct stats *s);
/* Maps process pid's counters read-write (for home_request); -ESRCH. */
int stats_attach(int pid, struct stats **out);
/* Counts, in the counters of process pid, an exec'd child of it that runs
 * unmanaged (children_unmanaged); -ESRCH if pid has none. */
int stats_note_unmanaged(int pid);
void stats_unlink(int pid);
/* Removes the counters of processes that are gone (killed outright, or a
 * forked child nobody waited for). A process is gone once reaped: a
 * launcher reads its child's counters while the child is still a zombie. */
void stats_sweep(void);
/* Renders s as a JSON object into buf; returns the length or -ENOSPC.
 * STATS_JSON_MAX always suffices. */
#define STATS_JSON_MAX 12288
int stats_json(const struct stats *s, char *buf, size_t cap);
/* Prefetch accuracy: the share of sampled prefetched pages (probes) that
 * were used; coverage: the share of remote pages the program touched that
 * a prefetch had brought (prefetch_hits against faults_remote). -1: none yet. */
void stats_prefetch_shares(const struct stats *s, double *accuracy, double *coverage);
/* Writes the JSON to path atomically (temp file + rename). */
int stats_write_json(const struct stats *s, const char *path);

#define STAT_ADD(s, f, v) __atomic_fetch_add(&(s)->f, (v), __ATOMIC_RELAXED)

/* log2 bucket of a latency in ns (see hist_remote_ns). */
static inline unsigned stats_bucket(uint64_t ns)
{
	unsigned b = ns > 1 ? 63u - (unsigned)__builtin_clzll(ns) : 0;

	return b < STATS_HIST_BUCKETS ? b : STATS_HIST_BUCKETS - 1;
}

/* A remote fault served in ns: its total time and its histogram bucket
 * (two relaxed increments: no malloc, no lock, safe on the fault path). */
static inline void stats_remote_fault(struct stats *s, uint64_t ns)
{
	STAT_ADD(s, ns_remote, ns);
	STAT_ADD(s, hist_remote_ns[stats_bucket(ns)], 1);
}

#endif

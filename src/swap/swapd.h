/* swapd: the comex swap daemon (docs/SWAP.md): connects to the memnodes,
 * mounts the device's FUSE file over a block map, and serves it until the
 * file is unmounted; then gives every frame back. Off the reclaim path's
 * feet: memory locked, an I/O flusher, never the OOM killer's choice. */
#ifndef COMEX_SWAP_SWAPD_H
#define COMEX_SWAP_SWAPD_H

#include <stdint.h>

#include "options.h"
#include "stats.h"

struct options;

/* The counters a daemon keeps in /dev/shm/comex-swap.NAME for comex swap
 * status, comex top and the exporter. */
struct swapd_stats {
	uint64_t magic;                            /* SWAPD_STATS_MAGIC once filled in */
	uint64_t size_bytes, stored_blocks;
	uint64_t degraded_blocks;                  /* stored with fewer than copies copies */
	uint64_t copies_remade;                    /* by re-replication, since up */
	uint64_t reads, writes, discards;          /* requests */
	uint64_t bytes_read, bytes_written;
	uint64_t read_ns, write_ns;                /* time in them, summed */
	uint64_t errors;
	uint64_t reads_hedged, writes_hedged;      /* runs of blocks served by another copy or memnode (late) */
	struct stats_board board;                  /* the client's waits and suspects (stats.h) */
	uint64_t hist_read_ns[STATS_HIST_BUCKETS];  /* per request, log2 buckets as stats.h's */
	uint64_t hist_write_ns[STATS_HIST_BUCKETS];
	int32_t pid;
	uint32_t copies;                           /* option replicas */
	char memnodes[OPT_STR_MAX];                /* option memnode, as given */
	char transport[8];                         /* "uring" or "read": how FUSE requests come (docs/DECISIONS.md D60) */
};

#define SWAPD_STATS_MAGIC 0x3130504157535843ull /* "CXSWAP01" little-endian: this layout */

/* Runs the daemon for the FUSE file path (an existing regular file); ready
 * is a descriptor that gets one byte once the file serves, then is closed.
 * Returns when the file was unmounted: 0, or 1 on failure (logged). */
int swapd_main(const struct options *o, const char *name, const char *path, int ready);
/* Maps the counters of the daemon called name, read-only; -ESRCH when it
 * has none (no file, a shorter one or another layout: another version). */
int swapd_stats_open(const char *name, const struct swapd_stats **out);
void swapd_stats_close(const struct swapd_stats *s);

#endif

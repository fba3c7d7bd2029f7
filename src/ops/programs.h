/* programs: the programs running under comex on this host, found through
 * their counters /dev/shm/comex-stats.PID (src/stats.h), and its comex swap
 * devices, through /dev/shm/comex-swap.NAME (swapd.h); the files of dead
 * processes (a program killed by SIGKILL leaves its file) are skipped. */
#ifndef COMEX_OPS_PROGRAMS_H
#define COMEX_OPS_PROGRAMS_H

#include <stddef.h>
#include <stdint.h>

#include "stats.h"
#include "swapd.h"

struct program {
	int pid;
	char comm[32];   /* /proc/PID/comm */
	struct stats s;  /* a copy taken by programs_snapshot() */
};

/* Snapshots every live program (only pid when pid > 0), by increasing pid,
 * into a malloc'd array. -ESRCH when pid > 0 is not running under comex. */
int programs_snapshot(int pid, struct program **out, size_t *n_out);
/* The entry for pid in a snapshot, or NULL. */
const struct program *programs_find(const struct program *p, size_t n, int pid);
/* The processes (only pid when pid > 0) that were started with the runtime
 * preloaded but publish no counters: waiting to start it (smaller than
 * start-after, D87) or going on unmanaged (D41). Found through their
 * environment (/proc/PID/environ: this user's processes, every one for
 * root); by increasing pid, at most cap, into out. Returns how many. */
struct waiting {
	int pid;
	char comm[32];
};
size_t programs_waiting(int pid, struct waiting *out, size_t cap);
struct swapdev {
	char name[64];          /* the device's name in swap-dir */
	struct swapd_stats s;   /* a copy taken by swapdevs_snapshot() */
};

/* Snapshots every comex swap device whose daemon runs, by name, into a
 * malloc'd array (none: NULL, 0). */
int swapdevs_snapshot(struct swapdev **out, size_t *n_out);
/* The entry for name in a snapshot, or NULL. */
const struct swapdev *swapdevs_find(const struct swapdev *d, size_t n, const char *name);
/* Quantile q (0..1) in ns of a log2 histogram (stats.h buckets), linear
 * within the bucket it falls in; -1 when the histogram is empty. */
double programs_quantile(const uint64_t *hist, double q);
/* How long (ns) the program of s has been waiting on memnode node, once
 * the wait passed 0.5 s (stats_board); 0 when it is not. */
uint64_t programs_waiting_ns(const struct stats *s, int node);

#endif

/* Each frame diffs two snapshots (programs.h) taken one interval apart: rates
 * and latency percentiles are over that interval. A program that started
 * within it has no earlier snapshot and is shown with its counters since
 * start. */
#include "top.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "blockmap.h"
#include "clock.h"
#include "log.h"
#include "programs.h"
#include "proto.h"

#define MIB (1024.0 * 1024.0)

static void print_mib(double bytes)
{
	printf(bytes >= 100 * 1024 * MIB ? " %8.0fG" : " %8.1fM", bytes >= 100 * 1024 * MIB ? bytes / 1024 / MIB : bytes / MIB);
}

/* Counter f of cur minus prev (prev NULL: since start), per second of dt. */
#define RATE(f) ((double)(cur->s.f - (prev ? prev->s.f : 0)) / dt)

/* p50 and p99 in us of a log2 histogram's counts since prev (NULL: since start) */
static void print_quantiles(const uint64_t *cur, const uint64_t *prev)
{
	uint64_t h[STATS_HIST_BUCKETS];
	double p50, p99;

	for (unsigned i = 0; i < STATS_HIST_BUCKETS; i++)
		h[i] = cur[i] - (prev ? prev[i] : 0);
	p50 = programs_quantile(h, 0.50);
	p99 = programs_quantile(h, 0.99);
	if (p50 < 0)
		printf(" %7s %7s", "-", "-");
	else
		printf(" %7.1f %7.1f", p50 / 1e3, p99 / 1e3);
}

/* Each memnode holding pages of the program, or suspect, or waited on:
 * ADDR(SIZE[,suspect][,waiting N s]). */
static void print_memnodes(const struct stats *s)
{
	int shown = 0;

	for (int i = 0; i < s->nodes && i < OPT_MEMNODE_MAX; i++) {
		bool suspect = s->board.suspect_nodes >> i & 1;
		uint64_t wait = programs_waiting_ns(s, i);

		if (!s->frames_held[i] && !suspect && !wait)
			continue;
		printf("%s%s(%.0fM", shown++ ? "," : " ", s->node_addr[i],
		       s->frames_held[i] * (double)PROTO_FRAME_SIZE / MIB);
		if (suspect)
			printf(",suspect");
		if (wait)
			printf(",waiting %.1fs", wait / 1e9);
		printf(")");
	}
	if (!shown)
		printf(" -");
}

/* Prefetch accuracy and coverage since the start, in percent. */
static void print_prefetch(const struct stats *s)
{
	double acc, cov;

	stats_prefetch_shares(s, &acc, &cov);
	if (acc < 0)
		printf(" %5s", "-");
	else
		printf(" %4.0f%%", acc * 100);
	if (cov < 0)
		printf(" %5s", "-");
	else
		printf(" %4.0f%%", cov * 100);
}

static void print_row(const struct program *cur, const struct program *prev, double dt)
{
	uint64_t remote = 0;

	if (!prev)
		dt = 1; /* shown as totals since start (no earlier sample) */
	for (int i = 0; i < OPT_MEMNODE_MAX; i++)
		remote += cur->s.frames_held[i];
	printf("%7d %-15.15s", cur->pid, cur->comm);
	print_mib((double)cur->s.local_mem_bytes);
	print_mib((double)cur->s.resident_bytes);
	print_mib(remote * (double)PROTO_FRAME_SIZE);
	printf(" %8.0f %8.0f %8.0f %8.0f %8.0f", RATE(faults_zero), RATE(faults_wbuf_hit),
	       RATE(faults_rbuf_hit), RATE(faults_remote), RATE(faults_wp));
	print_quantiles(cur->s.hist_remote_ns, prev ? prev->s.hist_remote_ns : NULL);
	print_prefetch(&cur->s);
	printf(" %8.1f %8.1f", RATE(bytes_read) / MIB, RATE(bytes_written) / MIB);
	print_memnodes(&cur->s);
	printf("%s\n", prev ? "" : " (since start)");
}

/* A swap device's row: rates and latencies as a program's */
static void print_swap_row(const struct swapdev *cur, const struct swapdev *prev, double dt)
{
	if (!prev)
		dt = 1; /* shown as totals since start (no earlier sample) */
	printf("%-15.15s %7d", cur->name, (int)cur->s.pid);
	print_mib((double)cur->s.size_bytes);
	print_mib((double)cur->s.stored_blocks * BLOCKMAP_BLOCK);
	printf(" %6u %8llu %8.0f %8.0f", cur->s.copies, (unsigned long long)cur->s.degraded_blocks, RATE(reads),
	       RATE(writes));
	print_quantiles(cur->s.hist_read_ns, prev ? prev->s.hist_read_ns : NULL);
	print_quantiles(cur->s.hist_write_ns, prev ? prev->s.hist_write_ns : NULL);
	printf(" %8.1f %8.1f %7llu %s%s\n", RATE(bytes_read) / MIB, RATE(bytes_written) / MIB,
	       (unsigned long long)cur->s.errors, cur->s.memnodes, prev ? "" : " (since start)");
}

/* Processes under comex that are not paging, listed after the programs */
#define WAITING_SHOWN 32

/* One frame's counters: the programs, and (all programs watched) the swap
 * devices and the processes waiting to start their runtime */
struct snap {
	struct program *p;
	struct swapdev *d;
	size_t np, nd, nw;
	struct waiting w[WAITING_SHOWN];
};

static int snapshot(int pid, struct snap *out)
{
	struct snap s = { 0 };
	int err = programs_snapshot(pid, &s.p, &s.np);

	if (!err && pid <= 0 && (err = swapdevs_snapshot(&s.d, &s.nd)))
		free(s.p);
	if (!err) {
		s.nw = pid > 0 ? 0 : programs_waiting(0, s.w, WAITING_SHOWN);
		*out = s;
	}
	return err;
}

/* The processes waiting to start (or unmanaged), on one line */
static void print_waiting(const struct snap *cur)
{
	if (!cur->nw)
		return;
	printf("not paging (smaller than start-after, or unmanaged):");
	for (size_t i = 0; i < cur->nw; i++)
		printf(" %d %s%s", cur->w[i].pid, cur->w[i].comm, i + 1 < cur->nw ? "," : "");
	printf("%s\n", cur->nw == WAITING_SHOWN ? ", ..." : "");
}

static void snap_free(struct snap *s)
{
	free(s->p);
	free(s->d);
	*s = (struct snap){ 0 };
}

static void print_frame(const struct snap *cur, const struct snap *prev, double dt, bool clear)
{
	char when[16];
	time_t t = time(NULL);

	strftime(when, sizeof(when), "%H:%M:%S", localtime(&t));
	if (clear)
		printf("\033[H\033[2J");
	printf("comex top - %s, %zu program%s under comex, rates over %.1f s\n", when, cur->np, cur->np == 1 ? "" : "s",
	       dt);
	printf("%7s %-15s %9s %9s %9s %8s %8s %8s %8s %8s %7s %7s %5s %5s %8s %8s %s\n", "PID", "COMMAND", "BUDGET",
	       "RESIDENT", "REMOTE", "ZERO/s", "WBUF/s", "RBUF/s", "REMOTE/s", "WP/s", "P50us", "P99us", "PFACC",
	       "PFCOV", "RD_MB/s", "WR_MB/s", "MEMNODES");
	for (size_t i = 0; i < cur->np; i++)
		print_row(&cur->p[i], programs_find(prev->p, prev->np, cur->p[i].pid), dt);
	print_waiting(cur);
	if (cur->nd) {
		printf("\n%zu comex swap device%s (request latency percentiles in us)\n", cur->nd, cur->nd == 1 ? "" : "s");
		printf("%-15s %7s %9s %9s %6s %8s %8s %8s %7s %7s %7s %7s %8s %8s %7s %s\n", "SWAP", "PID", "SIZE",
		       "STORED", "COPIES", "DEGRADED", "READS/s", "WRITES/s", "RD_P50", "RD_P99", "WR_P50", "WR_P99",
		       "RD_MB/s", "WR_MB/s", "ERRORS", "MEMNODES");
		for (size_t i = 0; i < cur->nd; i++)
			print_swap_row(&cur->d[i], swapdevs_find(prev->d, prev->nd, cur->d[i].name), dt);
	}
	fflush(stdout);
}

int top_main(const struct top_args *a)
{
	struct snap prev = { 0 }, cur = { 0 };
	double t_prev, t;
	int err;

	if ((err = snapshot(a->pid, &prev))) {
		struct waiting w;

		if (programs_waiting(a->pid, &w, 1))
			log_error("top: process %d (%s) runs under comex but pages nothing: its runtime has not started "
				  "(it has allocated less than start-after), or could not and it goes on unmanaged",
				  a->pid, w.comm);
		else
			log_error("top: process %d is not running under comex (no /dev/shm/comex-stats.%d)", a->pid,
				  a->pid);
		return 1;
	}
	t_prev = now_s();
	for (;;) {
		sleep_s(a->interval_s);
		err = snapshot(a->pid, &cur);
		t = now_s();
		if (err == -ESRCH) { /* the one program watched has ended */
			printf("process %d has exited\n", a->pid);
			break;
		}
		if (err) {
			log_error("top: reading the counters: %s", strerror(-err));
			break;
		}
		print_frame(&cur, &prev, t - t_prev, !a->once && isatty(STDOUT_FILENO));
		snap_free(&prev);
		prev = cur, t_prev = t;
		cur = (struct snap){ 0 };
		if (a->once)
			break;
	}
	snap_free(&prev);
	return err && err != -ESRCH ? 1 : 0;
}

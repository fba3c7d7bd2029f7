/* Families are written one at a time with every program's sample beneath
 * (the format wants a family's samples together), labelled pid and command,
 * then the comex swap devices', labelled device. Values come from one
 * snapshot per scrape (programs.h). */
#include "exporter.h"

#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "blockmap.h"
#include "http_metrics.h"
#include "log.h"
#include "programs.h"
#include "proto.h"

#define EXPORTER_LISTEN "127.0.0.1:9730"

#define FIELD(f) offsetof(struct program, s.f)

/* One sample per program (per swap device in swap_families): counter or
 * gauge at offset off of its record, times scale. */
static const struct family {
	const char *name, *type, *help;
	size_t off;
	double scale;
} families[] = {
	{ "comex_program_budget_bytes", "gauge", "Resident memory budget (local-mem).", FIELD(local_mem_bytes), 1 },
	{ "comex_program_resident_bytes", "gauge", "Managed memory resident now.", FIELD(resident_bytes), 1 },
	{ "comex_program_resident_peak_bytes", "gauge", "Highest resident managed memory.", FIELD(resident_peak_bytes), 1 },
	{ "comex_program_managed_bytes", "gauge", "Address space the pager manages.", FIELD(managed_bytes), 1 },
	{ "comex_program_locked_bytes", "gauge", "Managed memory the program locked (mlock): never evicted.", FIELD(locked_bytes), 1 },
	{ "comex_program_read_bytes_total", "counter", "Bytes read from memnodes.", FIELD(bytes_read), 1 },
	{ "comex_program_written_bytes_total", "counter", "Bytes written to memnodes.", FIELD(bytes_written), 1 },
	{ "comex_program_remote_reads_total", "counter", "Read transfers from memnodes.", FIELD(remote_reads), 1 },
	{ "comex_program_remote_writes_total", "counter", "Write transfers to memnodes.", FIELD(remote_writes), 1 },
	{ "comex_program_evicted_pages_total", "counter", "Pages evicted from local memory.", FIELD(pages_evicted), 1 },
	{ "comex_program_prefetch_mapped_pages_total", "counter", "Neighbour pages mapped by a remote read.", FIELD(pages_prefetch_mapped), 1 },
	{ "comex_program_prefetch_hits_total", "counter", "Prefetched pages of plans whose stream continued.", FIELD(prefetch_hits), 1 },
	{ "comex_program_prefetch_wasted_total", "counter", "Prefetched pages of plans dropped before their stream continued.", FIELD(prefetch_wasted), 1 },
	{ "comex_program_prefetch_probes_used_total", "counter", "Sampled prefetched pages (probes) the program touched.", FIELD(prefetch_probes_used), 1 },
	{ "comex_program_prefetch_probes_wasted_total", "counter", "Sampled prefetched pages (probes) never touched.", FIELD(prefetch_probes_wasted), 1 },
	{ "comex_program_direct_reclaims_total", "counter", "Faults that had to evict themselves.", FIELD(direct_reclaims), 1 },
	{ "comex_program_budget_overshoots_total", "counter", "Times residency went over budget.", FIELD(budget_overshoots), 1 },
	{ "comex_program_hedged_reads_total", "counter", "Reads sent again to another copy because their memnode answered late.", FIELD(reads_hedged), 1 },
	{ "comex_program_steered_reads_total", "counter", "Reads sent to another copy at once, their memnode suspect or slow (not sent twice).", FIELD(reads_steered), 1 },
	{ "comex_program_hedged_writes_total", "counter", "Writes given up on a late or suspect memnode (the pages' other copies stand in).", FIELD(writes_hedged), 1 },
	{ "comex_program_memnodes_suspected_total", "counter", "Times a memnode became suspect (late: steered around).", FIELD(board.memnodes_suspected), 1 },
};

/* Faults by kind: count and time spent. */
static const struct kind { const char *kind; size_t count, ns; } kinds[] = {
	{ "zero", FIELD(faults_zero), FIELD(ns_zero) },
	{ "wbuf", FIELD(faults_wbuf_hit), FIELD(ns_wbuf_hit) },
	{ "rbuf", FIELD(faults_rbuf_hit), FIELD(ns_rbuf_hit) },
	{ "remote", FIELD(faults_remote), FIELD(ns_remote) },
	{ "wp", FIELD(faults_wp), 0 },
	{ "spurious", FIELD(faults_spurious), 0 },
};

#define SWAP_FIELD(f) offsetof(struct swapdev, s.f)

/* One sample per comex swap device (label device, its name), as families[]
 * (64-bit fields only) */
static const struct family swap_families[] = {
	{ "comex_swap_size_bytes", "gauge", "Size of the swap device.", SWAP_FIELD(size_bytes), 1 },
	{ "comex_swap_stored_bytes", "gauge", "Swapped-out data the device holds on memnodes (once, whatever the copies).", SWAP_FIELD(stored_blocks), BLOCKMAP_BLOCK },
	{ "comex_swap_degraded_blocks", "gauge", "Blocks stored with fewer copies than asked (memnodes lost).", SWAP_FIELD(degraded_blocks), 1 },
	{ "comex_swap_copies_remade_total", "counter", "Block copies remade by re-replication.", SWAP_FIELD(copies_remade), 1 },
	{ "comex_swap_reads_total", "counter", "Read requests (swap-ins) served.", SWAP_FIELD(reads), 1 },
	{ "comex_swap_writes_total", "counter", "Write requests (swap-outs) served.", SWAP_FIELD(writes), 1 },
	{ "comex_swap_discards_total", "counter", "Discard requests (freed swap) served.", SWAP_FIELD(discards), 1 },
	{ "comex_swap_read_bytes_total", "counter", "Bytes read from the device.", SWAP_FIELD(bytes_read), 1 },
	{ "comex_swap_written_bytes_total", "counter", "Bytes written to the device.", SWAP_FIELD(bytes_written), 1 },
	{ "comex_swap_errors_total", "counter", "Requests failed.", SWAP_FIELD(errors), 1 },
};

static double at(const void *rec, size_t off)
{
	return (double)*(const uint64_t *)((const char *)rec + off);
}

/* Families fams[0..nf), each with a sample of each of the n records at
 * recs (size bytes apart), labelled by label. */
static void write_families(FILE *f, const struct family *fams, size_t nf, const void *recs, size_t size, size_t n,
			   void (*label)(const void *rec, char *buf, size_t cap))
{
	char l[256];

	for (size_t k = 0; k < nf; k++) {
		prom_family(f, fams[k].name, fams[k].type, fams[k].help);
		for (size_t i = 0; i < n; i++) {
			const void *rec = (const char *)recs + i * size;

			label(rec, l, sizeof(l));
			prom_sample(f, fams[k].name, l, at(rec, fams[k].off) * fams[k].scale);
		}
	}
}

/* pid="…",command="…" with the command escaped as the format requires. */
static void labels(const struct program *p, const char *extra, char *buf, size_t cap)
{
	char comm[2 * sizeof(p->comm)];
	size_t j = 0;

	for (const char *c = p->comm; *c && j + 2 < sizeof(comm); c++) {
		if (*c == '"' || *c == '\\')
			comm[j++] = '\\';
		comm[j++] = *c == '\n' ? ' ' : *c;
	}
	comm[j] = 0;
	snprintf(buf, cap, "pid=\"%d\",command=\"%s\"%s%s", p->pid, comm, extra ? "," : "", extra ? extra : "");
}

static void program_label(const void *p, char *buf, size_t cap) { labels(p, NULL, buf, cap); }

/* Histogram name's samples of a log2 histogram (stats.h buckets) of ns
 * (sum_ns in all), labelled l (the le label added to its buckets). */
static void write_histogram(FILE *f, const char *name, const char *l, const uint64_t *hist, uint64_t sum_ns)
{
	char bl[320], sample[96];
	uint64_t cum = 0;

	snprintf(sample, sizeof(sample), "%s_bucket", name);
	for (unsigned i = 0; i < STATS_HIST_BUCKETS; i++) {
		cum += hist[i];
		if (i + 1 < STATS_HIST_BUCKETS) /* bucket i ends at 2^(i+1) ns */
			snprintf(bl, sizeof(bl), "%s,le=\"%.9g\"", l, (double)(1ull << (i + 1)) / 1e9);
		else
			snprintf(bl, sizeof(bl), "%s,le=\"+Inf\"", l);
		prom_sample(f, sample, bl, (double)cum);
	}
	snprintf(sample, sizeof(sample), "%s_sum", name);
	prom_sample(f, sample, l, (double)sum_ns / 1e9);
	/* the buckets' total, not a count kept beside them: a separate counter
	 * that a scrape may see one increment apart */
	snprintf(sample, sizeof(sample), "%s_count", name);
	prom_sample(f, sample, l, (double)cum);
}

/* Per memnode: what the program's pages occupy there, whether it is
 * suspect (1) and how long the program has been waiting on it (seconds,
 * 0 unless a wait passed 0.5 s). */
static void write_memnodes(FILE *f, const struct program *p, int what)
{
	static const char *const name[] = { "comex_program_remote_bytes", "comex_program_memnode_suspect",
					    "comex_program_memnode_waiting_seconds" };
	char l[256], node[96];

	for (int i = 0; i < p->s.nodes && i < OPT_MEMNODE_MAX; i++) {
		double v = what == 0 ? p->s.frames_held[i] * (double)PROTO_FRAME_SIZE
			 : what == 1 ? (double)(p->s.board.suspect_nodes >> i & 1)
			 : programs_waiting_ns(&p->s, i) / 1e9;

		snprintf(node, sizeof(node), "memnode=\"%.63s\"", p->s.node_addr[i]);
		labels(p, node, l, sizeof(l));
		prom_sample(f, name[what], l, v);
	}
}

/* One family over kinds[]: the fault counts, or (ns) the time they took. */
static void write_kinds(FILE *f, const struct program *ps, size_t n, const char *name, const char *help, bool ns)
{
	char l[256], kind[32];

	prom_family(f, name, "counter", help);
	for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++)
		for (size_t i = 0; i < n && (!ns || kinds[k].ns); i++) {
			snprintf(kind, sizeof(kind), "kind=\"%s\"", kinds[k].kind);
			labels(&ps[i], kind, l, sizeof(l));
			prom_sample(f, name, l, ns ? at(&ps[i], kinds[k].ns) / 1e9 : at(&ps[i], kinds[k].count));
		}
}

/* device="NAME" (names are letters, digits, - and _), and op="OP" unless NULL */
static void swap_labels(const struct swapdev *d, const char *op, char *buf, size_t cap)
{
	snprintf(buf, cap, "device=\"%s\"%s%s%s", d->name, op ? ",op=\"" : "", op ? op : "", op ? "\"" : "");
}

static void swap_label(const void *d, char *buf, size_t cap) { swap_labels(d, NULL, buf, cap); }

/* The families of this host's comex swap devices */
static int write_swap(FILE *f)
{
	struct swapdev *d;
	size_t n;
	char l[96];
	int err = swapdevs_snapshot(&d, &n);

	if (err)
		return err;
	prom_family(f, "comex_swap_devices", "gauge", "comex swap devices on this host whose daemon runs.");
	prom_sample(f, "comex_swap_devices", NULL, (double)n);
	write_families(f, swap_families, sizeof(swap_families) / sizeof(swap_families[0]), d, sizeof(*d), n,
		       swap_label);
	prom_family(f, "comex_swap_copies", "gauge", "Copies kept of every block (option replicas).");
	for (size_t i = 0; i < n; i++) {
		swap_labels(&d[i], NULL, l, sizeof(l));
		prom_sample(f, "comex_swap_copies", l, d[i].s.copies); /* 32 bits: not in swap_families */
	}
	prom_family(f, "comex_swap_request_seconds", "histogram", "Time to serve a read or write request (log2 buckets).");
	for (size_t i = 0; i < n; i++) {
		swap_labels(&d[i], "read", l, sizeof(l));
		write_histogram(f, "comex_swap_request_seconds", l, d[i].s.hist_read_ns, d[i].s.read_ns);
		swap_labels(&d[i], "write", l, sizeof(l));
		write_histogram(f, "comex_swap_request_seconds", l, d[i].s.hist_write_ns, d[i].s.write_ns);
	}
	free(d);
	return 0;
}

int exporter_render(void *unused, FILE *f)
{
	struct program *ps;
	size_t n;
	char l[256];
	int err = programs_snapshot(0, &ps, &n);

	(void)unused;
	if (err)
		return err;
	prom_family(f, "comex_programs", "gauge", "Programs running under comex on this host.");
	prom_sample(f, "comex_programs", NULL, (double)n);
	write_families(f, families, sizeof(families) / sizeof(families[0]), ps, sizeof(*ps), n, program_label);
	write_kinds(f, ps, n, "comex_program_faults_total", "Page faults served, by kind.", false);
	write_kinds(f, ps, n, "comex_program_fault_seconds_total", "Time spent serving faults, by kind.", true);
	prom_family(f, "comex_program_remote_bytes", "gauge", "Memory the program's evicted pages occupy, per memnode.");
	for (size_t i = 0; i < n; i++)
		write_memnodes(f, &ps[i], 0);
	prom_family(f, "comex_program_memnode_suspect", "gauge",
		    "1 while the memnode is suspect for the program: it was late, and is steered around.");
	for (size_t i = 0; i < n; i++)
		write_memnodes(f, &ps[i], 1);
	prom_family(f, "comex_program_memnode_waiting_seconds", "gauge",
		    "How long the program has been waiting on the memnode, once a wait passed 0.5 s; else 0.");
	for (size_t i = 0; i < n; i++)
		write_memnodes(f, &ps[i], 2);
	prom_family(f, "comex_program_remote_fault_seconds", "histogram",
		    "Time from a remote fault to its page mapped (log2 buckets).");
	for (size_t i = 0; i < n; i++) {
		labels(&ps[i], NULL, l, sizeof(l));
		write_histogram(f, "comex_program_remote_fault_seconds", l, ps[i].s.hist_remote_ns, ps[i].s.ns_remote);
	}
	free(ps);
	if (!err)
		err = write_swap(f);
	return err ? err : ferror(f) ? -EIO : 0;
}

int exporter_main(const char *listen, bool once)
{
	struct http_metrics *h;
	unsigned port = 0;
	sigset_t stop;
	int sig;

	if (!listen)
		listen = EXPORTER_LISTEN;
	if (once)
		return exporter_render(NULL, stdout) ? 1 : 0;
	sigemptyset(&stop);
	sigaddset(&stop, SIGINT);
	sigaddset(&stop, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &stop, NULL);
	if (http_metrics_start(listen, exporter_render, NULL, &h, &port))
		return 1;
	log_info("serving the counters of this host's comex programs on http://%s/metrics (port %u)", listen, port);
	sigwait(&stop, &sig);
	http_metrics_stop(h);
	return 0;
}

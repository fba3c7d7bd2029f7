/* swap: the comex swap commands. Each device NAME (0, 1, ...) has, in
 * swap-dir: NAME.dev (the FUSE file its daemon serves, which the loop device
 * reads), NAME.pid (the daemon), NAME.loop (the loop device's path) and
 * NAME.log (the daemon's log). The daemon is forked from `up` and runs in
 * its own session; `down` swaps off, detaches the loop device and unmounts
 * the file, and the daemon ends once the kernel lets go of it. */
#include "swap.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "embedded.h"
#include "json.h"
#include "log.h"
#include "options.h"
#include "paths.h"
#include "programs.h"
#include "blockmap.h"
#include "swapd.h"

#define UP_TIMEOUT_MS 60000   /* the daemon connects to its memnodes (connect-timeout 30 s) and mounts */
#define DOWN_WAIT_S 60        /* the daemon gives its frames back after the kernel let go of the file */

/* swap-dir/NAME.EXT; an empty path (which every use then fails on) when
 * swap-dir is too long for it. */
static void file_of(const struct options *o, const char *name, const char *ext, char *out, size_t cap)
{
	int n = snprintf(out, cap, "%s/%s.%s", opt_str(o, OPT_SWAP_DIR), name, ext);

	if (n < 0 || (size_t)n >= cap)
		out[0] = 0;
}

static int write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	if (!f || fputs(text, f) < 0 || fclose(f)) {
		log_error("cannot write %s: %m", path);
		return -EIO;
	}
	return 0;
}

static int read_line(const char *path, char *out, size_t cap)
{
	FILE *f = fopen(path, "r");
	bool ok = f && fgets(out, (int)cap, f);

	if (f)
		fclose(f);
	if (!ok)
		return -ENOENT;
	out[strcspn(out, "\n")] = 0;
	return 0;
}

/* Runs a command line; its first output line into out (if out). 0 when it
 * exited 0, else -EIO (its stderr went to ours). */
static int run_cmd(const char *cmd, char *out, size_t cap)
{
	FILE *p = popen(cmd, "r");
	char line[256] = "";
	bool got = p && fgets(line, sizeof(line), p);
	int st = p ? pclose(p) : -1;

	if (st != 0) {
		log_error("'%s' failed (status %d)", cmd, st);
		return -EIO;
	}
	if (out) {
		if (!got)
			return -EIO;
		line[strcspn(line, "\n")] = 0;
		snprintf(out, cap, "%s", line);
	}
	return 0;
}

/* The first name 0, 1, ... without a daemon's pid file. */
static void free_name(const struct options *o, char *name, size_t cap)
{
	char path[512];

	for (unsigned i = 0;; i++) {
		snprintf(name, cap, "%u", i);
		file_of(o, name, "pid", path, sizeof(path));
		if (access(path, F_OK))
			return;
	}
}

/* Option name, checked and not in use, or the first free number. */
static int pick_name(const struct options *o, char *name, size_t cap)
{
	const char *want = opt_str(o, OPT_SWAP_NAME);
	char path[512];

	if (!*want) {
		free_name(o, name, cap);
		return 0;
	}
	if (strlen(want) >= cap || strspn(want, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_") !=
	    strlen(want)) {
		log_error("option name: '%s' is not a device name (up to %zu letters, digits, - and _)", want, cap - 1);
		return -EINVAL;
	}
	file_of(o, want, "pid", path, sizeof(path));
	if (!access(path, F_OK)) {
		log_error("option name: a comex swap device called '%s' is up already (%s)", want, path);
		return -EEXIST;
	}
	memcpy(name, want, strlen(want) + 1);
	return 0;
}

static bool embedded_wanted(const struct options *o);

static unsigned memnodes_given(const struct options *o)
{
	char item[OPT_STR_MAX];
	unsigned n = 0;

	while (!opt_list_item(o, OPT_MEMNODE, n, item, sizeof(item)))
		n++;
	return n;
}

static int check_up_args(const struct options *o)
{
	uint64_t size = opt_num(o, OPT_SWAP_SIZE), copies = opt_num(o, OPT_REPLICAS);
	unsigned nodes = embedded_wanted(o) ? 1 : memnodes_given(o);

	if (size < (1u << 20) || size % 4096) {
		log_error("option size: a swap device of at least 1 MiB, in whole 4 KiB pages, is needed (got %llu bytes)",
			  (unsigned long long)size);
		return -EINVAL;
	}
	if (copies < 1 || copies > BLOCKMAP_MAX_COPIES || copies > nodes) {
		log_error("option replicas: %llu copies of each page need as many memnodes (1 to %u); %u %s", (unsigned long long)copies,
			  BLOCKMAP_MAX_COPIES, nodes, embedded_wanted(o) ? "embedded (pass --memnode)" : "given");
		return -EINVAL;
	}
	if (copies == 1 && !embedded_wanted(o) && !opt_num(o, OPT_SINGLE_COPY)) {
		log_error("with replicas 1, comex swap keeps one copy of each page: if a memnode is lost while it holds "
			  "pages, the kernel cannot swap them in and kills the processes whose pages they were. Pass "
			  "--replicas 2 (two memnodes or more), or --single-copy to accept that (docs/DECISIONS.md D57)");
		return -EINVAL;
	}
	if (geteuid() != 0) {
		log_error("comex swap needs root (mount, losetup, swapon)");
		return -EPERM;
	}
	return 0;
}

/* Whether up starts a memnode of its own: no memnode was given. */
static bool embedded_wanted(const struct options *o) { return !strcmp(o->v[OPT_MEMNODE].origin, "default"); }

/* The embedded memnode's pool: the device's size, plus what the client's
 * frame pools hold ahead (replenish-threshold frames) and frames released
 * but not yet returned (release-batch), with room to spare: 1/32 of the
 * size, at least 32 MiB. Fixed, populated and locked at start, so that a
 * swap-out never waits for the pool to grow (D56, D58). */
static uint64_t embedded_pool_bytes(uint64_t size)
{
	uint64_t slack = size / 32;

	return size + (slack < (32u << 20) ? (32u << 20) : slack);
}

/* In the forked daemon: starts the embedded memnode when wanted (it dies
 * with this process), then serves the device until it is unmounted. */
static int run_daemon(const struct options *given, const char *name, const char *dev, int ready)
{
	static struct options o; /* the daemon's copy, pointed at the embedded memnode */
	struct embedded e = { .pool_fd = -1 };
	struct embedded_cfg cfg = { .pool = embedded_pool_bytes(opt_num(given, OPT_SWAP_SIZE)), .direct = true,
				    .reclaim_safe = true };
	char addr[64];
	int rc = 1;

	o = *given;
	if (embedded_wanted(&o)) {
		/* the memnode serves this daemon only: shared memory with it is safe */
		setenv("COMEX_SHM", "true", 1);
		if (embedded_start(&o, &cfg, &e, addr, sizeof(addr)) ||
		    options_set(&o, "memnode", addr, "embedded memnode") ||
		    options_set(&o, "token-file", getenv("COMEX_TOKEN_FILE"), "embedded memnode") ||
		    options_set(&o, "shm", "true", "embedded memnode"))
			goto stop_memnode;
		embedded_pass_pool_file(&e, addr);
		embedded_note_user(&e, getpid());
	}
	rc = swapd_main(&o, name, dev, ready);
stop_memnode:
	embedded_stop(&e, rc != 0, rc, false);
	return rc;
}

/* Forks the daemon for name; returns its pid once the file serves. */
static pid_t start_daemon(const struct options *o, const char *name, const char *dev)
{
	char logp[512];
	int p[2];
	pid_t pid;
	char c = 0;

	file_of(o, name, "log", logp, sizeof(logp));
	if (pipe2(p, O_CLOEXEC))
		return -errno;
	if ((pid = fork()) < 0)
		return -errno;
	if (!pid) {
		int fd = open(logp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644), nul = open("/dev/null", O_RDWR);

		close(p[0]);
		setsid();
		if (fd >= 0)
			dup2(fd, 2);
		if (nul >= 0)
			dup2(nul, 0), dup2(nul, 1);
		log_set_prefix("comex-swap");
		_exit(run_daemon(o, name, dev, p[1]));
	}
	close(p[1]);
	struct pollfd pf = { .fd = p[0], .events = POLLIN };
	if (poll(&pf, 1, UP_TIMEOUT_MS) != 1 || read(p[0], &c, 1) != 1 || c != 'r') {
		char line[512];
		FILE *f = fopen(logp, "r");

		log_error("the swap daemon did not come up; its log (%s):", logp);
		while (f && fgets(line, sizeof(line), f))
			fprintf(stderr, "  %s", line);
		if (f)
			fclose(f);
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		close(p[0]);
		return -EIO;
	}
	close(p[0]);
	return pid;
}

/* Unmounts the file: the daemon ends once nothing holds it; waits for that. */
static int stop_daemon(const char *dev, pid_t pid)
{
	umount2(dev, MNT_DETACH);
	for (int i = 0; i < DOWN_WAIT_S * 10; i++) {
		if (waitpid(pid, NULL, WNOHANG) == pid || kill(pid, 0))
			return 0;
		usleep(100000); /* waiting for the daemon to give its frames back, not timing */
	}
	log_error("the swap daemon (pid %d) did not end within %d s", (int)pid, DOWN_WAIT_S);
	return -ETIMEDOUT;
}

int swap_up(const struct options *o)
{
	char name[32], dev[512], pidp[512], loopp[512], loop[64] = "", cmd[1024], num[32];
	pid_t pid;
	int fd;

	if (check_up_args(o))
		return 2;
	if (paths_make_dirs(opt_str(o, OPT_SWAP_DIR), strlen(opt_str(o, OPT_SWAP_DIR)))) { /* /run/comex: fresh machines lack it */
		log_error("cannot create swap-dir %s: %m", opt_str(o, OPT_SWAP_DIR));
		return 1;
	}
	if (pick_name(o, name, sizeof(name)))
		return 2;
	file_of(o, name, "dev", dev, sizeof(dev));
	file_of(o, name, "pid", pidp, sizeof(pidp));
	file_of(o, name, "loop", loopp, sizeof(loopp));
	if ((fd = open(dev, O_WRONLY | O_CREAT | O_CLOEXEC, 0600)) < 0) {
		log_error("cannot create %s: %m", dev);
		return 1;
	}
	close(fd);
	if ((pid = start_daemon(o, name, dev)) < 0)
		goto remove_file;
	snprintf(num, sizeof(num), "%d\n", (int)pid);
	if (write_file(pidp, num))
		goto stop;
	snprintf(cmd, sizeof(cmd), "losetup --direct-io=on --find --show '%s'", dev);
	if (run_cmd(cmd, loop, sizeof(loop)))
		goto stop;
	snprintf(cmd, sizeof(cmd), "mkswap -L comex-swap-%s '%s' >/dev/null && swapon --discard --priority %llu '%s'",
		 name, loop, (unsigned long long)opt_num(o, OPT_SWAP_PRIORITY), loop);
	if (write_file(loopp, loop) || run_cmd(cmd, NULL, 0))
		goto detach;
	log_info("swap device %s: %llu MiB on memnodes (a FUSE file behind the loop device), served by pid %d (comex swap "
		 "down %s)", loop,
		 (unsigned long long)(opt_num(o, OPT_SWAP_SIZE) >> 20), (int)pid, loop);
	printf("%s\n", loop);
	return 0;
detach:
	snprintf(cmd, sizeof(cmd), "losetup -d '%s'", loop);
	run_cmd(cmd, NULL, 0);
	unlink(loopp);
stop:
	stop_daemon(dev, pid);
	unlink(pidp);
remove_file:
	unlink(dev);
	return 1;
}

/* The name whose loop file holds device (or device itself, if a name). */
static int find_name(const struct options *o, const char *device, char *name, size_t cap)
{
	DIR *d = opendir(opt_str(o, OPT_SWAP_DIR));
	struct dirent *e;
	int err = -ENOENT;

	while (d && (e = readdir(d)) && err) {
		char path[512], loop[64], *dot = strrchr(e->d_name, '.');

		if (!dot || strcmp(dot, ".loop"))
			continue;
		*dot = 0;
		file_of(o, e->d_name, "loop", path, sizeof(path));
		if (((!read_line(path, loop, sizeof(loop)) && !strcmp(loop, device)) || !strcmp(e->d_name, device)) &&
		    strlen(e->d_name) < cap) {
			memcpy(name, e->d_name, strlen(e->d_name) + 1);
			err = 0;
		}
	}
	if (d)
		closedir(d);
	return err;
}

/* Whether the kernel swaps to dev now (/proc/swaps); an operator may have
 * swapped it off by hand before down. */
static bool swap_active(const char *dev)
{
	char line[512];
	size_t n = strlen(dev);
	FILE *f = fopen("/proc/swaps", "re");
	bool on = false;

	while (f && !on && fgets(line, sizeof(line), f))
		on = !strncmp(line, dev, n) && (line[n] == ' ' || line[n] == '\t');
	if (f)
		fclose(f);
	return on || !f;
}

int swap_down(const struct options *o, const char *device)
{
	char name[64], dev[512], pidp[512], loopp[512], logp[512], loop[64], cmd[640], num[32];
	pid_t pid;

	if (find_name(o, device, name, sizeof(name))) {
		log_error("%s is no comex swap device (none in %s)", device, opt_str(o, OPT_SWAP_DIR));
		return 1;
	}
	file_of(o, name, "dev", dev, sizeof(dev));
	file_of(o, name, "pid", pidp, sizeof(pidp));
	file_of(o, name, "loop", loopp, sizeof(loopp));
	file_of(o, name, "log", logp, sizeof(logp));
	if (read_line(loopp, loop, sizeof(loop)) || read_line(pidp, num, sizeof(num)))
		return 1;
	pid = (pid_t)atoi(num);
	snprintf(cmd, sizeof(cmd), "swapoff '%s'", loop);
	if (swap_active(loop) && run_cmd(cmd, NULL, 0)) {
		log_error("%s stays in use: swapoff must bring every page on it back into RAM first", loop);
		return 1;
	}
	snprintf(cmd, sizeof(cmd), "losetup -d '%s'", loop);
	run_cmd(cmd, NULL, 0);
	if (stop_daemon(dev, pid))
		return 1;
	unlink(loopp);
	unlink(pidp);
	unlink(dev);
	unlink(logp);
	return 0;
}

#define STATUS_DEVICES 64   /* devices one status lists */
#define STATUS_SAMPLE_MS 1000 /* the window of the request rates */

struct status_row {
	char name[64], loop[64];
	const struct swapd_stats *st;
	uint64_t reads0, writes0;
};

/* The devices in swap-dir whose daemon runs, with their counters now. */
static unsigned status_rows(const struct options *o, struct status_row *rows)
{
	DIR *d = opendir(opt_str(o, OPT_SWAP_DIR));
	struct dirent *e;
	unsigned n = 0;

	while (d && n < STATUS_DEVICES && (e = readdir(d))) {
		char path[512], *dot = strrchr(e->d_name, '.');
		struct status_row *r = &rows[n];

		if (!dot || strcmp(dot, ".pid") || (size_t)(dot - e->d_name) >= sizeof(r->name))
			continue;
		*dot = 0;
		memcpy(r->name, e->d_name, (size_t)(dot - e->d_name) + 1);
		snprintf(r->loop, sizeof(r->loop), "-");
		file_of(o, r->name, "loop", path, sizeof(path));
		read_line(path, r->loop, sizeof(r->loop));
		if (swapd_stats_open(r->name, &r->st))
			continue; /* its daemon is gone */
		r->reads0 = __atomic_load_n(&r->st->reads, __ATOMIC_RELAXED);
		r->writes0 = __atomic_load_n(&r->st->writes, __ATOMIC_RELAXED);
		n++;
	}
	if (d)
		closedir(d);
	return n;
}

/* " (suspect: 0,2; waiting on 1)": the memnodes (by number in option
 * memnode's list) the daemon steers around and the one it waits on, or "". */
static const char *suspects_note(const struct swapd_stats *st, char *buf, size_t cap)
{
	uint64_t s = st->board.suspect_nodes, w = st->board.waiting_node;
	size_t len = 0;

	buf[0] = 0;
	for (unsigned i = 0; i < 64 && len < cap; i++)
		if (s >> i & 1)
			len += (size_t)snprintf(buf + len, cap - len, "%s%u", len ? "," : " (suspect: ", i);
	if (w && len < cap)
		len += (size_t)snprintf(buf + len, cap - len, "%swaiting on %llu", len ? "; " : " (",
					(unsigned long long)w - 1);
	if (len && len < cap)
		snprintf(buf + len, cap - len, ")");
	return buf;
}

/* A device's row: in the table, or (j) as an object of the JSON array */
static void status_print(const struct status_row *r, struct json *j)
{
	const struct swapd_stats *st = r->st;
	double rps = (double)(st->reads - r->reads0) * 1000 / STATUS_SAMPLE_MS,
	       wps = (double)(st->writes - r->writes0) * 1000 / STATUS_SAMPLE_MS;
	/* request latency in us from the log2 histograms; -1 with none yet */
	double lat[4] = { programs_quantile(st->hist_read_ns, 0.5), programs_quantile(st->hist_read_ns, 0.99),
			  programs_quantile(st->hist_write_ns, 0.5), programs_quantile(st->hist_write_ns, 0.99) };
	static const char *const lat_keys[4] = { "read_p50_us", "read_p99_us", "write_p50_us", "write_p99_us" };
	char copies[24], note[96];

	for (int i = 0; i < 4; i++)
		lat[i] = lat[i] < 0 ? -1 : lat[i] / 1000;
	/* "2", or "2(-5)" while 5 blocks have fewer copies (memnodes lost) */
	snprintf(copies, sizeof(copies), st->degraded_blocks ? "%u(-%llu)" : "%u", st->copies,
		 (unsigned long long)st->degraded_blocks);
	if (!j) {
		printf("%-8s %-12s %8d %9llu %10llu %8s %9.0f %9.0f %8.1f %8.1f %8.1f %8.1f %7llu  %s%s\n", r->name, r->loop,
		       st->pid, (unsigned long long)(st->size_bytes >> 20), (unsigned long long)(st->stored_blocks >> 8),
		       copies, rps, wps, lat[0], lat[1], lat[2], lat[3], (unsigned long long)st->errors, st->memnodes,
		       suspects_note(st, note, sizeof(note)));
		return;
	}
	json_open(j, NULL, '{', false);
	json_str(j, "name", r->name);
	json_str(j, "device", r->loop);
	json_int(j, "pid", st->pid);
	json_uint(j, "size_bytes", st->size_bytes);
	json_uint(j, "stored_blocks", st->stored_blocks);
	json_uint(j, "reads", st->reads);
	json_uint(j, "writes", st->writes);
	json_num(j, "reads_per_s", "%.1f", rps);
	json_num(j, "writes_per_s", "%.1f", wps);
	json_uint(j, "discards", st->discards);
	json_uint(j, "bytes_read", st->bytes_read);
	json_uint(j, "bytes_written", st->bytes_written);
	for (int i = 0; i < 4; i++)
		json_num(j, lat_keys[i], "%.1f", lat[i]);
	json_uint(j, "errors", st->errors);
	json_uint(j, "copies", st->copies);
	json_uint(j, "degraded_blocks", st->degraded_blocks);
	json_uint(j, "copies_remade", st->copies_remade);
	json_str(j, "memnodes", st->memnodes);
	json_str(j, "transport", st->transport[0] ? st->transport : "read");
	json_uint(j, "reads_hedged", st->reads_hedged);
	json_uint(j, "writes_hedged", st->writes_hedged);
	json_uint(j, "memnodes_suspected", st->board.memnodes_suspected);
	json_uint(j, "suspect_nodes", st->board.suspect_nodes);
	json_uint(j, "waiting_node", st->board.waiting_node);
	json_close(j);
}

/* The JSON's room: a device's row, its memnodes escaped (6 bytes a character at most) */
#define STATUS_JSON_ROOM (STATUS_DEVICES * (1024 + 6 * OPT_STR_MAX) + 16)

int swap_status(const struct options *o, bool json)
{
	static struct status_row rows[STATUS_DEVICES];
	static char buf[STATUS_JSON_ROOM];
	unsigned n = status_rows(o, rows);
	struct json j;
	int len;

	if (n) /* the request rates are over this window */
		nanosleep(&(struct timespec){ STATUS_SAMPLE_MS / 1000, (STATUS_SAMPLE_MS % 1000) * 1000000L }, NULL);
	if (!json) {
		printf("%-8s %-12s %8s %9s %10s %8s %9s %9s %8s %8s %8s %8s %7s  %s\n", "NAME", "DEVICE", "PID",
		       "SIZE_MIB", "STORED_MIB", "COPIES", "READS/s", "WRITES/s", "RD_P50us", "RD_P99us", "WR_P50us",
		       "WR_P99us", "ERRORS", "MEMNODES");
		for (unsigned i = 0; i < n; i++)
			status_print(&rows[i], NULL);
		return 0;
	}
	json_init(&j, buf, sizeof(buf));
	json_open(&j, NULL, '[', false);
	for (unsigned i = 0; i < n; i++)
		status_print(&rows[i], &j);
	json_close(&j);
	if ((len = json_end(&j)) < 0) {
		log_error("swap status: the JSON does not fit in %zu bytes", sizeof(buf));
		return 1;
	}
	fwrite(buf, 1, (size_t)len, stdout);
	return 0;
}

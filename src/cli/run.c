/* run: `comex run` and `comex stats`. The launcher checks what the runtime
 * cannot do (static or Go binaries, no userfaultfd permission) before the
 * program starts, resolves local-mem, starts an embedded memnode when none is
 * given, and runs the program with the runtime preloaded. */
#include "run.h"

#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "client.h"
#include "embedded.h"
#include "log.h"
#include "memcg.h"
#include "options.h"
#include "paths.h"
#include "stats.h"
#include "sysmem.h"
#include "uffd.h"

static const struct { const char *name; unsigned scope; } table[] = {
#define OPT(id, name, type, def, unit, scope, doc) { name, scope },
#include "options_table.h"
#undef OPT
};


/* ---- what the runtime cannot cover ---- */

static int find_program(const char *name, char *out, size_t cap)
{
	const char *path = getenv("PATH");

	if (strchr(name, '/')) {
		snprintf(out, cap, "%s", name);
		return access(out, X_OK) ? -errno : 0;
	}
	for (const char *p = path ? path : "/usr/bin:/bin"; *p;) {
		size_t n = strcspn(p, ":");

		snprintf(out, cap, "%.*s/%s", (int)n, p, name);
		if (!access(out, X_OK))
			return 0;
		p += n + (p[n] == ':');
	}
	return -ENOENT;
}

/* The Go toolchain puts a note named "Go" (its build id) in a PT_NOTE
 * segment of every binary it links, and keeps it when section headers are
 * stripped; program headers are what the kernel itself reads. */
#define GO_NOTE_SCAN 4096 /* bytes of each note segment read: the build id note comes first */

static bool has_go_note(int fd, const Elf64_Ehdr *eh)
{
	static const char go_name[] = "Go";
	unsigned char buf[GO_NOTE_SCAN];
	Elf64_Phdr ph;

	for (unsigned i = 0; i < eh->e_phnum; i++) {
		if (pread(fd, &ph, sizeof(ph), (off_t)(eh->e_phoff + i * sizeof(ph))) != sizeof(ph) || ph.p_type != PT_NOTE)
			continue;
		size_t len = ph.p_filesz < sizeof(buf) ? ph.p_filesz : sizeof(buf);
		ssize_t got = pread(fd, buf, len, (off_t)ph.p_offset);

		for (size_t off = 0; got > 0 && off + sizeof(Elf64_Nhdr) <= (size_t)got;) {
			Elf64_Nhdr nh;

			memcpy(&nh, buf + off, sizeof(nh));
			off += sizeof(nh);
			/* the Go linker writes n_namesz 4 ("Go" and two NULs), other tools 3 */
			if ((nh.n_namesz == sizeof(go_name) || nh.n_namesz == sizeof(go_name) + 1) &&
			    off + sizeof(go_name) <= (size_t)got &&
			    !memcmp(buf + off, go_name, sizeof(go_name)))
				return true;
			/* name and descriptor are each padded to 4 bytes */
			off += ((size_t)nh.n_namesz + 3u) / 4u * 4u + ((size_t)nh.n_descsz + 3u) / 4u * 4u;
		}
	}
	return false;
}

static bool has_go_section(int fd, const Elf64_Ehdr *eh)
{
	Elf64_Shdr sh, strsh;
	char name[32];

	if (!eh->e_shoff || eh->e_shstrndx == SHN_UNDEF ||
	    pread(fd, &strsh, sizeof(strsh), (off_t)(eh->e_shoff + eh->e_shstrndx * sizeof(sh))) != sizeof(strsh))
		return false;
	for (unsigned i = 0; i < eh->e_shnum; i++) {
		if (pread(fd, &sh, sizeof(sh), (off_t)(eh->e_shoff + i * sizeof(sh))) != sizeof(sh) ||
		    pread(fd, name, sizeof(name), (off_t)(strsh.sh_offset + sh.sh_name)) <= 0)
			return false;
		name[sizeof(name) - 1] = 0;
		if (!strcmp(name, ".go.buildinfo") || !strcmp(name, ".note.go.buildid"))
			return true;
	}
	return false;
}

/* 0 when the runtime can take over the program's memory; else logged. */
static int check_binary(const char *path)
{
	Elf64_Ehdr eh;
	Elf64_Phdr ph;
	bool interp = false;
	int fd = open(path, O_RDONLY | O_CLOEXEC), err = 0;

	if (fd < 0) {
		log_error("cannot open %s: %m", path);
		return -errno;
	}
	if (pread(fd, &eh, sizeof(eh), 0) < 4 || memcmp(eh.e_ident, ELFMAG, SELFMAG)) {
		close(fd);
		return 0; /* a script: its interpreter is checked when the kernel runs it */
	}
	if (eh.e_ident[EI_CLASS] != ELFCLASS64) {
		log_error("%s is not a 64-bit program; comex runs 64-bit programs only", path);
		close(fd);
		return -ENOEXEC;
	}
	for (unsigned i = 0; i < eh.e_phnum; i++)
		if (pread(fd, &ph, sizeof(ph), (off_t)(eh.e_phoff + i * sizeof(ph))) == sizeof(ph) && ph.p_type == PT_INTERP)
			interp = true;
	if (has_go_note(fd, &eh) || has_go_section(fd, &eh)) {
		log_error("%s is a Go program%s: the Go runtime maps its heap with raw system calls that comex "
			  "cannot see; refusing to run it", path, interp ? "" : " (statically linked)");
		err = -ENOEXEC;
	} else if (!interp) {
		log_error("%s is statically linked: comex cannot put its allocator and mmap in front of it, "
			  "so its memory would not be managed; refusing to run it", path);
		err = -ENOEXEC;
	}
	close(fd);
	return err;
}

static int check_uffd(void)
{
	bool async;
	int fd, err = uffd_open(false, false, &fd, &async);

	if (err) {
		log_error("%s", err == -EPERM || err == -ENOSYS ? uffd_permission_help(err) : "userfaultfd unavailable");
		return err;
	}
	close(fd);
	return 0;
}

/* ---- local-mem ---- */

static int resolve_local_mem(const struct options *o, uint64_t *out)
{
	const char *text = opt_str(o, OPT_LOCAL_MEM);
	uint64_t lim, head = opt_num(o, OPT_HEADROOM);

	if (strcasecmp(text, "auto")) {
		if (options_parse_size(text, out)) {
			log_error("option local-mem: '%s' is neither a size (e.g. 512M) nor 'auto'", text);
			return -EINVAL;
		}
		return 0;
	}
	lim = sysmem_cgroup_limit();
	if (lim != UINT64_MAX && opt_num(o, OPT_CGROUP_FOLLOW)) {
		*out = lim; /* an upper bound: the runtime follows the cgroup's room (cgroup-slack, not headroom) */
		return 0;
	}
	if (lim == UINT64_MAX)
		lim = sysmem_total();
	if (lim <= 2 * head) {
		log_error("option local-mem auto: the cgroup limit %llu MiB leaves nothing after headroom %llu MiB",
			  (unsigned long long)(lim >> 20), (unsigned long long)(head >> 20));
		return -EINVAL;
	}
	*out = lim - head;
	return 0;
}

/* embedded-pool as the embedded memnode's pool and pool-max: 'auto' grows
 * from embedded-pool-start up to the memory we may use at all. */
static int embedded_pool(const struct options *o, struct embedded_cfg *cfg)
{
	const char *text = opt_str(o, OPT_EMBEDDED_POOL);
	uint64_t bytes, lim;

	if (strcasecmp(text, "auto")) {
		if (options_parse_size(text, &bytes)) {
			log_error("option embedded-pool: '%s' is neither a size (e.g. 4G) nor 'auto'", text);
			return -EINVAL;
		}
		cfg->pool = bytes;
		cfg->pool_max = 0;
		return 0;
	}
	lim = sysmem_cgroup_limit();
	if (lim == UINT64_MAX)
		lim = sysmem_total();
	cfg->pool = opt_num(o, OPT_EMBEDDED_POOL_START);
	cfg->pool_max = lim;
	return 0;
}

/* The embedded memnode for the program, as the embedded-* options say. */
static int start_embedded(const struct options *o, struct embedded *e, char *addr, size_t cap)
{
	struct embedded_cfg cfg = { .direct = opt_num(o, OPT_EMBEDDED_DIRECT), .rma = opt_num(o, OPT_EMBEDDED_RMA) };
	int err = embedded_pool(o, &cfg);

	return err ? err : embedded_start(o, &cfg, e, addr, cap);
}

/* ---- the program ---- */

static void export_options(const struct options *o)
{
	char path[PATH_MAX];

	/* the runtime watches the config file for new memnodes (membership.c) */
	if (*opt_str(o, OPT_CONFIG) && realpath(opt_str(o, OPT_CONFIG), path))
		setenv("COMEX_CONFIG", path, 1);
	for (int i = 0; i < OPT_COUNT; i++) {
		char var[96], *p;

		if (!(table[i].scope & SC_RUN) || i == OPT_CONFIG || !strcmp(o->v[i].origin, "default"))
			continue;
		snprintf(var, sizeof(var), "COMEX_%s", table[i].name);
		for (p = var; *p; p++)
			*p = *p == '-' ? '_' : (char)(*p >= 'a' && *p <= 'z' ? *p - 32 : *p);
		setenv(var, opt_str(o, (enum opt_id)i), 1);
	}
}

/* Separate memnodes: a handshake and a goodbye with each before the program
 * starts, so that a wrong address or token is said now, although the
 * program connects only when it first evicts (connect-on-demand). Fails
 * only when none can be used, as the program's own start would. */
static int check_memnodes(const struct options *o)
{
	uint64_t room[OPT_MEMNODE_MAX];
	struct comex_client *c;
	struct client_health h;
	unsigned n;
	int err = client_connect(o, &c);

	if (err) {
		log_error("cannot reach the memnodes (option memnode); the program cannot run under comex");
		return err;
	}
	n = client_nodes(c);
	client_room(c, room, n); /* the sessions, when connect-on-demand was asked for here too */
	client_poll(c, &h);
	if (n < 64 && h.out == (1ull << n) - 1) {
		log_error("none of the memnodes can be used (option memnode); the program cannot run under comex");
		err = -EHOSTUNREACH;
	}
	client_close(c);
	return err;
}

/* check_memnodes with our standard output on standard error: the program
 * inherits it, and UCX (transport ucx) logs to standard output by default. */
static int check_memnodes_quietly(const struct options *o)
{
	int saved = dup(STDOUT_FILENO), err;

	fflush(stdout);
	if (saved >= 0)
		dup2(STDERR_FILENO, STDOUT_FILENO);
	err = check_memnodes(o);
	fflush(stdout);
	if (saved >= 0) {
		dup2(saved, STDOUT_FILENO);
		close(saved);
	}
	return err;
}

static int preload(void)
{
	char dir[PATH_MAX], lib[PATH_MAX + 64], val[2 * PATH_MAX + 80];
	const char *old = getenv("LD_PRELOAD");

	if (paths_own_dir(dir, sizeof(dir)) || paths_find_lib(dir, PATHS_RT_LIB, lib, sizeof(lib))) {
		log_error("cannot find the runtime " PATHS_RT_LIB " next to %s or in %s/../lib/comex", dir, dir);
		return -ENOENT;
	}
	snprintf(val, sizeof(val), "%s%s%s", lib, old && *old ? ":" : "", old ? old : "");
	setenv("LD_PRELOAD", val, 1);
	/* UCX must not patch the C library's mmap: comex owns those calls. */
	setenv("UCX_MEM_MALLOC_HOOKS", "n", 0);
	setenv("UCX_MEM_MMAP_HOOK_MODE", "none", 0);
	setenv("UCX_MEM_EVENTS", "n", 0);
	/* Nor install signal handlers in the program: by default UCX catches
	 * SIGSEGV/SIGBUS/SIGILL/SIGFPE (to print a backtrace) and SIGHUP (its
	 * debug signal), which changes what those signals do to the program. */
	/* UCX logs to stdout unless told otherwise: its warnings (a shared
	 * memory segment refused under a cgroup limit, say) would land in the
	 * program's output */
	setenv("UCX_LOG_FILE", "stderr", 0);
	setenv("UCX_HANDLE_ERRORS", "none", 0);
	setenv("UCX_ERROR_SIGNALS", "", 0);
	setenv("UCX_DEBUG_SIGNO", "0", 0);
	return 0;
}

/* The runtime writes --stats-json when the program exits normally and then
 * removes its live counters. A program ended by a signal (timeout's SIGTERM,
 * Ctrl-C, the pager's or the OOM killer's SIGKILL) or by _exit() never gets
 * there, but its counters are still in /dev/shm: written from there. */
static void save_stats(pid_t pid)
{
	const char *path = getenv("COMEX_STATS_JSON");
	const struct stats *s;

	if (!path || !*path || stats_open(pid, &s))
		return;
	if (!stats_write_json(s, path))
		log_info("wrote the counters of the ended program to %s", path);
	stats_close(s);
}

/* Whether process dir (a /proc entry) started with COMEX_ROOT_PID=root in
 * its environment: one of the run's processes, or one they forked. The
 * whole environment is read (run_program sets the variable near its end),
 * in pieces that keep the last n bytes, so a match across two reads is
 * found; needle is "\0COMEX_ROOT_PID=N", n bytes, and must end a string. */
static bool of_run(const char *dir, const char *needle, size_t n)
{
	char buf[4096 + 64] = "", path[300];
	size_t have = 1; /* buf[0] is a NUL: the first variable follows one too */
	ssize_t r;
	int fd;

	snprintf(path, sizeof(path), "/proc/%s/environ", dir);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return false;
	while ((r = read(fd, buf + have, sizeof(buf) - have)) > 0) {
		size_t end = have + (size_t)r;

		for (char *p = buf; (p = memmem(p, end - (size_t)(p - buf), needle, n)); p += n)
			if (p + n < buf + end && !p[n]) {
				close(fd);
				return true;
			}
		have = end < n ? end : n;
		memmove(buf, buf + end - have, have);
	}
	close(fd);
	return false;
}

/* Whether a process of the run outlives its top one (a daemon forked twice,
 * so that the top one never served it): it may connect in a moment. Its
 * /proc/PID/environ tells (a zombie's reads empty). */
static bool run_survives(pid_t top, pid_t memnode)
{
	char needle[40] = ""; /* NUL first: the variable starts a string */
	size_t n = 1 + (size_t)snprintf(needle + 1, sizeof(needle) - 1, "COMEX_ROOT_PID=%d", (int)top);
	struct dirent *d;
	bool found = false;
	DIR *proc = opendir("/proc");

	if (!proc)
		return false;
	while (!found && (d = readdir(proc))) {
		long pid = atol(d->d_name);

		if (pid > 0 && pid != top && pid != memnode && pid != getpid())
			found = of_run(d->d_name, needle, n);
	}
	closedir(proc);
	return found;
}

/* Whether clients of the memnode may come after the program's end: it
 * handed its pages to forked children, or another process of it lives */
static bool clients_may_follow(pid_t pid, pid_t memnode)
{
	const struct stats *s;
	bool handed = false;

	if (!stats_open(pid, &s)) {
		handed = __atomic_load_n(&s->children_handed, __ATOMIC_RELAXED) > 0;
		stats_close(s);
	}
	return handed || run_survives(pid, memnode);
}

static pid_t child;
static void forward(int sig) { if (child > 0) kill(child, sig); }

/* systemd's socket activation hands descriptors 3.. to the process it
 * starts, and names it in LISTEN_PID (sd_listen_fds(3) ignores them in any
 * other process). Started as `comex run -- PROG`, that process is this
 * launcher: the program gets the descriptors (they are inherited as they
 * are) and, here, their LISTEN_PID. */
static void listen_pid(pid_t launcher, const char *pid)
{
	const char *v = getenv("LISTEN_PID");

	if (v && atol(v) == (long)launcher)
		setenv("LISTEN_PID", pid, 1);
}

/* With an embedded memnode the program's remote pages live in a process
 * that ends with this launcher, so the program ends with it too (SIGKILL:
 * it could not go on without them), however the launcher dies. */
static int run_program(const char *path, char **argv, const struct embedded *e, bool *handed)
{
	pid_t launcher = getpid();
	int status;
	char pid[24];

	child = fork();
	if (child < 0)
		return -errno;
	if (!child) {
		if (e->pid > 0 && (prctl(PR_SET_PDEATHSIG, SIGKILL) || getppid() != launcher))
			_exit(125);
		snprintf(pid, sizeof(pid), "%d", getpid());
		setenv("COMEX_ROOT_PID", pid, 1);
		listen_pid(launcher, pid);
		execv(path, argv);
		log_error("cannot execute %s: %m", path);
		_exit(127);
	}
	embedded_note_user(e, child);
	signal(SIGINT, forward);
	signal(SIGTERM, forward);
	signal(SIGHUP, forward);
	signal(SIGQUIT, forward);
	/* ended but not reaped yet (a zombie still owns its pid, so no
	 * stats_sweep of another comex run takes its counters meanwhile) */
	while (waitid(P_PID, (id_t)child, &(siginfo_t){ 0 }, WEXITED | WNOWAIT) < 0 && errno == EINTR)
		;
	save_stats(child);
	*handed = clients_may_follow(child, e->pid);
	/* a program killed outright (SIGKILL, the watchdog) cannot remove its
	 * live counters from /dev/shm itself */
	stats_unlink(child);
	while (waitpid(child, &status, 0) < 0 && errno == EINTR)
		;
	if (WIFSIGNALED(status)) {
		log_info("%s was killed by signal %d (%s)", path, WTERMSIG(status), strsignal(WTERMSIG(status)));
		return 128 + WTERMSIG(status);
	}
	return WEXITSTATUS(status);
}

/* Exit statuses that come from comex, not from the program: 125 comex run
 * could not start it, 126 the runtime could not (rt.c fail()), 128 + SIGKILL
 * the pager or the watchdog stopped it (or another SIGKILL: the OOM killer). */
static bool comex_failed(int rc)
{
	return rc == 125 || rc == 126 || rc == 128 + SIGKILL;
}

int run_main(struct options *o, int argc, char **argv)
{
	char path[PATH_MAX], addr[64], bytes[32], stats[PATH_MAX + OPT_STR_MAX + 2];
	struct embedded e = { .pool_fd = -1 };
	bool handed = false;
	uint64_t m;
	int rc = 125;

	if (argc < 1) {
		log_error("usage: comex run [OPTIONS] -- PROGRAM [ARGS...]");
		return 2;
	}
	if (find_program(argv[0], path, sizeof(path))) {
		log_error("cannot find program '%s'", argv[0]);
		return 127;
	}
	if (check_binary(path) || check_uffd() || resolve_local_mem(o, &m))
		return 125;
	if (strcmp(o->v[OPT_MEMNODE].origin, "default") && check_memnodes_quietly(o))
		return 125;
	if (preload())
		return 125;
	export_options(o);
	/* separate memnodes only: the embedded memnode stays after the program
	 * for the processes of the run that are connected to it (D46), which a
	 * daemon that has not evicted yet would not be */
	if (!strcmp(o->v[OPT_CONNECT_ON_DEMAND].origin, "default") && strcmp(o->v[OPT_MEMNODE].origin, "default"))
		setenv("COMEX_CONNECT_ON_DEMAND", "true", 1);
	stats_sweep(); /* what killed programs left behind */
	snprintf(bytes, sizeof(bytes), "%llu", (unsigned long long)m);
	setenv("COMEX_LOCAL_MEM", bytes, 1);
	if (!strcasecmp(opt_str(o, OPT_LOCAL_MEM), "auto")) /* resolved again inside the program's cgroup */
		setenv(MEMCG_AUTO_ENV, "1", 1);
	else
		unsetenv(MEMCG_AUTO_ENV);
	if (*opt_str(o, OPT_STATS_JSON)) {
		const char *s = opt_str(o, OPT_STATS_JSON);
		char cwd[PATH_MAX];

		snprintf(stats, sizeof(stats), "%s%s%s", s[0] == '/' ? "" : getcwd(cwd, sizeof(cwd)) ? cwd : ".",
			 s[0] == '/' ? "" : "/", s);
		setenv("COMEX_STATS_JSON", stats, 1);
	}
	if (!strcmp(o->v[OPT_MEMNODE].origin, "default")) {
		/* the program maps the embedded memnode's pool (D38): pages never
		 * cross the transport, only control messages, which loopback TCP
		 * carries as fast as UCX's shared memory did, and without loading
		 * UCX into every process the program starts (D80) */
		if (start_embedded(o, &e, addr, sizeof(addr)))
			goto stop_memnode;
		setenv("COMEX_MEMNODE", addr, 1);
		embedded_pass_pool_file(&e, addr);
	}
	rc = run_program(path, argv, &e, &handed);
stop_memnode:
	embedded_stop(&e, comex_failed(rc), rc, handed);
	return rc;
}

int stats_main(int pid)
{
	const struct stats *s;
	char buf[STATS_JSON_MAX];
	int len;

	if (stats_open(pid, &s)) {
		log_error("process %d is not running under comex, or its runtime has not started (under start-after) "
			  "(no /dev/shm/comex-stats.%d)", pid, pid);
		return 1;
	}
	len = stats_json(s, buf, sizeof(buf));
	if (len < 0)
		return 1;
	fwrite(buf, 1, (size_t)len, stdout);
	return 0;
}

/* How long `comex home` waits for the program's answer: bringing 1 GiB
 * home takes about a second here; a stopped program never answers */
#define HOME_WAIT_MS 120000

int home_main(int pid, bool release)
{
	struct stats *s;
	uint64_t want = release ? 0 : HOME_HELD_YES, got = 0;

	if (stats_attach(pid, &s)) {
		log_error("process %d is not running under comex, or its runtime has not started (under start-after) "
			  "(no /dev/shm/comex-stats.%d)", pid, pid);
		return 1;
	}
	__atomic_store_n(&s->home_request, !release, __ATOMIC_RELEASE);
	for (int ms = 0; ms < HOME_WAIT_MS && (got = __atomic_load_n(&s->home_held, __ATOMIC_ACQUIRE)) != want; ms += 10) {
		if (!release && got == HOME_HELD_REFUSED)
			break;
		if (kill(pid, 0) && errno == ESRCH)
			break;
		nanosleep(&(struct timespec){ 0, 10 * 1000 * 1000 }, NULL);
	}
	if (got == want)
		printf(release ? "process %d: eviction resumes\n" : "process %d: every page is home (%llu brought home "
			"so far); eviction paused until 'comex home --release %d'\n", pid,
		       (unsigned long long)__atomic_load_n(&s->pages_brought_home, __ATOMIC_RELAXED), pid);
	else if (got == HOME_HELD_REFUSED)
		log_error("process %d cannot take its pages home: the memory its host or cgroup has left is short "
			  "(its log says how much)", pid);
	else
		log_error("process %d did not answer within %d s (it ended, or a debugger stops it: run comex home "
			  "before attaching)", pid, HOME_WAIT_MS / 1000);
	stats_close(s);
	return got == want ? 0 : 1;
}

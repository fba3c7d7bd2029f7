/* embedded: the memnode a launcher starts on loopback for one user (comex
 * run's program, a comex swap daemon), from its start to its cleanup. */
#include "embedded.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "auth.h"
#include "client.h"
#include "log.h"
#include "memnode.h"
#include "options.h"
#include "stats.h"

/* Set in the embedded memnode's environment: the launcher's pid and its
 * temporary directory, for embedded_orphaned. The program's pid is written to
 * PROGRAM_PID in that directory once it is started. */
#define LAUNCHER_ENV "COMEX_EMBEDDED_LAUNCHER"
#define PROGRAM_PID "program.pid"
/* how long the launcher waits for the memnode to say it stays or to exit */
#define LINGER_ANSWER_MS 2000
/* how long an orphaned memnode waits for the program to be gone: it was
 * sent SIGKILL with the memnode's SIGTERM, so this is the kernel's time to
 * tear down its memory */
#define ORPHAN_WAIT_MS 10000

static void dir_file(const char *dir, const char *name, char *out, size_t cap)
{
	snprintf(out, cap, "%s/%s", dir, name);
}

/* Removes the launcher's temporary directory and what it holds. */
static void remove_run_dir(const char *dir)
{
	static const char *const files[] = { "token", PROGRAM_PID, "memnode.log", MEMNODE_LINGER_FILE };
	char path[160];

	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		dir_file(dir, files[i], path, sizeof(path));
		unlink(path);
	}
	rmdir(dir);
}

void embedded_orphaned(void)
{
	const char *launcher = getenv(LAUNCHER_ENV), *dir = getenv(MEMNODE_DIR_ENV);
	char path[160];
	int pid = 0;
	FILE *f;

	if (!launcher || !dir || getppid() == (pid_t)atoi(launcher))
		return; /* not embedded, or the launcher is alive and cleans up itself */
	dir_file(dir, PROGRAM_PID, path, sizeof(path));
	if ((f = fopen(path, "r"))) {
		if (fscanf(f, "%d", &pid) != 1)
			pid = 0;
		fclose(f);
	}
	for (int ms = 0; pid > 0 && kill(pid, 0) == 0 && ms < ORPHAN_WAIT_MS; ms += 10)
		usleep(10000);
	if (pid > 0 && kill(pid, 0) == 0)
		log_warn("the program (pid %d) outlived its launcher; its counters stay in /dev/shm", pid);
	stats_sweep();
	log_info("the launcher (pid %s) is gone: removing %s", launcher, dir);
	remove_run_dir(dir);
}


static int wait_port(struct embedded *e, char *addr, size_t cap)
{
	char log[128], buf[4096];

	snprintf(log, sizeof(log), "%s/memnode.log", e->dir);
	for (int i = 0; i < 3000; i++) {
		FILE *f = fopen(log, "re");
		size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;
		char *p;
		int status;

		if (f)
			fclose(f);
		buf[n] = 0;
		if ((p = strstr(buf, " on port "))) {
			snprintf(addr, cap, "127.0.0.1:%d", atoi(p + 9));
			return 0;
		}
		if (waitpid(e->pid, &status, WNOHANG) == e->pid) {
			log_error("the embedded memnode failed to start:\n%s", buf);
			e->pid = 0;
			return -ECHILD;
		}
		nanosleep(&(struct timespec){ 0, 10 * 1000 * 1000 }, NULL);
	}
	log_error("the embedded memnode did not come up within 30 s (log: %s)", log);
	return -ETIMEDOUT;
}


/* The embedded memnode's pool as a memfd both it and its user map or read
 * (D38), as large as the pool may grow; -1 (logged) when it cannot be made:
 * pages then move by messages. */
static int pool_file(const struct embedded_cfg *cfg)
{
	uint64_t bytes = cfg->pool_max > cfg->pool ? cfg->pool_max : cfg->pool;
	int fd = memfd_create("comex-pool", MFD_CLOEXEC);

	if (fd >= 0 && !ftruncate(fd, (off_t)bytes))
		return fd;
	log_warn("cannot make a pool file of %llu bytes for the embedded memnode (%m): pages move through the memnode",
		 (unsigned long long)bytes);
	if (fd >= 0)
		close(fd);
	return -1;
}

/* Closes every descriptor from first on (the pool file, when there is one,
 * is 3 and first 4) and executes the embedded memnode. Returns on failure. */
static void execl_memnode(const struct options *o, const struct embedded_cfg *cfg, const char *exe,
			  const char *token, unsigned first)
{
	char pool[24], max[24];
	const char *argv[26] = { exe, "memnode", "--listen", "127.0.0.1:0", "--pool", pool, "--pool-max", max,
				 "--token-file", token, "--drain-timeout", "0", "--sched", opt_str(o, OPT_SCHED),
				 "--transport", opt_str(o, OPT_TRANSPORT) };
	unsigned n = 16;

	snprintf(pool, sizeof(pool), "%llu", (unsigned long long)cfg->pool);
	snprintf(max, sizeof(max), "%llu", (unsigned long long)cfg->pool_max);
	close_range(first, ~0u, 0);
	unsetenv("LD_PRELOAD");
	/* rma: the memnode serves one user only, which may hold its pool key;
	 * the pool file: the user reads the pool itself (D38). Either way
	 * pages move without the memnode's CPU, which can sleep between
	 * control requests instead of polling a core. */
	if (cfg->rma) {
		argv[n++] = "--data-path";
		argv[n++] = "rma";
	} else if (first == 4) {
		argv[n++] = "--pool-fd";
		argv[n++] = "3";
	}
	if (cfg->rma || first == 4) {
		argv[n++] = "--idle-spin";
		argv[n++] = "0";
	}
	if (cfg->reclaim_safe) {
		argv[n++] = "--reclaim-safe";
		argv[n++] = "true";
	}
	argv[n] = NULL;
	execv(exe, (char *const *)argv);
}

int embedded_start(const struct options *o, const struct embedded_cfg *cfg, struct embedded *e, char *addr,
		   size_t cap)
{
	char exe[PATH_MAX], token[128], log[128], launcher[24];
	ssize_t n;

	snprintf(e->dir, sizeof(e->dir), "/tmp/comex-run.XXXXXX");
	if (!mkdtemp(e->dir)) {
		log_error("cannot create a directory for the embedded memnode: %m");
		e->dir[0] = 0;
		return -errno;
	}
	snprintf(token, sizeof(token), "%s/token", e->dir);
	snprintf(log, sizeof(log), "%s/memnode.log", e->dir);
	if (auth_token_generate(token))
		return -EIO;
	if ((n = readlink("/proc/self/exe", exe, sizeof(exe) - 1)) < 0)
		return -errno;
	exe[n] = 0; /* readlink does not end it */
	snprintf(launcher, sizeof(launcher), "%d", (int)getpid());
	if (cfg->direct && !cfg->rma)
		e->pool_fd = pool_file(cfg);
	e->pid = fork();
	if (e->pid < 0)
		return -errno;
	if (!e->pid) {
		int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

		setpgid(0, 0); /* a Ctrl-C for the program must not kill its memory first */
		/* but the launcher's death, however it dies, ends it (issue 10
		 * item 7); it then cleans up what the launcher left (embedded_orphaned) */
		if (prctl(PR_SET_PDEATHSIG, SIGTERM) || getppid() != (pid_t)atoi(launcher))
			_exit(1);
		setenv(LAUNCHER_ENV, launcher, 1);
		setenv(MEMNODE_DIR_ENV, e->dir, 1);
		if (fd >= 0)
			dup2(fd, 2);
		/* descriptors the launcher inherited are the program's (a socket
		 * systemd activated, a pipe a supervisor waits on to close); the
		 * pool file becomes descriptor 3 */
		if (e->pool_fd >= 0 && (e->pool_fd == 3 ? !fcntl(3, F_SETFD, 0) : dup2(e->pool_fd, 3) == 3))
			execl_memnode(o, cfg, exe, token, 4); /* dup2 onto itself would leave close-on-exec */
		execl_memnode(o, cfg, exe, token, 3);
		_exit(127);
	}
	setenv("COMEX_TOKEN_FILE", token, 1);
	return wait_port(e, addr, cap);
}

/* Copies the end of the embedded memnode's log to stderr: when the program
 * failed, what the memnode saw is half of the story. */
static void show_log_tail(const char *path)
{
	char buf[2048];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	off_t end = fd >= 0 ? lseek(fd, 0, SEEK_END) : -1;
	ssize_t n;

	if (end > 0 && lseek(fd, end > (off_t)sizeof(buf) ? end - (off_t)sizeof(buf) : 0, SEEK_SET) >= 0 &&
	    (n = read(fd, buf, sizeof(buf))) > 0) {
		log_info("the embedded memnode's last log lines:");
		if (write(2, buf, (size_t)n) < 0)
			n = 0;
	}
	if (fd >= 0)
		close(fd);
}

/* Whether path holds an error line (": error: ", as log.c writes them). */
static bool log_has_error(const char *path)
{
	static const char mark[] = ": error: ";
	enum { KEEP = sizeof(mark) - 2 }; /* the tail a mark split across two reads starts in */
	char buf[4096];
	size_t have = 0;
	ssize_t n;
	bool found = false;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	while (fd >= 0 && !found && (n = read(fd, buf + have, sizeof(buf) - have)) > 0) {
		have += (size_t)n;
		found = memmem(buf, have, mark, sizeof(mark) - 1) != NULL;
		if (have > KEEP) {
			memmove(buf, buf + have - KEEP, KEEP);
			have = KEEP;
		}
	}
	if (fd >= 0)
		close(fd);
	return found;
}

/* The program ended without comex failing: the memnode stays while forked
 * children of the program that outlive it use it (SIGUSR2: the program
 * handed pages to some, which connect in a moment; SIGUSR1: only if one is
 * connected now), or exits. True when it stays: it then cleans up after
 * itself (embedded_orphaned). */
static bool linger(struct embedded *e, bool handed)
{
	char path[160];

	dir_file(e->dir, MEMNODE_LINGER_FILE, path, sizeof(path));
	kill(e->pid, handed ? SIGUSR2 : SIGUSR1);
	for (int ms = 0; ms < LINGER_ANSWER_MS; ms++) {
		if (!access(path, F_OK))
			return true;
		if (waitpid(e->pid, NULL, WNOHANG) == e->pid) {
			e->pid = 0;
			return false;
		}
		nanosleep(&(struct timespec){ 0, 1000000 }, NULL);
	}
	return false;
}

/* Stops the embedded memnode. Its log goes to stderr when comex itself may
 * have failed (failed: comex run's or the runtime's own exit status), when
 * the memnode died or logged an error, or at log-level 3 after any non-zero
 * exit: a program that exits 1 by design learns nothing from it. */
void embedded_stop(struct embedded *e, bool failed, int rc, bool handed)
{
	char path[128];
	int status;

	if (e->pid > 0 && waitpid(e->pid, &status, WNOHANG) == e->pid) {
		log_error("the embedded memnode ended before the program (%s %d)",
			  WIFSIGNALED(status) ? "signal" : "exit status",
			  WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
		failed = true;
	} else if (e->pid > 0 && !failed && linger(e, handed)) {
		return;
	} else if (e->pid > 0) {
		kill(e->pid, SIGTERM);
		waitpid(e->pid, NULL, 0);
	}
	if (!e->dir[0])
		return;
	dir_file(e->dir, "memnode.log", path, sizeof(path));
	if (failed || log_has_error(path) || (rc && log_threshold >= LOG_DEBUG))
		show_log_tail(path);
	remove_run_dir(e->dir);
}


/* For run_orphaned: the program's pid, in the embedded memnode's directory. */
void embedded_note_user(const struct embedded *e, pid_t pid)
{
	char path[160];
	FILE *f;

	if (!e->dir[0])
		return;
	dir_file(e->dir, PROGRAM_PID, path, sizeof(path));
	if ((f = fopen(path, "w"))) {
		fprintf(f, "%d\n", (int)pid);
		fclose(f);
	}
}


/* The pool file, for the program and whatever it execs: the embedded
 * memnode's descriptor 3, by path (it stays open there as long as the
 * memnode lives, which is as long as anyone uses it: D46's linger). */
void embedded_pass_pool_file(const struct embedded *e, const char *addr)
{
	char v[320];

	if (e->pool_fd < 0)
		return;
	snprintf(v, sizeof(v), "/proc/%d/fd/3@%s", (int)e->pid, addr);
	setenv(CLIENT_POOL_ENV, v, 1);
}


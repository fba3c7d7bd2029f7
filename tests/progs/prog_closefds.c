/* prog_closefds MODE [MiB=128]: fills MiB of memory, then closes every
 * descriptor from 3 up as daemons and process supervisors do, MODE being
 *   syscall    syscall(SYS_close_range, 3, ~0U, 0)
 *   libc       close_range(3, ~0U, 0)
 *   loop       close() on every number below RLIMIT_NOFILE
 *   closefrom  closefrom(3)
 *   fork       a forked child closes everything (close loop) and execs
 *              /bin/sh -c 'exit 3'; the parent checks its status, then
 *              closes as libc
 *   dup        dup2 and fcntl(F_DUPFD) of the program's own descriptors
 *   takeover   a forked child opens and closes descriptors for a second,
 *              each open expected at the lowest free number, while its
 *              pager takes over (with lazy-fork off: at once), making
 *              descriptors of its own; the parent prints how many opens
 *              were elsewhere, then closes as libc
 *   listen     closes nothing: checks systemd's socket activation, that
 *              LISTEN_PID is this process and descriptors 3.. from
 *              LISTEN_FDS are listening sockets (sd_listen_fds(3))
 * then reads its memory back and prints what the program sees of its
 * descriptor table: the numbers open() pipe() socket() and dup() return,
 * and how many descriptors fcntl(F_GETFD) finds open below the limit.
 * Under comex all of it must equal the native run. */
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common.h"

static unsigned nofile(void)
{
	struct rlimit r;

	if (getrlimit(RLIMIT_NOFILE, &r))
		die("getrlimit: %s", strerror(errno));
	return r.rlim_cur > (1u << 20) ? 1u << 20 : (unsigned)r.rlim_cur;
}

static void close_loop(void)
{
	for (unsigned fd = 3, n = nofile(); fd < n; fd++)
		close((int)fd);
}

static int open_count(void)
{
	int n = 0;

	for (unsigned fd = 0, lim = nofile(); fd < lim; fd++)
		n += fcntl((int)fd, F_GETFD) >= 0;
	return n;
}

/* For ms milliseconds: open, expecting the lowest free number, and close;
 * how many opens (at most 255) got another number */
static int open_elsewhere(int ms)
{
	int lowest = open("/dev/null", O_RDONLY), wrong = 0;
	struct timespec t0, t;

	if (lowest < 0)
		die("open: %s", strerror(errno));
	close(lowest);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		for (int i = 0; i < 1000; i++) {
			int fd = open("/dev/null", O_RDONLY);

			wrong += fd != lowest && wrong < 255;
			close(fd);
		}
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 < ms);
	return wrong;
}

static void listen_fds(void)
{
	const char *pid = getenv("LISTEN_PID"), *fds = getenv("LISTEN_FDS");
	int n = fds ? atoi(fds) : 0, ok = 0;

	if (!pid || atol(pid) != (long)getpid())
		die("LISTEN_PID is %s, not this process", pid ? pid : "unset");
	for (int fd = 3; fd < 3 + n; fd++) {
		int on = 0;
		socklen_t len = sizeof(on);

		ok += !getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &on, &len) && on;
	}
	printf("LISTEN_PID is this process; %d of LISTEN_FDS=%d are listening sockets\n", ok, n);
}

static void close_all(const char *mode)
{
	if (!strcmp(mode, "syscall")) {
		if (syscall(SYS_close_range, 3u, ~0u, 0))
			die("close_range syscall: %s", strerror(errno));
	} else if (!strcmp(mode, "libc")) {
		if (close_range(3, ~0u, 0))
			die("close_range: %s", strerror(errno));
	} else if (!strcmp(mode, "loop") || !strcmp(mode, "dup")) {
		close_loop();
	} else if (!strcmp(mode, "listen")) {
		listen_fds();
	} else if (!strcmp(mode, "closefrom")) {
		closefrom(3);
	} else if (!strcmp(mode, "fork")) {
		int status;
		pid_t pid = fork();

		if (pid < 0)
			die("fork: %s", strerror(errno));
		if (!pid) {
			close_loop();
			execl("/bin/sh", "sh", "-c", "exit 3", (char *)NULL);
			_exit(127);
		}
		if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
			die("the child did not exit");
		printf("child exit status %d\n", WEXITSTATUS(status));
		close_range(3, ~0u, 0); /* the parent's table as in the other modes */
	} else if (!strcmp(mode, "takeover")) {
		int status;
		pid_t pid = fork();

		if (pid < 0)
			die("fork: %s", strerror(errno));
		if (!pid)
			_exit(open_elsewhere(1000));
		if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
			die("the child did not exit");
		printf("opens of the child not at the lowest free number: %d\n", WEXITSTATUS(status));
		close_range(3, ~0u, 0);
	} else {
		die("unknown mode %s", mode);
	}
}

/* dup2 and F_DUPFD onto numbers the program picks, then closed again */
static void dups(void)
{
	int fd = open("/dev/null", O_RDONLY);

	if (fd < 0)
		die("open: %s", strerror(errno));
	printf("dup2 onto 100: %d\n", dup2(fd, 100));
	printf("dup3 onto 101: %d\n", dup3(fd, 101, O_CLOEXEC));
	printf("F_DUPFD from 50: %d\n", fcntl(fd, F_DUPFD, 50));
	printf("open descriptors: %d\n", open_count());
	close(50);
	close(100);
	close(101);
	close(fd);
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "libc";
	size_t size = arg_mib(argc, argv, 2, 128);
	uint64_t *p = map_anon(size);
	int fds[2], fd, sk;

	fill(p, size / 8, 0xc105e, 0);
	close_all(mode);
	printf("open descriptors after: %d\n", open_count());
	expect(p, size / 8, 0xc105e, 0, "memory after closing");
	if ((fd = open("/dev/null", O_RDONLY)) < 0 || pipe(fds) || (sk = socket(AF_UNIX, SOCK_STREAM, 0)) < 0)
		die("open, pipe or socket: %s", strerror(errno));
	printf("open %d, pipe %d %d, socket %d, dup %d\n", fd, fds[0], fds[1], sk, dup(fd));
	if (!strcmp(mode, "dup"))
		dups();
	fill(p, size / 8, 0xc105f, 0); /* evicted again, then read back */
	expect(p, size / 8, 0xc105f, 0, "memory refilled after closing");
	printf("%s: %zu MiB, checksum %016" PRIx64 "\n", mode, size / MiB, sum64(p, size, 0));
	return 0;
}

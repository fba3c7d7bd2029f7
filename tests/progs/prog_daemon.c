/* prog_daemon MODE MiB DIR: becomes a daemon after filling MiB of memory,
 * as servers do, MODE being
 *   fork     fork, the parent exits (exit(3)), the child calls setsid();
 *   double   fork, setsid, fork again: the first child exits too;
 *   daemon   daemon(3) (whose parent leaves with _exit).
 * The daemon then checks every word it had, fills MiB more, checks all of
 * it twice, writes "DIR/daemon.pid" and then "DIR/daemon.out" with its
 * checksums, and waits for "DIR/stop" (at most 10 minutes) before it exits:
 * meanwhile its counters can be read. Prints nothing itself. */
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common.h"

static char dir[512];

static void put(const char *name, const char *text)
{
	char tmp[600], path[600];
	FILE *f;

	snprintf(tmp, sizeof(tmp), "%s/%s.tmp", dir, name);
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (!(f = fopen(tmp, "w")) || fputs(text, f) < 0 || fclose(f) || rename(tmp, path))
		die("cannot write %s", path);
}

static void become_daemon(const char *mode)
{
	pid_t pid;

	if (!strcmp(mode, "daemon")) {
		if (daemon(1, 1))
			die("daemon: %s", strerror(errno));
		return;
	}
	if ((pid = fork()) < 0)
		die("fork: %s", strerror(errno));
	if (pid)
		exit(0);
	setsid();
	if (!strcmp(mode, "double")) {
		if ((pid = fork()) < 0)
			die("fork: %s", strerror(errno));
		if (pid)
			exit(0);
	}
}

int main(int argc, char **argv)
{
	size_t size = arg_mib(argc, argv, 2, 64);
	uint64_t *a, *b;
	char text[640];

	if (argc < 4)
		die("usage: prog_daemon fork|double|daemon MiB DIR");
	snprintf(dir, sizeof(dir), "%s", argv[3]);
	a = map_anon(size);
	fill(a, size / 8, 0xdae, 0);
	become_daemon(argv[1]);
	expect(a, size / 8, 0xdae, 0, "the daemon's inherited memory");
	b = map_anon(size);
	fill(b, size / 8, 0xdaf, 0);
	for (int pass = 0; pass < 2; pass++) {
		expect(a, size / 8, 0xdae, 0, "the inherited memory, again");
		expect(b, size / 8, 0xdaf, 0, "the daemon's own memory");
	}
	snprintf(text, sizeof(text), "%d\n", (int)getpid());
	put("daemon.pid", text);
	snprintf(text, sizeof(text), "%s: %zu + %zu MiB, checksums %016" PRIx64 " %016" PRIx64 "\n", argv[1],
		 size / MiB, size / MiB, sum64(a, size, 0), sum64(b, size, 0));
	put("daemon.out", text);
	snprintf(text, sizeof(text), "%s/stop", dir);
	for (int i = 0; i < 6000 && access(text, F_OK); i++)
		usleep(100000);
	return 0;
}

/* prog_exec [MiB=96]: a chain of program images, each of which fills and
 * verifies more memory than local memory holds:
 *   stage 0 (a second thread writing memory meanwhile) posix_spawns a copy of
 *   itself (stage s), waits for it, then execs itself (stage 1);
 *   stage 1 forks a child that execs itself (stage 2), waits, verifies its
 *   own memory again and prints the result.
 * Each stage prints its checksum on stdout, and on stderr whether the comex
 * runtime is mapped into it ("prog_exec stage N: runtime mapped: yes|no"):
 * under `comex run` every image must have its own runtime. */
#include <pthread.h>
#include <spawn.h>
#include <stdatomic.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common.h"

extern char **environ;

static const char *self;
static size_t size;
static char mib[32];

static void report(const char *stage)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[4096];
	int found = 0;
	if (!f)
		die("open /proc/self/maps");
	while (fgets(line, sizeof line, f))
		if (strstr(line, "libcomex-rt"))
			found = 1;
	fclose(f);
	fprintf(stderr, "prog_exec stage %s: runtime mapped: %s\n", stage, found ? "yes" : "no");
}

static uint64_t work(const char *stage, uint64_t seed, uint64_t **keep)
{
	uint64_t *p = malloc(size);
	char what[64];
	if (!p)
		die("stage %s: malloc", stage);
	fill(p, size / 8, seed, 0);
	snprintf(what, sizeof what, "stage %s", stage);
	expect(p, size / 8, seed, 0, what);
	uint64_t h = sum64(p, size, 0);
	printf("stage %s: %zu MiB, checksum %016" PRIx64 "\n", stage, size / MiB, h);
	fflush(stdout);
	if (keep)
		*keep = p;
	else
		free(p);
	return h;
}

static void wait_ok(pid_t pid, const char *who)
{
	int st;
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
		die("%s failed", who);
}

static atomic_int spin_started;

static void *spinner(void *arg)
{
	(void)arg;
	uint64_t *q = malloc(16 * MiB);
	if (!q)
		die("malloc");
	for (uint64_t r = 0;; r++) {
		fill(q, 16 * MiB / 8, r, 0);
		atomic_store(&spin_started, 1);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	self = argv[0];
	size = arg_mib(argc, argv, 1, 96);
	snprintf(mib, sizeof mib, "%zu", size / MiB);
	const char *stage = argc > 2 ? argv[2] : "0";

	if (!strcmp(stage, "0")) {
		report(stage);
		pthread_t th;
		if (pthread_create(&th, NULL, spinner, NULL))
			die("pthread_create");
		while (!atomic_load(&spin_started))
			;
		work(stage, 0xE0, NULL);
		pid_t pid;
		char *sargv[] = { (char *)self, mib, "s", NULL };
		if (posix_spawn(&pid, self, NULL, NULL, sargv, environ))
			die("posix_spawn");
		wait_ok(pid, "stage s");
		char *xargv[] = { (char *)self, mib, "1", NULL };
		execv(self, xargv);
		die("execv: %s", strerror(errno));
	} else if (!strcmp(stage, "1")) {
		report(stage);
		uint64_t *mine;
		uint64_t h = work(stage, 0xE1, &mine);
		pid_t pid = fork();
		if (pid < 0)
			die("fork");
		if (pid == 0) {
			char *xargv[] = { (char *)self, mib, "2", NULL };
			execv(self, xargv);
			die("execv in child: %s", strerror(errno));
		}
		wait_ok(pid, "stage 2");
		expect(mine, size / 8, 0xE1, 0, "stage 1 after its child exec'd");
		printf("exec: checksum %016" PRIx64 ", ok\n", h);
	} else {
		report(stage);
		work(stage, !strcmp(stage, "s") ? 0xE5 : 0xE2, NULL);
	}
	return 0;
}

/* prog_fork [MiB=128]: fills a big malloc'd block, an anonymous private
 * mapping and many small blocks, while a second thread keeps writing its own
 * region, then forks. The child must see exactly the parent's memory (every
 * page, wherever it was at fork time), can allocate and write memory of its
 * own, and its writes must not show in the parent (nor the parent's later
 * writes in it). A second round forks again after the parent changed half of
 * its memory, and that child forks a grandchild that checks too. Children
 * report their checksums through a MAP_SHARED page.
 *   prog_fork [MiB [DAEMON_FILE]]: then, as a daemon's parent does, the
 * parent forks once more and exits at once; that child waits until its
 * parent is gone, verifies every page and writes the checksum line into
 * DAEMON_FILE (through a temporary file and rename).
 *   prog_fork MiB DAEMON_FILE crash: the parent kills itself (SIGKILL)
 * right after that fork instead of exiting. */
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common.h"

#define NSMALL 2000
#define SMALL 1000 /* words */

static uint64_t *big, *map;
static size_t bigw, mapw;
static uint64_t *small[NSMALL];
static uint64_t *bg;
static size_t bgw;
static atomic_int stop_bg;
static atomic_ulong bg_rounds;
static volatile uint64_t *shared; /* [0]: child sum, [1]: grandchild sum */

static void *background(void *arg)
{
	(void)arg;
	for (uint64_t r = 1; !atomic_load(&stop_bg); r++) {
		fill(bg, bgw, 0xb9000000ull + r, 0);
		atomic_store(&bg_rounds, r);
	}
	return NULL;
}

static uint64_t sum_all(void)
{
	uint64_t h = sum64(big, bigw * 8, 1);
	h = sum64(map, mapw * 8, h);
	for (int i = 0; i < NSMALL; i++)
		h = sum64(small[i], SMALL * 8, h);
	return h;
}

/* big: first half has seed s1, second half seed 0xB2; map seed 0xA1; small[i] seed 0x5000+i */
static void verify_all(uint64_t s1, const char *who)
{
	char what[96];
	snprintf(what, sizeof what, "%s: big first half", who);
	expect(big, bigw / 2, s1, 0, what);
	snprintf(what, sizeof what, "%s: big second half", who);
	expect(big + bigw / 2, bigw - bigw / 2, 0xB2, bigw / 2, what);
	snprintf(what, sizeof what, "%s: private mapping", who);
	expect(map, mapw, 0xA1, 0, what);
	for (int i = 0; i < NSMALL; i++) {
		snprintf(what, sizeof what, "%s: small block %d", who, i);
		expect(small[i], SMALL, 0x5000 + (uint64_t)i, 0, what);
	}
}

/* What a child does besides verifying: allocate, write and check memory of its own. */
static void child_work(const char *who)
{
	size_t n = 48 * MiB / 8;
	uint64_t *mine = malloc(n * 8);
	if (!mine)
		die("%s: malloc in child", who);
	fill(mine, n, 0xc4, 0);
	/* and overwrite the parent's first half: copy-on-write, the parent must not see it */
	fill(big, bigw / 2, 0xdead, 0);
	char what[64];
	snprintf(what, sizeof what, "%s: own block", who);
	expect(mine, n, 0xc4, 0, what);
	snprintf(what, sizeof what, "%s: overwritten half", who);
	expect(big, bigw / 2, 0xdead, 0, what);
	free(mine);
}

static void wait_ok(pid_t pid, const char *who)
{
	int st;
	if (waitpid(pid, &st, 0) != pid)
		die("waitpid %s", who);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		die("%s failed (status %#x)", who, st);
}

/* The child outlives its parent, which exits right after fork. */
static void daemon_round(const char *path, uint64_t h, bool crash)
{
	pid_t parent = getpid(), pid;
	char tmp[4096];
	FILE *f;

	fflush(stdout);
	if ((pid = fork()) < 0)
		die("fork 3");
	if (pid > 0 && crash)
		kill(getpid(), SIGKILL);
	if (pid > 0)
		return;
	while (getppid() == parent)
		usleep(1000);
	verify_all(0xB3, "daemon child after its parent exited");
	snprintf(tmp, sizeof tmp, "%s.tmp", path);
	if (!(f = fopen(tmp, "w")))
		die("%s: %s", tmp, strerror(errno));
	fprintf(f, "daemon child: checksum %016" PRIx64 " (parent's %016" PRIx64 ")\n", sum_all(), h);
	if (fclose(f) || rename(tmp, path))
		die("%s: %s", path, strerror(errno));
	_exit(0);
}

int main(int argc, char **argv)
{
	size_t size = arg_mib(argc, argv, 1, 128);
	bigw = size / 8;
	mapw = 32 * MiB / 8;
	bgw = 8 * MiB / 8;
	if (!(big = malloc(bigw * 8)) || !(bg = malloc(bgw * 8)))
		die("malloc");
	map = mmap(NULL, mapw * 8, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	shared = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (map == MAP_FAILED || shared == MAP_FAILED)
		die("mmap");
	for (int i = 0; i < NSMALL; i++) {
		if (!(small[i] = malloc(SMALL * 8)))
			die("malloc small");
		fill(small[i], SMALL, 0x5000 + (uint64_t)i, 0);
	}
	fill(big, bigw / 2, 0xB1, 0);
	fill(big + bigw / 2, bigw - bigw / 2, 0xB2, bigw / 2);
	fill(map, mapw, 0xA1, 0);
	uint64_t h1 = sum_all();

	pthread_t th;
	if (pthread_create(&th, NULL, background, NULL))
		die("pthread_create");
	while (atomic_load(&bg_rounds) < 2)
		;

	/* round 1 */
	pid_t pid = fork();
	if (pid < 0)
		die("fork");
	if (pid == 0) {
		verify_all(0xB1, "child 1");
		shared[0] = sum_all();
		child_work("child 1");
		_exit(0);
	}
	wait_ok(pid, "child 1");
	if (shared[0] != h1)
		die("child 1 saw checksum %016" PRIx64 ", parent has %016" PRIx64, shared[0], h1);
	verify_all(0xB1, "parent after child 1");

	/* round 2: the parent changes its first half, then forks a child that forks too */
	fill(big, bigw / 2, 0xB3, 0);
	uint64_t h2 = sum_all();
	pid = fork();
	if (pid < 0)
		die("fork 2");
	if (pid == 0) {
		verify_all(0xB3, "child 2");
		shared[0] = sum_all();
		pid_t g = fork();
		if (g < 0)
			die("fork in child");
		if (g == 0) {
			verify_all(0xB3, "grandchild");
			shared[1] = sum_all();
			child_work("grandchild");
			_exit(0);
		}
		child_work("child 2");
		wait_ok(g, "grandchild");
		_exit(0);
	}
	/* meanwhile the parent writes its second half again (same values) */
	fill(big + bigw / 2, bigw - bigw / 2, 0xB2, bigw / 2);
	wait_ok(pid, "child 2");
	if (shared[0] != h2 || shared[1] != h2)
		die("round 2 checksums: child %016" PRIx64 ", grandchild %016" PRIx64 ", parent %016" PRIx64,
		    shared[0], shared[1], h2);
	verify_all(0xB3, "parent after child 2");

	atomic_store(&stop_bg, 1);
	pthread_join(th, NULL);
	printf("fork: %zu MiB, checksums %016" PRIx64 " %016" PRIx64 ", ok\n", size / MiB, h1, h2);
	if (argc > 2)
		daemon_round(argv[2], h2, argc > 3 && !strcmp(argv[3], "crash"));
	return 0;
}

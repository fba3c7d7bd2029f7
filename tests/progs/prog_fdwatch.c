/* prog_fdwatch [MiB=128] [SECONDS=3] [fork]: fills MiB of memory, then for
 * SECONDS one thread reads and rewrites it at random pages (under comex:
 * faults, evictions, polling) while the main thread lists /proc/self/fd
 * over and over, as CPython's test_subprocess does around a call, and
 * counts the listings that differ from the first. Prints that count, which
 * is 0 natively and must be 0 under comex (docs/DECISIONS.md D47), then
 * checks its memory. With fork, a forked child does all this while its
 * parent waits (under comex: before and after the child's take-over). A
 * differing listing is shown on stderr. */
#include <fcntl.h>
#include <pthread.h>
#include <sys/wait.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "common.h"

#define LIST_MAX 65536

static uint64_t *mem;
static size_t words;
static int stop;

static void *page_at_random(void *arg)
{
	uint64_t x = 1, pages = words * 8 / PAGE, sum = 0;

	(void)arg;
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		uint64_t w = (x = mix64(x)) % pages * (PAGE / 8);

		sum += mem[w];
		if (x & 1)
			mem[w] = pat(0xfd, w); /* the value it holds: dirty, unchanged */
	}
	return (void *)(uintptr_t)sum;
}

/* The names in /proc/self/fd, in the kernel's order, NUL-separated, into
 * buf; their length */
static size_t list(int dfd, char *buf)
{
	char ents[4096];
	size_t len = 0;
	long n;

	if (lseek(dfd, 0, SEEK_SET) < 0)
		die("lseek /proc/self/fd: %s", strerror(errno));
	while ((n = syscall(SYS_getdents64, dfd, ents, sizeof(ents))) > 0)
		for (long off = 0; off < n;) {
			const char *name = ents + off + 19; /* d_ino 8, d_off 8, d_reclen 2, d_type 1 */
			unsigned short reclen;
			size_t l = strlen(name) + 1;

			memcpy(&reclen, ents + off + 16, sizeof(reclen));
			off += reclen;
			if (len + l > LIST_MAX)
				die("more than %d bytes of descriptor names", LIST_MAX);
			memcpy(buf + len, name, l);
			len += l;
		}
	if (n < 0)
		die("getdents64 /proc/self/fd: %s", strerror(errno));
	return len;
}

static void show(const char *what, const char *buf, size_t len)
{
	fprintf(stderr, "%s:", what);
	for (size_t i = 0; i < len; i += strlen(buf + i) + 1)
		fprintf(stderr, " %s", buf + i);
	fputc('\n', stderr);
}

int main(int argc, char **argv)
{
	size_t size = arg_mib(argc, argv, 1, 128), first_len, len;
	int seconds = argc > 2 ? atoi(argv[2]) : 3, dfd, changed = 0;
	static char first[LIST_MAX], now[LIST_MAX];
	struct timespec t0, t;
	pthread_t th;

	mem = map_anon(size);
	words = size / 8;
	fill(mem, words, 0xfd, 0);
	if (argc > 3 && !strcmp(argv[3], "fork")) {
		int status;
		pid_t pid = fork();

		if (pid < 0)
			die("fork: %s", strerror(errno));
		if (pid) {
			if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
				die("the child did not exit");
			expect(mem, words, 0xfd, 0, "the parent's memory after the child");
			printf("child exit status %d\n", WEXITSTATUS(status));
			return 0;
		}
		printf("in a forked child: ");
	}
	if ((dfd = open("/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
		die("open /proc/self/fd: %s", strerror(errno));
	if ((errno = pthread_create(&th, NULL, page_at_random, NULL)))
		die("pthread_create: %s", strerror(errno));
	first_len = list(dfd, first);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		len = list(dfd, now);
		if (len != first_len || memcmp(now, first, len)) {
			if (!changed++) {
				show("first listing", first, first_len);
				show("a later one", now, len);
			}
		}
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while (t.tv_sec - t0.tv_sec < seconds);
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	pthread_join(th, NULL);
	expect(mem, words, 0xfd, 0, "memory after the listings");
	printf("fdwatch: %zu MiB; listings of /proc/self/fd that differed from the first: %d\n", size / MiB, changed);
	printf("checksum %016" PRIx64 "\n", sum64(mem, size, 0));
	return 0;
}

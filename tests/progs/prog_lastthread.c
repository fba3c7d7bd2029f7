/* prog_lastthread MODE [MiB=64]: the process ends when its last thread
 * ends with pthread_exit, the runtime's threads notwithstanding.
 *   main   main fills MiB and ends with pthread_exit; a second thread
 *          checks the memory, prints its checksum and returns;
 *   fork   a second thread forks; in the child it starts a third thread
 *          that joins it, and ends with pthread_exit; the third prints and
 *          returns; the parent waits for the child, prints its status and
 *          checks its memory as well.
 * A process that never ends is what this catches (the test's hang guard). */
#include <pthread.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common.h"

static uint64_t *mem;
static size_t size;
static pthread_t forker;

static void *verify(void *arg)
{
	(void)arg;
	expect(mem, size / 8, 0x1a57, 0, "memory after main's pthread_exit");
	printf("checked %zu MiB, checksum %016" PRIx64 "\n", size / MiB, sum64(mem, size, 0));
	fflush(stdout);
	return NULL;
}

static void *joiner(void *arg)
{
	(void)arg;
	pthread_join(forker, NULL);
	verify(NULL);
	return NULL;
}

static void *fork_from_thread(void *arg)
{
	pthread_t t;
	int status;
	pid_t pid;

	(void)arg;
	if ((pid = fork()) < 0)
		die("fork: %s", strerror(errno));
	if (!pid) {
		forker = pthread_self();
		if (pthread_create(&t, NULL, joiner, NULL))
			die("pthread_create in the child");
		pthread_exit(NULL);
	}
	if (waitpid(pid, &status, 0) != pid)
		die("waitpid: %s", strerror(errno));
	printf("child exit status %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	return verify(NULL); /* the parent's own pages, read back too */
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "main";
	pthread_t t;

	size = arg_mib(argc, argv, 2, 64);
	mem = map_anon(size);
	fill(mem, size / 8, 0x1a57, 0);
	if (pthread_create(&t, NULL, !strcmp(mode, "fork") ? fork_from_thread : verify, NULL))
		die("pthread_create");
	if (!strcmp(mode, "fork"))
		pthread_join(t, NULL);
	else
		pthread_exit(NULL);
	return 0;
}

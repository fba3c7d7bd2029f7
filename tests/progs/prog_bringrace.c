/* prog_bringrace: reader threads stream through a mapping larger than local
 * memory while the main thread forks again and again with another mapping
 * PROT_NONE. Under comex an unpinned fault handler (fault-handlers one, or
 * per-cpu's shared one) reads without the pager lock (D28); with lazy-fork
 * off every page comes home before a fork, and a PROT_NONE page no fault
 * can bring, so the forking thread reads it itself under the lock: two
 * remote reads at once, which must not share the landing area or the plan.
 *   prog_bringrace MIB [READERS [FORKS]]
 * Prints both mappings' checksums; exits 1 at the first mismatch. */
#include <pthread.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common.h"

#define CHUNK_WORDS (16 * PAGE / 8)
#define SEED_READ 0x5eadull
#define SEED_HIDDEN 0x41dull

static uint64_t *mem;
static size_t words;
static unsigned nreaders;
static volatile int stop;

/* Each reader walks the mapping from its own start, a stream of faults. */
static void *reader(void *arg)
{
	size_t w = (size_t)(uintptr_t)arg * (words / nreaders) / CHUNK_WORDS * CHUNK_WORDS;

	while (!stop) {
		expect(mem + w, CHUNK_WORDS, SEED_READ, w, "reader");
		w = (w + CHUNK_WORDS) % words;
	}
	return NULL;
}

int main(int argc, char **argv)
{
	size_t bytes = arg_mib(argc, argv, 1, 64), hidden_bytes = bytes / 4;
	unsigned forks = argc > 3 ? (unsigned)strtoul(argv[3], NULL, 0) : 20;
	pthread_t t[16];
	uint64_t *hidden;

	nreaders = argc > 2 ? (unsigned)strtoul(argv[2], NULL, 0) : 2;
	if (!nreaders || nreaders > 16 || bytes < 16 * PAGE * 16)
		die("usage: prog_bringrace MIB (at least 1) [READERS (1-16) [FORKS]]");
	words = bytes / 8;
	/* the hidden mapping first: filling mem then pushes it out */
	hidden = map_anon(hidden_bytes);
	fill(hidden, hidden_bytes / 8, SEED_HIDDEN, 0);
	mem = map_anon(bytes);
	fill(mem, words, SEED_READ, 0);
	if (mprotect(hidden, hidden_bytes, PROT_NONE))
		die("mprotect(PROT_NONE) %zu bytes: %s", hidden_bytes, strerror(errno));
	for (unsigned i = 0; i < nreaders; i++)
		if ((errno = pthread_create(&t[i], NULL, reader, (void *)(uintptr_t)i)))
			die("pthread_create: %s", strerror(errno));
	for (unsigned f = 0; f < forks; f++) {
		pid_t pid = fork();
		int status;

		if (pid < 0)
			die("fork %u: %s", f, strerror(errno));
		if (!pid)
			_exit(0);
		if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status))
			die("fork %u: the child did not exit 0", f);
		usleep(20000); /* the readers push the hidden pages out again */
	}
	stop = 1;
	for (unsigned i = 0; i < nreaders; i++)
		pthread_join(t[i], NULL);
	if (mprotect(hidden, hidden_bytes, PROT_READ))
		die("mprotect(PROT_READ) %zu bytes: %s", hidden_bytes, strerror(errno));
	expect(hidden, hidden_bytes / 8, SEED_HIDDEN, 0, "hidden mapping");
	expect(mem, words, SEED_READ, 0, "read mapping");
	printf("%u readers, %u forks: read %016" PRIx64 " hidden %016" PRIx64 "\n", nreaders, forks,
	       sum64(mem, bytes, 0), sum64(hidden, hidden_bytes, 0));
	return 0;
}

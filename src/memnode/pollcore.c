/* pollcore: a claim on a polling core is one 64-bit word in a file shared by
 * the host's memnodes, one file per rank k < POLLCORE_SHARE, one word per
 * core in each (rank 0 is the file of memnodes that knew one claim a core,
 * which set its size: a file another process has mapped is never shrunk,
 * only grown): the holder's pid (high half) and the CLOCK_MONOTONIC
 * millisecond of its last renewal (low half, wrapping). A word is free when
 * its pid is 0 or its renewal is older than POLLCORE_STALE_MS; every change
 * is a compare-and-swap, so two memnodes never both hold a core. The clock is
 * the host's, the same in every process. An flock (D8 before D83) could not
 * be taken from a stopped holder: its peers slept on while it stood still. */
#include "pollcore.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"

#define CLAIM_FILE "comex-pollcores" /* rank k > 0: CLAIM_FILE.k */
#define CLAIM_BYTES (CPU_SETSIZE * sizeof(uint64_t)) /* word i: core i */

struct pollcore {
	_Atomic uint64_t *words[POLLCORE_SHARE]; /* per rank, CPU_SETSIZE words mapped shared */
	cpu_set_t allowed;       /* this thread's affinity before any claim */
	long ncpu;
	uint32_t me;             /* our pid */
	int held;                /* the core we hold, or -1 */
	unsigned rank;           /* while held: our claim's rank */
};

/* now (ns) as a claim's millisecond, wrapping at 2^32 */
static uint32_t ms_of(uint64_t now)
{
	return (uint32_t)(now / 1000000u);
}

static uint64_t word_of(uint32_t pid, uint64_t now)
{
	return (uint64_t)pid << 32 | ms_of(now);
}

/* Milliseconds since claim w was last renewed (wrapping subtraction). */
static uint32_t age_ms(uint64_t w, uint64_t now)
{
	return ms_of(now) - (uint32_t)w;
}

static bool is_free(uint64_t w, uint64_t now)
{
	return !(w >> 32) || age_ms(w, now) > POLLCORE_STALE_MS;
}

static void pin(struct pollcore *pc, int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set))
		log_warn("cannot pin the polling thread to core %d: %m", cpu);
	pc->held = cpu;
}

static void unpin(struct pollcore *pc)
{
	if (sched_setaffinity(0, sizeof(pc->allowed), &pc->allowed))
		log_warn("cannot undo the pin to core %d: %m", pc->held);
	pc->held = -1;
}

/* Takes claim k of a core we may run on, core 0 aside (it is left to
 * everything else): the highest core whose claim k is free or stale. */
static bool claim_kth(struct pollcore *pc, unsigned k, uint64_t now)
{
	const char *shared = k ? ", shared with another memnode" : "";

	for (long cpu = pc->ncpu - 1; cpu >= 1; cpu--) {
		_Atomic uint64_t *word = &pc->words[k][cpu];
		uint64_t w;

		if (!CPU_ISSET(cpu, &pc->allowed))
			continue;
		w = atomic_load(word);
		if (!is_free(w, now) || !atomic_compare_exchange_strong(word, &w, word_of(pc->me, now)))
			continue;
		pin(pc, (int)cpu);
		pc->rank = k;
		if (w >> 32 && (uint32_t)(w >> 32) != pc->me)
			log_info("busy-polling on core %ld%s (memnode pid %u, which held this claim, has not run for %u ms)",
				 cpu, shared, (unsigned)(w >> 32), age_ms(w, now));
		else
			log_info("busy-polling on core %ld%s", cpu, shared);
		return true;
	}
	return false;
}

/* A core of our own if one is free, else a share of one. */
static bool claim(struct pollcore *pc, uint64_t now)
{
	for (unsigned k = 0; k < POLLCORE_SHARE; k++)
		if (claim_kth(pc, k, now))
			return true;
	return false;
}

/* Frees our claim at word, unless another memnode took it meanwhile. */
static void give_back(_Atomic uint64_t *word, uint32_t me)
{
	uint64_t w = atomic_load(word);

	if ((uint32_t)(w >> 32) == me)
		atomic_compare_exchange_strong(word, &w, 0);
}

bool pollcore_tick(struct pollcore *pc, uint64_t now)
{
	if (pc->held >= 0) {
		_Atomic uint64_t *word = &pc->words[pc->rank][pc->held];
		uint64_t w = atomic_load(word);

		/* a failed exchange leaves the word it found in w */
		if ((uint32_t)(w >> 32) == pc->me && atomic_compare_exchange_strong(word, &w, word_of(pc->me, now))) {
			if (pc->rank && claim_kth(pc, 0, now)) /* a core of its own came free: the share goes back */
				give_back(word, pc->me);
			return true;
		}
		log_info("memnode pid %u took polling core %d while this one stood still; sleeping between requests",
			 (unsigned)(w >> 32), pc->held);
		unpin(pc);
	}
	return claim(pc, now);
}

/* Maps rank k's claims from dir, growing the file to CLAIM_BYTES (never
 * shrinking it: others have it mapped). */
static int map_rank(const char *dir, unsigned k, _Atomic uint64_t **out)
{
	char path[4096];
	struct stat st;
	void *p;
	int fd, err = 0;

	if (k)
		snprintf(path, sizeof(path), "%s/%s.%u", dir, CLAIM_FILE, k);
	else
		snprintf(path, sizeof(path), "%s/%s", dir, CLAIM_FILE);
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0 || fstat(fd, &st) || (st.st_size < (off_t)CLAIM_BYTES && ftruncate(fd, CLAIM_BYTES))) {
		err = -errno;
		log_warn("cannot open the polling-core claims %s: %m; sleeping between requests", path);
		goto close_fd;
	}
	p = mmap(NULL, CLAIM_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		err = -errno;
		log_warn("cannot map the polling-core claims %s (%zu bytes): %m; sleeping between requests", path,
			 (size_t)CLAIM_BYTES);
		goto close_fd;
	}
	*out = p;
close_fd:
	if (fd >= 0)
		close(fd);
	return err;
}

static void unmap_ranks(struct pollcore *pc)
{
	for (unsigned k = 0; k < POLLCORE_SHARE; k++)
		if (pc->words[k])
			munmap((void *)pc->words[k], CLAIM_BYTES);
}

int pollcore_open(const char *dir, struct pollcore **out)
{
	struct pollcore *pc;
	int err = 0;

	pc = calloc(1, sizeof(*pc));
	if (!pc)
		return -ENOMEM;
	for (unsigned k = 0; k < POLLCORE_SHARE && !err; k++)
		err = map_rank(dir, k, &pc->words[k]);
	if (err)
		goto unmap;
	if (sched_getaffinity(0, sizeof(pc->allowed), &pc->allowed))
		CPU_ZERO(&pc->allowed); /* claims nothing */
	pc->ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	if (pc->ncpu > CPU_SETSIZE)
		pc->ncpu = CPU_SETSIZE;
	pc->me = (uint32_t)getpid();
	pc->held = -1;
	*out = pc;
	return 0;
unmap:
	unmap_ranks(pc);
	free(pc);
	return err;
}

void pollcore_close(struct pollcore *pc)
{
	if (!pc)
		return;
	if (pc->held >= 0) {
		give_back(&pc->words[pc->rank][pc->held], pc->me);
		unpin(pc);
	}
	unmap_ranks(pc);
	free(pc);
}

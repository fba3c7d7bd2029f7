/* pollcore: a claim on a polling core is one 64-bit word in a file shared by
 * the host's memnodes, POLLCORE_SHARE words a core (claim k of core c at word
 * c + k * CPU_SETSIZE: the first claims are where a memnode that knew one
 * claim a core looked): the holder's pid (high half) and the CLOCK_MONOTONIC
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
#include <unistd.h>

#include "log.h"

#define CLAIM_FILE "comex-pollcores"
#define CLAIM_WORDS (POLLCORE_SHARE * CPU_SETSIZE)
#define CLAIM_BYTES (CLAIM_WORDS * sizeof(uint64_t))

struct pollcore {
	_Atomic uint64_t *words; /* CLAIM_WORDS words, mapped shared */
	cpu_set_t allowed;       /* this thread's affinity before any claim */
	long ncpu;
	uint32_t me;             /* our pid */
	int held;                /* the core we hold, or -1 */
	unsigned word;           /* while held: our claim's word */
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
		unsigned i = (unsigned)cpu + k * CPU_SETSIZE;
		uint64_t w;

		if (!CPU_ISSET(cpu, &pc->allowed))
			continue;
		w = atomic_load(&pc->words[i]);
		if (!is_free(w, now) || !atomic_compare_exchange_strong(&pc->words[i], &w, word_of(pc->me, now)))
			continue;
		pin(pc, (int)cpu);
		pc->word = i;
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

bool pollcore_tick(struct pollcore *pc, uint64_t now)
{
	if (pc->held >= 0) {
		_Atomic uint64_t *word = &pc->words[pc->word];
		uint64_t w = atomic_load(word);

		/* a failed exchange leaves the word it found in w */
		if ((uint32_t)(w >> 32) == pc->me && atomic_compare_exchange_strong(word, &w, word_of(pc->me, now)))
			return true;
		log_info("memnode pid %u took polling core %d while this one stood still; sleeping between requests",
			 (unsigned)(w >> 32), pc->held);
		unpin(pc);
	}
	return claim(pc, now);
}

int pollcore_open(const char *dir, struct pollcore **out)
{
	char path[4096];
	struct pollcore *pc;
	int fd, err;

	pc = calloc(1, sizeof(*pc));
	if (!pc)
		return -ENOMEM;
	snprintf(path, sizeof(path), "%s/%s", dir, CLAIM_FILE);
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0 || ftruncate(fd, CLAIM_BYTES)) {
		err = -errno;
		log_warn("cannot open the polling-core claims %s: %m; sleeping between requests", path);
		goto close_fd;
	}
	pc->words = mmap(NULL, CLAIM_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (pc->words == MAP_FAILED) {
		err = -errno;
		log_warn("cannot map the polling-core claims %s (%zu bytes): %m; sleeping between requests", path,
			 (size_t)CLAIM_BYTES);
		goto close_fd;
	}
	close(fd);
	if (sched_getaffinity(0, sizeof(pc->allowed), &pc->allowed))
		CPU_ZERO(&pc->allowed); /* claims nothing */
	pc->ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	if (pc->ncpu > CPU_SETSIZE)
		pc->ncpu = CPU_SETSIZE;
	pc->me = (uint32_t)getpid();
	pc->held = -1;
	*out = pc;
	return 0;
close_fd:
	if (fd >= 0)
		close(fd);
	free(pc);
	return err;
}

void pollcore_close(struct pollcore *pc)
{
	if (!pc)
		return;
	if (pc->held >= 0) {
		uint64_t w = atomic_load(&pc->words[pc->word]);

		if ((uint32_t)(w >> 32) == pc->me)
			atomic_compare_exchange_strong(&pc->words[pc->word], &w, 0);
		unpin(pc);
	}
	munmap(pc->words, CLAIM_BYTES);
	free(pc);
}

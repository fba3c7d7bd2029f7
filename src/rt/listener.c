/* listener: one polling handler while the main thread faults, else the shared one (or all). */
#include "listener.h"

#include <limits.h>
#include <stddef.h>
#include <sys/rseq.h>

#include "os.h"

/* Handlers pinned to CPUs below this number may be chosen alone; the others
 * always poll (the bitmap stays small and static). */
#define LISTENER_CPUS 1024

/* Consecutive faults of the main thread on one CPU before its handler polls
 * alone: a program whose other threads fault now and then keeps every
 * handler polling instead of switching on each fault (a switch is a futex
 * wake). Going back to all, or to another CPU, is immediate. */
#define FOLLOW_AFTER 16

static const volatile uint32_t *main_cpu; /* the main thread's rseq cpu_id */
static uint32_t main_tid;
static uint64_t started[LISTENER_CPUS / 64]; /* atomic bits: a handler runs there */
static int alone = -1;                        /* atomic: the CPU whose handler polls alone, or -1 */
static bool shared;                           /* atomic: the shared handler runs */
static unsigned seq;                          /* futex word: bumped when alone changes */
static unsigned streak;                       /* faults of main on streak_cpu in a row (handlers' lock held) */
static int streak_cpu = -1;

void listener_note_main(void)
{
	if (__rseq_size < offsetof(struct rseq, cpu_id) + sizeof(uint32_t))
		return; /* glibc did not register rseq (tunable glibc.pthread.rseq=0, an older glibc) */
	main_tid = (uint32_t)os_gettid();
	main_cpu = (const volatile uint32_t *)((char *)__builtin_thread_pointer() + __rseq_offset +
					       offsetof(struct rseq, cpu_id));
}

static bool has_handler(uint32_t cpu)
{
	return cpu < LISTENER_CPUS && (__atomic_load_n(&started[cpu / 64], __ATOMIC_ACQUIRE) >> (cpu % 64) & 1);
}

void listener_started(int cpu)
{
	if (cpu == LISTENER_SHARED)
		__atomic_store_n(&shared, true, __ATOMIC_RELEASE);
	else if (cpu >= 0 && cpu < LISTENER_CPUS)
		__atomic_fetch_or(&started[cpu / 64], 1ull << (cpu % 64), __ATOMIC_RELEASE);
}

bool listener_polls(int cpu)
{
	int a = __atomic_load_n(&alone, __ATOMIC_ACQUIRE);

	if (cpu == LISTENER_SHARED)
		return a < 0;
	return (a < 0 && !__atomic_load_n(&shared, __ATOMIC_ACQUIRE)) || a == cpu || cpu >= LISTENER_CPUS;
}

static void set_alone(int cpu)
{
	if (__atomic_load_n(&alone, __ATOMIC_RELAXED) == cpu)
		return;
	__atomic_store_n(&alone, cpu, __ATOMIC_RELEASE);
	__atomic_fetch_add(&seq, 1, __ATOMIC_RELEASE);
	os_futex_wake(&seq, INT_MAX);
}

void listener_wait(int cpu)
{
	unsigned s = __atomic_load_n(&seq, __ATOMIC_ACQUIRE);

	if (!listener_polls(cpu))
		os_futex_wait(&seq, s, &(struct timespec){ 0, 100000000 });
}

/* Called by the handler that answered, with the pager lock held, so the
 * streak needs no atomics. The rseq cpu_id is where the main thread last
 * ran in user mode: where it faulted, since it is still waking up. */
void listener_follow(uint32_t ptid)
{
	uint32_t cpu = main_cpu && ptid == main_tid ? *main_cpu : UINT32_MAX;

	if (!has_handler(cpu)) {
		streak = 0;
		set_alone(-1);
		return;
	}
	streak = (int)cpu == streak_cpu ? streak + 1 : 1;
	streak_cpu = (int)cpu;
	if (streak >= FOLLOW_AFTER || __atomic_load_n(&alone, __ATOMIC_RELAXED) >= 0)
		set_alone((int)cpu);
}

void listener_reset(void)
{
	for (unsigned i = 0; i < LISTENER_CPUS / 64; i++)
		started[i] = 0;
	alone = -1;
	shared = false;
	main_cpu = NULL;
	streak = 0;
}

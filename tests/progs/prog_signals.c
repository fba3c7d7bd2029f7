/* prog_signals [MiB=128]: signal handlers running on an alternate stack that
 * lives in (evicted) malloc'd memory, reading and writing evicted memory:
 *   1. raise(SIGUSR1) between writes that push the stack and data out;
 *   2. another thread sends SIGUSR1 to the main thread while it is faulting
 *      pages in, one at a time with a handshake;
 *   3. SIGSEGV from reading PROT_NONE ranges of evicted memory; the handler
 *      makes them readable again and the read is retried;
 *   4. SIGALRM from an interval timer during a full verification;
 *   0. first of all: process-directed signals while the only thread blocks
 *      them stay pending (no handler runs: the program has no other thread)
 *      and run the handler once when unblocked.
 * Handlers verify the page they read and record a checksum in evicted
 * memory; all is checked at the end. Prints the deterministic counts. */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <sys/time.h>
#include <unistd.h>

#include "common.h"

#define ALTSTACK (256 * 1024)
#define NREC 4096

static uint64_t *big;
static size_t words, pages;
static uint64_t *rec;           /* handler records: per signal, checksum of the page it read */
static atomic_ulong nusr, nalrm, nsegv, nusr2, bad;
static atomic_ulong cursor, cursor2; /* next page the SIGUSR1 (other) handlers read */
static char *altstack;
static char *prot_lo;
static size_t prot_len;

#define WPP (PAGE / 8)

/* read and check page p; uses a good deal of the (alternate) stack */
static uint64_t handler_read(size_t p)
{
	volatile uint64_t copy[3 * WPP]; /* 24 KiB on the signal stack */
	const uint64_t *w = big + p * WPP;
	for (size_t i = 0; i < WPP; i++)
		copy[i * 3 % (3 * WPP)] = w[i];
	uint64_t h = 0;
	for (size_t i = 0; i < WPP; i++) {
		uint64_t v = copy[i * 3 % (3 * WPP)];
		if (v != pat(0x51, p * WPP + i))
			atomic_fetch_add(&bad, 1);
		h = mix64(h ^ v);
	}
	return h;
}

static void on_usr1(int sig, siginfo_t *si, void *uc)
{
	(void)sig, (void)si, (void)uc;
	unsigned long n = atomic_fetch_add(&nusr, 1);
	size_t p = (atomic_fetch_add(&cursor, 9973) * 7919) % pages;
	rec[n % NREC] = handler_read(p) ^ n;
}

static void on_alrm(int sig)
{
	(void)sig;
	atomic_fetch_add(&nalrm, 1);
	size_t p = (atomic_fetch_add(&cursor2, 12553) * 104729) % pages;
	(void)handler_read(p);
}

static void on_usr2(int sig)
{
	(void)sig;
	atomic_fetch_add(&nusr2, 1);
	size_t p = (atomic_fetch_add(&cursor2, 31) * 7919) % pages;
	(void)handler_read(p);
}

static void on_segv(int sig, siginfo_t *si, void *uc)
{
	(void)sig, (void)uc;
	char *a = si->si_addr;
	if (a < prot_lo || a >= prot_lo + prot_len)
		_exit(3); /* a real crash */
	atomic_fetch_add(&nsegv, 1);
	if (mprotect(prot_lo, prot_len, PROT_READ | PROT_WRITE))
		_exit(4);
}

static atomic_int phase2_done;
static pthread_t main_thread;

static void *sender(void *arg)
{
	(void)arg;
	for (unsigned long i = 0; i < 300; i++) {
		unsigned long before = atomic_load(&nusr);
		pthread_kill(main_thread, SIGUSR1);
		while (atomic_load(&nusr) == before)
			sched_yield();
	}
	atomic_store(&phase2_done, 1);
	return NULL;
}

int main(int argc, char **argv)
{
	size_t size = arg_mib(argc, argv, 1, 128);
	words = size / 8;
	pages = size / PAGE;
	altstack = malloc(ALTSTACK);
	rec = malloc(NREC * 8);
	big = aligned_alloc(PAGE, size);
	if (!altstack || !rec || !big)
		die("malloc");
	memset(altstack, 0x5a, ALTSTACK);
	memset(rec, 0, NREC * 8);
	stack_t ss = { .ss_sp = altstack, .ss_size = ALTSTACK };
	if (sigaltstack(&ss, NULL))
		die("sigaltstack");
	struct sigaction sa = { .sa_sigaction = on_usr1, .sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART };
	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR1, &sa, NULL);
	sa.sa_sigaction = on_segv;
	sigaction(SIGSEGV, &sa, NULL);
	struct sigaction sb = { .sa_handler = on_alrm, .sa_flags = SA_ONSTACK | SA_RESTART };
	sigemptyset(&sb.sa_mask);
	sigaction(SIGALRM, &sb, NULL);
	sb.sa_handler = on_usr2;
	sigaction(SIGUSR2, &sb, NULL);
	fill(big, words, 0x51, 0);

	/* 0. a blocked process-directed signal stays pending until unblocked */
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGUSR2);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	for (int i = 0; i < 20; i++) {
		kill(getpid(), SIGUSR2);
		usleep(20000);
	}
	if (atomic_load(&nusr2))
		die("a handler ran %lu times for a signal that every program thread blocks", atomic_load(&nusr2));
	pthread_sigmask(SIG_UNBLOCK, &set, NULL);
	unsigned long n0 = atomic_load(&nusr2);

	/* 1. raise between writes */
	for (int i = 0; i < 200; i++) {
		size_t chunk = words / 200;
		fill(big + i * chunk, chunk, 0x51, i * chunk); /* same values: pages are dirtied and pushed */
		raise(SIGUSR1);
	}
	unsigned long n1 = atomic_load(&nusr);

	/* 2. signals from another thread while the main thread faults */
	main_thread = pthread_self();
	pthread_t th;
	if (pthread_create(&th, NULL, sender, NULL))
		die("pthread_create");
	for (size_t round = 0; !atomic_load(&phase2_done); round++)
		expect(big, words, 0x51, 0, "verification interrupted by signals");
	pthread_join(th, NULL);
	unsigned long n2 = atomic_load(&nusr) - n1;

	/* 3. SIGSEGV on PROT_NONE evicted ranges */
	for (size_t r = 0; r < 10; r++) {
		size_t first = r * (pages / 10), push = (r + 1) % 10 * (pages / 10);
		prot_len = 64 * PAGE;
		prot_lo = (char *)(big + first * WPP);
		fill(big + push * WPP, 4 * MiB / 8, 0x51, push * WPP); /* same values: pushes the range out */
		if (mprotect(prot_lo, prot_len, PROT_NONE))
			die("mprotect: %s", strerror(errno));
		expect((uint64_t *)prot_lo, prot_len / 8, 0x51, first * WPP, "range read after SIGSEGV made it readable");
	}
	prot_lo = NULL;
	prot_len = 0;

	/* 4. timer signals during a full verification */
	struct itimerval it = { { 0, 2000 }, { 0, 2000 } };
	setitimer(ITIMER_REAL, &it, NULL);
	for (int r = 0; r < 2; r++)
		expect(big, words, 0x51, 0, "verification under SIGALRM");
	memset(&it, 0, sizeof it);
	setitimer(ITIMER_REAL, &it, NULL);

	/* altstack intact below what handlers used? handlers only use the top; check the bottom 64 KiB */
	for (size_t i = 0; i < 64 * 1024; i++)
		if ((unsigned char)altstack[i] != 0x5a)
			die("bottom of the alternate stack changed at %zu", i);
	/* records: recompute each from the page the handler read */
	unsigned long total = atomic_load(&nusr);
	atomic_store(&cursor, 0); /* replay the SIGUSR1 handler's page choices */
	for (unsigned long n = 0; n < total && n < NREC; n++) {
		size_t p = (atomic_fetch_add(&cursor, 9973) * 7919) % pages;
		if (rec[n] != (handler_read(p) ^ n))
			die("handler record %lu is wrong", n);
	}
	if (atomic_load(&bad))
		die("handlers read %lu wrong words", atomic_load(&bad));
	if (atomic_load(&nsegv) != 10)
		die("%lu SIGSEGVs, expected 10", atomic_load(&nsegv));
	printf("signals: %zu MiB, deferred %lu, raised %lu, from a thread %lu, segv %lu, checksum %016" PRIx64 ", ok\n", size / MiB, n0, n1,
	       n2, atomic_load(&nsegv), sum64(big, size, 0));
	return 0;
}

/* prog_sigdisp [MiB=64]: the dispositions of the core-dumping signals, as
 * the program sets and reads them, before the runtime starts (a process
 * waits to start until it grows, D87), after it started, in a forked child
 * at once (before a take-over), through sigaction and signal(); a handler
 * set for SIGSEGV runs on a real fault. The runtime's own handler stands in
 * for SIG_DFL (D48) and must never show. Prints one line per check. */
#include <setjmp.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common.h"

static const int core_sigs[] = { SIGQUIT, SIGILL, SIGTRAP, SIGABRT, SIGBUS, SIGFPE, SIGSEGV, SIGXCPU, SIGXFSZ, SIGSYS };
#define NSIGS (sizeof(core_sigs) / sizeof(core_sigs[0]))

static sigjmp_buf back;
static volatile sig_atomic_t caught;

static void on_sig(int sig) { (void)sig; }

static void on_segv(int sig)
{
	(void)sig;
	caught++;
	siglongjmp(back, 1);
}

/* What sig is set to: "dfl", "ign", "on_sig", "on_segv" or "other" */
static const char *now_set(int sig)
{
	struct sigaction cur;

	if (sigaction(sig, NULL, &cur))
		return "error";
	return cur.sa_handler == SIG_DFL ? "dfl" : cur.sa_handler == SIG_IGN ? "ign" : cur.sa_handler == on_sig ? "on_sig"
	       : cur.sa_handler == on_segv ? "on_segv" : "other";
}

/* Every core signal's disposition, one word each */
static void show(const char *when)
{
	printf("%s:", when);
	for (size_t i = 0; i < NSIGS; i++)
		printf(" %s", now_set(core_sigs[i]));
	printf("\n");
}

static void set(int sig, void (*h)(int))
{
	struct sigaction sa = { .sa_handler = h };

	sigemptyset(&sa.sa_mask);
	if (sigaction(sig, &sa, NULL))
		die("sigaction(%d): %s", sig, strerror(errno));
}

/* A real SIGSEGV, caught by on_segv: a read of a PROT_NONE page */
static void fault_once(void)
{
	volatile char *p = mmap(NULL, PAGE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		die("mmap: %s", strerror(errno));
	if (!sigsetjmp(back, 1))
		(void)*p;
	munmap((void *)p, PAGE);
}

int main(int argc, char **argv)
{
	size_t mib = argc > 1 ? strtoul(argv[1], NULL, 10) : 64, words = mib << 17;
	struct sigaction old;
	uint64_t *big, sum = 0;
	pid_t pid;
	int st;

	setvbuf(stdout, NULL, _IOLBF, 0);
	show("start");
	set(SIGBUS, on_sig); /* before the runtime starts: it must leave it */
	set(SIGFPE, SIG_IGN);
	printf("small signal(SIGXCPU, on_sig) was: %s\n", signal(SIGXCPU, on_sig) == SIG_DFL ? "dfl" : "other");
	printf("small signal(SIGXCPU, dfl) was: %s\n", signal(SIGXCPU, SIG_DFL) == on_sig ? "on_sig" : "other");
	show("small");
	big = malloc(words * 8); /* the runtime starts here (start-after) and evicts */
	if (!big)
		die("malloc %zu MiB", mib);
	for (size_t i = 0; i < words; i++)
		big[i] = i * 2654435761u;
	show("grown");
	set(SIGSEGV, on_segv);
	if (sigaction(SIGSEGV, NULL, &old) || old.sa_handler != on_segv)
		die("SIGSEGV's handler does not read back");
	fault_once();
	printf("segv caught: %d\n", (int)caught);
	set(SIGSEGV, SIG_DFL);
	if (sigaction(SIGABRT, &(struct sigaction){ .sa_handler = on_sig }, &old))
		die("sigaction(SIGABRT): %s", strerror(errno));
	printf("abrt was: %s\n", old.sa_handler == SIG_DFL ? "dfl" : "other");
	printf("signal(SIGABRT, dfl) was: %s\n", signal(SIGABRT, SIG_DFL) == on_sig ? "on_sig" : "other");
	printf("signal(SIGTRAP, on_sig) was: %s\n", signal(SIGTRAP, on_sig) == SIG_DFL ? "dfl" : "other");
	show("set");
	fflush(stdout);
	if ((pid = fork()) < 0)
		die("fork: %s", strerror(errno));
	if (!pid) { /* at once: a forked child is not taken over yet */
		show("child");
		set(SIGQUIT, on_sig);
		printf("child signal(SIGILL, on_sig) was: %s\n", signal(SIGILL, on_sig) == SIG_DFL ? "dfl" : "other");
		show("child-set");
		_exit(0);
	}
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st))
		die("the child failed");
	for (size_t i = 0; i < words; i++)
		sum += big[i] ^ i;
	show("end");
	printf("sum %016llx\n", (unsigned long long)sum);
	return 0;
}

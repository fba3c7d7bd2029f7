/* test_listener: per-CPU handlers poll alone on the main thread's CPU after a streak of its faults, all again on another thread's fault (the shared handler alone, once it runs), never on a CPU without a handler. */
#include <sched.h>
#include <stdio.h>
#include <sys/rseq.h>
#include <unistd.h>

#include "listener.h"
#include "testing.h"

/* Moves the calling thread to cpu; the kernel writes its rseq cpu_id on
 * the way back to user mode. */
static void run_on(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	CHECK(sched_setaffinity(0, sizeof(set), &set) == 0);
	CHECK(sched_getcpu() == cpu);
}

static void follow_main(int times)
{
	for (int i = 0; i < times; i++)
		listener_follow((uint32_t)gettid());
}

int main(void)
{
	cpu_set_t set;
	int a = -1, b = -1;

	if (__rseq_size == 0) {
		puts("SKIP: glibc registered no rseq area");
		return 77;
	}
	CHECK(sched_getaffinity(0, sizeof(set), &set) == 0);
	for (int c = 0; c < CPU_SETSIZE && b < 0; c++)
		if (CPU_ISSET(c, &set))
			*(a < 0 ? &a : &b) = c;
	if (b < 0) {
		puts("SKIP: one CPU");
		return 77;
	}
	run_on(a);
	listener_note_main();
	listener_started(a);
	listener_started(b);

	/* a streak of the main thread's faults on a: a alone, after 16 */
	follow_main(15);
	CHECK(listener_polls(a) && listener_polls(b));
	follow_main(1);
	CHECK(listener_polls(a) && !listener_polls(b));
	listener_wait(b); /* returns: asked to poll, or after 100 ms */

	/* another thread's fault: every handler at once */
	listener_follow((uint32_t)getpid() + 1000000);
	CHECK(listener_polls(a) && listener_polls(b));

	/* the main thread moves: its new CPU alone at once */
	follow_main(16);
	CHECK(!listener_polls(b));
	run_on(b);
	follow_main(1);
	CHECK(listener_polls(b) && !listener_polls(a));

	/* never a CPU whose handler is not running */
	listener_reset();
	listener_note_main();
	listener_started(a);
	follow_main(64); /* on b, which has no handler */
	CHECK(listener_polls(a) && listener_polls(b));

	/* with the shared handler: it alone while other threads fault, and
	 * never while the main thread's CPU polls alone */
	listener_started(LISTENER_SHARED);
	CHECK(listener_polls(LISTENER_SHARED) && !listener_polls(a));
	run_on(a);
	follow_main(16);
	CHECK(listener_polls(a) && !listener_polls(b) && !listener_polls(LISTENER_SHARED));
	listener_follow((uint32_t)getpid() + 1000000);
	CHECK(listener_polls(LISTENER_SHARED) && !listener_polls(a) && !listener_polls(b));
	puts("listener: ok");
	return 0;
}

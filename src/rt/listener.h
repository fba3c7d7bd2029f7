/* listener: which of the per-CPU fault handlers poll the userfaultfd. Every
 * poller wakes for every fault, and one on another CPU costs the faulting CPU
 * an inter-processor interrupt and sometimes takes the fault from the local
 * handler. While the program's faults come from its main thread, whose CPU
 * its rseq area tells, only the handler on that CPU polls (D32); while they
 * come from several threads, only the shared handler (unpinned) does. */
#ifndef COMEX_RT_LISTENER_H
#define COMEX_RT_LISTENER_H

#include <stdbool.h>
#include <stdint.h>

/* The cpu of the shared handler: unpinned, it serves the faults of several
 * threads one after another, as fault-handlers one does (D32). */
#define LISTENER_SHARED (-2)

/* On the program's main thread, before the handlers start: remembers its
 * thread id and where the kernel writes its CPU (nothing if glibc did not
 * register rseq). */
void listener_note_main(void);
/* The handler pinned to cpu (or the shared one) is running (it may be
 * asked to poll). */
void listener_started(int cpu);
/* Whether the handler pinned to cpu (or the shared one) polls now. Without
 * a shared handler, faults of several threads make every handler poll. */
bool listener_polls(int cpu);
/* Sleeps the handler of a CPU that does not poll until asked to, or at most
 * 100 ms (then a pinned one looks again; the shared one reads the faults
 * pending, the one fallback if the polling CPU's handler cannot run). */
void listener_wait(int cpu);
/* After a fault of thread ptid was answered: follows its CPU. */
void listener_follow(uint32_t ptid);
/* In a forked child, before listener_note_main on its only thread: the
 * parent's handlers are not there, so every handler polls until the child's
 * own are started and its main thread has faulted 16 times in a row. */
void listener_reset(void);

#endif

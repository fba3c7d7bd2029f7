/* watchdog: no wait inside the runtime may last forever unseen. It stops the
 * program (SIGKILL, with a message saying what waited for what) when a fault
 * handler is stuck on one batch of faults, when the pager lock is held, or
 * when a program thread sleeps in a userfaultfd fault that nobody answers,
 * each for longer than the limit. */
#ifndef COMEX_RT_WATCHDOG_H
#define COMEX_RT_WATCHDOG_H

#include <stdbool.h>
#include <stdint.h>

/* The watchdog thread's body; limit_ns 0 disables it; option is the
 * watchdog option as the user wrote it (for the message). Never returns. */
void watchdog_run(uint64_t limit_ns, const char *option);
/* Each runtime thread calls this as it starts: it is not the program's. */
void watchdog_thread_is_runtime(void);
/* A forked child: the parent's runtime threads are not here. */
void watchdog_forget_threads(void);
/* True when no thread of the program is left, only the runtime's: its last
 * thread ended with pthread_exit, and the C library would now end the
 * process with exit(0), but counts the runtime's threads as live. */
bool watchdog_program_gone(void);

#endif

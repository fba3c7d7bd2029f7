/* watchdog: no wait inside the runtime may last forever unseen. It stops the
 * program (SIGKILL, with a message saying what waited for what) when a fault
 * handler is stuck on one batch of faults, when the pager lock is held, or
 * when a program thread sleeps in a userfaultfd fault that nobody answers,
 * each for longer than the limit. */
#ifndef COMEX_RT_WATCHDOG_H
#define COMEX_RT_WATCHDOG_H

#include <stdint.h>

/* The watchdog thread's body; limit_ns 0 disables it; option is the
 * watchdog option as the user wrote it (for the message). Never returns. */
void watchdog_run(uint64_t limit_ns, const char *option);

#endif

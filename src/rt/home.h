/* home: every page of the program in its own memory, for the tools that
 * read it from outside. The kernel cannot wait for userfaultfd on their
 * behalf, so /proc/PID/mem, ptrace and process_vm_readv (gdb, gcore, py-spy,
 * perf) and a core dump see evicted pages as holes. While pages are held
 * home, eviction stops (docs/DECISIONS.md D48). */
#ifndef COMEX_RT_HOME_H
#define COMEX_RT_HOME_H

#include <stdbool.h>

/* The home thread's body: every 100 ms it looks at the counters'
 * home_request (`comex home PID`) and, with on_trace, at TracerPid; while
 * either asks, every page is brought home and held there. Never returns. */
void home_run(bool on_trace);
/* A core-dumping signal is being handled on a program thread: every page
 * home (not waiting on a pager lock the crashing thread may hold), and the
 * parts of the region the program never mapped left out of the core. */
void home_for_core(void);

#endif

/* procread: the runtime's periodic reads of /proc (a tracer attached, the
 * program's threads and where they sleep), made by one thread whose
 * descriptor table is its own, so the program's table never shows the
 * passing descriptors they need (docs/DECISIONS.md D47). */
#ifndef COMEX_RT_PROCREAD_H
#define COMEX_RT_PROCREAD_H

#include <stdbool.h>
#include <stddef.h>

/* The reading thread's body, in each managed process: never returns. Where
 * the kernel cannot give a thread a table of its own (close_range's
 * CLOSE_RANGE_UNSHARE, Linux 5.9) it returns at once, logged, and the
 * reads below make their descriptors in the program's table as before. */
void procread_run(void);
/* A small /proc file's first cap - 1 bytes, NUL-terminated: their count,
 * or -errno (-ENOENT, -ESRCH: a task that is gone). */
int procread_file(const char *path, char *buf, size_t cap);
/* The ids of the process's threads from the from-th on, at most cap of
 * them: their count, or -errno; *all false when more follow (ask again
 * from from + count; threads that come and go meanwhile may be missed). */
int procread_tasks(unsigned from, unsigned cap, int *tids, bool *all);
/* Whether this process's reading thread serves (a forked child's owner
 * thread starts one of its own, which its take-over then keeps). */
bool procread_serving(void);
/* In a forked child: the parent's reading thread is not here. */
void procread_fork_child(void);

#endif

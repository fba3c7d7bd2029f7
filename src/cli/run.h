/* run: the `comex run` launcher, `comex stats` and `comex home`. */
#ifndef COMEX_RUN_H
#define COMEX_RUN_H

#include <stdbool.h>

struct options;

/* Runs argv[0..argc) under the pager; returns the program's exit status
 * (128+signal if killed), 125 when comex itself refused or failed. */
int run_main(struct options *o, int argc, char **argv);
/* Prints the live counters of a process running under comex as JSON. */
int stats_main(int pid);
/* Asks a process running under comex to bring every page home and pause
 * eviction (release: to resume), and waits for its answer; exit status. */
int home_main(int pid, bool release);

#endif

/* exporter: `comex exporter`, the counters of every program running under
 * comex on this host in the Prometheus text format, served on
 * http://HOST:PORT/metrics (or printed once with --once). */
#ifndef COMEX_OPS_EXPORTER_H
#define COMEX_OPS_EXPORTER_H

#include <stdio.h>

/* Writes the exposition of every live program to f; 0 or a negative errno. */
int exporter_render(void *unused, FILE *f);
/* argv[0] is "exporter"; returns the process exit status. */
int exporter_main(int argc, char **argv);

#endif

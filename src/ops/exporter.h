/* exporter: `comex exporter`, the counters of every program running under
 * comex on this host and of its comex swap devices in the Prometheus text
 * format, served on http://HOST:PORT/metrics (or printed once with --once). */
#ifndef COMEX_OPS_EXPORTER_H
#define COMEX_OPS_EXPORTER_H

#include <stdbool.h>
#include <stdio.h>

/* Writes the exposition of every live program and swap device to f; 0 or a
 * negative errno. */
int exporter_render(void *unused, FILE *f);
/* Serves on listen (HOST:PORT; NULL: 127.0.0.1:9730) until SIGINT or
 * SIGTERM, or (once) prints the exposition; returns the process exit status. */
int exporter_main(const char *listen, bool once);

#endif

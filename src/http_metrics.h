/* http_metrics: a minimal HTTP/1.0 server for Prometheus scrapes. One thread
 * accepts connections one at a time and answers GET /metrics with the text
 * the render callback writes (exposition format 0.0.4); anything else gets
 * 404, 405 or 400. Used by `comex memnode --metrics-listen` and `comex exporter`. */
#ifndef COMEX_HTTP_METRICS_H
#define COMEX_HTTP_METRICS_H

#include <stdio.h>

struct http_metrics;

/* Called on the server thread for every scrape: writes the exposition to f;
 * a nonzero return answers 500. */
typedef int (*http_render_fn)(void *arg, FILE *f);

/* Listens on "HOST:PORT" (port 0: any; the bound port goes to *port_out if
 * not NULL) and starts the server thread. Errors are logged. */
int http_metrics_start(const char *hostport, http_render_fn render, void *arg,
		       struct http_metrics **out, unsigned *port_out);
/* Writes the # HELP and # TYPE lines of one metric family. */
void prom_family(FILE *f, const char *name, const char *type, const char *help);
/* Writes one sample line "name{labels} value"; labels may be NULL or "". */
void prom_sample(FILE *f, const char *name, const char *labels, double value);

/* Stops the thread, closes the socket, frees h (NULL is ignored). */
void http_metrics_stop(struct http_metrics *h);

#endif

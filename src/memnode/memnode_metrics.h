/* memnode_metrics: the memnode's counters in the Prometheus text format,
 * served on --metrics-listen (docs/OPERATIONS.md lists the metrics). */
#ifndef COMEX_MEMNODE_METRICS_H
#define COMEX_MEMNODE_METRICS_H

#include <stdint.h>

struct serve;
struct http_metrics;

/* Serves s's counters on hostport until memnode_metrics_stop(). nid labels
 * every sample. Errors are logged. */
int memnode_metrics_start(const char *hostport, const struct serve *s, uint16_t nid, struct http_metrics **out);
void memnode_metrics_stop(struct http_metrics *h);

#endif

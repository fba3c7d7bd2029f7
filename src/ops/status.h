/* status: `comex status`, one line per memnode (pool, used, free, clients,
 * requests/s, up/failed/draining) and the imbalance of their use, from the
 * STATS message; --json gives the same as JSON, --clients each client's use. */
#ifndef COMEX_OPS_STATUS_H
#define COMEX_OPS_STATUS_H

#include <stdbool.h>

struct options;

/* json: as JSON; clients: each client's use; interval_s: the request rates'
 * window (0: none, one sample) */
struct status_args {
	double interval_s;
	bool json, clients;
};

/* The memnodes of o (option memnode, with token-file); returns the process
 * exit status (1 if a memnode failed). */
int status_main(const struct options *o, const struct status_args *a);

#endif

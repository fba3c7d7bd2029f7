/* status: `comex status`, one line per memnode (pool, used, free, clients,
 * requests/s, up/failed/draining) and the imbalance of their use, from the
 * STATS message; --json gives the same as JSON, --clients each client's use. */
#ifndef COMEX_OPS_STATUS_H
#define COMEX_OPS_STATUS_H

/* argv[0] is "status"; returns the process exit status (1 if a memnode failed). */
int status_main(int argc, char **argv);

#endif

/* top: `comex top`, a live view of the programs running under comex on this
 * host (budget, resident and remote memory, faults/s by kind, remote-fault
 * latency percentiles, remote read/write MB/s, memnodes), like top/iotop. */
#ifndef COMEX_OPS_TOP_H
#define COMEX_OPS_TOP_H

#include <stdbool.h>

/* What to show: pid's row only (0: every program, then the swap devices),
 * a frame every interval_s seconds, or (once) one frame after one interval. */
struct top_args {
	int pid;
	double interval_s;
	bool once;
};

/* Returns the process exit status. */
int top_main(const struct top_args *a);

#endif

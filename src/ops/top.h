/* top: `comex top`, a live view of the programs running under comex on this
 * host (budget, resident and remote memory, faults/s by kind, remote-fault
 * latency percentiles, remote read/write MB/s, memnodes), like top/iotop. */
#ifndef COMEX_OPS_TOP_H
#define COMEX_OPS_TOP_H

/* argv[0] is "top"; returns the process exit status. */
int top_main(int argc, char **argv);

#endif

/* commands: the comex subcommands, their arguments and one-line summaries,
 * for `comex --help` (main.c) and the man pages (manpage.c). */
#ifndef COMEX_COMMANDS_H
#define COMEX_COMMANDS_H

/*  name            arguments                                                        summary */
#define COMEX_COMMANDS(X) \
	X("run",          "[OPTIONS] -- PROGRAM [ARGS]",                                  "run PROGRAM with its memory paged to memnodes (comex-run(1))") \
	X("memnode",      "[OPTIONS]",                                                    "contribute memory to the pool (comex-memnode(8))") \
	X("stats",        "PID",                                                          "live pager counters of a program under comex run, as JSON") \
	X("home",         "[--release] PID",                                              "bring every page of a program under comex home and pause its eviction, so that a debugger or profiler (gdb -p, gcore, py-spy) reads all of its memory; --release resumes eviction") \
	X("top",          "[--once] [--interval SECONDS] [PID]",                          "live view of the programs under comex on this host: budget, resident, remote, faults/s by kind, remote-fault latency p50/p99, read/write MB/s, memnodes") \
	X("status",       "[--json] [--clients] [--interval SECONDS] [--memnode HOST:PORT,...] [--token-file FILE]", "one line per memnode (pool, used, free, clients, requests/s, up/failed/draining) and the imbalance (max/mean used); exit 1 if a memnode failed") \
	X("exporter",     "[--listen HOST:PORT] [--once]",                                "serve the counters of this host's comex programs to Prometheus (default 127.0.0.1:9730); --once prints them") \
	X("check",        "[OPTIONS] [PAGES]",                                            "write, read back and verify pages on every --memnode") \
	X("drain",        "[--token-file FILE] HOST:PORT",                                "ask that memnode's clients to move their pages elsewhere; it then exits (docs/RELIABILITY.md)") \
	X("token",        "FILE",                                                         "create a cluster token file (mode 0600)") \
	X("help-options", "[--markdown | --man PAGE]",                                    "list every option; PAGE is comex, comex-run or comex-memnode") \
	X("version",      "",                                                             "print the version")

#endif

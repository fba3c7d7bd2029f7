/* The handlers of the comex subcommands and their table. Each handler parses
 * the one options table for its scope and hands over to its module. */
#include "commands.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "auth.h"
#include "check.h"
#include "exporter.h"
#include "log.h"
#include "manpage.h"
#include "memnode.h"
#include "options.h"
#include "run.h"
#include "status.h"
#include "swap.h"
#include "embedded.h"
#include "top.h"

/* A command called with the wrong arguments: its synopsis, exit status 2. */
static int usage_error(const char *name)
{
	fprintf(stderr, "usage: comex %s %s\n", name, command_find(name)->args);
	return 2;
}

/* The command's options of scope into o (static in the caller: they
 * outlive the command). The index of the first argument, or -1 when parsing
 * ended the command, its exit status in *status (help printed: 0; a bad
 * option, logged: 2). */
static int parse(struct options *o, unsigned scope, int argc, char **argv, int *status)
{
	int first, err = options_configure(o, scope, argc, argv, &first);

	if (err) {
		*status = err == -ECANCELED ? 0 : 2;
		return -1;
	}
	return first;
}

static int cmd_memnode(int argc, char **argv)
{
	static struct options o;
	int err = 0, first = parse(&o, SC_MEMNODE, argc, argv, &err);

	if (first < 0)
		return err;
	if (first < argc) {
		log_error("memnode takes no arguments, got '%s'", argv[first]);
		return 2;
	}
	err = memnode_main(&o);
	embedded_orphaned();
	return err ? 1 : 0;
}

static int cmd_check(int argc, char **argv)
{
	static struct options o;
	int err = 0, first = parse(&o, SC_CLIENT, argc, argv, &err);
	long pages = 20000;

	if (first < 0)
		return err;
	if (first < argc)
		pages = strtol(argv[first], NULL, 10);
	if (pages <= 0 || pages > 1 << 24) {
		log_error("check: PAGES must be 1..16777216, got '%s'", argv[first]);
		return 2;
	}
	return check_main(&o, pages) ? 1 : 0;
}

/* comex drain HOST:PORT: the memnode there asks its clients to take their
 * pages elsewhere and exits when they are done (docs/PROTOCOL.md, DRAIN). */
static int cmd_drain(int argc, char **argv)
{
	static struct options o;
	int err = 0, first = parse(&o, SC_CLIENT, argc, argv, &err);

	if (first < 0)
		return err;
	if (first != argc - 1)
		return usage_error("drain");
	if (options_set(&o, "memnode", argv[first], "command line"))
		return 2;
	return drain_main(&o) ? 1 : 0;
}

static int cmd_token(int argc, char **argv)
{
	if (argc != 2 || argv[1][0] == '-')
		return usage_error("token");
	if (auth_token_generate(argv[1]))
		return 1;
	printf("wrote a new cluster token to %s; give the same file (mode 0600) to every memnode and client\n", argv[1]);
	return 0;
}

static int cmd_run(int argc, char **argv)
{
	static struct options o;
	int err = 0, first = parse(&o, SC_RUN, argc, argv, &err);

	if (first < 0)
		return err;
	log_threshold = (int)opt_num(&o, OPT_LOG_LEVEL);
	return run_main(&o, argc - first, argv + first);
}

static int cmd_stats(int argc, char **argv)
{
	if (argc != 2 || atoi(argv[1]) <= 0)
		return usage_error("stats");
	return stats_main(atoi(argv[1]));
}

static int cmd_home(int argc, char **argv)
{
	bool release = argc == 3 && !strcmp(argv[1], "--release");

	if (argc != 2 + release || atoi(argv[argc - 1]) <= 0)
		return usage_error("home");
	return home_main(atoi(argv[argc - 1]), release);
}

/* comex swap up [OPTIONS] | down [OPTIONS] DEVICE | status [OPTIONS] [--json].
 * The subcommand is taken out, so that options and --help see "swap". */
static int cmd_swap(int argc, char **argv)
{
	static struct options o;
	const char *sub = argc > 1 ? argv[1] : "";
	bool json = !strcmp(sub, "status") && argc > 2 && !strcmp(argv[argc - 1], "--json");
	char *args[64];
	int n = argc - 1 - json, err = 0, first;

	if ((strcmp(sub, "up") && strcmp(sub, "down") && strcmp(sub, "status")) || n > 64)
		return usage_error("swap");
	args[0] = argv[0];
	for (int i = 1; i < n; i++)
		args[i] = argv[i + 1];
	if ((first = parse(&o, strcmp(sub, "status") ? SC_CLIENT | SC_SWAP : SC_SWAP, n, args, &err)) < 0)
		return err;
	log_threshold = (int)opt_num(&o, OPT_LOG_LEVEL);
	if (!strcmp(sub, "status"))
		return first == n ? swap_status(&o, json) : usage_error("swap");
	if (!strcmp(sub, "up"))
		return first == n ? swap_up(&o) : usage_error("swap");
	return first == n - 1 ? swap_down(&o, args[first]) : usage_error("swap");
}

static int cmd_help_options(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "--markdown"))
		options_markdown(stdout);
	else if (argc > 2 && !strcmp(argv[1], "--man"))
		return manpage_write(stdout, argv[2], COMEX_VERSION) ? 2 : 0;
	else
		options_help(stdout, NULL, SC_ALL, 1);
	return 0;
}

static int cmd_version(int argc, char **argv)
{
	(void)argc, (void)argv;
	printf("comex %s\n", COMEX_VERSION);
	return 0;
}


/*  name            arguments                                                        summary */
static const struct command commands[] = {
	{ "run",          "[OPTIONS] -- PROGRAM [ARGS]",                                  "run PROGRAM with its memory paged to memnodes (comex-run(1))", cmd_run },
	{ "memnode",      "[OPTIONS]",                                                    "contribute memory to the pool (comex-memnode(8))", cmd_memnode },
	{ "stats",        "PID",                                                          "live pager counters of a program under comex run, as JSON", cmd_stats },
	{ "home",         "[--release] PID",                                              "bring every page of a program under comex home and pause its eviction, so that a debugger or profiler (gdb -p, gcore, py-spy) reads all of its memory; --release resumes eviction", cmd_home },
	{ "top",          "[--once] [--interval SECONDS] [PID]",                          "live view of the programs under comex on this host: budget, resident, remote, faults/s by kind, remote-fault latency p50/p99, read/write MB/s, memnodes", top_main },
	{ "status",       "[--json] [--clients] [--interval SECONDS] [--memnode HOST:PORT,...] [--token-file FILE]", "one line per memnode (pool, used, free, clients, requests/s, up/failed/draining) and the imbalance (max/mean used); exit 1 if a memnode failed", status_main },
	{ "exporter",     "[--listen HOST:PORT] [--once]",                                "serve the counters of this host's comex programs to Prometheus (default 127.0.0.1:9730); --once prints them", exporter_main },
	{ "swap",         "up --size SIZE [--memnode HOST:PORT,... --replicas N | --single-copy] [OPTIONS] | down [OPTIONS] DEVICE | status [OPTIONS] [--json]", "a swap device whose pages live on memnodes, for every process of the machine (static binaries, Go, containers, cgroup swap limits); up prints the device (docs/SWAP.md)", cmd_swap },
	{ "check",        "[OPTIONS] [PAGES]",                                            "write, read back and verify pages on every --memnode", cmd_check },
	{ "drain",        "[--token-file FILE] HOST:PORT",                                "ask that memnode's clients to move their pages elsewhere; it then exits (docs/RELIABILITY.md)", cmd_drain },
	{ "token",        "FILE",                                                         "create a cluster token file (mode 0600)", cmd_token },
	{ "help-options", "[--markdown | --man PAGE]",                                    "list every option; PAGE is comex, comex-run or comex-memnode", cmd_help_options },
	{ "version",      "",                                                             "print the version", cmd_version },
};

const struct command *command_at(unsigned i)
{
	return i < sizeof(commands) / sizeof(commands[0]) ? &commands[i] : NULL;
}

const struct command *command_find(const char *name)
{
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(name, commands[i].name))
			return &commands[i];
	return NULL;
}

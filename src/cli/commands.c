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
#include "paths.h"
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

/* The values of a command's own flags: in the order of its table row, a
 * switch's "" when given, a flag's value, NULL when not given. */
struct flags_given {
	const struct command *c;
	const char *v[CMD_FLAGS_MAX];
};

/* The index of argv's flag arg among c's own flags, or -1 */
static int flag_at(const struct command *c, const char *arg)
{
	if (strncmp(arg, "--", 2))
		return -1;
	for (int k = 0; k < CMD_FLAGS_MAX && c->flags[k].name; k++) {
		size_t len = strlen(c->flags[k].name);

		if (!strncmp(arg + 2, c->flags[k].name, len) && (!arg[2 + len] || (arg[2 + len] == '=' && c->flags[k].arg)))
			return k;
	}
	return -1;
}

/* Takes command name's own flags (its table row's) out of argv, up to a
 * "--", and keeps the rest in order; 0, or -EINVAL (logged) for a flag
 * that lacks its value. */
static int own_flags(struct flags_given *g, const char *name, int *argc, char **argv)
{
	int i, j = 1;

	*g = (struct flags_given){ .c = command_find(name) };
	for (i = 1; i < *argc && strcmp(argv[i], "--"); i++) {
		int k = flag_at(g->c, argv[i]);

		if (k < 0)
			argv[j++] = argv[i];
		else if (!g->c->flags[k].arg)
			g->v[k] = "";
		else if ((g->v[k] = strchr(argv[i], '=')))
			g->v[k]++;
		else if (i + 1 < *argc)
			g->v[k] = argv[++i];
		else {
			log_error("%s: --%s takes %s", name, g->c->flags[k].name, g->c->flags[k].arg);
			return -EINVAL;
		}
	}
	while (i < *argc)
		argv[j++] = argv[i++];
	argv[j] = NULL;
	*argc = j;
	return 0;
}

/* Flag flag's value (as own_flags keeps it), or NULL when not given */
static const char *given(const struct flags_given *g, const char *flag)
{
	for (int k = 0; k < CMD_FLAGS_MAX && g->c->flags[k].name; k++)
		if (!strcmp(g->c->flags[k].name, flag))
			return g->v[k];
	return NULL;
}

/* Flag flag, if given, as seconds from lo to hi into *out
 * (else *out untouched); 0 or -EINVAL (logged). */
static int seconds(const struct flags_given *g, const char *flag, double lo, double hi, double *out)
{
	const char *v = given(g, flag);
	char *end;
	double s;

	if (!v)
		return 0;
	s = strtod(v, &end);
	if (end == v || *end || !(s >= lo && s <= hi)) {
		log_error("%s: --%s takes seconds, %g to %g, got '%s'", g->c->name, flag, lo, hi, v);
		return -EINVAL;
	}
	*out = s;
	return 0;
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
	const char *slash;

	if (argc != 2 || argv[1][0] == '-')
		return usage_error("token");
	if ((slash = strrchr(argv[1], '/')) && paths_make_dirs(argv[1], (unsigned long)(slash - argv[1]))) {
		log_error("cannot create the directory of %s: %m", argv[1]); /* /etc/comex: fresh machines lack it */
		return 1;
	}
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
	struct flags_given g;

	if (own_flags(&g, "home", &argc, argv) || argc != 2 || atoi(argv[1]) <= 0)
		return usage_error("home");
	return home_main(atoi(argv[1]), given(&g, "release") != NULL);
}

static int cmd_top(int argc, char **argv)
{
	struct top_args a = { .interval_s = 1.0 };
	struct flags_given g;
	char *end;

	if (own_flags(&g, "top", &argc, argv) || seconds(&g, "interval", 0.1, 3600, &a.interval_s))
		return 2;
	a.once = given(&g, "once") != NULL;
	if (argc > 2 || (argc == 2 && ((a.pid = (int)strtol(argv[1], &end, 10)) <= 0 || *end)))
		return usage_error("top");
	return top_main(&a);
}

static int cmd_status(int argc, char **argv)
{
	static struct options o;
	struct status_args a = { .interval_s = 1.0 };
	struct flags_given g;
	int err = 0, first;

	if (own_flags(&g, "status", &argc, argv) || seconds(&g, "interval", 0, 60, &a.interval_s))
		return 2;
	a.json = given(&g, "json") != NULL;
	a.clients = given(&g, "clients") != NULL;
	if ((first = parse(&o, SC_CLIENT, argc, argv, &err)) < 0)
		return err;
	if (first < argc) {
		log_error("status: unexpected argument '%s'", argv[first]);
		return usage_error("status");
	}
	return status_main(&o, &a);
}

static int cmd_exporter(int argc, char **argv)
{
	struct flags_given g;

	if (own_flags(&g, "exporter", &argc, argv) || argc != 1)
		return usage_error("exporter");
	return exporter_main(given(&g, "listen"), given(&g, "once") != NULL);
}

/* comex swap up [OPTIONS] | down [OPTIONS] DEVICE | status [OPTIONS] [--json].
 * The subcommand is taken out, so that options and --help see "swap". */
static int cmd_swap(int argc, char **argv)
{
	static struct options o;
	struct flags_given g;
	const char *sub;
	bool json;
	int err = 0, first;

	if (own_flags(&g, "swap", &argc, argv))
		return 2;
	sub = argc > 1 ? argv[1] : "";
	json = given(&g, "json") != NULL;
	if ((strcmp(sub, "up") && strcmp(sub, "down") && strcmp(sub, "status")) || (json && strcmp(sub, "status")))
		return usage_error("swap");
	argv[1] = argv[0];
	argc--, argv++;
	if ((first = parse(&o, strcmp(sub, "status") ? SC_CLIENT | SC_SWAP : SC_SWAP, argc, argv, &err)) < 0)
		return err;
	log_threshold = (int)opt_num(&o, OPT_LOG_LEVEL);
	if (!strcmp(sub, "status"))
		return first == argc ? swap_status(&o, json) : usage_error("swap");
	if (!strcmp(sub, "up"))
		return first == argc ? swap_up(&o) : usage_error("swap");
	return first == argc - 1 ? swap_down(&o, argv[first]) : usage_error("swap");
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


/*  name            arguments                                                        summary, handler, own flags */
static const struct command commands[] = {
	{ "run",          "[OPTIONS] -- PROGRAM [ARGS]",                                  "run PROGRAM with its memory paged to memnodes (comex-run(1))", cmd_run, { { NULL, NULL } } },
	{ "memnode",      "[OPTIONS]",                                                    "contribute memory to the pool (comex-memnode(8))", cmd_memnode, { { NULL, NULL } } },
	{ "stats",        "PID",                                                          "live pager counters of a program under comex run, as JSON", cmd_stats, { { NULL, NULL } } },
	{ "home",         "[--release] PID",                                              "bring every page of a program under comex home and pause its eviction, so that a debugger or profiler (gdb -p, gcore, py-spy) reads all of its memory; --release resumes eviction", cmd_home, { { "release", NULL } } },
	{ "top",          "[--once] [--interval SECONDS] [PID]",                          "live view of the programs under comex on this host: budget, resident, remote, faults/s by kind, remote-fault latency p50/p99, read/write MB/s, memnodes; then its comex swap devices", cmd_top, { { "once", NULL }, { "interval", "SECONDS" } } },
	{ "status",       "[--json] [--clients] [--interval SECONDS] [--memnode HOST:PORT,...] [--token-file FILE]", "one line per memnode (pool, used, free, clients, requests/s, up/failed/draining) and the imbalance (max/mean used); exit 1 if a memnode failed", cmd_status, { { "json", NULL }, { "clients", NULL }, { "interval", "SECONDS" } } },
	{ "exporter",     "[--listen HOST:PORT] [--once]",                                "serve the counters of this host's comex programs and swap devices to Prometheus (default 127.0.0.1:9730); --once prints them", cmd_exporter, { { "listen", "HOST:PORT" }, { "once", NULL } } },
	{ "swap",         "up --size SIZE [--memnode HOST:PORT,... --replicas N | --single-copy] [OPTIONS] | down [OPTIONS] DEVICE | status [OPTIONS] [--json]", "a swap device whose pages live on memnodes, for every process of the machine (static binaries, Go, containers, cgroup swap limits); up prints the device (docs/SWAP.md)", cmd_swap, { { "json", NULL } } },
	{ "check",        "[OPTIONS] [PAGES]",                                            "write, read back and verify pages on every --memnode", cmd_check, { { NULL, NULL } } },
	{ "drain",        "[--token-file FILE] HOST:PORT",                                "ask that memnode's clients to move their pages elsewhere; it then exits (docs/RELIABILITY.md)", cmd_drain, { { NULL, NULL } } },
	{ "token",        "FILE",                                                         "create a cluster token file (mode 0600)", cmd_token, { { NULL, NULL } } },
	{ "help-options", "[--markdown | --man PAGE]",                                    "list every option; PAGE is comex, comex-run or comex-memnode", cmd_help_options, { { NULL, NULL } } },
	{ "version",      "",                                                             "print the version", cmd_version, { { NULL, NULL } } },
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

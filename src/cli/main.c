/* comex: the command-line front end. Each subcommand parses the one options
 * table for its scope and hands over to its module. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <stdlib.h>

#include "auth.h"
#include "check.h"
#include "commands.h"
#include "exporter.h"
#include "log.h"
#include "manpage.h"
#include "memnode.h"
#include "options.h"
#include "run.h"
#include "status.h"
#include "top.h"

#define COMEX_VERSION "0.1.0"

static int cmd_memnode(int argc, char **argv)
{
	static struct options o;
	int first, err = options_configure(&o, SC_MEMNODE, argc, argv, &first);

	if (err)
		return err == -ECANCELED ? 0 : 2;
	if (first < argc) {
		log_error("memnode takes no arguments, got '%s'", argv[first]);
		return 2;
	}
	err = memnode_main(&o);
	run_orphaned();
	return err ? 1 : 0;
}

static int cmd_check(int argc, char **argv)
{
	static struct options o;
	int first, err = options_configure(&o, SC_CLIENT, argc, argv, &first);
	long pages = 20000;

	if (err)
		return err == -ECANCELED ? 0 : 2;
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
	int first, err = options_configure(&o, SC_CLIENT, argc, argv, &first);

	if (err)
		return err == -ECANCELED ? 0 : 2;
	if (first != argc - 1) {
		log_error("usage: comex drain [--token-file FILE] HOST:PORT");
		return 2;
	}
	if (options_set(&o, "memnode", argv[first], "command line"))
		return 2;
	return drain_main(&o) ? 1 : 0;
}

static int cmd_token(int argc, char **argv)
{
	if (argc != 2 || argv[1][0] == '-') {
		fprintf(stderr, "usage: comex token FILE   (creates FILE, mode 0600, with a new random secret)\n");
		return 2;
	}
	if (auth_token_generate(argv[1]))
		return 1;
	printf("wrote a new cluster token to %s; give the same file (mode 0600) to every memnode and client\n", argv[1]);
	return 0;
}

static int cmd_run(int argc, char **argv)
{
	static struct options o;
	int first, err = options_configure(&o, SC_RUN, argc, argv, &first);

	if (err)
		return err == -ECANCELED ? 0 : 2;
	log_threshold = (int)opt_num(&o, OPT_LOG_LEVEL);
	return run_main(&o, argc - first, argv + first);
}

static int cmd_stats(int argc, char **argv)
{
	if (argc != 2 || atoi(argv[1]) <= 0) {
		fprintf(stderr, "usage: comex stats PID   (live counters of a program running under comex, as JSON)\n");
		return 2;
	}
	return stats_main(atoi(argv[1]));
}

static int cmd_home(int argc, char **argv)
{
	bool release = argc == 3 && !strcmp(argv[1], "--release");

	if (argc != 2 + release || atoi(argv[argc - 1]) <= 0) {
		fprintf(stderr, "usage: comex home [--release] PID   (every page of a program under comex brought home "
			"and eviction paused, for a debugger or profiler)\n");
		return 2;
	}
	return home_main(atoi(argv[argc - 1]), release);
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

static void usage(FILE *f)
{
	fprintf(f, "comex %s: cooperative memory expansion\n\nusage: comex COMMAND [OPTIONS]\n\n", COMEX_VERSION);
#define X(name, args, summary) fprintf(f, "  %-13s %s\n  %13s %s\n", name, args, "", summary);
	COMEX_COMMANDS(X)
#undef X
}

int main(int argc, char **argv)
{
	static const struct { const char *name; int (*fn)(int, char **); } cmds[] = {
		{ "memnode", cmd_memnode }, { "check", cmd_check }, { "token", cmd_token }, { "help-options", cmd_help_options },
		{ "run", cmd_run }, { "stats", cmd_stats }, { "home", cmd_home }, { "top", top_main }, { "status", status_main },
		{ "exporter", exporter_main }, { "drain", cmd_drain },
	};

	if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
		usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	if (!strcmp(argv[1], "version") || !strcmp(argv[1], "--version")) {
		printf("comex %s\n", COMEX_VERSION);
		return 0;
	}
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		if (!strcmp(argv[1], cmds[i].name))
			return cmds[i].fn(argc - 1, argv + 1);
	log_error("unknown command '%s'; see comex --help", argv[1]);
	return 2;
}

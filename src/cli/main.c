/* comex: the command-line front end. It finds the command in the table
 * (commands.c), tells the options module its synopsis for --help and hands
 * over. */
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "log.h"
#include "options.h"

static void usage(FILE *f)
{
	const struct command *c;

	fprintf(f, "comex %s: cooperative memory expansion\n\nusage: comex COMMAND [OPTIONS]\n\n", COMEX_VERSION);
	for (unsigned i = 0; (c = command_at(i)); i++)
		fprintf(f, "  %-13s %s\n  %13s %s\n", c->name, c->args, "", c->summary);
}

int main(int argc, char **argv)
{
	const struct command *c;

	if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
		usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	c = command_find(!strcmp(argv[1], "--version") ? "version" : argv[1]);
	if (!c) {
		log_error("unknown command '%s'; see comex --help", argv[1]);
		return 2;
	}
	options_set_usage(c->args, c->summary);
	return c->main(argc - 1, argv + 1);
}

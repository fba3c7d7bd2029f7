/* commands: the comex subcommands in one table (name, arguments, summary,
 * handler, own flags) from which `comex --help`, the man pages (manpage.c),
 * the dispatch (main.c) and each command's flag parsing are all made. */
#ifndef COMEX_COMMANDS_H
#define COMEX_COMMANDS_H

/* COMEX_VERSION comes from the build: project(VERSION) in CMakeLists.txt */

#define CMD_FLAGS_MAX 4

/* A flag of a command's own, beside the options table's: --name VALUE
 * (or --name=VALUE) when arg names the value, else a switch --name. */
struct cmd_flag {
	const char *name; /* without the dashes */
	const char *arg;  /* the value's name in args; NULL: a switch */
};

struct command {
	const char *name;
	const char *args;    /* the synopsis after "comex NAME" */
	const char *summary; /* one line for --help; a paragraph for the man page */
	int (*main)(int argc, char **argv); /* argv[0] is the name; returns the exit status */
	struct cmd_flag flags[CMD_FLAGS_MAX]; /* its own flags, the unused ones' name NULL */
};

/* The i-th command in --help order, or NULL past the last. */
const struct command *command_at(unsigned i);

/* The command called name, or NULL. */
const struct command *command_find(const char *name);

#endif

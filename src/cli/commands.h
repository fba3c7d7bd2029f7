/* commands: the comex subcommands in one table (name, arguments, summary,
 * handler) from which `comex --help`, the man pages (manpage.c) and the
 * dispatch (main.c) are all made. */
#ifndef COMEX_COMMANDS_H
#define COMEX_COMMANDS_H

/* COMEX_VERSION comes from the build: project(VERSION) in CMakeLists.txt */

struct command {
	const char *name;
	const char *args;    /* the synopsis after "comex NAME" */
	const char *summary; /* one line for --help; a paragraph for the man page */
	int (*main)(int argc, char **argv); /* argv[0] is the name; returns the exit status */
};

/* The i-th command in --help order, or NULL past the last. */
const struct command *command_at(unsigned i);

/* The command called name, or NULL. */
const struct command *command_find(const char *name);

#endif

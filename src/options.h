/* options: the single options table (options_table.h) and its sources, in
 * increasing precedence: defaults, config file, COMEX_* environment, command
 * line. Values live in fixed storage (no malloc), so the preloaded runtime can
 * use it too. A bad value is an error naming the option and where it came from. */
#ifndef COMEX_OPTIONS_H
#define COMEX_OPTIONS_H

#include <stdint.h>
#include <stdio.h>

/* OPT_CHOICE: one of the values its unit lists ("a|b|c"); opt_num is the
 * value's position in that list, which the enum of the module that reads it
 * follows (evict.h, prefetch.h, placement.h, wakeup.h, pager.h). */
enum opt_type { OPT_STR, OPT_UINT, OPT_UINT_AUTO, OPT_SIZE, OPT_BOOL, OPT_DURATION, OPT_LIST, OPT_CHOICE };
/* SC_BASIC marks the few options a command's short --help shows first; the
 * rest are listed by --help all. */
enum opt_scope { SC_MEMNODE = 1, SC_CLIENT = 2, SC_RUN = 4, SC_BASIC = 8, SC_SWAP = 16, SC_ALL = 23 };

enum opt_id {
#define OPT(id, name, type, def, unit, scope, doc) OPT_##id,
#include "options_table.h"
#undef OPT
	OPT_COUNT
};

#define OPT_STR_MAX 512
#define OPT_AUTO UINT64_MAX /* numeric value of an OPT_UINT_AUTO set to 'auto' */
/* Option memnode names at most this many: the client's, the pager's and the
 * counters' per-memnode tables are sized by it (more are refused). */
#define OPT_MEMNODE_MAX 16

struct options {
	struct opt_value {
		uint64_t num;           /* UINT/SIZE(bytes)/BOOL/DURATION(ns) */
		const char *def;        /* the table's text while the default holds, else NULL: text[] */
		const char *origin;     /* "default", "environment", a path, "command line" */
	} v[OPT_COUNT];
	/* The text as given (LIST: comma-separated), for the options not at
	 * their default: only those rows are ever touched (the preloaded
	 * runtime of every exec'd process fills the defaults, and writing 43
	 * KiB of rows took a dozen page faults) */
	char text[OPT_COUNT][OPT_STR_MAX];
};

/* Fills o from all sources for a command of the given scope. argv holds the
 * command's own arguments (argv[0] is the command name); parsing stops at
 * "--" or the first non-option, whose index is stored in *first_arg_out.
 * -EINVAL (logged) on any bad name or value; "--help" (the basic options)
 * and "--help all" return -ECANCELED after printing help for the scope. */
int options_configure(struct options *o, unsigned scope, int argc, char **argv, int *first_arg_out);
/* Defaults plus the config file at path, nothing else (the runtime re-reads
 * its memnode list this way); an option the file sets has origin path. */
int options_read_file(struct options *o, const char *path);
/* Sets one option by name from a text value; origin must outlive o. */
int options_set(struct options *o, const char *name, const char *value, const char *origin);

static inline uint64_t opt_num(const struct options *o, enum opt_id id) { return o->v[id].num; }
/* The option's text: the table's while the default holds, so a pointer
 * kept across a later options_set does not see the new value */
static inline const char *opt_str(const struct options *o, enum opt_id id)
{
	return o->v[id].def ? o->v[id].def : o->text[id];
}

/* Item i of an OPT_LIST into buf; -ENOENT past the end. */
int opt_list_item(const struct options *o, enum opt_id id, unsigned i, char *buf, size_t cap);

/* "4096", "64K", "512M", "4G" into bytes; -EINVAL/-ERANGE otherwise. */
int options_parse_size(const char *text, uint64_t *out);

/* One row of the table, for generated documentation (manpage.c). */
struct opt_doc { const char *name, *def, *unit, *doc; unsigned scope; char env[64]; };
void options_doc(enum opt_id id, struct opt_doc *out);

/* --help text of command cmd (argv[0]) for its scope: a usage line and the
 * basic options, or with all every option, the basic ones first. The usage
 * line shows the synopsis and summary last given to options_set_usage, which
 * the command-line front end calls from its command table before dispatch. */
void options_help(FILE *f, const char *cmd, unsigned scope, int all);
void options_set_usage(const char *args, const char *summary);
void options_markdown(FILE *f);              /* docs/OPTIONS.md */

#endif

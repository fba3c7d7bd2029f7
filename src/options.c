/* Parsing of the options table. All storage is inside struct options; the
 * only I/O is reading the config file with open/read into a stack buffer. */
#include "options.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"

struct opt_def {
	const char *name;
	enum opt_type type;
	const char *def;
	const char *unit;
	unsigned scope;
	const char *doc;
};

static const struct opt_def defs[OPT_COUNT] = {
#define OPT(id, name, type, def, unit, scope, doc) [OPT_##id] = { name, type, def, unit, scope, doc },
#include "options_table.h"
#undef OPT
};

#define CONFIG_FILE_MAX 65536

static int find_opt(const char *name, size_t len)
{
	for (int i = 0; i < OPT_COUNT; i++)
		if (strlen(defs[i].name) == len && !strncmp(defs[i].name, name, len))
			return i;
	return -1;
}

/* Parses "<digits><suffix>" where suffix scales the number; suffixes[] pairs
 * a lower-case suffix with its multiplier, "" for none. */
struct suffix { const char *s; uint64_t mul; };

static int parse_scaled(const char *text, const struct suffix *sfx, uint64_t *out)
{
	char *end;
	unsigned long long n;

	if (!isdigit((unsigned char)text[0]))
		return -EINVAL;
	errno = 0;
	n = strtoull(text, &end, 10);
	if (errno)
		return -EINVAL;
	for (; sfx->s; sfx++) {
		if (strcasecmp(end, sfx->s))
			continue;
		if (sfx->mul && n > UINT64_MAX / sfx->mul)
			return -ERANGE;
		*out = n * sfx->mul;
		return 0;
	}
	return -EINVAL;
}

static const struct suffix size_sfx[] = {
	{ "", 1 }, { "b", 1 }, { "k", 1ull << 10 }, { "kib", 1ull << 10 },
	{ "m", 1ull << 20 }, { "mib", 1ull << 20 }, { "g", 1ull << 30 },
	{ "gib", 1ull << 30 }, { "t", 1ull << 40 }, { "tib", 1ull << 40 }, { NULL, 0 }
};
static const struct suffix duration_sfx[] = { /* nanoseconds; bare number = µs */
	{ "", 1000 }, { "ns", 1 }, { "us", 1000 }, { "ms", 1000000 },
	{ "s", 1000000000ull }, { NULL, 0 }
};
static const struct suffix plain_sfx[] = { { "", 1 }, { NULL, 0 } };

int options_parse_size(const char *text, uint64_t *out)
{
	return parse_scaled(text, size_sfx, out);
}

static int parse_bool(const char *text, uint64_t *out)
{
	static const char *const yes[] = { "1", "true", "yes", "on" };
	static const char *const no[] = { "0", "false", "no", "off" };

	for (size_t i = 0; i < 4; i++) {
		if (!strcasecmp(text, yes[i])) { *out = 1; return 0; }
		if (!strcasecmp(text, no[i])) { *out = 0; return 0; }
	}
	return -EINVAL;
}

/* The position of text among the values unit lists ("a|b|c"). */
static int parse_choice(const char *unit, const char *text, uint64_t *out)
{
	size_t n = strlen(text);
	uint64_t k = 0;

	for (const char *p = unit; *p; k++) {
		size_t len = strcspn(p, "|");

		if (len == n && !strncmp(p, text, n)) {
			*out = k;
			return 0;
		}
		p += len + !!p[len];
	}
	return -EINVAL;
}

static int parse_value(const struct opt_def *d, const char *text, uint64_t *out)
{
	switch (d->type) {
	case OPT_CHOICE:
		return parse_choice(d->unit, text, out);
	case OPT_STR:
	case OPT_LIST:
		*out = 0;
		return 0;
	case OPT_UINT:
		return parse_scaled(text, plain_sfx, out);
	case OPT_UINT_AUTO:
		if (!strcasecmp(text, "auto")) { *out = OPT_AUTO; return 0; }
		return parse_scaled(text, plain_sfx, out);
	case OPT_SIZE:
		return parse_scaled(text, size_sfx, out);
	case OPT_DURATION:
		return parse_scaled(text, duration_sfx, out);
	case OPT_BOOL:
		return parse_bool(text, out);
	}
	return -EINVAL;
}

static const char *const type_hint[] = {
	[OPT_STR] = "text", [OPT_UINT] = "a whole number",
	[OPT_UINT_AUTO] = "a whole number or 'auto'",
	[OPT_SIZE] = "a size such as 4096, 64K, 512M or 4G",
	[OPT_BOOL] = "true or false", [OPT_DURATION] = "a duration such as 50us, 5ms or 2s",
	[OPT_LIST] = "a comma-separated list", [OPT_CHOICE] = "one of ",
};

/* value's number for option i; -EINVAL (logged, naming the option) */
static int check_value(int i, const char *value, const char *origin, uint64_t *num_out)
{
	if (strlen(value) >= OPT_STR_MAX) {
		log_error("option %s (from %s): value longer than %d bytes", defs[i].name, origin, OPT_STR_MAX - 1);
		return -EINVAL;
	}
	if (parse_value(&defs[i], value, num_out)) {
		log_error("option %s (from %s): '%s' is not %s%s", defs[i].name, origin, value, type_hint[defs[i].type],
			  defs[i].type == OPT_CHOICE ? defs[i].unit : "");
		return -EINVAL;
	}
	return 0;
}

static int set_index(struct options *o, int i, const char *value, const char *origin)
{
	struct opt_value *v = &o->v[i];
	uint64_t num;
	size_t len = strlen(value);

	if (check_value(i, value, origin, &num))
		return -EINVAL;
	/* A list given again on the command line or in a file appends; a list
	 * from a lower-precedence source is replaced. */
	if (defs[i].type == OPT_LIST && v->origin == origin && !v->def && o->text[i][0]) {
		size_t cur = strlen(o->text[i]);
		if (cur + 1 + len >= OPT_STR_MAX) {
			log_error("option %s (from %s): list longer than %d bytes", defs[i].name, origin, OPT_STR_MAX - 1);
			return -EINVAL;
		}
		o->text[i][cur] = ',';
		memcpy(o->text[i] + cur + 1, value, len + 1);
		return 0;
	}
	memcpy(o->text[i], value, len + 1);
	v->def = NULL;
	v->num = num;
	v->origin = origin;
	return 0;
}

int options_set(struct options *o, const char *name, const char *value, const char *origin)
{
	int i = find_opt(name, strlen(name));

	if (i < 0) {
		log_error("unknown option '%s' (from %s); 'comex help-options' lists them", name, origin);
		return -EINVAL;
	}
	return set_index(o, i, value, origin);
}

/* The table's own texts: text[] is not touched (read only once written) */
static void set_defaults(struct options *o)
{
	for (int i = 0; i < OPT_COUNT; i++) {
		uint64_t num;

		if (check_value(i, defs[i].def, "default", &num))
			abort(); /* the table itself is wrong: a build defect */
		o->v[i] = (struct opt_value){ .num = num, .def = defs[i].def, .origin = "default" };
	}
}

static char *trim(char *s)
{
	char *e;

	while (isspace((unsigned char)*s))
		s++;
	e = s + strlen(s);
	while (e > s && isspace((unsigned char)e[-1]))
		*--e = '\0';
	return s;
}

/* One "name = value" per line; '#' starts a comment; blank lines ignored. */
static int parse_config_text(struct options *o, char *text, const char *path)
{
	int lineno = 0;

	for (char *line = text, *next; line; line = next) {
		char *eq, *hash;

		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		lineno++;
		hash = strchr(line, '#');
		if (hash)
			*hash = '\0';
		line = trim(line);
		if (!*line)
			continue;
		eq = strchr(line, '=');
		if (!eq) {
			log_error("%s:%d: expected 'name = value', got '%s'", path, lineno, line);
			return -EINVAL;
		}
		*eq = '\0';
		if (options_set(o, trim(line), trim(eq + 1), path))
			return -EINVAL;
	}
	return 0;
}

static int load_file(struct options *o, const char *path)
{
	static char text[CONFIG_FILE_MAX + 1];
	ssize_t n, total = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0) {
		log_error("cannot open config file %s: %m", path);
		return -errno;
	}
	while ((n = read(fd, text + total, CONFIG_FILE_MAX + 1 - total)) > 0)
		total += n;
	close(fd);
	if (n < 0 || total > CONFIG_FILE_MAX) {
		log_error("config file %s: %s", path, n < 0 ? "read failed" : "larger than 64 KiB");
		return -EINVAL;
	}
	text[total] = '\0';
	return parse_config_text(o, text, path);
}

/* COMEX_REPLENISH_THRESHOLD -> replenish-threshold */
static void env_name(const char *name, char *buf, size_t cap)
{
	size_t n = snprintf(buf, cap, "COMEX_%s", name);

	for (size_t i = 6; i < n && i < cap; i++)
		buf[i] = name[i - 6] == '-' ? '_' : toupper((unsigned char)name[i - 6]);
}

/* The option a COMEX_ variable names ("LOCAL_MEM" -> local-mem), or -1 */
static int env_opt(const char *var, size_t len)
{
	char name[64];

	if (len >= sizeof(name))
		return -1;
	for (size_t i = 0; i < len; i++) {
		if (!(var[i] == '_' || (var[i] >= 'A' && var[i] <= 'Z') || (var[i] >= '0' && var[i] <= '9')))
			return -1; /* getenv of the upper-cased name would not find it */
		name[i] = var[i] == '_' ? '-' : (char)tolower((unsigned char)var[i]);
	}
	return find_opt(name, len);
}

/* One pass over the environment, not a getenv per option: the preloaded
 * runtime reads the options in every process the program execs */
static int load_env(struct options *o, unsigned scope)
{
	static const char origin[] = "environment";

	for (char **e = environ; e && *e; e++) {
		const char *eq;
		int i;

		if (strncmp(*e, "COMEX_", 6) || !(eq = strchr(*e, '=')) || (i = env_opt(*e + 6, (size_t)(eq - *e - 6))) < 0)
			continue;
		if (!(defs[i].scope & scope) || i == OPT_CONFIG || o->v[i].origin == origin)
			continue; /* the first of a name given twice, as getenv */
		if (set_index(o, i, eq + 1, origin))
			return -EINVAL;
	}
	return 0;
}

/* Splits argv[*ai] ("--name=value" or "--name value") into name/value. */
static int next_flag(int argc, char **argv, int *ai, const char **name, size_t *nlen, const char **value)
{
	const char *a = argv[*ai] + 2, *eq = strchr(a, '=');

	*name = a;
	if (eq) {
		*nlen = eq - a;
		*value = eq + 1;
		return 0;
	}
	*nlen = strlen(a);
	int i = find_opt(a, *nlen);
	if (i >= 0 && defs[i].type == OPT_BOOL) {
		/* a bare boolean flag switches it on; "--flag true|false" is read as
		 * its value, never as the program to run (comex run -- true exists) */
		bool given = *ai + 1 < argc && (!strcmp(argv[*ai + 1], "true") || !strcmp(argv[*ai + 1], "false"));

		*value = given ? argv[++*ai] : "true";
		return 0;
	}
	if (*ai + 1 >= argc) {
		log_error("option --%s needs a value", a);
		return -EINVAL;
	}
	*value = argv[++*ai];
	return 0;
}

static int load_argv(struct options *o, unsigned scope, int argc, char **argv, int *first_arg_out)
{
	int ai;

	for (ai = 1; ai < argc; ai++) {
		const char *name, *value;
		size_t nlen;
		int i;

		if (!strcmp(argv[ai], "--")) {
			ai++;
			break;
		}
		if (strncmp(argv[ai], "--", 2))
			break;
		if (!strcmp(argv[ai], "--help")) {
			options_help(stdout, argv[0], scope, ai + 1 < argc && !strcmp(argv[ai + 1], "all"));
			return -ECANCELED;
		}
		if (next_flag(argc, argv, &ai, &name, &nlen, &value))
			return -EINVAL;
		i = find_opt(name, nlen);
		if (i < 0 || !(defs[i].scope & scope)) {
			log_error("unknown option --%.*s for %s; see %s --help", (int)nlen, name, argv[0], argv[0]);
			return -EINVAL;
		}
		if (set_index(o, i, value, "command line"))
			return -EINVAL;
	}
	*first_arg_out = ai;
	return 0;
}

/* The config file is named by --config or COMEX_CONFIG; it must be read
 * before the environment and the other flags, which override it. */
static const char *find_config(int argc, char **argv)
{
	for (int ai = 1; ai < argc && strcmp(argv[ai], "--"); ai++) {
		if (!strncmp(argv[ai], "--config=", 9))
			return argv[ai] + 9;
		if (!strcmp(argv[ai], "--config") && ai + 1 < argc)
			return argv[ai + 1];
	}
	return getenv("COMEX_CONFIG");
}

int options_read_file(struct options *o, const char *path)
{
	set_defaults(o);
	return load_file(o, path);
}

int options_configure(struct options *o, unsigned scope, int argc, char **argv, int *first_arg_out)
{
	const char *config = find_config(argc, argv);
	int err;

	set_defaults(o);
	if (config && *config) {
		err = load_file(o, config);
		if (err)
			return err;
		set_index(o, OPT_CONFIG, config, "command line");
	}
	err = load_env(o, scope);
	if (err)
		return err;
	err = load_argv(o, scope, argc, argv, first_arg_out);
	if (err)
		return err;
	log_threshold = (int)opt_num(o, OPT_LOG_LEVEL);
	return 0;
}

int opt_list_item(const struct options *o, enum opt_id id, unsigned i, char *buf, size_t cap)
{
	const char *p = opt_str(o, id);

	while (i--) {
		p = strchr(p, ',');
		if (!p)
			return -ENOENT;
		p++;
	}
	while (*p == ' ' || *p == '\t') /* "a, b" as well as "a,b" */
		p++;
	size_t len = strcspn(p, ",");
	while (len && (p[len - 1] == ' ' || p[len - 1] == '\t'))
		len--;
	if (len == 0)
		return -ENOENT;
	if (len >= cap)
		return -ENAMETOOLONG;
	memcpy(buf, p, len);
	buf[len] = '\0';
	return 0;
}

void options_doc(enum opt_id id, struct opt_doc *out)
{
	const struct opt_def *d = &defs[id];

	*out = (struct opt_doc){ .name = d->name, .def = d->def, .unit = d->unit, .doc = d->doc, .scope = d->scope };
	env_name(d->name, out->env, sizeof(out->env));
}

/* The options of scope that are (basic) or are not marked SC_BASIC, or
 * with any all of them, in table order; returns how many. */
static int help_rows(FILE *f, unsigned scope, int basic, bool print)
{
	int n = 0;

	for (int i = 0; i < OPT_COUNT; i++) {
		if (!(defs[i].scope & scope) || (basic >= 0 && !(defs[i].scope & SC_BASIC) != !basic))
			continue;
		n++;
		if (print)
			fprintf(f, "  --%-22s %s [%s, default %s]\n", defs[i].name, defs[i].doc,
				defs[i].unit, defs[i].def[0] ? defs[i].def : "none");
	}
	return n;
}

/* Set once by the front end before a command parses its options; the
 * strings are the command table's, static for the life of the process. */
static const char *usage_args = "[OPTIONS]", *usage_summary = "";

void options_set_usage(const char *args, const char *summary)
{
	usage_args = args;
	usage_summary = summary;
}

void options_help(FILE *f, const char *cmd, unsigned scope, int all)
{
	int more;

	if (cmd)
		fprintf(f, "usage: comex %s %s\n  %s\n\n", cmd, usage_args, usage_summary);
	if (scope == SC_ALL) { /* help-options: every option, as the table has them */
		fprintf(f, "Options (also read from the config file as 'name = value' and from COMEX_NAME):\n");
		help_rows(f, scope, -1, true);
		return;
	}
	fprintf(f, "Options:\n");
	help_rows(f, scope, 1, true);
	more = help_rows(f, scope, 0, false);
	if (all && more) {
		fprintf(f, "\nTuning and less common options:\n");
		help_rows(f, scope, 0, true);
	}
	fprintf(f, "\nEvery option is also read from a config file (--config FILE, 'name = value' lines) and from the\n"
		   "environment (COMEX_ + the name upper-cased, '-' as '_'); docs/OPTIONS.md lists them all.\n");
	if (!all && more)
		fprintf(f, "%d more options (tuning, logging, config): comex %s --help all\n", more, cmd ? cmd : "");
}

void options_markdown(FILE *f)
{
	static const char *const scope_names[] = { "memnode", "client", "run", NULL, "swap" }; /* by scope bit */

	fprintf(f, "# comex options\n\nGenerated by `comex help-options --markdown` from `src/options_table.h`; "
		   "do not edit by hand.\n\nPrecedence, lowest first: default, config file (`--config FILE` or "
		   "`COMEX_CONFIG`; one `name = value` per line, `#` comments), environment (`COMEX_` + name "
		   "upper-cased with `-` as `_`), command line (`--name value` or `--name=value`).\n\n"
		   "Sizes take K/M/G/T suffixes (powers of 1024); durations take ns/us/ms/s (a bare number is µs).\n\n"
		   "| option | environment | default | unit | used by | meaning |\n|---|---|---|---|---|---|\n");
	for (int i = 0; i < OPT_COUNT; i++) {
		char var[64], used[64] = "";

		env_name(defs[i].name, var, sizeof(var));
		for (int s = 0; s < 5; s++)
			if (scope_names[s] && defs[i].scope & (1u << s))
				snprintf(used + strlen(used), sizeof(used) - strlen(used), "%s%s",
					 used[0] ? ", " : "", scope_names[s]);
		fprintf(f, "| `%s` | `%s` | %s | %s | %s | %s |\n", defs[i].name, var,
			defs[i].def[0] ? defs[i].def : "(none)", defs[i].unit, used, defs[i].doc);
	}
}

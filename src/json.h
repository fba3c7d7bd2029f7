/* json: the one writer of JSON text (--stats-json, comex status --json,
 * comex swap status --json) into a caller's buffer, escaping every string;
 * no malloc, no stdio streams, so the preloaded runtime's stats use it too. */
#ifndef COMEX_JSON_H
#define COMEX_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define JSON_DEPTH_MAX 16 /* containers open at once */

/* A text being written; its fields are the writer's own. */
struct json {
	char *buf;
	size_t cap, len; /* len: the text's length so far, counted on past cap */
	unsigned depth;
	uint32_t items, lines; /* bit d: the container at depth d has items / puts each on a line of its own */
	char close[JSON_DEPTH_MAX];
};

/* Starts a text in buf (cap bytes, the terminating NUL included). */
void json_init(struct json *j, char *buf, size_t cap);
/* Opens an object (kind '{') or array ('['), as member key of the
 * enclosing object (NULL in an array or at the top); lines: each of its
 * items on a line of its own, indented two spaces a level, else all on one. */
void json_open(struct json *j, const char *key, char kind, bool lines);
void json_close(struct json *j);
/* Values (key as for json_open). A string is escaped (quote, backslash,
 * control characters); a number is formatted with fmt (e.g. "%.1f"), and
 * written null when NaN or infinite, which JSON cannot say. */
void json_str(struct json *j, const char *key, const char *s);
void json_uint(struct json *j, const char *key, uint64_t v);
void json_int(struct json *j, const char *key, int64_t v);
void json_bool(struct json *j, const char *key, bool v);
void json_num(struct json *j, const char *key, const char *fmt, double v);
/* Ends the text with a newline; returns its length, or -ENOSPC when it did
 * not fit in the buffer (the buffer then holds a truncated text). */
int json_end(struct json *j);

#endif

/* json: a JSON text written piece by piece with snprintf into a fixed buffer. */
#include "json.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>

static void __attribute__((format(printf, 2, 3))) put(struct json *j, const char *fmt, ...)
{
	va_list ap;
	int k;

	va_start(ap, fmt);
	k = vsnprintf(j->len < j->cap ? j->buf + j->len : NULL, j->len < j->cap ? j->cap - j->len : 0, fmt, ap);
	va_end(ap);
	if (k > 0)
		j->len += (size_t)k;
}

static void put_str(struct json *j, const char *s)
{
	put(j, "\"");
	for (; *s; s++)
		if (*s == '"' || *s == '\\')
			put(j, "\\%c", *s);
		else if ((unsigned char)*s < 0x20)
			put(j, "\\u%04x", (unsigned)*s);
		else
			put(j, "%c", *s);
	put(j, "\"");
}

/* What comes before an item of the innermost container: its separator
 * from the item before, its line and indent, and its key. */
static void item(struct json *j, const char *key)
{
	uint32_t bit = 1u << j->depth;

	if (j->depth) {
		if (j->lines & bit)
			put(j, "%s\n%*s", j->items & bit ? "," : "", (int)j->depth * 2, "");
		else if (j->items & bit)
			put(j, ", ");
	}
	j->items |= bit;
	if (key) {
		put_str(j, key);
		put(j, ": ");
	}
}

void json_init(struct json *j, char *buf, size_t cap)
{
	*j = (struct json){ .buf = buf, .cap = cap };
	if (cap)
		buf[0] = 0;
}

void json_open(struct json *j, const char *key, char kind, bool lines)
{
	item(j, key);
	put(j, "%c", kind);
	if (j->depth + 1 >= JSON_DEPTH_MAX) {
		j->len = j->cap; /* too deep: the text fails as one that does not fit */
		return;
	}
	j->close[++j->depth] = kind == '{' ? '}' : ']';
	j->items &= ~(1u << j->depth);
	j->lines = (j->lines & ~(1u << j->depth)) | (lines ? 1u << j->depth : 0);
}

void json_close(struct json *j)
{
	uint32_t bit = 1u << j->depth;

	if (!j->depth)
		return;
	if ((j->lines & bit) && (j->items & bit))
		put(j, "\n%*s", (int)(j->depth - 1) * 2, "");
	put(j, "%c", j->close[j->depth--]);
}

void json_str(struct json *j, const char *key, const char *s)
{
	item(j, key);
	put_str(j, s);
}

void json_uint(struct json *j, const char *key, uint64_t v)
{
	item(j, key);
	put(j, "%" PRIu64, v);
}

void json_bool(struct json *j, const char *key, bool v)
{
	item(j, key);
	put(j, "%s", v ? "true" : "false");
}

void json_int(struct json *j, const char *key, int64_t v)
{
	item(j, key);
	put(j, "%" PRId64, v);
}

void json_num(struct json *j, const char *key, const char *fmt, double v)
{
	item(j, key);
	if (!isfinite(v)) {
		put(j, "null");
		return;
	}
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
	put(j, fmt, v);
#pragma GCC diagnostic pop
}

int json_end(struct json *j)
{
	put(j, "\n");
	return j->len < j->cap ? (int)j->len : -ENOSPC;
}

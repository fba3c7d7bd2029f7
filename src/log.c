/* Lines are at most 512 bytes; longer ones are truncated, never split, so that
 * concurrent writers (threads, memnode and client in one test) never interleave
 * within a line: a single write(2) of <= PIPE_BUF bytes is atomic on pipes. */
#include "log.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int log_threshold = LOG_INFO;
static const char *log_prefix = "comex";

static const char *const level_names[] = { "error", "warning", "info", "debug" };

void log_set_prefix(const char *prefix)
{
	log_prefix = prefix;
}

/* fmt with every %m replaced by the text of err, its '%' doubled, into out
 * (cut at cap). glibc's own %m looks the text up through gettext, which
 * reads the program's text-domain bindings: in the preloaded runtime they
 * may be evicted pages, and a runtime thread must never fault on one
 * (interpose.c, "error texts"). strerrordesc_np reads a static table. */
static const char *expand_m(const char *fmt, int err, char *out, size_t cap)
{
	const char *d = strerrordesc_np(err);
	size_t n = 0;

	if (!strstr(fmt, "%m"))
		return fmt;
	for (const char *f = fmt; *f && n + 2 < cap; f++) {
		if (f[0] == '%' && f[1] == '%') {
			out[n++] = *f++;
			out[n++] = *f;
		} else if (f[0] == '%' && f[1] == 'm') {
			for (const char *t = d ? d : "Unknown error"; *t && n + 3 < cap; t++) {
				if (*t == '%')
					out[n++] = '%';
				out[n++] = *t;
			}
			f++;
		} else {
			out[n++] = *f;
		}
	}
	out[n] = '\0';
	return out;
}

void log_msg(int level, const char *fmt, ...)
{
	char buf[512], fmt_m[512];
	int saved = errno;
	int n, m;
	va_list ap;

	if (level > log_threshold)
		return;
	n = snprintf(buf, sizeof(buf), "%s: %s: ", log_prefix, level_names[level]);
	if (n < 0 || n >= (int)sizeof(buf))
		n = 0;
	va_start(ap, fmt);
	m = vsnprintf(buf + n, sizeof(buf) - n - 1, expand_m(fmt, saved, fmt_m, sizeof(fmt_m)), ap);
	va_end(ap);
	if (m < 0)
		m = 0;
	n += m;
	if (n > (int)sizeof(buf) - 2)
		n = sizeof(buf) - 2;
	buf[n++] = '\n';
	while (write(STDERR_FILENO, buf, n) < 0 && errno == EINTR)
		;
	errno = saved;
}

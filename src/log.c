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

void log_msg(int level, const char *fmt, ...)
{
	char buf[512];
	int saved = errno;
	int n, m;
	va_list ap;

	if (level > log_threshold)
		return;
	n = snprintf(buf, sizeof(buf), "%s: %s: ", log_prefix, level_names[level]);
	if (n < 0 || n >= (int)sizeof(buf))
		n = 0;
	errno = saved; /* %m reads errno */
	va_start(ap, fmt);
	m = vsnprintf(buf + n, sizeof(buf) - n - 1, fmt, ap);
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

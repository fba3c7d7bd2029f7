/* test_log: log lines as written to stderr, %m expanded by log.c itself (never through gettext). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "testing.h"

/* The line that fmt logs at error level with errno err, read back from a
 * pipe that stands in for stderr. */
static void logged(int err, char *out, size_t cap, const char *fmt, const char *arg)
{
	int p[2], saved = dup(STDERR_FILENO);
	ssize_t n;

	CHECK(saved >= 0 && pipe(p) == 0 && dup2(p[1], STDERR_FILENO) == STDERR_FILENO);
	errno = err;
	log_error(fmt, arg);
	CHECK(errno == err); /* log_msg keeps errno */
	CHECK(dup2(saved, STDERR_FILENO) == STDERR_FILENO);
	close(p[1]);
	n = read(p[0], out, cap - 1);
	CHECK(n > 0);
	out[n] = '\0';
	close(p[0]);
	close(saved);
}

int main(void)
{
	char line[600];

	log_set_prefix("t");
	logged(ENOENT, line, sizeof(line), "open %s: %m", "x");
	CHECK(!strcmp(line, "t: error: open x: No such file or directory\n"));
	/* %% stays a percent sign, also right before an m; %s after %m still reads its argument */
	logged(EACCES, line, sizeof(line), "100%%m, %m, then %s", "arg");
	CHECK(!strcmp(line, "t: error: 100%m, Permission denied, then arg\n"));
	/* no %m: the format is used as it is */
	logged(0, line, sizeof(line), "plain %s", "text");
	CHECK(!strcmp(line, "t: error: plain text\n"));
	/* an errno without a text */
	logged(4000, line, sizeof(line), "odd: %m%s", "");
	CHECK(!strcmp(line, "t: error: odd: Unknown error\n"));
	return 0;
}

/* auth: token files are generated private, loaded only when private, and compared exactly. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "auth.h"
#include "testing.h"

static char dir[200];

static const char *path_in(const char *name)
{
	static char buf[4][256];
	static int next;
	char *p = buf[next++ % 4];

	snprintf(p, sizeof(buf[0]), "%s/%s", dir, name);
	return p;
}

/* Writes content to a fresh file of the given mode (umask notwithstanding). */
static const char *write_file(const char *name, const void *content, size_t len, mode_t mode)
{
	const char *path = path_in(name);
	int fd = open(path, O_CREAT | O_EXCL | O_WRONLY, 0600);

	CHECK(fd >= 0);
	CHECK(write(fd, content, len) == (ssize_t)len);
	CHECK(fchmod(fd, mode) == 0);
	CHECK(close(fd) == 0);
	return path;
}

static void test_generate_load(void)
{
	const char *path = path_in("generated");
	struct auth_token t, t2;
	struct stat st;
	char text[80];
	int fd;
	ssize_t n;

	CHECK(auth_token_generate(path) == 0);
	CHECK(stat(path, &st) == 0);
	CHECK((st.st_mode & 07777) == 0600);
	fd = open(path, O_RDONLY);
	CHECK(fd >= 0);
	n = read(fd, text, sizeof(text));
	close(fd);
	CHECK(n == 65 && text[64] == '\n');
	for (int i = 0; i < 64; i++)
		CHECK(strchr("0123456789abcdef", text[i]) != NULL);

	CHECK(auth_token_load(path, &t) == 0);
	CHECK(t.len == 64 && memcmp(t.bytes, text, 64) == 0);
	CHECK(auth_token_matches(&t, (const uint8_t *)text, 64));

	/* Never overwrites, and a second token differs from the first. */
	CHECK(auth_token_generate(path) == -EEXIST);
	CHECK(auth_token_generate(path_in("generated2")) == 0);
	CHECK(auth_token_load(path_in("generated2"), &t2) == 0);
	CHECK(t2.len == 64 && memcmp(t.bytes, t2.bytes, 64) != 0);
}

static void test_refused_files(void)
{
	struct auth_token t = { .len = 7 };
	const char *p;
	char big[AUTH_TOKEN_MAX + 3];

	p = write_file("mode0644", "secret\n", 7, 0644);
	CHECK(auth_token_load(p, &t) == -EACCES);
	p = write_file("mode0640", "secret\n", 7, 0640);
	CHECK(auth_token_load(p, &t) == -EACCES);
	p = write_file("empty", "", 0, 0600);
	CHECK(auth_token_load(p, &t) == -EINVAL);
	p = write_file("newline", "\n", 1, 0600);
	CHECK(auth_token_load(p, &t) == -EINVAL);
	p = write_file("crlf", "\r\n", 2, 0600);
	CHECK(auth_token_load(p, &t) == -EINVAL);
	memset(big, 'x', sizeof(big));
	p = write_file("long", big, AUTH_TOKEN_MAX + 1, 0600);
	CHECK(auth_token_load(p, &t) == -EINVAL);
	p = write_file("longer", big, sizeof(big), 0600);
	CHECK(auth_token_load(p, &t) == -EINVAL);
	CHECK(auth_token_load(path_in("missing"), &t) == -ENOENT);
	CHECK(auth_token_load(dir, &t) == -EACCES); /* not a regular file */
	CHECK(symlink(path_in("generated"), path_in("link")) == 0);
	CHECK(auth_token_load(path_in("link"), &t) == -ELOOP);
	CHECK(mkfifo(path_in("fifo"), 0600) == 0);
	CHECK(auth_token_load(path_in("fifo"), &t) == -EACCES); /* and does not block */
	if (geteuid() == 0) { /* only root can give a file away */
		p = write_file("foreign", "secret\n", 7, 0600);
		CHECK(chown(p, 65534, 65534) == 0);
		CHECK(auth_token_load(p, &t) == -EACCES);
	}
	CHECK(t.len == 7); /* output untouched on failure */
}

static void test_trailing_newline(void)
{
	struct auth_token t;
	char max[AUTH_TOKEN_MAX + 2];
	const char *p;

	p = write_file("plain", "abc", 3, 0600);
	CHECK(auth_token_load(p, &t) == 0 && t.len == 3 && memcmp(t.bytes, "abc", 3) == 0);
	p = write_file("lf", "abc\n", 4, 0600);
	CHECK(auth_token_load(p, &t) == 0 && t.len == 3);
	p = write_file("crlf2", "abc\r\n", 5, 0600);
	CHECK(auth_token_load(p, &t) == 0 && t.len == 3);
	/* Only one newline is stripped: the rest is part of the secret. */
	p = write_file("lflf", "abc\n\n", 5, 0600);
	CHECK(auth_token_load(p, &t) == 0 && t.len == 4 && memcmp(t.bytes, "abc\n", 4) == 0);

	memset(max, 'y', sizeof(max));
	max[AUTH_TOKEN_MAX] = '\r';
	max[AUTH_TOKEN_MAX + 1] = '\n';
	p = write_file("max", max, sizeof(max), 0600);
	CHECK(auth_token_load(p, &t) == 0 && t.len == AUTH_TOKEN_MAX);
	p = write_file("max_nonl", max, AUTH_TOKEN_MAX, 0600);
	CHECK(auth_token_load(p, &t) == 0 && t.len == AUTH_TOKEN_MAX);
}

static void test_matches(void)
{
	struct auth_token t = { .len = 6 };

	memcpy(t.bytes, "secret", 6);
	CHECK(auth_token_matches(&t, (const uint8_t *)"secret", 6));
	CHECK(!auth_token_matches(&t, (const uint8_t *)"secreT", 6));
	CHECK(!auth_token_matches(&t, (const uint8_t *)"Secret", 6));
	CHECK(!auth_token_matches(&t, (const uint8_t *)"secre", 5));
	CHECK(!auth_token_matches(&t, (const uint8_t *)"secret!", 7));
	CHECK(!auth_token_matches(&t, (const uint8_t *)"secret\0", 7));
	CHECK(!auth_token_matches(&t, NULL, 0));
	CHECK(!auth_token_matches(&t, (const uint8_t *)"", 0));
}

/* Removes everything the tests created; the directory has no subdirectories. */
static void cleanup(void)
{
	static const char *const names[] = {
		"generated", "generated2", "mode0644", "mode0640", "empty", "newline", "crlf",
		"long", "longer", "link", "fifo", "foreign", "plain", "lf", "crlf2", "lflf", "max", "max_nonl",
	};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		unlink(path_in(names[i]));
	rmdir(dir);
}

int main(void)
{
	const char *tmp = getenv("TMPDIR");

	snprintf(dir, sizeof(dir), "%s/comex_test_auth.XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	atexit(cleanup);
	test_generate_load();
	test_refused_files();
	test_trailing_newline();
	test_matches();
	printf("test_auth: ok\n");
	return 0;
}

/* The token file is the only secret comex handles: it is read with one
 * bounded read into a stack buffer that is wiped afterwards, refused unless
 * private to its owner, and never logged (messages name the path only). */
#include "auth.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"

#define AUTH_RANDOM_BYTES 32

/* Reads until EOF or cap bytes; *len_out is the count read. */
static int read_all(int fd, uint8_t *buf, size_t cap, size_t *len_out)
{
	size_t len = 0;

	while (len < cap) {
		ssize_t n = read(fd, buf + len, cap - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			break;
		len += (size_t)n;
	}
	*len_out = len;
	return 0;
}

static int write_all(int fd, const char *buf, size_t len)
{
	while (len > 0) {
		ssize_t n = write(fd, buf, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

/* The file must be one the caller alone controls: a regular file (not a FIFO
 * or device a third party could feed), owned by us, with no group or other
 * permission bits. */
static int check_private(int fd, const char *path)
{
	struct stat st;

	if (fstat(fd, &st) < 0) {
		int rc = -errno;
		log_error("token file %s: fstat: %m", path);
		return rc;
	}
	if (!S_ISREG(st.st_mode)) {
		log_error("token file %s is not a regular file; create one with 'comex token FILE'", path);
		return -EACCES;
	}
	if (st.st_uid != geteuid()) {
		log_error("token file %s is owned by uid %u, not by us (uid %u); fix with: chown %u %s",
			  path, (unsigned)st.st_uid, (unsigned)geteuid(), (unsigned)geteuid(), path);
		return -EACCES;
	}
	if (st.st_mode & 077) {
		log_error("token file %s has mode %04o, readable or writable by others; fix with: chmod 600 %s",
			  path, (unsigned)(st.st_mode & 07777), path);
		return -EACCES;
	}
	return 0;
}

/* Strips one trailing "\n" or "\r\n" and checks the length that remains. */
static int parse_token(const uint8_t *buf, size_t len, const char *path, struct auth_token *out)
{
	if (len > 0 && buf[len - 1] == '\n') {
		len--;
		if (len > 0 && buf[len - 1] == '\r')
			len--;
	}
	if (len == 0) {
		log_error("token file %s is empty; create one with 'comex token FILE'", path);
		return -EINVAL;
	}
	if (len > AUTH_TOKEN_MAX) {
		log_error("token file %s: token longer than %u bytes", path, AUTH_TOKEN_MAX);
		return -EINVAL;
	}
	memcpy(out->bytes, buf, len);
	out->len = len;
	return 0;
}

int auth_token_load(const char *path, struct auth_token *out)
{
	/* Room for the longest token, "\r\n", and one byte to detect excess. */
	uint8_t buf[AUTH_TOKEN_MAX + 3];
	size_t len = 0; /* gcc -O2 cannot see read_all set it */
	int fd, rc;

	/* O_NONBLOCK: opening a FIFO must not hang; check_private refuses it. */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK);
	if (fd < 0) {
		rc = -errno;
		if (rc == -ELOOP)
			log_error("token file %s is a symbolic link; give the real path", path);
		else
			log_error("cannot open token file %s: %m", path);
		return rc;
	}
	rc = check_private(fd, path);
	if (rc)
		goto close_fd;
	rc = read_all(fd, buf, sizeof(buf), &len);
	if (rc) {
		errno = -rc;
		log_error("cannot read token file %s: %m", path);
		goto wipe_buf;
	}
	if (len == sizeof(buf)) {
		log_error("token file %s: token longer than %u bytes", path, AUTH_TOKEN_MAX);
		rc = -EINVAL;
		goto wipe_buf;
	}
	rc = parse_token(buf, len, path, out);
wipe_buf:
	explicit_bzero(buf, sizeof(buf));
close_fd:
	close(fd);
	return rc;
}

/* Fills buf with n bytes from the kernel CSPRNG (blocks until it is seeded). */
static int random_bytes(uint8_t *buf, size_t n)
{
	size_t got = 0;

	while (got < n) {
		ssize_t r = getrandom(buf + got, n - got, 0);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		got += (size_t)r;
	}
	return 0;
}

/* Writes a fresh secret as hex plus "\n" to fd and makes it durable. */
static int write_secret(int fd, const char *path)
{
	static const char hex[] = "0123456789abcdef";
	uint8_t raw[AUTH_RANDOM_BYTES];
	char text[2 * AUTH_RANDOM_BYTES + 1];
	int rc;

	rc = random_bytes(raw, sizeof(raw));
	if (rc) {
		errno = -rc;
		log_error("token file %s: getrandom: %m", path);
		goto wipe;
	}
	for (size_t i = 0; i < sizeof(raw); i++) {
		text[2 * i] = hex[raw[i] >> 4];
		text[2 * i + 1] = hex[raw[i] & 0xf];
	}
	text[sizeof(text) - 1] = '\n';
	rc = write_all(fd, text, sizeof(text));
	if (rc == 0 && fsync(fd) < 0)
		rc = -errno;
	if (rc) {
		errno = -rc;
		log_error("cannot write token file %s: %m", path);
	}
wipe:
	explicit_bzero(raw, sizeof(raw));
	explicit_bzero(text, sizeof(text));
	return rc;
}

int auth_token_generate(const char *path)
{
	int fd, rc;

	/* O_EXCL: never overwrite (or follow a planted link to) an existing file. */
	fd = open(path, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY, 0600);
	if (fd < 0) {
		rc = -errno;
		log_error("cannot create token file %s: %m", path);
		return rc;
	}
	rc = write_secret(fd, path);
	if (close(fd) < 0 && rc == 0) {
		rc = -errno;
		log_error("cannot write token file %s: %m", path);
	}
	if (rc)
		goto unlink_file;
	return 0;

	/* A partial token file would later be refused as the wrong secret. */
unlink_file:
	unlink(path);
	return rc;
}

/* Runs over all of the token whatever the presented bytes are, so the time
 * taken reveals neither how much of a guess is right nor where it differs. */
bool auth_token_matches(const struct auth_token *t, const uint8_t *secret, size_t len)
{
	volatile unsigned diff = t->len != len;
	size_t i;

	for (i = 0; i < t->len; i++)
		diff |= t->bytes[i] ^ (i < len ? secret[i] : 0u);
	return diff == 0;
}

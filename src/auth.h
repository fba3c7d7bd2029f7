/* auth: the shared cluster token. A token file holds one secret line, must be
 * a regular file owned by the caller with no group/other permission (0600);
 * the secret is never logged or passed in process arguments. */
#ifndef COMEX_AUTH_H
#define COMEX_AUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define AUTH_TOKEN_MAX 256 /* == PROTO_MAX_TOKEN */

struct auth_token {
	size_t len;
	uint8_t bytes[AUTH_TOKEN_MAX];
};

/* Loads the token; trailing newline stripped. Logs and returns -EACCES for
 * bad permissions or owner, -EINVAL for an empty or over-long token, or the
 * open/read errno. */
int auth_token_load(const char *path, struct auth_token *out);

/* Creates path (must not exist) with mode 0600 and 32 random bytes as hex. */
int auth_token_generate(const char *path);

/* Constant-time comparison of a presented secret with the token. */
bool auth_token_matches(const struct auth_token *t, const uint8_t *secret, size_t len);

#endif

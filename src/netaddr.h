/* netaddr: parses the "HOST:PORT" (or "[V6]:PORT") addresses of every comex
 * option into socket addresses. */
#ifndef COMEX_NETADDR_H
#define COMEX_NETADDR_H

#include <sys/socket.h>

/* Resolves hostport (for a stream socket) into *ss and *len; -EINVAL for a
 * malformed address, -EHOSTUNREACH for one that does not resolve (logged). */
int netaddr_resolve(const char *hostport, struct sockaddr_storage *ss, socklen_t *len);

#endif

/* netaddr: HOST:PORT text to a socket address, for UCX and plain sockets alike. */
#include "netaddr.h"

#include <errno.h>
#include <netdb.h>
#include <string.h>

#include "log.h"

int netaddr_resolve(const char *hostport, struct sockaddr_storage *ss, socklen_t *len)
{
	char host[256];
	const char *colon = strrchr(hostport, ':');
	const char *h = hostport;
	size_t hlen;
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM }, *ai;
	int rc;

	if (!colon || !colon[1]) {
		log_error("address '%s' is not HOST:PORT", hostport);
		return -EINVAL;
	}
	hlen = colon - hostport;
	if (hlen >= 2 && h[0] == '[' && h[hlen - 1] == ']')
		h++, hlen -= 2;
	if (hlen >= sizeof(host)) {
		log_error("address '%s': host name too long", hostport);
		return -EINVAL;
	}
	memcpy(host, h, hlen);
	host[hlen] = '\0';
	rc = getaddrinfo(host, colon + 1, &hints, &ai);
	if (rc) {
		log_error("cannot resolve '%s': %s", hostport, gai_strerror(rc));
		return -EHOSTUNREACH;
	}
	memcpy(ss, ai->ai_addr, ai->ai_addrlen);
	*len = ai->ai_addrlen;
	freeaddrinfo(ai);
	return 0;
}

/* One scrape at a time is plenty for Prometheus (one scraper, every few
 * seconds); a client that stalls is cut off by the socket timeouts, so it can
 * delay the next scrape by at most IO_TIMEOUT_S, never the memnode. */
#include "http_metrics.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "log.h"
#include "netaddr.h"

#define IO_TIMEOUT_S 5
#define REQ_MAX 4096 /* request line and headers; more is a 400 */

struct http_metrics {
	int fd, stop_pipe[2];
	http_render_fn render;
	void *arg;
	pthread_t thread;
};

static void send_all(int fd, const char *p, size_t len)
{
	while (len) {
		ssize_t k = send(fd, p, len, MSG_NOSIGNAL);

		if (k <= 0)
			return; /* the scraper went away: nothing to tell it */
		p += k, len -= (size_t)k;
	}
}

static void respond(int fd, const char *status, const char *type, const char *body, size_t len)
{
	char hdr[256];
	int n = snprintf(hdr, sizeof(hdr), "HTTP/1.0 %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
				       "Connection: close\r\n\r\n", status, type, len);

	send_all(fd, hdr, (size_t)n);
	send_all(fd, body, len);
}

/* Reads up to the blank line ending the headers; 0 and the request line in req. */
static int read_request(int fd, char *req, size_t cap)
{
	size_t len = 0;

	while (len + 1 < cap) {
		ssize_t k = recv(fd, req + len, cap - 1 - len, 0);

		if (k <= 0)
			return -EIO;
		len += (size_t)k;
		req[len] = 0;
		if (strstr(req, "\r\n\r\n") || strstr(req, "\n\n"))
			return 0;
	}
	return -EMSGSIZE;
}

static void serve_one(struct http_metrics *h, int fd)
{
	char req[REQ_MAX], *body = NULL;
	size_t len = 0;
	FILE *f;
	int err;

	if (read_request(fd, req, sizeof(req))) {
		respond(fd, "400 Bad Request", "text/plain", "bad request\n", 12);
		return;
	}
	if (strncmp(req, "GET ", 4)) {
		respond(fd, "405 Method Not Allowed", "text/plain", "only GET\n", 9);
		return;
	}
	if (strncmp(req + 4, "/metrics", 8) || (req[12] != ' ' && req[12] != '?')) {
		respond(fd, "404 Not Found", "text/plain", "see /metrics\n", 13);
		return;
	}
	f = open_memstream(&body, &len);
	if (!f) {
		respond(fd, "500 Internal Server Error", "text/plain", "out of memory\n", 14);
		return;
	}
	err = h->render(h->arg, f);
	if (fclose(f) || err)
		respond(fd, "500 Internal Server Error", "text/plain", "cannot collect metrics\n", 23);
	else
		respond(fd, "200 OK", "text/plain; version=0.0.4; charset=utf-8", body, len);
	free(body);
}

static void *server_main(void *arg)
{
	struct http_metrics *h = arg;
	struct timeval tv = { .tv_sec = IO_TIMEOUT_S };

	for (;;) {
		struct pollfd p[2] = { { h->fd, POLLIN, 0 }, { h->stop_pipe[0], POLLIN, 0 } };
		int fd;

		if (poll(p, 2, -1) < 0 && errno != EINTR)
			break;
		if (p[1].revents)
			break;
		if (!(p[0].revents & POLLIN))
			continue;
		fd = accept4(h->fd, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0)
			continue; /* the client gave up, or a transient shortage */
		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
		serve_one(h, fd);
		close(fd);
	}
	return NULL;
}

static int listen_on(const char *hostport, unsigned *port_out)
{
	struct sockaddr_storage ss;
	socklen_t len;
	int one = 1, fd, err = netaddr_resolve(hostport, &ss, &len);

	if (err)
		return err;
	fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		log_error("metrics: socket for %s: %m", hostport);
		return -errno;
	}
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&ss, len) || listen(fd, 16)) {
		err = -errno;
		log_error("metrics: cannot listen on %s: %m", hostport);
		close(fd);
		return err;
	}
	len = sizeof(ss);
	if (port_out && !getsockname(fd, (struct sockaddr *)&ss, &len))
		*port_out = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
							    : ((struct sockaddr_in *)&ss)->sin_port);
	return fd;
}

int http_metrics_start(const char *hostport, http_render_fn render, void *arg,
		       struct http_metrics **out, unsigned *port_out)
{
	struct http_metrics *h = calloc(1, sizeof(*h));
	sigset_t all, saved;
	int err;

	if (!h)
		return -ENOMEM;
	h->render = render;
	h->arg = arg;
	h->fd = listen_on(hostport, port_out);
	if (h->fd < 0) {
		err = h->fd;
		goto cleanup_h;
	}
	if (pipe2(h->stop_pipe, O_CLOEXEC)) {
		err = -errno;
		log_error("metrics: pipe: %m");
		goto cleanup_fd;
	}
	/* the thread takes no signals: SIGTERM must reach the main thread,
	 * which is the one that stops the process */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &saved);
	err = -pthread_create(&h->thread, NULL, server_main, h);
	pthread_sigmask(SIG_SETMASK, &saved, NULL);
	if (err) {
		log_error("metrics: cannot start the server thread: %s", strerror(-err));
		goto cleanup_pipe;
	}
	*out = h;
	return 0;

cleanup_pipe:
	close(h->stop_pipe[0]);
	close(h->stop_pipe[1]);
cleanup_fd:
	close(h->fd);
cleanup_h:
	free(h);
	return err;
}

void prom_family(FILE *f, const char *name, const char *type, const char *help)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* Whole values (every counter) in full, fractions (seconds) to 9 digits;
 * Prometheus values are doubles anyway. */
void prom_sample(FILE *f, const char *name, const char *labels, double value)
{
	bool whole = value >= 0 && value < 9007199254740992.0 && value == (double)(uint64_t)value;

	fprintf(f, "%s%s%s%s ", name, labels && *labels ? "{" : "", labels ? labels : "", labels && *labels ? "}" : "");
	fprintf(f, whole ? "%.0f\n" : "%.9g\n", value);
}

void http_metrics_stop(struct http_metrics *h)
{
	if (!h)
		return;
	if (write(h->stop_pipe[1], "", 1) != 1)
		log_warn("metrics: cannot wake the server thread: %m");
	pthread_join(h->thread, NULL);
	close(h->stop_pipe[0]);
	close(h->stop_pipe[1]);
	close(h->fd);
	free(h);
}

/* Every value comes from serve_stats(), the serve snapshot that is safe to
 * read from the metrics server's thread. */
#include "memnode_metrics.h"

#include <stdio.h>
#include <errno.h>

#include "http_metrics.h"
#include "log.h"
#include "proto.h"
#include "serve.h"

struct memnode_metrics {
	const struct serve *s;
	char labels[32];
};

static void one(FILE *f, const struct memnode_metrics *mm, const char *name, const char *type,
		const char *help, double value)
{
	prom_family(f, name, type, help);
	prom_sample(f, name, mm->labels, value);
}

static int render(void *arg, FILE *f)
{
	const struct memnode_metrics *mm = arg;
	struct serve_stats st;
	double frame = PROTO_FRAME_SIZE;

	serve_stats(mm->s, &st);
	one(f, mm, "comex_memnode_pool_bytes", "gauge", "Memory in the pool now (a growing pool: so far).",
	    st.pool_frames * frame);
	one(f, mm, "comex_memnode_free_bytes", "gauge", "Pool memory not allocated to any client.",
	    st.free_frames * frame);
	one(f, mm, "comex_memnode_used_bytes", "gauge", "Pool memory allocated to clients.",
	    (st.pool_frames - st.free_frames) * frame);
	one(f, mm, "comex_memnode_clients", "gauge", "Connections open now.", st.clients);
	one(f, mm, "comex_memnode_requests_total", "counter", "Protocol messages handled, all types.",
	    st.requests);
	one(f, mm, "comex_memnode_chunk_grants_total", "counter", "ALLOCs answered with a chunk.", st.allocs);
	one(f, mm, "comex_memnode_nacks_total", "counter", "ALLOCs refused for lack of room (NACK).",
	    st.nacks);
	one(f, mm, "comex_memnode_freed_bytes_total", "counter", "Memory given back by clients' FREEs.",
	    st.frees * frame);
	one(f, mm, "comex_memnode_refused_requests_total", "counter",
	    "Requests answered with ERROR (malformed, unauthenticated, out of range).", st.errors);
	one(f, mm, "comex_memnode_uptime_seconds", "gauge", "Time since the memnode started serving.",
	    st.uptime_ns / 1e9);
	return ferror(f) ? -EIO : 0;
}

int memnode_metrics_start(const char *hostport, const struct serve *s, uint16_t nid, struct http_metrics **out)
{
	static struct memnode_metrics mm; /* one memnode per process */
	unsigned port = 0;
	int err;

	mm.s = s;
	snprintf(mm.labels, sizeof(mm.labels), "nid=\"%u\"", nid);
	err = http_metrics_start(hostport, render, &mm, out, &port);
	if (err)
		return err;
	log_info("metrics on http://%s/metrics (port %u)", hostport, port);
	return 0;
}

void memnode_metrics_stop(struct http_metrics *h)
{
	http_metrics_stop(h);
}

/* serve: the memnode's request handling, independent of the transport: it
 * authenticates connections, validates every request and answers from the
 * buddy allocator. The transport feeds it raw messages and sends its replies;
 * the fuzzer drives it directly. Not thread-safe (the memnode is one thread). */
#ifndef COMEX_SERVE_H
#define COMEX_SERVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "auth.h"

struct serve;

struct serve_config {
	uint32_t pool_frames;            /* frames in the pool at start */
	/* A growing pool (memnode option pool-max): PFNs run up to max_frames
	 * (0: pool_frames, a fixed pool). When an ALLOC finds no block free,
	 * grow(grow_arg, frames, need, &frames) is asked to make memory for more
	 * frames than the `frames` in the pool now (at least need more) and to
	 * give the new count; a negative errno from it is a NACK. */
	uint32_t max_frames;
	int (*grow)(void *grow_arg, uint32_t frames, uint32_t need, uint32_t *frames_out);
	/* Optional: told the pool's frames and how many are free after every
	 * granted ALLOC, so that memory is made ahead of need; must not block. */
	void (*grow_ahead)(void *grow_arg, uint32_t frames, uint32_t free_frames);
	void *grow_arg;
	uint16_t nid;
	uint32_t credits;
	uint32_t max_clients;
	uint64_t base;                   /* remote address of frame 0, for WELCOME */
	uint8_t *pool;                   /* local address of frame 0: READ/WRITE data */
	const void *rkey; size_t rkey_len;
	const struct auth_token *token;  /* NULL: no authentication (loopback only) */
};

/* serve_handle() return value: send the reply, then close the connection. */
#define SERVE_CLOSE 1

int serve_create(const struct serve_config *cfg, struct serve **out);
void serve_destroy(struct serve *s);

/* A new connection; conn ids are never reused. -EMFILE beyond max_clients. */
int serve_connect(struct serve *s, uint32_t *conn_out);
/* Connection gone: returns all its frames to the pool. Unknown conn ignored. */
void serve_disconnect(struct serve *s, uint32_t conn);

/* Pages that travel with a request or its reply (validated data path). */
struct serve_bulk {
	void *addr;     /* inside the pool */
	size_t len;     /* 0: no pages */
	bool incoming;  /* WRITE: receive len bytes into addr, then send the reply;
			 * else (READ): send len bytes from addr with the reply */
};

/* Handles one request of len bytes from conn (carrying bulk_len bytes of
 * pages) and writes exactly one reply (reply_cap >= PROTO_MAX_MSG) and the
 * pages to move in *bulk. Returns 0, SERVE_CLOSE, or -ENOENT for an unknown
 * conn, -EINVAL for a short reply buffer (no reply). Never fails on
 * malformed input: that gets an ERROR reply and a log line. */
int serve_handle(struct serve *s, uint32_t conn, const void *req, size_t len, size_t bulk_len,
		 void *reply, size_t reply_cap, size_t *reply_len, struct serve_bulk *bulk);

/* Planned departure: from now on ALLOCs get NACK and every authenticated
 * connection owes a DONE (a DRAIN message does the same). */
void serve_drain(struct serve *s);
/* Connections that still owe a DONE and the frames they hold; -1 when not
 * draining. */
int serve_drain_left(const struct serve *s, uint64_t *frames_out);
/* Encodes the EVICT that conn must be sent (it owes a DONE); -ENOENT if none. */
int serve_evict(struct serve *s, uint32_t conn, uint32_t timeout_ms, void *buf, size_t cap, size_t *len_out);

/* Elastic pool (memnode option host-reserve): takes one free order-10 block
 * out of service so that its memory can go back to the host: no client gets
 * it, and pool_frames no longer counts it. -ENOSPC when no such block is free. */
int serve_host_take(struct serve *s, uint32_t *pfn_out);
/* Puts a block that serve_host_take took back into service. */
int serve_host_return(struct serve *s, uint32_t pfn);
/* When no free block is left to give back: picks the run of `blocks`
 * order-10 blocks in service (fewer if no run is that long) that hold the
 * fewest clients' frames, marks every client holding frames there for a
 * SHRINK (serve_shrink_msg), and NACKs every ALLOC until serve_shrink_end,
 * so that freed frames merge into blocks serve_host_take can take. Called
 * again while clients still hold frames in the range: -EBUSY; once they hold
 * none, a new range is picked. -ENOENT: no block in service. */
int serve_shrink_start(struct serve *s, uint32_t blocks, uint32_t *pfn_out, uint32_t *count_out);
/* Encodes the SHRINK conn must be sent, once per range; -ENOENT if none. */
int serve_shrink_msg(struct serve *s, uint32_t conn, uint32_t timeout_ms, void *buf, size_t cap, size_t *len_out);
/* The shrink is over (enough given back, or the clients are too slow). */
void serve_shrink_end(struct serve *s);

struct serve_stats {
	uint64_t pool_frames, free_frames;
	uint64_t allocs, nacks, frees, errors; /* frees: frames given back by FREE */
	uint64_t requests;                     /* messages handled, all types */
	uint64_t uptime_ns;
	uint32_t clients;
};
/* A snapshot as of the last handled request or (dis)connection; the one
 * serve function that may be called from another thread. */
void serve_stats(const struct serve *s, struct serve_stats *out);

#endif

/* proto: the comex wire protocol between clients and memnodes (docs/PROTOCOL.md).
 * Every message is a 16-byte little-endian header plus a typed body; decoding
 * validates lengths and limits and never reads past the given buffer. */
#ifndef COMEX_PROTO_H
#define COMEX_PROTO_H

#include <stddef.h>
#include <stdint.h>

#define PROTO_MAGIC 0x5843u       /* "CX" as little-endian bytes 0x43 0x58 */
#define PROTO_VERSION 4u        /* 2: DRAIN, DRAINING, EVICT, DONE (planned departure); 3: free_frames in
                                 * WELCOME, CHUNK, NACK and FREED (placement); 4: SHRINK (elastic pool) */
#define PROTO_HDR_LEN 16u
#define PROTO_FRAME_SIZE ((uint64_t)4096) /* bytes in a frame, the unit of every PFN and count; 64-bit, so that
                                          * pfn * PROTO_FRAME_SIZE and masks never truncate */
#define PROTO_MAX_MSG 8192u       /* below UCX's eager limits on every transport */
#define PROTO_MAX_TOKEN 256u
#define PROTO_MAX_RKEY 4096u
#define PROTO_MAX_TEXT 200u
#define PROTO_FREE_MAX_RANGES 1000u /* 16 + 4 + 1000*8 = 8020 <= PROTO_MAX_MSG */
#define PROTO_STATS_MAX_CLIENTS 256u /* per-client rows in a STATS_REPLY: 16 + 80 + 256*16 = 4192 */
#define PROTO_STATS_DRAINING 1u      /* STATS_REPLY flags: the memnode is being drained */
#define PROTO_STATS_SHRINKING 2u     /* ... it is giving memory back to its host (SHRINK sent) */

enum proto_type {
	PROTO_HELLO = 1, PROTO_WELCOME, PROTO_ALLOC, PROTO_CHUNK, PROTO_NACK,
	PROTO_FREE, PROTO_FREED, PROTO_STATS, PROTO_STATS_REPLY, PROTO_BYE,
	PROTO_GOODBYE, PROTO_ERROR,
	/* Validated data path: the pages travel as the bulk part of the same
	 * UCX message (transport.h), never inside these bodies. */
	PROTO_READ, PROTO_DATA, PROTO_WRITE, PROTO_WRITTEN,
	/* Planned departure (Infiniswap App. B): an operator's DRAIN, the
	 * memnode's EVICT to each client (unsolicited, seq 0), the client's DONE
	 * once its pages are elsewhere. */
	PROTO_DRAIN, PROTO_DRAINING, PROTO_EVICT, PROTO_DONE,
	/* Elastic pool: the memnode's host needs memory back, so the client
	 * moves its pages off a range of frames and FREEs them (unsolicited,
	 * seq 0; the FREEs are the answer). */
	PROTO_SHRINK,
	PROTO_TYPE_MAX = PROTO_SHRINK
};

#define PROTO_MAX_RW_FRAMES 1024u /* frames one READ or WRITE may move (4 MiB) */

struct proto_range { uint32_t pfn, count; };
struct proto_usage { uint64_t client_id, frames; }; /* one client's frames on a memnode */

struct proto_msg {
	uint8_t type;
	uint64_t seq; /* echoed by the reply to a request */
	union {
		struct { uint64_t client_id; uint16_t token_len; const uint8_t *token; } hello;
		struct {
			uint16_t nid, max_order;
			uint32_t credits;    /* max requests a client may have outstanding */
			uint64_t pool_frames;
			uint64_t base;       /* remote virtual address of frame 0 */
			uint32_t rkey_len;
			const uint8_t *rkey; /* ucp_rkey_pack() output */
			uint64_t free_frames; /* room, as in chunk (on the wire before rkey_len) */
		} welcome;
		struct { uint32_t order; } alloc;
		/* free_frames in WELCOME, CHUNK, NACK, FREED: the frames the memnode
		 * could still grant after this reply (free in its buddy plus what a
		 * growing pool may add), piggybacked for placement (docs/PLACEMENT.md) */
		struct { uint32_t pfn, count; uint64_t free_frames; } chunk;
		struct { uint32_t pfn, count; } rw;   /* READ, WRITE */
		struct { uint32_t count; } done;      /* DATA, WRITTEN: frames moved */
		struct { int32_t error; int32_t largest_free_order; uint64_t free_frames; } nack;
		/* Encoding reads ranges[], or raw when ranges is NULL; decoding leaves ranges NULL and points raw
		 * at the wire bytes: use proto_free_range(). */
		struct { uint32_t nranges; const struct proto_range *ranges; const uint8_t *raw; } free;
		struct { uint32_t frames; uint64_t free_frames; } freed;
		struct {
			uint64_t pool_frames, free_frames, client_frames;
			uint64_t allocs, nacks, frees;  /* since start, all clients */
			uint32_t clients;
			int32_t largest_free_order;
			uint64_t requests;   /* since start, all clients, all types */
			uint64_t uptime_ms;
			uint32_t flags;      /* PROTO_STATS_* */
			/* The first nusage connected clients and their frames; as for
			 * FREE, encoding reads usage[] (or raw), decoding sets raw:
			 * use proto_stats_usage(). */
			uint32_t nusage;
			const struct proto_usage *usage;
			const uint8_t *raw;
		} stats;
		struct { int32_t error; uint16_t text_len; const char *text; } error; /* text not NUL-terminated */
		struct { uint32_t clients; uint64_t frames; } draining; /* told to leave, frames they hold */
		struct { uint64_t frames; uint32_t timeout_ms; } evict;  /* frames held, time given */
		struct { uint64_t moved; } finished;                     /* DONE: pages moved elsewhere */
		struct { uint32_t pfn, count, timeout_ms; } shrink;       /* frames to vacate, time given */
	} u;
};

/* Writes m into buf; -EMSGSIZE if it does not fit cap, -EINVAL for a field
 * beyond a protocol limit. */
int proto_encode(const struct proto_msg *m, void *buf, size_t cap, size_t *len_out);

/* Parses buf[0..len). Pointers in out point into buf. -EBADMSG for a bad
 * magic, truncated or over-long message or a field beyond a limit,
 * -EPROTONOSUPPORT for another version, -ENOMSG for an unknown type. */
int proto_decode(const void *buf, size_t len, struct proto_msg *out);

/* Range i (< nranges) of a decoded FREE. */
struct proto_range proto_free_range(const struct proto_msg *m, uint32_t i);

/* Row i (< nusage) of a STATS_REPLY. */
struct proto_usage proto_stats_usage(const struct proto_msg *m, uint32_t i);

const char *proto_type_name(unsigned type);

#endif

/* client: the compute-node side of comex. Connects to every configured
 * memnode up front (COMEX §3.2), keeps per-memnode frame pools replenished
 * ahead of need (threshold T, §3.3.3), releases frames in batches, and moves
 * contiguous frame runs with one UCX get/put (or one copy to or from the
 * embedded memnode's pool, mapped). Thread-safe (one internal lock);
 * nodes are numbered 0..client_nodes()-1 in configuration order. */
#ifndef COMEX_CLIENT_H
#define COMEX_CLIENT_H

#include <stdbool.h>
#include <stdint.h>

struct comex_client;
struct options;
struct stats_board;
struct tp_op;

/* Set by comex run for its program and everything it execs: "PATH@ADDR",
 * where PATH (/proc/MEMNODE/fd/3) opens the memfd holding the pool of the
 * embedded memnode at ADDR. The first client_connect of a process maps it;
 * frames of that memnode then move by copies to and from it, waking nobody
 * (docs/DECISIONS.md D38). Allocation, ownership and everything else still go
 * by messages. */
#define CLIENT_POOL_ENV "COMEX_POOL_FILE"

/* Reads memnode, token-file, replenish-*, release-batch, op-timeout,
 * client-spin from o. Fails (logged, naming the memnode) if any memnode
 * cannot be reached or refuses us. */
int client_connect(const struct options *o, struct comex_client **out);
/* Says BYE to every node (which frees our frames there) and disconnects. */
void client_close(struct comex_client *c);
unsigned client_nodes(const struct comex_client *c);

/* Takes 1..want contiguous free frames on node from its pool, replenishing
 * as needed (proactively below T). -ENOSPC when that memnode has no room
 * (the caller rehashes to another node). */
int client_alloc(struct comex_client *c, unsigned node, uint32_t want, uint32_t *pfn_out, uint32_t *count_out);
/* Per node (the first n): the frames its memnode could still grant, as the
 * last reply that carries the count said (no round trip); 0 for a node out
 * of use, leaving, or that refused an ALLOC within the last 100 ms. */
void client_room(struct comex_client *c, uint64_t *out, unsigned n);
/* Where a page's next copy goes, for comex run's replicas and comex swap's
 * copies alike: of the nodes not in avoid (bit i: node i), the one with the
 * most room (client_room: a suspect, leaving or failed one has none, but
 * may still be the only one left) and that room, in frames (room_out may
 * be NULL); -ENOSPC when avoid leaves none. */
int client_copy_target(struct comex_client *c, uint64_t avoid, unsigned *node_out, uint64_t *room_out);
/* Queues frames for release; sent in one FREE once release-batch frames are
 * queued, or by client_flush(). */
int client_release(struct comex_client *c, unsigned node, uint32_t pfn, uint32_t count);
/* Gives back the unused frames of node's local pool (one FREE, not waited
 * for): placement has moved on to another memnode. */
int client_trim(struct comex_client *c, unsigned node);
/* Sends queued releases and waits until every node has answered them. */
int client_flush(struct comex_client *c);

/* Where the runtime can read node's frames [pfn, pfn + count) in place (the
 * embedded memnode's pool mapped, pages not encrypted), else NULL: then
 * client_read. Valid while we hold those frames. */
const void *client_frames_at(struct comex_client *c, unsigned node, uint32_t pfn, uint32_t count);
/* Copies count contiguous frames starting at pfn from node into dst (one get). */
int client_read(struct comex_client *c, unsigned node, uint32_t pfn, uint32_t count, void *dst);
/* Several reads from node at once: all are asked for before any is waited
 * for, so the memnode answers them in one wake-up and one round trip (one
 * at a time, a window of several frame runs paid a round trip, and on a
 * sleeping memnode a wake-up, per run). status[r] is run r's, as
 * client_read's, or with hedged as client_read_hedged's in round 0. 0, or
 * -EINVAL (a bad node, more than CLIENT_MAX_RUNS runs). */
#define CLIENT_MAX_RUNS 16
struct client_run { uint32_t pfn, count; void *dst; };
int client_read_runs(struct comex_client *c, unsigned node, const struct client_run *runs, unsigned nruns,
		     bool hedged, int *status);
/* Copies src into count frames at pfn on node (one put) and returns once the
 * data is in the memnode's memory, so the local copy may be dropped. */
int client_write(struct comex_client *c, unsigned node, uint32_t pfn, uint32_t count, const void *src);
/* client_write for a copy that can be made later or elsewhere (a repair,
 * a move, a write past the ones in flight): waited for only until late and
 * the memnode is mute (stopped, hung), then given up (-ETIME; release its
 * frames), so a stopped memnode is not waited for up to op-timeout. Not so
 * with hedge-floor 0 (no hedging) or over UCX (a put cannot be given up):
 * a plain client_write there. */
int client_write_hedged(struct comex_client *c, unsigned node, uint32_t pfn, uint32_t count, const void *src);
/* client_write in two halves: the WRITE goes out now and src must stay
 * unchanged until client_write_wait returned (its status, 0 or negative
 * errno); op is the caller's and must live as long. hedged: the caller has
 * other copies, so a wait for credit gives up (-ETIME) on a shunned node. */
int client_write_start(struct comex_client *c, unsigned node, uint32_t pfn, uint32_t count, const void *src,
		       bool hedged, struct tp_op *op);
int client_write_wait(struct comex_client *c, unsigned node, struct tp_op *op);

/* Hedged transfers (hedge.c), for callers that have another copy to go to:
 * as client_read and client_write_wait, but -ETIME once the transfer is
 * late (option hedge-floor, or a few times this link's recent answer
 * times): it is then given up (dst is no longer written; a write's frames
 * should be released) and node is suspect. Where it cannot be given up
 * (UCX) they wait as the others do. A read in round 0 is refused at once
 * (-EAGAIN) when node is suspect or far slower than a peer; a caller whose
 * every copy was late reads again in round 1, 2, ..., each with twice the
 * patience, all of them (a stopped memnode is never waited for while a
 * late one may still answer); from round HEDGE_ROUNDS on it is a plain
 * read, waited for up to op-timeout. */
#define HEDGE_ROUNDS 12u /* 2^12 x a 20 ms deadline: 82 s, past op-timeout's default */
int client_read_hedged(struct comex_client *c, unsigned node, uint32_t pfn, uint32_t count, void *dst,
		       unsigned round);
int client_write_wait_hedged(struct comex_client *c, unsigned node, struct tp_op *op);
/* client_read_hedged in round 0 for the last copy a caller has, with no
 * faster one to go to (a repair; a failover's last copy): not steered
 * around a slow memnode, still refused (-EAGAIN) from a suspect one and
 * given up once late. Steered, a repair skipped the only copy (1 read in 16
 * went through), and a failover from a stopped memnode went back to it
 * for the next round, waiting out its deadline page by page. */
int client_read_last(struct comex_client *c, unsigned node, uint32_t pfn, uint32_t count, void *dst);
/* Bit i: node i is suspect (late lately), has said nothing at all for a
 * while (stopped, hung), and another memnode serves: nothing goes there,
 * not even copies, and client_alloc refuses it. A suspect that still
 * answers, only late, has its reads steered away (client_read_hedged) and
 * takes no first copies, but copies still go there (a page keeps its
 * number of copies). Without the lock (any thread, any time). */
uint64_t client_avoided(const struct comex_client *c);
/* Where the client writes, as they happen, its waits over 0.5 s and its
 * suspects (struct stats_board in stats.h); b must outlive c. */
void client_board(struct comex_client *c, struct stats_board *b);

/* Node health, bit i for node i: evicting = asked us to take our pages
 * elsewhere (EVICT), and client_alloc() refuses it (-ENOSPC); out = not in
 * use (failed, drained, or added and not connected yet); shrinking = asked
 * us (SHRINK) to move our pages off frames shrink[i] (reported once). */
struct client_health {
	uint64_t evicting, out, shrinking;
	uint64_t suspect; /* late lately (and not out): a repair makes no new copy there */
	struct { uint32_t pfn, count; } shrink[64];
};
/* Progresses without waiting (unsolicited messages are taken in) and says
 * how every node is. */
void client_poll(struct comex_client *c, struct client_health *out);
/* Brings a node that is out of use back, one step per call that never
 * waits: -EINPROGRESS while its handshake runs, 0 once it is in use again
 * (a fresh session: nothing of the old one is valid), another error when
 * this attempt failed (call again later to retry). */
int client_rejoin(struct comex_client *c, unsigned node);
/* A memnode added while running: out of use until client_rejoin() brings it in. */
int client_add_node(struct comex_client *c, const char *addr, unsigned *node_out);
/* Our pages are off node: sends queued releases, DONE (moved pages), and
 * stops using the node (later calls on it fail with -ESHUTDOWN). */
int client_done(struct comex_client *c, unsigned node, uint64_t moved);
/* comex drain: asks node to drain; its answer: clients told, frames they hold. */
int client_drain(struct comex_client *c, unsigned node, uint32_t *clients_out, uint64_t *frames_out);

struct client_node_stats {
	uint16_t nid;                  /* the memnode's own id */
	uint64_t pool_free_frames;     /* in our local frame pool */
	uint64_t frames_held;          /* allocated to us on the memnode (its count) */
	uint64_t memnode_free_frames;  /* free in the memnode's buddy */
	uint64_t allocs, nacks, releases_sent;
	double rtt_us;                 /* EWMA of control round trips */
	uint32_t threshold;            /* T in force */
	uint32_t threshold_suggested;  /* Eq. (1): consumption rate x RTT */
};
/* Local counters plus one STATS round trip to the node. */
int client_node_stats(struct comex_client *c, unsigned node, struct client_node_stats *out);

#endif

/* client_impl: the client's state, shared by client.c (requests, replies,
 * frames, transfers) and session.c (a memnode's session from HELLO to BYE).
 * Not a public interface: every field is touched under the client lock. */
#ifndef COMEX_CLIENT_IMPL_H
#define COMEX_CLIENT_IMPL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "auth.h"
#include "frame_pool.h"
#include "options.h"
#include "pagecrypt.h"
#include "proto.h"
#include "transport.h"

struct stats_board;

#define MAX_PENDING 32 /* >= any credit grant we honour */
#define EWMA_WEIGHT 0.125 /* the client's running averages: the same smoothing as TCP's SRTT */

/* A request awaiting its reply; READ/WRITE carry the caller's transfer,
 * until a hedge gives up on it (abandoned: its answer is read and dropped). */
struct pending { uint64_t seq, t0; uint8_t type; bool abandoned; struct tp_op *op; void *dst; size_t len; };

struct node {
	char addr[256];
	struct comex_client *c;
	struct tp_ep *ep;
	int fail_err;                 /* 0 while healthy */
	uint32_t session;             /* bumped by node_reset; tags each transfer (tp_op.tag) */
	bool welcomed, goodbye, stats_pending;
	bool evicting;                /* the memnode is leaving (EVICT): nothing new goes there */
	bool shrink_due;              /* SHRINK received, not yet handed to client_poll's caller */
	struct proto_range shrink;    /* the frames it asked us to vacate */
	bool joining;                 /* out of use, a new session's HELLO is in flight */
	int join_err;                 /* what ended the join attempt */
	uint64_t join_t0;
	struct pagecrypt_meta *meta;  /* encrypt: per frame (pool_frames), what opening it needs */
	size_t meta_len;
	bool drain_answered;          /* DRAINING received (comex drain) */
	struct proto_msg drain_reply;
	uint16_t nid;
	uint32_t credits;
	uint64_t base, pool_frames;
	bool direct;                  /* frames move through pool_file (D38) */
	uint8_t rkey[PROTO_MAX_RKEY];
	uint32_t rkey_len;
	int reply_err;                /* ERROR reply to a synchronous request */
	struct pending pend[MAX_PENDING];
	unsigned npend;
	struct frame_pool fp;
	bool alloc_pending;
	int nack_order;               /* largest free order in the last NACK; -2: none */
	uint64_t room;                /* frames the memnode could still grant, as its last reply said */
	uint64_t exhausted_until;
	struct proto_range rel[PROTO_FREE_MAX_RANGES];
	uint32_t nrel;
	uint64_t rel_frames;
	/* Eq. (1) inputs */
	double rtt_us, rate_fpus;     /* EWMAs: control RTT, frames consumed per µs */
	uint64_t taken_since, rate_t0;
	struct proto_msg last_stats;
	uint64_t allocs, nacks, releases_sent;
	/* hedge.c: a memnode that answers late (hung, slowed) */
	double xfer_us, xfer_dev_us;  /* EWMAs: answer time per XFER_UNIT moved (hedge.c), its mean deviation */
	bool suspect;                 /* missed a deadline: no new frames, reads go to its peers */
	bool slow;                    /* answers far slower than a peer: reads go to its peers (hedge_slow) */
	double read_us;               /* EWMA: answer time of reads per XFER_UNIT (hedge_slow compares these) */
	unsigned slow_reads;          /* reads asked of it while slow: one in SLOW_SAMPLE goes */
	double write_us;              /* EWMA: answer time of writes per XFER_UNIT (hedge.c) */
	bool write_slow;              /* takes writes far slower than its peers: placement prefers them */
	uint64_t suspect_t0;          /* since when (ns) */
	uint64_t back_t;              /* when it was last taken back (ns) */
	unsigned flaps;               /* suspected again soon after being taken back: longer probation */
	unsigned probes_ok;           /* timely probe answers in a row while suspect */
	uint64_t probe_seq;           /* its probe (a STATS) in flight; 0: none */
	uint64_t heard_t;             /* its last answer (ns), or its welcome */
	uint64_t late, releases_dropped;
};

struct comex_client {
	pthread_mutex_t lock;
	struct tp *tp;
	uint64_t client_id, seq;
	uint64_t spin_ns, timeout_ns;
	uint64_t connect_timeout_ns;  /* option connect-timeout */
	uint64_t sim_rtt_ns, sim_jitter_ns; /* options sim-rtt, sim-jitter (a simulated distance) */
	uint64_t sim_rng;             /* xorshift state for sim-jitter */
	uint64_t sim_real_ns;         /* average real round trip of replies no simulated wait held up */
	uint64_t sim_spun_until;      /* when the last simulated wait ended (ns) */
	uint32_t threshold;
	bool auto_threshold;          /* derive T per node from Eq. (1) */
	unsigned order;
	uint32_t release_batch;
	unsigned nnodes;
	bool deferred;                /* connect-on-demand: no node joined yet */
	struct node node[OPT_MEMNODE_MAX];
	struct auth_token token;
	struct pagecrypt *crypt;      /* option encrypt: pages leave sealed */
	uint8_t *bounce;              /* encrypt: PROTO_MAX_RW_FRAMES sealed pages on their way out */
	uint64_t hedge_floor_ns;      /* option hedge-floor; 0: no hedging, nobody suspected */
	struct stats_board *board;    /* client_board(), or NULL */
	uint64_t avoided;             /* bit i: node i is shunned (hedge_shunned; atomic, lock-free reads) */
};

/* client.c, for session.c */
struct node *get_node(struct comex_client *c, unsigned node); /* NULL past the last */
void node_fail(struct node *n, int err);                      /* out of use, said once */
int send_msg(struct node *n, struct proto_msg *m);            /* -EAGAIN without credit */
int send_with_credit(struct node *n, struct proto_msg *m);    /* waits for credit first */
/* Drives progress until cond(n) (and op, if given, is done) or op-timeout
 * passes (the memnode is then failed). */
int wait_for(struct node *n, bool (*cond)(struct node *), struct tp_op *op);
/* wait_for, but -ETIME once now_ns() passes deadline (0: none), the node
 * neither failed nor closed: a hedge's point (hedge.c). */
int wait_until(struct node *n, bool (*cond)(struct node *), struct tp_op *op, uint64_t deadline);
bool has_credit(struct node *n);
bool said_goodbye(struct node *n);
int meta_alloc(struct node *n); /* encrypt: the per-frame table of a new session */
void on_recv(void *arg, struct tp_ep *ep, void *user, const void *msg, size_t len, struct tp_bulk *bulk);
void on_error(void *arg, struct tp_ep *ep, void *user, int err);
/* poolfile.c: the embedded memnode's pool file, mapped (D38) */
void pool_file_take(void); /* opens CLIENT_POOL_ENV's file, once per process */
bool pool_file_serves(const char *addr, uint64_t frames); /* the memnode at addr's pool is mapped */
void *pool_file_at(uint32_t pfn);
void pool_file_copy(enum tp_rma_kind kind, void *local, uint32_t count, uint32_t pfn); /* a transfer */
void pool_file_populate(uint32_t pfn, uint32_t count); /* frames just granted, into our page table */
/* session.c, for client.c (lock held): with connect-on-demand, the first
 * sessions, made now; 0 once any node is in use (or none was deferred). */
int connect_deferred(struct comex_client *c);
/* hedge.c, for client.c (lock held) */
void hedge_answered(struct node *n, const struct pending *p);  /* a reply to p came: timing, probation */
/* when a request of bytes sent at t0 is late, with 2^round times the
 * patience (round < HEDGE_ROUNDS); 0: never (op-timeout comes first) */
uint64_t hedge_deadline(const struct node *n, uint64_t t0, uint64_t bytes, unsigned round);
/* Gives up on op (late): the transport and our pending entry drop it, the
 * node becomes suspect (what names the request, for the log). -EOPNOTSUPP
 * (UCX): op cannot be given up, wait on. */
int hedge_abandon(struct node *n, struct tp_op *op, const char *what);
void hedge_suspect(struct node *n, const char *what, uint64_t bytes);
/* n is suspect and another memnode is healthy: steered around (no new
 * frames, reads go to its peers); the last memnodes left are waited for. */
bool hedge_avoided(const struct node *n);
/* avoided and mute (stopped, hung): not even copies go there (no ALLOC,
 * no write), as nothing would come back; published as client_avoided() */
bool hedge_shunned(const struct node *n);
bool hedge_elsewhere(const struct node *n); /* a peer serves better: healthy, or heard from while n is mute */
bool hedge_mute(const struct node *n);      /* nothing heard from it lately (HEARD_NS): stopped or hung */
bool hedge_overdue(const struct node *n);   /* its oldest unanswered request is past its deadline */
#define MUTE_CHECK_NS 20000000ull           /* how often a late write's wait asks hedge_mute */
bool hedge_slow(struct node *n);            /* reads SLOW_FACTOR x slower than its peers': steer this one */
#define SLOW_ROOM_DIVISOR 8 /* client_room shows a slow memnode's room this much smaller */
void hedge_publish(struct comex_client *c); /* c->avoided and the board, anew */
/* Membership tick: probes suspect nodes, fails one whose oldest request is
 * older than op-timeout. */
void hedge_tick(struct node *n);
/* A wait on n has lasted WAIT_NAMED_NS since t0 (named in the log once and
 * on the board), or is over (t0 0). */
void hedge_waiting(struct node *n, uint64_t t0);
#define WAIT_NAMED_NS 500000000ull /* a wait on one memnode is named after 0.5 s (issue 37: within 1 s) */

#endif

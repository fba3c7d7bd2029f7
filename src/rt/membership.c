/* The service thread wakes every TICK_NS. Faults never wait for it: a
 * reconnection is a HELLO sent and its WELCOME picked up on a later tick
 * (client_rejoin never waits), and the pager lock is taken only to move or
 * forget pages and to grow the per-node tables.
 *
 * Config re-read: SIGHUP belongs to the program (DECISIONS.md D18), so the
 * thread watches the config file instead (COMEX_CONFIG, which comex run
 * exports): when its size, mtime or inode change, its memnode list is read
 * again and every address not known yet is added. A memnode taken out of the
 * list is not dropped (drain it to take it out of use). */
#include "membership.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "client.h"
#include "log.h"
#include "migrate.h"
#include "options.h"
#include "pager_impl.h"
#include "replica.h"

#define TICK_NS 50000000ull           /* 50 ms: EVICT and failures noticed within this when idle */
#define BACKOFF_MIN_NS 100000000ull   /* first retry of a reconnection after 100 ms ... */
#define BACKOFF_MAX_NS 5000000000ull  /* ... doubling up to 5 s */

static struct {
	bool forgotten;   /* out of use and no page refers to it any more */
	bool ever_up;     /* it has been in use: one never reached has nothing to forget */
	uint64_t next;    /* no reconnection attempt before (ns) */
	uint64_t delay;   /* current back-off */
} node[OPT_MEMNODE_MAX];

static void rejoin(unsigned d, bool out, uint64_t now)
{
	int err;

	if (!out) {
		node[d].forgotten = false;
		node[d].ever_up = true;
		node[d].delay = 0;
		return;
	}
	if (!node[d].forgotten) {
		if (node[d].ever_up) /* else nothing of ours is there, and "out of use" would mislead */
			migrate_forget(d);
		node[d].forgotten = true;
	}
	if (now < node[d].next)
		return;
	err = client_rejoin(P.c.client, d);
	if (err == -EINPROGRESS)
		return;
	if (!err) {
		pager_lock("rejoining memnodes");
		P.cursor[d].left = 0;
		P.full_until = 0; /* room again, perhaps */
		pager_unlock();
		node[d].forgotten = false;
		node[d].ever_up = true;
		node[d].delay = 0;
		STAT_ADD(P.c.stats, memnodes_rejoined, 1);
		return;
	}
	node[d].delay = node[d].delay ? node[d].delay * 2 : BACKOFF_MIN_NS;
	if (node[d].delay > BACKOFF_MAX_NS)
		node[d].delay = BACKOFF_MAX_NS;
	node[d].next = now + node[d].delay;
}

/* Nodes the client knows but the pager has no tables for yet. */
static void grow_tables(void)
{
	unsigned n = client_nodes(P.c.client);

	pager_lock("rejoining memnodes");
	while (P.nnodes < n && P.nnodes < OPT_MEMNODE_MAX) {
		if (reclaim_add_node(P.nnodes)) {
			log_error("no memory for a write buffer: memnode %u stays unused", P.nnodes);
			break;
		}
		P.nnodes++;
		P.c.stats->nodes = (int)P.nnodes;
	}
	pager_unlock();
}

static void add_from_config(const char *path)
{
	static struct options o; /* large: not on this thread's stack */
	char addr[256];
	unsigned id;

	if (options_read_file(&o, path) || strcmp(o.v[OPT_MEMNODE].origin, path))
		return; /* unreadable (logged), or the file names no memnodes */
	for (unsigned i = 0; !opt_list_item(&o, OPT_MEMNODE, i, addr, sizeof(addr)); i++) {
		int err = client_add_node(P.c.client, addr, &id);

		if (err == -E2BIG)
			log_error("memnode %s from %s: comex uses at most %d memnodes; not added", addr, path,
				  OPT_MEMNODE_MAX);
		else if (err && err != -EEXIST) /* EEXIST: known already */
			log_error("memnode %s from %s: not added: %s", addr, path, strerror(-err));
		if (err)
			continue;
		snprintf(P.c.stats->node_addr[id], sizeof(P.c.stats->node_addr[id]), "%.63s", addr);
		log_info("memnode %s added (config file %s); connecting", addr, path);
	}
	grow_tables();
}

static void watch_config(void)
{
	static struct stat last;
	const char *path = getenv("COMEX_CONFIG");
	struct stat st;

	if (!path || !*path || stat(path, &st))
		return;
	if (!last.st_ino) { /* the first look: what start-up read already */
		last = st;
		return;
	}
	if (st.st_ino == last.st_ino && st.st_size == last.st_size && st.st_mtim.tv_sec == last.st_mtim.tv_sec &&
	    st.st_mtim.tv_nsec == last.st_mtim.tv_nsec)
		return;
	last = st;
	add_from_config(path);
}

void *pager_membership(void *arg)
{
	struct timespec tick = { 0, TICK_NS };

	(void)arg;
	if (migrate_init()) {
		log_error("no memory to move pages off leaving memnodes: memnode changes are ignored");
		return NULL;
	}
	watch_config();
	for (;;) {
		struct client_health h;
		uint64_t now = now_ns();

		client_poll(P.c.client, &h);
		for (unsigned d = 0; d < P.nnodes; d++) {
			if (h.evicting & (1ull << d))
				migrate_off(d);
			else if (h.shrinking & (1ull << d))
				migrate_range(d, h.shrink[d].pfn, h.shrink[d].count);
			rejoin(d, h.out & (1ull << d), now);
		}
		watch_config();
		replica_repair(h.out | h.evicting | h.suspect); /* suspect: the shunned (client_avoided) too */
		nanosleep(&tick, NULL);
	}
	return NULL;
}

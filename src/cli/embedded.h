/* embedded: the memnode comex starts on loopback for one user when no
 * memnode is given: comex run's program, or a comex swap daemon. It lives
 * in a temporary directory (token, log), dies with the process that started
 * it (the launcher), and cleans up after a launcher that was killed. */
#ifndef COMEX_EMBEDDED_H
#define COMEX_EMBEDDED_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct options;

struct embedded {
	pid_t pid;
	char dir[64];
	int pool_fd; /* the pool file (D38), or -1 */
};

/* How it is started (its other settings come from the launcher's options). */
struct embedded_cfg {
	uint64_t pool, pool_max; /* bytes: --pool, and --pool-max (0: a fixed pool) */
	bool direct;             /* the pool in a memfd the user maps (D38) */
	bool rma;                /* data-path rma, the pool key handed out */
	bool reclaim_safe;       /* --reclaim-safe: it serves a swap device */
};

/* Starts it; its address into addr, and COMEX_TOKEN_FILE set to its token
 * in our environment. e must be zeroed with pool_fd -1 first; on failure
 * embedded_stop still cleans up. */
int embedded_start(const struct options *o, const struct embedded_cfg *cfg, struct embedded *e, char *addr,
		   size_t cap);
/* Sets COMEX_POOL_FILE (client.h) for the pool file, when there is one. */
void embedded_pass_pool_file(const struct embedded *e, const char *addr);
/* Writes the user's pid where embedded_orphaned finds it. */
void embedded_note_user(const struct embedded *e, pid_t pid);
/* Stops it: failed says comex failed (its log then goes to stderr, as it
 * does when the memnode logged an error, or at log-level 3 when rc != 0);
 * handed: forked children of the user may still connect, so it may linger
 * (docs/DECISIONS.md D46). Removes the directory unless it lingers. */
void embedded_stop(struct embedded *e, bool failed, int rc, bool handed);
/* In an embedded memnode that is ending: when its launcher died without
 * cleaning up (killed), waits for the user to be gone, then removes the
 * counters in /dev/shm and the launcher's temporary directory. */
void embedded_orphaned(void);

#endif

/* memnode: the daemon that contributes a pool of memory to comex clients.
 * It allocates, populates and locks the pool, registers it with UCX, serves
 * requests through serve.c, and chooses between busy-polling and sleeping. */
#ifndef COMEX_MEMNODE_H
#define COMEX_MEMNODE_H

struct options;

/* `comex run`'s embedded memnode, asked to stay for the program's forked
 * children (SIGUSR1, SIGUSR2), creates this file in the directory named by
 * MEMNODE_DIR_ENV when it does (docs/DECISIONS.md D46). */
#define MEMNODE_LINGER_FILE "lingering"
/* where comex run keeps its embedded memnode's token, log and that file */
#define MEMNODE_DIR_ENV "COMEX_EMBEDDED_DIR"

/* Runs until SIGINT/SIGTERM; returns 0 or a negative errno (logged). */
int memnode_main(const struct options *o);

#endif

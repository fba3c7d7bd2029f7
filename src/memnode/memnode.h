/* memnode: the daemon that contributes a pool of memory to comex clients.
 * It allocates, populates and locks the pool, registers it with UCX, serves
 * requests through serve.c, and chooses between busy-polling and sleeping. */
#ifndef COMEX_MEMNODE_H
#define COMEX_MEMNODE_H

struct options;

/* Runs until SIGINT/SIGTERM; returns 0 or a negative errno (logged). */
int memnode_main(const struct options *o);

#endif

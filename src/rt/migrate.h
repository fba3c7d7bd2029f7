/* migrate: pages leave a memnode that is going away (its EVICT, docs/PROTOCOL.md
 * "Planned departure"). A service thread takes in the client's unsolicited
 * messages; when a memnode asks, every page with a frame there is moved to
 * another memnode, or mapped home when none has room, and the memnode is
 * told DONE. */
#ifndef COMEX_RT_MIGRATE_H
#define COMEX_RT_MIGRATE_H

/* The service thread's body; never returns. */
void *pager_migrator(void *arg);

#endif

/* membership: which memnodes the pager uses, kept up to date by one service
 * thread: it takes in the client's unsolicited messages (a leaving memnode's
 * EVICT: its pages are moved off), forgets failed memnodes and reconnects
 * them with back-off, and adds memnodes named anew in the config file. */
#ifndef COMEX_RT_MEMBERSHIP_H
#define COMEX_RT_MEMBERSHIP_H

/* The service thread's body; never returns. */
void *pager_membership(void *arg);

#endif

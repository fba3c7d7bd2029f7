/* paths: the directories comex makes for the files it is asked to create,
 * which a fresh machine lacks (the token's /etc/comex, swap-dir's
 * /run/comex). */
#ifndef COMEX_PATHS_H
#define COMEX_PATHS_H

/* mkdir -p the first len bytes of path (mode 0755; existing ones are left as
 * they are). 0, or -1 with errno set. */
int paths_make_dirs(const char *path, unsigned long len);

#endif

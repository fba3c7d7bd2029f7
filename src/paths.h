/* paths: the directories comex makes for the files it is asked to create,
 * which a fresh machine lacks (the token's /etc/comex, swap-dir's
 * /run/comex), and where comex's own libraries are (libcomex-rt.so,
 * libcomex-ucx.so: beside the code, or in ../lib/comex once installed). */
#ifndef COMEX_PATHS_H
#define COMEX_PATHS_H

/* The runtime comex run preloads into its program */
#define PATHS_RT_LIB "libcomex-rt.so"

/* mkdir -p the first len bytes of path (mode 0755; existing ones are left as
 * they are). 0, or -1 with errno set. */
int paths_make_dirs(const char *path, unsigned long len);
/* The directory of the file the calling code was loaded from: the comex
 * binary, a test or benchmark, or libcomex-rt.so in a program comex run
 * started. 0, or -errno. */
int paths_own_dir(char *dir, unsigned long len);
/* The path of comex's library name: dir/name, else dir/../lib/comex/name,
 * the first readable. 0, or -ENOENT. */
int paths_find_lib(const char *dir, const char *name, char *path, unsigned long len);

#endif

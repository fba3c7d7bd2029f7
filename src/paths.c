/* paths: mkdir -p, one component at a time; comex's own directory. */
#include "paths.h"

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <link.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int paths_make_dirs(const char *path, unsigned long len)
{
	char p[PATH_MAX];

	if (len >= sizeof(p)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	memcpy(p, path, len);
	p[len] = 0;
	for (char *s = p + 1; *s; s++) {
		if (*s != '/')
			continue;
		*s = 0;
		if (mkdir(p, 0755) && errno != EEXIST)
			return -1;
		*s = '/';
	}
	return len && mkdir(p, 0755) && errno != EEXIST ? -1 : 0;
}

int paths_own_dir(char *dir, unsigned long len)
{
	Dl_info info;
	struct link_map *map;
	ssize_t n;

	if (!dladdr1((void *)paths_own_dir, &info, (void **)&map, RTLD_DL_LINKMAP) || !map)
		return -ENOENT;
	if (map->l_name[0]) /* a shared object; the main program's name is empty */
		n = snprintf(dir, len, "%s", map->l_name);
	else if ((n = readlink("/proc/self/exe", dir, len - 1)) >= 0)
		dir[n] = 0;
	if (n < 0 || (size_t)n >= len || !strrchr(dir, '/'))
		return -ENAMETOOLONG;
	*strrchr(dir, '/') = 0;
	return 0;
}

int paths_find_lib(const char *dir, const char *name, char *path, unsigned long len)
{
	static const char *const where[] = { "%s/%s", "%s/../lib/comex/%s" };

	for (size_t i = 0; i < sizeof(where) / sizeof(where[0]); i++) {
		int n = snprintf(path, len, where[i], dir, name);

		if (n > 0 && (size_t)n < len && !access(path, R_OK))
			return 0;
	}
	return -ENOENT;
}

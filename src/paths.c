/* paths: mkdir -p, one component at a time. */
#include "paths.h"

#include <errno.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>

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

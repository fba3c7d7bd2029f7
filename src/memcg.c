/* memcg: /proc/self/cgroup names our cgroup; its directory and each
 * ancestor's are tried, and the one with the smallest limit binds. The one
 * reader of the memory cgroup (the runtime, the launcher, the memnode). */
#include "memcg.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"

/* Limits at or above this are "none" (v1 reports PAGE_COUNTER_MAX pages). */
#define NO_LIMIT (1ull << 60)

static char dir[PATH_MAX + 32]; /* the binding cgroup's directory */
static bool v2;
/* The binding cgroup's files, open from memcg_open on and read with pread
 * at offset 0 (a cgroup file is made anew then): an open while the program
 * runs would take the lowest free descriptor, which the program may be
 * about to get (DECISIONS.md D47). -1: not open (v1 has no "high"). */
static struct {
	int limit, high, usage, stat;
} files = { -1, -1, -1, -1 };

static int open_in(const char *d, const char *name)
{
	char path[PATH_MAX + 64];

	snprintf(path, sizeof(path), "%s/%s", d, name);
	return open(path, O_RDONLY | O_CLOEXEC);
}

/* Reads open file fd from its start into buf (NUL-terminated); its length */
static int read_fd(int fd, char *buf, size_t cap, size_t *len_out)
{
	size_t len = 0;
	ssize_t r = 0;

	if (fd < 0)
		return -EBADF;
	while (len + 1 < cap && (r = pread(fd, buf + len, cap - 1 - len, (off_t)len)) > 0)
		len += (size_t)r;
	if (r < 0)
		return -errno;
	buf[len] = 0;
	*len_out = len;
	return 0;
}

/* Reads file name of directory d into buf (NUL-terminated); its length. */
static int read_file(const char *d, const char *name, char *buf, size_t cap, size_t *len_out)
{
	int fd = open_in(d, name), err;

	if (fd < 0)
		return -errno;
	err = read_fd(fd, buf, cap, len_out);
	close(fd);
	return err;
}

/* Open file fd holding one number, or "max" (v2: no limit) */
static int read_num_fd(int fd, uint64_t *out)
{
	char buf[64];
	size_t len;
	int err = read_fd(fd, buf, sizeof(buf), &len);

	if (err)
		return err;
	*out = !strncmp(buf, "max", 3) ? UINT64_MAX : strtoull(buf, NULL, 10);
	return 0;
}

static const char *limit_name(void) { return v2 ? "memory.max" : "memory.limit_in_bytes"; }

/* The limit in open files limit and high (v2's memory.high throttles the
 * program's allocations above it: as good as a limit; -1 in v1) */
static uint64_t limit_in(int limit, int high)
{
	uint64_t lim = UINT64_MAX, hi = UINT64_MAX;

	if (read_num_fd(limit, &lim))
		return UINT64_MAX;
	read_num_fd(high, &hi);
	return hi < lim ? hi : lim;
}

static uint64_t limit_of(const char *d)
{
	int limit = open_in(d, limit_name()), high = v2 ? open_in(d, "memory.high") : -1;
	uint64_t lim = limit_in(limit, high);

	if (limit >= 0)
		close(limit);
	if (high >= 0)
		close(high);
	return lim;
}

static void close_files(void)
{
	int *fd[] = { &files.limit, &files.high, &files.usage, &files.stat };

	for (size_t i = 0; i < sizeof(fd) / sizeof(fd[0]); i++)
		if (*fd[i] >= 0) {
			close(*fd[i]);
			*fd[i] = -1;
		}
}

static int open_files(const char *d)
{
	close_files();
	files.limit = open_in(d, limit_name());
	files.high = v2 ? open_in(d, "memory.high") : -1;
	files.usage = open_in(d, v2 ? "memory.current" : "memory.usage_in_bytes");
	files.stat = open_in(d, "memory.stat");
	if (files.limit < 0 || files.usage < 0 || files.stat < 0) {
		int err = -errno;

		close_files();
		return err;
	}
	return 0;
}

/* The memory line of /proc/self/cgroup: v1's controller list holding
 * "memory", else v2's "0::". The path (after the second ':') into rel. */
static int own_cgroup(char *rel, size_t cap)
{
	char buf[4096], *line, *save = NULL;
	size_t len;
	int err = read_file("/proc/self", "cgroup", buf, sizeof(buf), &len);
	bool found = false;

	if (err)
		return err;
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *ctl = strchr(line, ':'), *path = ctl ? strchr(ctl + 1, ':') : NULL;

		if (!path)
			continue;
		*path = 0;
		if (!strcmp(ctl + 1, "memory") || strstr(ctl + 1, ",memory") || !strncmp(ctl + 1, "memory,", 7)) {
			v2 = false;
			snprintf(rel, cap, "%s", path + 1);
			return 0;
		}
		if (!strcmp(line, "0") && !ctl[1]) {
			v2 = true;
			snprintf(rel, cap, "%s", path + 1);
			found = true; /* a v1 memory line later wins: hybrid hierarchies */
		}
	}
	return found ? 0 : -ENOENT;
}

/* The binding cgroup's directory (into d) and its limit; -ENOENT when no
 * cgroup on the way up has one. Opens nothing that stays open. */
static int find_binding(char *d, size_t cap, uint64_t *limit_out)
{
	char rel[PATH_MAX], at[PATH_MAX + 32];
	uint64_t best = NO_LIMIT;
	int err = own_cgroup(rel, sizeof(rel));

	if (err)
		return err;
	for (;;) {
		uint64_t lim;

		snprintf(at, sizeof(at), "%s%s", v2 ? "/sys/fs/cgroup" : "/sys/fs/cgroup/memory", rel);
		lim = limit_of(at);
		if (lim < best) {
			best = lim;
			snprintf(d, cap, "%s", at);
		}
		char *slash = strrchr(rel, '/');
		if (!slash || !rel[1])
			break;
		slash[slash == rel] = 0; /* "/a" becomes "/", "/a/b" becomes "/a" */
	}
	if (best >= NO_LIMIT)
		return -ENOENT;
	*limit_out = best;
	return 0;
}

int memcg_open(uint64_t *limit_out)
{
	uint64_t lim;
	int err = find_binding(dir, sizeof(dir), &lim);

	if (err || (err = open_files(dir)))
		return err;
	*limit_out = lim;
	return 0;
}

void memcg_close(void)
{
	close_files();
}

int memcg_usage(uint64_t *limit_out, uint64_t *usage_out)
{
	char d[PATH_MAX + 32], buf[64];
	uint64_t lim;
	size_t len;
	int err = find_binding(d, sizeof(d), &lim);

	if (err || (usage_out && (err = read_file(d, v2 ? "memory.current" : "memory.usage_in_bytes", buf,
						  sizeof(buf), &len))))
		return err;
	*limit_out = lim;
	if (usage_out)
		*usage_out = strtoull(buf, NULL, 10);
	return 0;
}

/* The value of field name in a memory.stat text, 0 when absent. */
static uint64_t stat_field(const char *text, const char *name)
{
	size_t n = strlen(name);

	for (const char *p = text; (p = strstr(p, name)); p += n)
		if ((p == text || p[-1] == '\n') && p[n] == ' ')
			return strtoull(p + n + 1, NULL, 10);
	return 0;
}

/* While no limit binds, how often the cgroups are looked at again: each
 * look opens files, and the room is asked for every 20 ms */
#define REBIND_NS 1000000000ull

int memcg_room(int64_t *room_out)
{
	static uint64_t rebind_at; /* racing callers (sampler, home) cost one look more */
	char text[8192];
	uint64_t lim = limit_in(files.limit, files.high), use, file, pinned;
	size_t len;
	int err;

	/* gone or lifted: the program may have been moved to another cgroup */
	if (lim >= NO_LIMIT) {
		uint64_t now = now_ns();

		if (now < rebind_at)
			return -ENOENT;
		rebind_at = now + REBIND_NS;
		if (memcg_open(&lim))
			return -ENOENT;
	}
	if ((err = read_num_fd(files.usage, &use)) || (err = read_fd(files.stat, text, sizeof(text), &len)))
		return err;
	if (v2) {
		file = stat_field(text, "active_file") + stat_field(text, "inactive_file");
		pinned = stat_field(text, "file_mapped") + stat_field(text, "file_dirty") +
			 stat_field(text, "file_writeback");
	} else { /* total_: the cgroup and its descendants, as usage_in_bytes counts */
		file = stat_field(text, "total_active_file") + stat_field(text, "total_inactive_file");
		pinned = stat_field(text, "total_mapped_file") + stat_field(text, "total_dirty") +
			 stat_field(text, "total_writeback");
	}
	*room_out = (int64_t)lim - (int64_t)use + (file > pinned ? (int64_t)(file - pinned) : 0);
	return 0;
}

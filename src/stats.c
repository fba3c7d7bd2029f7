/* stats: shared file, JSON (json.c) into a caller buffer (no stdio streams). */
#include "stats.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "json.h"
#include "log.h"

static void shm_path(int pid, char *buf, size_t cap)
{
	snprintf(buf, cap, "/dev/shm/comex-stats.%d", pid);
}

int stats_create(struct stats **out)
{
	char path[64];
	struct stats *s = NULL;
	int fd;

	shm_path(getpid(), path, sizeof(path));
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd >= 0 && !ftruncate(fd, sizeof(*s))) {
		void *p = mmap(NULL, sizeof(*s), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);

		s = p == MAP_FAILED ? NULL : p;
	}
	if (fd >= 0)
		close(fd);
	if (!s) {
		log_warn("stats: cannot share counters through %s (%m); 'comex stats' will not see this process", path);
		/* private counters; by system call, not through the runtime's mmap */
		long p = syscall(SYS_mmap, NULL, sizeof(*s), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (p == -1)
			return -ENOMEM;
		s = (struct stats *)p;
	}
	memset(s, 0, sizeof(*s));
	s->pid = getpid();
	__atomic_store_n(&s->magic, STATS_MAGIC, __ATOMIC_RELEASE);
	*out = s;
	return 0;
}

/* Maps process pid's counters, read-only or read-write; -ESRCH if it has
 * none (no file, a shorter one from another comex version or still being
 * sized, which would fault past its end, or another layout). */
static int map_counters(int pid, bool writable, struct stats **out)
{
	char path[64];
	struct stat st;
	struct stats *s = MAP_FAILED;
	int fd;

	shm_path(pid, path, sizeof(path));
	fd = open(path, (writable ? O_RDWR : O_RDONLY) | O_CLOEXEC);
	if (fd < 0)
		return -ESRCH;
	if (!fstat(fd, &st) && st.st_size >= (off_t)sizeof(*s))
		s = mmap(NULL, sizeof(*s), writable ? PROT_READ | PROT_WRITE : PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	if (s == MAP_FAILED)
		return -ESRCH;
	if (__atomic_load_n(&s->magic, __ATOMIC_ACQUIRE) != STATS_MAGIC) {
		munmap(s, sizeof(*s));
		return -ESRCH;
	}
	*out = s;
	return 0;
}

int stats_open(int pid, const struct stats **out)
{
	return map_counters(pid, false, (struct stats **)out);
}

int stats_attach(int pid, struct stats **out)
{
	return map_counters(pid, true, out);
}

int stats_note_unmanaged(int pid)
{
	struct stats *s;
	int err = stats_attach(pid, &s);

	if (err)
		return err;
	STAT_ADD(s, children_unmanaged, 1);
	stats_close(s);
	return 0;
}

void stats_close(const struct stats *s)
{
	munmap((void *)s, sizeof(*s));
}

void stats_unlink(int pid)
{
	char path[64];

	shm_path(pid, path, sizeof(path));
	unlink(path);
}

void stats_sweep(void)
{
	DIR *d = opendir("/dev/shm");
	struct dirent *de;

	if (!d)
		return;
	while ((de = readdir(d))) {
		char *end;
		long pid;

		if (strncmp(de->d_name, "comex-stats.", 12))
			continue;
		pid = strtol(de->d_name + 12, &end, 10);
		if (pid > 0 && !*end && kill((pid_t)pid, 0) && errno == ESRCH)
			stats_unlink((int)pid);
	}
	closedir(d);
}

void stats_prefetch_shares(const struct stats *s, double *accuracy, double *coverage)
{
	uint64_t used = __atomic_load_n(&s->prefetch_probes_used, __ATOMIC_RELAXED);
	uint64_t wasted = __atomic_load_n(&s->prefetch_probes_wasted, __ATOMIC_RELAXED);
	uint64_t hits = __atomic_load_n(&s->prefetch_hits, __ATOMIC_RELAXED);
	uint64_t remote = __atomic_load_n(&s->faults_remote, __ATOMIC_RELAXED);

	*accuracy = used + wasted ? (double)used / (double)(used + wasted) : -1;
	*coverage = hits + remote ? (double)hits / (double)(hits + remote) : -1;
}

int stats_json(const struct stats *s, char *buf, size_t cap)
{
	struct json j;
	double acc, cov;

	json_init(&j, buf, cap);
	json_open(&j, NULL, '{', true);
	json_str(&j, "schema", "comex-stats/1");
	json_int(&j, "pid", s->pid);
#define X(name) json_uint(&j, #name, __atomic_load_n(&s->name, __ATOMIC_RELAXED));
	STATS_COUNTERS(X)
#undef X
	stats_prefetch_shares(s, &acc, &cov);
	json_num(&j, "prefetch_accuracy", "%.4f", acc < 0 ? NAN : acc);
	json_num(&j, "prefetch_coverage", "%.4f", cov < 0 ? NAN : cov);
	json_uint(&j, "memnodes_suspected", s->board.memnodes_suspected);
	json_open(&j, "memnodes", '[', true);
	for (int i = 0; i < s->nodes && i < OPT_MEMNODE_MAX; i++) {
		json_open(&j, NULL, '{', false);
		json_str(&j, "addr", s->node_addr[i]);
		json_uint(&j, "frames_held", s->frames_held[i]);
		json_bool(&j, "suspect", s->board.suspect_nodes >> i & 1);
		json_bool(&j, "waited_on", s->board.waiting_node == (uint64_t)i + 1);
		json_close(&j);
	}
	json_close(&j);
	json_open(&j, "hist_remote_ns", '[', false);
	for (int i = 0; i < STATS_HIST_BUCKETS; i++)
		json_uint(&j, NULL, __atomic_load_n(&s->hist_remote_ns[i], __ATOMIC_RELAXED));
	json_close(&j);
	json_close(&j);
	return json_end(&j);
}

int stats_write_json(const struct stats *s, const char *path)
{
	char buf[STATS_JSON_MAX], tmp[600];
	int len = stats_json(s, buf, sizeof(buf)), fd, err = 0;

	if (len < 0)
		return len;
	snprintf(tmp, sizeof(tmp), "%s.%d.tmp", path, getpid());
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		log_error("stats: cannot create %s: %m", tmp);
		return -errno;
	}
	if (write(fd, buf, (size_t)len) != len || close(fd)) {
		log_error("stats: writing %s: %m", tmp);
		err = -EIO;
	} else if (rename(tmp, path)) {
		log_error("stats: renaming %s to %s: %m", tmp, path);
		err = -errno;
	}
	if (err)
		unlink(tmp);
	return err;
}

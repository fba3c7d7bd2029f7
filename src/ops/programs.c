/* A snapshot copies each segment with relaxed loads, so the caller can diff
 * two of them without the program changing the numbers underneath. */
#include "programs.h"

#include "clock.h"
#include "paths.h"

#include <dirent.h>
#include <stdbool.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <fcntl.h>

#define SHM_PREFIX "comex-stats."
#define SWAP_PREFIX "comex-swap."

static bool alive(int pid)
{
	return kill(pid, 0) == 0 || errno == EPERM;
}

static void read_comm(int pid, char *buf, size_t cap)
{
	char path[64];
	ssize_t n = -1;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/comm", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		n = read(fd, buf, cap - 1);
		close(fd);
	}
	buf[n > 0 ? n : 0] = 0;
	buf[strcspn(buf, "\n")] = 0;
	if (!*buf)
		snprintf(buf, cap, "?");
}

/* A copy of a live segment of bytes (whole words), word by word */
static void copy_words(void *dst, const void *src, size_t bytes)
{
	const uint64_t *from = src;
	uint64_t *to = dst;

	for (size_t i = 0; i < bytes / 8; i++)
		to[i] = __atomic_load_n(&from[i], __ATOMIC_RELAXED);
}

/* Adds pid's entry to *arr if it is alive and has counters. */
static int add(int pid, struct program **arr, size_t *n, size_t *cap)
{
	const struct stats *s;

	if (!alive(pid) || stats_open(pid, &s))
		return -ESRCH;
	if (*n == *cap) {
		size_t c = *cap ? 2 * *cap : 8;
		struct program *p = realloc(*arr, c * sizeof(*p));

		if (!p) {
			stats_close(s);
			return -ENOMEM;
		}
		*arr = p, *cap = c;
	}
	(*arr)[*n].pid = pid;
	read_comm(pid, (*arr)[*n].comm, sizeof((*arr)[*n].comm));
	_Static_assert(sizeof(struct stats) % 8 == 0, "stats is whole words");
	copy_words(&(*arr)[*n].s, s, sizeof(*s));
	stats_close(s);
	(*n)++;
	return 0;
}

static int by_pid(const void *a, const void *b)
{
	return ((const struct program *)a)->pid - ((const struct program *)b)->pid;
}

int programs_snapshot(int pid, struct program **out, size_t *n_out)
{
	struct program *arr = NULL;
	size_t n = 0, cap = 0;
	struct dirent *d;
	DIR *dir;
	int err = 0;

	if (pid > 0) {
		err = add(pid, &arr, &n, &cap);
		goto done;
	}
	dir = opendir("/dev/shm");
	if (!dir)
		goto done; /* no /dev/shm: no program can publish counters */
	while ((d = readdir(dir)) && err != -ENOMEM)
		if (!strncmp(d->d_name, SHM_PREFIX, strlen(SHM_PREFIX)))
			err = add(atoi(d->d_name + strlen(SHM_PREFIX)), &arr, &n, &cap);
	closedir(dir);
	if (err != -ENOMEM)
		err = 0;
	if (n) /* qsort's array must not be NULL, even empty */
		qsort(arr, n, sizeof(*arr), by_pid);
done:
	if (err) {
		free(arr);
		return err;
	}
	*out = arr;
	*n_out = n;
	return 0;
}

const struct program *programs_find(const struct program *p, size_t n, int pid)
{
	for (size_t i = 0; i < n; i++)
		if (p[i].pid == pid)
			return &p[i];
	return NULL;
}

/* Whether pid was started with the runtime preloaded: its LD_PRELOAD, as
 * exec'd (a program may change its environment later, rarely this). The
 * environment is read whole: comex run's LD_PRELOAD tends to come last. */
#define ENV_MAX (2u << 20) /* an environment and arguments together: ARG_MAX's usual 2 MiB */
static bool preloaded(int pid)
{
	static const char key[] = "LD_PRELOAD=";
	static char *buf;
	char path[64];
	size_t n = 0;
	ssize_t r = 1;
	int fd;

	if (!buf && !(buf = malloc(ENV_MAX + 1)))
		return false;
	snprintf(path, sizeof(path), "/proc/%d/environ", pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return false;
	while (n < ENV_MAX && (r = read(fd, buf + n, ENV_MAX - n)) > 0)
		n += (size_t)r;
	close(fd);
	buf[n] = 0;
	for (size_t i = 0; i < n; i += strlen(buf + i) + 1)
		if (!strncmp(buf + i, key, sizeof(key) - 1))
			return strstr(buf + i, PATHS_RT_LIB) != NULL;
	return false;
}

/* Adds pid to out[*n] when it is preloaded and publishes no counters */
static void add_waiting(int pid, struct waiting *out, size_t *n)
{
	const struct stats *s;

	if (pid == getpid() || !preloaded(pid))
		return;
	if (!stats_open(pid, &s)) { /* it publishes counters: a program of programs_snapshot */
		stats_close(s);
		return;
	}
	out[*n].pid = pid;
	read_comm(pid, out[*n].comm, sizeof(out[*n].comm));
	(*n)++;
}

size_t programs_waiting(int pid, struct waiting *out, size_t cap)
{
	size_t found = 0;
	struct dirent *d;
	DIR *dir;

	if (pid > 0) {
		if (cap)
			add_waiting(pid, out, &found);
		return found;
	}
	if (!(dir = opendir("/proc")))
		return 0;
	while (found < cap && (d = readdir(dir))) /* /proc lists processes by increasing pid */
		if (d->d_name[0] >= '1' && d->d_name[0] <= '9')
			add_waiting(atoi(d->d_name), out, &found);
	closedir(dir);
	return found;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(((const struct swapdev *)a)->name, ((const struct swapdev *)b)->name);
}

int swapdevs_snapshot(struct swapdev **out, size_t *n_out)
{
	struct swapdev *arr = NULL;
	size_t n = 0, cap = 0;
	DIR *dir = opendir("/dev/shm");
	struct dirent *d;

	while (dir && (d = readdir(dir))) {
		const char *name = d->d_name + strlen(SWAP_PREFIX);
		const struct swapd_stats *s;

		if (strncmp(d->d_name, SWAP_PREFIX, strlen(SWAP_PREFIX)) || strlen(name) >= sizeof(arr->name) ||
		    swapd_stats_open(name, &s))
			continue;
		if (n == cap) {
			size_t c = cap ? 2 * cap : 4;
			struct swapdev *p = realloc(arr, c * sizeof(*p));

			if (!p) {
				swapd_stats_close(s);
				closedir(dir);
				free(arr);
				return -ENOMEM;
			}
			arr = p, cap = c;
		}
		_Static_assert(sizeof(struct swapd_stats) % 8 == 0, "swapd_stats is whole words");
		copy_words(&arr[n].s, s, sizeof(*s));
		swapd_stats_close(s);
		if (!alive(arr[n].s.pid))
			continue; /* its daemon was killed */
		snprintf(arr[n].name, sizeof(arr[n].name), "%s", name);
		n++;
	}
	if (dir)
		closedir(dir);
	if (n)
		qsort(arr, n, sizeof(*arr), by_name);
	*out = arr;
	*n_out = n;
	return 0;
}

const struct swapdev *swapdevs_find(const struct swapdev *d, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(d[i].name, name))
			return &d[i];
	return NULL;
}

double programs_quantile(const uint64_t *hist, double q)
{
	uint64_t total = 0, below = 0;
	double rank;

	for (unsigned i = 0; i < STATS_HIST_BUCKETS; i++)
		total += hist[i];
	if (!total)
		return -1;
	rank = q * (double)total;
	for (unsigned i = 0; i < STATS_HIST_BUCKETS; i++) {
		double lo = i ? (double)(1ull << i) : 0, hi = (double)(1ull << (i + 1));

		if (hist[i] && below + hist[i] >= rank)
			return lo + (hi - lo) * (rank - (double)below) / (double)hist[i];
		below += hist[i];
	}
	return (double)(1ull << STATS_HIST_BUCKETS);
}

uint64_t programs_waiting_ns(const struct stats *s, int node)
{
	uint64_t since = s->board.waiting_since_ns, now = now_ns();

	return s->board.waiting_node == (uint64_t)node + 1 && now > since ? now - since : 0;
}

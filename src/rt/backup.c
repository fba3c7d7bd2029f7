/* backup: one file, page idx at offset idx * 4 KiB, written by one thread
 * in the order buffers were submitted, so a later eviction of a page
 * always lands after an earlier one. The file is unlinked at once (O_TMPFILE
 * where the file system has it): nothing is left behind when the program
 * ends, however it ends. Nothing records which offsets are valid: a page is
 * taken from the file only if its content matches the hash kept for it,
 * so a page moved by mremap, discarded, or whose write failed is simply
 * not found there (it is then as lost as without a backup). */
#include "backup.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "log.h"
#include "pager_impl.h"
#include "rtmem.h"
#include "wbuf.h"

#define JOBS (2 * OPT_MEMNODE_MAX) /* a job per write buffer: at most two per memnode */

struct job {
	const struct wbuf *wb;   /* NULL: free */
	const char *data;
	uint64_t *idx;           /* the pages of data's slots; UINT64_MAX: cancelled, skipped */
	uint32_t count;
	uint64_t seq;            /* submission order */
	bool done;
};

static int fd = -1;
static struct job jobs[JOBS];
static uint64_t next_seq;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t work = PTHREAD_COND_INITIALIZER, finished = PTHREAD_COND_INITIALIZER;
static bool write_warned;

bool backup_on(void) { return fd >= 0; }

static int open_file(const char *dir)
{
	char path[4096];
	int f = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);

	if (f >= 0 || (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL))
		return f;
	/* a file system without O_TMPFILE: a named file, unlinked at once */
	snprintf(path, sizeof(path), "%s/comex-backup.%d.XXXXXX", dir, (int)getpid());
	f = mkostemp(path, O_CLOEXEC);
	if (f >= 0)
		unlink(path);
	return f;
}

int backup_init(const char *dir)
{
	if (!dir || !*dir)
		return 0;
	fd = open_file(dir);
	if (fd < 0) {
		int err = -errno;

		log_error("option backup-dir: cannot create the backup file in %s: %m", dir);
		return err;
	}
	for (unsigned j = 0; j < JOBS; j++)
		if (!(jobs[j].idx = rt_alloc((size_t)pager_opt(OPT_WBUF_PAGES) * sizeof(uint64_t))))
			return -ENOMEM;
	log_info("backup-dir %s: every evicted page is also written to a file there (deleted, sparse)", dir);
	return 0;
}

void backup_submit(struct wbuf *wb)
{
	uint32_t pfn, count;
	const void *data;
	struct job *j = NULL;

	if (fd < 0)
		return;
	wbuf_run(wb, &pfn, &count, &data);
	pthread_mutex_lock(&lock);
	for (unsigned k = 0; k < JOBS && !j; k++)
		if (!jobs[k].wb)
			j = &jobs[k];
	if (!j) /* every buffer is waited for before its reuse, so never */
		pager_die("internal error: no free backup job", (uintptr_t)data, -ENOSPC);
	for (uint32_t i = 0; i < count; i++) {
		bool cancelled;

		wbuf_entry(wb, i, &j->idx[i], &cancelled);
		if (cancelled)
			j->idx[i] = UINT64_MAX;
	}
	j->wb = wb;
	j->data = data;
	j->count = count;
	j->seq = next_seq++;
	j->done = false;
	pthread_cond_signal(&work);
	pthread_mutex_unlock(&lock);
}

void backup_wait(struct wbuf *wb)
{
	if (fd < 0 || !wb)
		return;
	pthread_mutex_lock(&lock);
	for (unsigned k = 0; k < JOBS; k++) {
		if (jobs[k].wb != wb)
			continue;
		while (!jobs[k].done)
			pthread_cond_wait(&finished, &lock);
		jobs[k].wb = NULL;
	}
	pthread_mutex_unlock(&lock);
}

/* The oldest job not done yet, or NULL. */
static struct job *oldest(void)
{
	struct job *o = NULL;

	for (unsigned k = 0; k < JOBS; k++)
		if (jobs[k].wb && !jobs[k].done && (!o || jobs[k].seq < o->seq))
			o = &jobs[k];
	return o;
}

/* Slots [i, i + n) of j, for consecutive pages, in one write. */
static void write_run(const struct job *j, uint32_t i, uint32_t n)
{
	size_t len = (size_t)n << PAGE_SHIFT;
	ssize_t w = pwrite(fd, j->data + ((size_t)i << PAGE_SHIFT), len, (off_t)(j->idx[i] << PAGE_SHIFT));

	if (w == (ssize_t)len) {
		STAT_ADD(P.c.stats, pages_backup_written, n);
		return;
	}
	if (!write_warned) { /* those pages are not in the file: their hash will say so */
		if (w >= 0)
			errno = ENOSPC;
		log_error("backup-dir: writing %u pages to the backup file failed: %m; pages whose memnode fails "
			  "may now be lost", n);
	}
	write_warned = true;
}

static void write_job(const struct job *j)
{
	for (uint32_t i = 0; i < j->count;) {
		uint32_t n = 1;

		if (j->idx[i] == UINT64_MAX) {
			i++;
			continue;
		}
		while (i + n < j->count && j->idx[i + n] == j->idx[i] + n)
			n++;
		write_run(j, i, n);
		i += n;
	}
}

void *backup_writer(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&lock);
	for (;;) {
		struct job *j = oldest();

		if (!j) {
			pthread_cond_wait(&work, &lock);
			continue;
		}
		pthread_mutex_unlock(&lock); /* the job's data and slots stay until it is done */
		write_job(j);
		pthread_mutex_lock(&lock);
		j->done = true;
		pthread_cond_broadcast(&finished);
	}
	return NULL;
}

bool backup_read(uint64_t idx, char *dst)
{
	if (fd < 0 || pread(fd, dst, PAGE_SIZE, (off_t)(idx << PAGE_SHIFT)) != (ssize_t)PAGE_SIZE ||
	    !pagesum_eq(pagesum_of(dst), sum_at(idx)))
		return false;
	STAT_ADD(P.c.stats, pages_backup_read, 1);
	return true;
}

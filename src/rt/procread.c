/* procread: one thread reads /proc for the others, in a descriptor table of
 * its own. The watchdog looks at every thread each second and the home
 * thread at TracerPid every 100 ms; each look opened a file for a few
 * microseconds in the program's table, where a program listing
 * /proc/self/fd twice (CPython's test_subprocess) saw it come and go, and
 * where, past the descriptor gate's wait, it could take the number a
 * program's open expected. A table of its own (close_range's
 * CLOSE_RANGE_UNSHARE: unshared and emptied, so it holds none of the
 * program's files and closes nothing of theirs) makes both impossible.
 *
 * The reading thread answers one request at a time through one slot; the
 * callers (watchdog, home, a forked child's owner thread) are runtime
 * threads, never the fault path. Until the thread serves in this process
 * (before start; in a forked child, for the owner thread's first look) a
 * caller reads itself, through the interposed open and its gate. */
#include "procread.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "log.h"
#include "os.h"
#include "procfile.h"

#ifndef CLOSE_RANGE_UNSHARE
#define CLOSE_RANGE_UNSHARE (1u << 1)
#endif

#define PATH_MAX_LEN 64 /* "/proc/self/task/<tid>/status" */
#define DATA_MAX 4096   /* /proc/self/status is about 1.5 KiB */

enum { IDLE, CLAIMED, ASKED, DONE }; /* slot.state, the futex word */
enum { READ_FILE, READ_TASKS };

/* The slot: state moves IDLE -> CLAIMED (a caller, CAS) -> ASKED (the
 * caller, release: the request is written) -> DONE (the reader, release:
 * the answer is written) -> IDLE (the caller, once it has copied). */
static struct {
	unsigned state;
	int pid; /* the process whose reading thread serves; acquire/release */
	int kind, result;
	unsigned from;
	bool all;
	char path[PATH_MAX_LEN];
	union { char text[DATA_MAX]; int tids[DATA_MAX / sizeof(int)]; } data;
} slot;

/* Open read-only: in the reader's own table by raw system call, else
 * through the interposed open, which moves the descriptor out of the
 * program's way (rtfd.h) */
static int open_ro(const char *path, int flags, bool own)
{
	int fd;

	if (own)
		return (int)raw6(SYS_openat, AT_FDCWD, (long)path, O_RDONLY | O_CLOEXEC | flags, 0, 0, 0);
	fd = open(path, O_RDONLY | O_CLOEXEC | flags);
	return fd < 0 ? -errno : fd;
}

static void close_fd(int fd, bool own)
{
	if (own)
		raw6(SYS_close, fd, 0, 0, 0, 0, 0);
	else
		close(fd);
}

static int read_file(const char *path, char *buf, size_t cap, bool own)
{
	int fd, n;

	if (!own)
		return procfile_read(path, buf, cap);
	if ((fd = open_ro(path, 0, true)) < 0)
		return fd;
	n = procfile_pread(fd, buf, cap);
	close_fd(fd, true);
	return n;
}

/* Thread ids from one getdents64 buffer into tids[*n..cap), skipping the
 * first *skip; false when full */
static bool add_tids(const char *buf, long len, unsigned *skip, int *tids, unsigned cap, unsigned *n)
{
	for (long off = 0; off < len;) {
		const char *nm = buf + off + 19; /* d_ino 8, d_off 8, d_reclen 2, d_type 1 */
		unsigned short reclen;
		int tid = 0;

		memcpy(&reclen, buf + off + 16, sizeof(reclen));
		off += reclen;
		for (; *nm >= '0' && *nm <= '9'; nm++)
			tid = tid * 10 + (*nm - '0');
		if (!tid || *nm)
			continue; /* "." and ".." */
		if (*skip) {
			--*skip;
			continue;
		}
		if (*n == cap)
			return false;
		tids[(*n)++] = tid;
	}
	return true;
}

static int read_tasks(unsigned from, unsigned cap, bool own, int *tids, bool *all)
{
	char buf[2048];
	int dfd = open_ro("/proc/self/task", O_DIRECTORY, own);
	unsigned n = 0;
	long len;
	bool room = true;

	if (dfd < 0)
		return dfd;
	while (room && (len = os_getdents64(dfd, buf, sizeof(buf))) > 0)
		room = add_tids(buf, len, &from, tids, cap, &n);
	close_fd(dfd, own);
	if (room && len < 0)
		return -errno;
	*all = room;
	return (int)n;
}

bool procread_serving(void)
{
	return __atomic_load_n(&slot.pid, __ATOMIC_ACQUIRE) == getpid();
}

/* Puts the request in the slot and waits for the answer; the caller copies
 * it out, then calls release() */
static void ask(int kind, const char *path, unsigned from)
{
	unsigned s = IDLE;

	while (!__atomic_compare_exchange_n(&slot.state, &s, CLAIMED, false, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) {
		os_futex_wait(&slot.state, s, NULL);
		s = IDLE;
	}
	slot.kind = kind;
	slot.from = from;
	if (path)
		strcpy(slot.path, path);
	__atomic_store_n(&slot.state, ASKED, __ATOMIC_RELEASE);
	os_futex_wake(&slot.state, INT_MAX);
	while ((s = __atomic_load_n(&slot.state, __ATOMIC_ACQUIRE)) != DONE)
		os_futex_wait(&slot.state, s, NULL);
}

static void release(void)
{
	__atomic_store_n(&slot.state, IDLE, __ATOMIC_RELEASE);
	os_futex_wake(&slot.state, INT_MAX);
}

int procread_file(const char *path, char *buf, size_t cap)
{
	int n;

	if (strlen(path) >= PATH_MAX_LEN || !procread_serving())
		return read_file(path, buf, cap, false);
	ask(READ_FILE, path, 0);
	if ((n = slot.result) >= 0) {
		n = (size_t)n < cap ? n : (int)cap - 1;
		memcpy(buf, slot.data.text, (size_t)n);
		buf[n] = 0;
	}
	release();
	return n;
}

int procread_tasks(unsigned from, unsigned cap, int *tids, bool *all)
{
	int n;

	if (!procread_serving())
		return read_tasks(from, cap, false, tids, all);
	ask(READ_TASKS, NULL, from);
	if ((n = slot.result) >= 0) {
		bool more = (unsigned)n > cap || !slot.all;

		n = (unsigned)n < cap ? n : (int)cap;
		memcpy(tids, slot.data.tids, (size_t)n * sizeof(int));
		*all = !more;
	}
	release();
	return n;
}

/* The process whose reading thread runs (set before it serves): a second
 * one made meanwhile (a forked child's owner thread made one, its take-over
 * another) ends at once */
static int reader;

void procread_fork_child(void)
{
	__atomic_store_n(&reader, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&slot.pid, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&slot.state, IDLE, __ATOMIC_RELAXED);
}

void procread_run(void)
{
	int pid = getpid(), seen = __atomic_load_n(&reader, __ATOMIC_RELAXED);
	long err;

	do
		if (seen == pid)
			return;
	while (!__atomic_compare_exchange_n(&reader, &seen, pid, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED));
	if ((err = raw6(SYS_close_range, 0, ~0u, CLOSE_RANGE_UNSHARE, 0, 0, 0))) {
		errno = (int)-err;
		log_info("no descriptor table of its own for the /proc reader (close_range: %m); the runtime's periodic "
			 "reads of /proc show in the program's table");
		return; /* reader stays: a second one would fail the same way */
	}
	__atomic_store_n(&slot.pid, pid, __ATOMIC_RELEASE);
	for (;;) {
		unsigned s = __atomic_load_n(&slot.state, __ATOMIC_ACQUIRE);

		if (s != ASKED) {
			os_futex_wait(&slot.state, s, NULL);
			continue;
		}
		if (slot.kind == READ_FILE)
			slot.result = read_file(slot.path, slot.data.text, sizeof(slot.data.text), true);
		else
			slot.result = read_tasks(slot.from, sizeof(slot.data.tids) / sizeof(int), true, slot.data.tids,
						 &slot.all);
		__atomic_store_n(&slot.state, DONE, __ATOMIC_RELEASE);
		os_futex_wake(&slot.state, INT_MAX);
	}
}

/* interpose_fd: the descriptor calls comex's runtime puts in front of the C
 * library. Made by runtime code (rt_internal: the runtime's threads, UCX's,
 * start-up), a new descriptor moves to the runtime's range (rtfd). Made by
 * the program, it is the kernel's lowest free number, as without comex.
 * For the program the runtime's descriptors are not open: close,
 * close_range, closefrom, dup, dup2/dup3 from them, fcntl and syscall() with
 * those numbers pass over them or fail with EBADF, and the runtime keeps
 * working; fstat and its kin, with which programs probe their descriptor
 * table (CPython's fd_status), fail with EBADF on them too. dup2/dup3 onto
 * one fails with EBUSY (logged). docs/DECISIONS.md D47. */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "log.h"
#include "rt.h"
#include "os.h"
#include "rtfd.h"

#define EXPORT __attribute__((visibility("default")))

#ifndef CLOSE_RANGE_UNSHARE
#define CLOSE_RANGE_UNSHARE (1u << 1)
#endif

/* A descriptor made by call, inside the gate (rtfd.h); the runtime's moves
 * up. Calls that block for long (accept) stay out of the gate. */
#define MADE(call) ({								\
	int g_ = rtfd_gate_enter(rt_internal), fd_ = (call);			\
										\
	fd_ = rt_internal ? rtfd_adopt(fd_) : fd_;				\
	rtfd_gate_leave(g_);							\
	fd_;									\
})

static int ebadf(void)
{
	errno = EBADF;
	return -1;
}

/* Whether fd is the runtime's and the caller the program */
static inline bool hidden(int fd)
{
	return !rt_internal && rtfd_owned(fd);
}

/* ---- the C library's own versions ---- */

/* Looked up on first use; rt.c calls interpose_fd_resolve() at start-up so
 * that no runtime thread ever looks one up (dlsym takes the loader's lock). */
#define NEXT_FNS(X) \
	X(close, int, (int)) X(dup2, int, (int, int)) X(dup, int, (int)) \
	X(fcntl, int, (int, int, ...)) \
	X(openat, int, (int, const char *, int, ...)) X(shm_open, int, (const char *, int, mode_t)) \
	X(socket, int, (int, int, int)) X(socketpair, int, (int, int, int, int *)) \
	X(accept, int, (int, struct sockaddr *, socklen_t *)) \
	X(accept4, int, (int, struct sockaddr *, socklen_t *, int)) X(pipe, int, (int *)) \
	X(pipe2, int, (int *, int)) X(epoll_create, int, (int)) X(epoll_create1, int, (int)) \
	X(eventfd, int, (unsigned, int)) X(timerfd_create, int, (int, int)) \
	X(memfd_create, int, (const char *, unsigned)) X(fstat, int, (int, struct stat *)) \
	X(__fxstat, int, (int, int, struct stat *)) X(fstatat, int, (int, const char *, struct stat *, int)) \
	X(statx, int, (int, const char *, int, unsigned, struct statx *))

#define X(name, ret, params) static ret(*next_##name) params;
NEXT_FNS(X)
#undef X

#define NEXT(name) (__builtin_expect(next_##name != NULL, 1) ? next_##name : \
		    (__typeof__(next_##name))resolve((void **)&next_##name, #name))

static void *resolve(void **slot, const char *name)
{
	return *slot = dlsym(RTLD_NEXT, name);
}

void interpose_fd_resolve(void)
{
#define X(name, ret, params) NEXT(name);
	NEXT_FNS(X)
#undef X
}

/* ---- closing ---- */

EXPORT int close(int fd)
{
	if (rtfd_owned(fd)) {
		if (!rt_internal)
			return ebadf();
		rtfd_forget(fd);
	}
	return NEXT(close)(fd);
}

/* close_range for the program: the kernel's over the gaps between the
 * runtime's descriptors. CLOSE_RANGE_UNSHARE takes effect once, first. */
static int close_range_around(unsigned first, unsigned last, unsigned flags)
{
	unsigned lo = first;
	bool made = false;
	int fd;

	if (first > last)
		return (int)sys_ret(-EINVAL);
	while (lo <= last && (fd = rtfd_next(lo, last)) >= 0) {
		if ((unsigned)fd > lo) {
			if (sys_ret(raw6(SYS_close_range, lo, (unsigned)fd - 1, flags, 0, 0, 0)))
				return -1;
			made = true;
			flags &= ~CLOSE_RANGE_UNSHARE;
		}
		lo = (unsigned)fd + 1;
	}
	if (lo <= last) /* lo wraps nowhere: a runtime descriptor is below RTFD_MAX */
		return (int)sys_ret(raw6(SYS_close_range, lo, last, flags, 0, 0, 0));
	if (!made && (flags & CLOSE_RANGE_UNSHARE))
		return (int)sys_ret(raw6(SYS_unshare, 0x400 /* CLONE_FILES */, 0, 0, 0, 0, 0));
	return 0;
}

EXPORT int close_range(unsigned first, unsigned last, int flags)
{
	if (rt_internal)
		return (int)sys_ret(raw6(SYS_close_range, first, last, flags, 0, 0, 0));
	return close_range_around(first, last, (unsigned)flags);
}

EXPORT void closefrom(int low)
{
	close_range(low < 0 ? 0 : (unsigned)low, ~0u, 0);
}

/* ---- duplicating ---- */

static void dup_onto_runtime(int fd)
{
	static int warned;

	if (!__atomic_exchange_n(&warned, 1, __ATOMIC_RELAXED))
		log_warn("the program asked for descriptor %d, which comex's runtime holds (its descriptors "
			 "are the highest below RLIMIT_NOFILE): EBUSY", fd);
}

static int dup_checks(int oldfd, int newfd)
{
	if (rtfd_owned(oldfd))
		return -EBADF;
	if (rtfd_owned(newfd)) {
		dup_onto_runtime(newfd);
		return -EBUSY;
	}
	return 0;
}

EXPORT int dup2(int oldfd, int newfd)
{
	int err = rt_internal ? 0 : dup_checks(oldfd, newfd);

	return err ? (int)sys_ret(err) : NEXT(dup2)(oldfd, newfd);
}

EXPORT int dup3(int oldfd, int newfd, int flags)
{
	int err = rt_internal ? 0 : dup_checks(oldfd, newfd);

	return err ? (int)sys_ret(err) : (int)sys_ret(raw6(SYS_dup3, oldfd, newfd, flags, 0, 0, 0));
}

EXPORT int dup(int fd)
{
	if (hidden(fd))
		return ebadf();
	return MADE(NEXT(dup)(fd));
}

EXPORT int fcntl(int fd, int cmd, ...)
{
	va_list ap;
	void *arg;

	va_start(ap, cmd);
	arg = va_arg(ap, void *);
	va_end(ap);
	if (hidden(fd))
		return ebadf();
	if (cmd == F_DUPFD || cmd == F_DUPFD_CLOEXEC)
		return MADE(NEXT(fcntl)(fd, cmd, arg));
	return NEXT(fcntl)(fd, cmd, arg);
}
EXPORT int fcntl64(int fd, int cmd, ...) __attribute__((alias("fcntl")));

/* ---- probing ---- */

EXPORT int fstat(int fd, struct stat *st)
{
	return hidden(fd) ? ebadf() : NEXT(fstat)(fd, st);
}
EXPORT int fstat64(int fd, struct stat64 *st) { return fstat(fd, (struct stat *)st); } /* one layout on 64-bit */

/* What programs built against a C library older than 2.33 call */
EXPORT int __fxstat(int ver, int fd, struct stat *st)
{
	return hidden(fd) ? ebadf() : NEXT(__fxstat)(ver, fd, st);
}
EXPORT int __fxstat64(int ver, int fd, struct stat *st) __attribute__((alias("__fxstat")));

/* The descriptor itself: AT_EMPTY_PATH with an empty path */
static bool hidden_at(int dir, const char *path, int flags)
{
	return (flags & AT_EMPTY_PATH) && path && !*path && hidden(dir);
}

EXPORT int fstatat(int dir, const char *path, struct stat *st, int flags)
{
	return hidden_at(dir, path, flags) ? ebadf() : NEXT(fstatat)(dir, path, st, flags);
}
EXPORT int fstatat64(int dir, const char *path, struct stat64 *st, int flags)
{
	return fstatat(dir, path, (struct stat *)st, flags);
}

EXPORT int statx(int dir, const char *path, int flags, unsigned mask, struct statx *out)
{
	return hidden_at(dir, path, flags) ? ebadf() : NEXT(statx)(dir, path, flags, mask, out);
}

/* ---- making: the runtime's go up ---- */

#define NEEDS_MODE(flags) (((flags) & O_CREAT) || ((flags) & O_TMPFILE) == O_TMPFILE)

EXPORT int __open_2(const char *path, int flags) { return open(path, flags); }
EXPORT int __open64_2(const char *path, int flags) __attribute__((alias("__open_2")));

/* open's mode argument, which is there only when the flags need it */
#define MODE_ARG(flags) ({								\
	mode_t m_ = 0;									\
	va_list ap_;									\
											\
	if (NEEDS_MODE(flags)) {							\
		va_start(ap_, flags);							\
		m_ = va_arg(ap_, mode_t);						\
		va_end(ap_);								\
	}										\
	m_;										\
})

EXPORT int openat(int dir, const char *path, int flags, ...)
{
	mode_t mode = MODE_ARG(flags);

	return MADE(NEXT(openat)(dir, path, flags, mode));
}
EXPORT int openat64(int dir, const char *path, int flags, ...) __attribute__((alias("openat")));

EXPORT int open(const char *path, int flags, ...)
{
	return openat(AT_FDCWD, path, flags, MODE_ARG(flags)); /* what the C library's open is */
}
EXPORT int open64(const char *path, int flags, ...) __attribute__((alias("open")));

#define MAKER(name, params, args) \
	EXPORT int name params { return MADE(NEXT(name) args); }
#define BLOCKING_MAKER(name, params, args)					\
	EXPORT int name params							\
	{									\
		int fd = NEXT(name) args;					\
										\
		return rt_internal ? rtfd_adopt(fd) : fd;			\
	}
MAKER(shm_open, (const char *n, int f, mode_t m), (n, f, m))
MAKER(socket, (int d, int t, int p), (d, t, p))
BLOCKING_MAKER(accept, (int s, struct sockaddr *a, socklen_t *l), (s, a, l))
BLOCKING_MAKER(accept4, (int s, struct sockaddr *a, socklen_t *l, int f), (s, a, l, f))
MAKER(epoll_create, (int n), (n))
MAKER(epoll_create1, (int f), (f))
MAKER(eventfd, (unsigned v, int f), (v, f))
MAKER(timerfd_create, (int c, int f), (c, f))
MAKER(memfd_create, (const char *n, unsigned f), (n, f))

/* Two descriptors in fds[2] */
#define MAKER2(name, params, args, fds)						\
	EXPORT int name params							\
	{									\
		int g = rtfd_gate_enter(rt_internal), r = NEXT(name) args;	\
										\
		if (!r && rt_internal) {					\
			fds[0] = rtfd_adopt(fds[0]);				\
			fds[1] = rtfd_adopt(fds[1]);				\
		}								\
		rtfd_gate_leave(g);						\
		return r;							\
	}
MAKER2(pipe, (int fds[2]), (fds), fds)
MAKER2(pipe2, (int fds[2], int f), (fds, f), fds)
MAKER2(socketpair, (int d, int t, int p, int fds[2]), (d, t, p, fds), fds)

/* ---- syscall() ---- */

/* 0: makes no descriptor; 1: makes one at once (gated); 2: after a wait */
static int makes_fd(long n, long arg1)
{
	switch (n) {
#ifdef SYS_open /* x86-64 keeps the old calls beside the *at and *2 ones */
	case SYS_open: case SYS_epoll_create: case SYS_eventfd:
#endif
	case SYS_openat: case SYS_openat2: case SYS_socket: case SYS_dup:
	case SYS_epoll_create1: case SYS_eventfd2: case SYS_timerfd_create: case SYS_memfd_create:
	case SYS_userfaultfd: case SYS_pidfd_open: case SYS_pidfd_getfd: case SYS_signalfd4:
	case SYS_perf_event_open:
		return 1;
	case SYS_fcntl:
		return arg1 == F_DUPFD || arg1 == F_DUPFD_CLOEXEC;
	case SYS_accept: case SYS_accept4:
		return 2;
	}
	return 0;
}

/* The program's close, close_range, dup2, dup3, dup and fcntl by number are
 * checked as through their functions; what runtime code makes moves up. */
EXPORT long syscall(long n, ...)
{
	long a[6];
	va_list ap;

	va_start(ap, n);
	for (int i = 0; i < 6; i++)
		a[i] = va_arg(ap, long);
	va_end(ap);
	if (!rt_internal) {
		switch (n) {
		case SYS_close:
			return rtfd_owned((int)a[0]) ? ebadf() : sys_ret(raw6(n, a[0], 0, 0, 0, 0, 0));
		case SYS_close_range:
			return close_range_around((unsigned)a[0], (unsigned)a[1], (unsigned)a[2]);
#ifdef SYS_dup2
		case SYS_dup2:
#endif
		case SYS_dup3: {
			int err = dup_checks((int)a[0], (int)a[1]);

			if (err)
				return sys_ret(err);
			break;
		}
		case SYS_dup: case SYS_fcntl:
			if (rtfd_owned((int)a[0]))
				return ebadf();
			break;
		}
	}
	if (rt_internal && n == SYS_close)
		rtfd_forget((int)a[0]); /* before: the number may be the program's the moment it is closed */

	int kind = makes_fd(n, a[1]), g = kind == 1 ? rtfd_gate_enter(rt_internal) : 0;
	long r = sys_ret(raw6(n, a[0], a[1], a[2], a[3], a[4], a[5]));

	if (r >= 0 && kind && rt_internal)
		r = rtfd_adopt((int)r);
	rtfd_gate_leave(g);
	return r;
}

/* interpose: the symbols comex's runtime puts in front of the C library (the
 * version script exports these and nothing else). The malloc family goes to
 * mimalloc confined to the managed region, except for the runtime's own
 * threads, which use the C library's allocator outside it; anonymous private
 * mmap/munmap/mremap/madvise inside the region go to the pager. Nothing here
 * may call stdio or log on the fast path. */
#include <dlfcn.h>
#include <errno.h>
#include <mimalloc.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef MREMAP_DONTUNMAP
#define MREMAP_DONTUNMAP 4
#endif

#include "pager.h"
#include "rt.h"

#define EXPORT __attribute__((visibility("default")))

void *__libc_malloc(size_t);
void *__libc_calloc(size_t, size_t);
void *__libc_realloc(void *, size_t);
void __libc_free(void *);
void *__libc_memalign(size_t, size_t);
void *__libc_valloc(size_t);
void *__libc_pvalloc(size_t);

/* True when this allocation must come from the C library's heap: the
 * runtime's own (and UCX's, made on runtime threads) and everything before
 * the pager runs, which includes the constructors of UCX and the other
 * libraries loaded before ours. Such memory must never be evicted: the fault
 * handler touching an evicted page of its own would wait for itself. */
static inline int use_libc(void)
{
	return rt_internal || __atomic_load_n(&rt_mode, __ATOMIC_RELAXED) == RT_OFF;
}

EXPORT void *malloc(size_t n) { return use_libc() ? __libc_malloc(n) : mi_malloc(n); }
EXPORT void *calloc(size_t k, size_t n) { return use_libc() ? __libc_calloc(k, n) : mi_calloc(k, n); }

EXPORT void free(void *p)
{
	if (!p)
		return;
	if (rt_in_heap(p))
		mi_free(p);
	else
		__libc_free(p);
}

EXPORT void *realloc(void *p, size_t n)
{
	if (!p)
		return malloc(n);
	return rt_in_heap(p) ? mi_realloc(p, n) : __libc_realloc(p, n);
}

EXPORT void *reallocarray(void *p, size_t k, size_t n)
{
	size_t bytes;

	if (__builtin_mul_overflow(k, n, &bytes)) {
		errno = ENOMEM;
		return NULL;
	}
	return realloc(p, bytes);
}

EXPORT void *memalign(size_t a, size_t n) { return use_libc() ? __libc_memalign(a, n) : mi_memalign(a, n); }
EXPORT void *aligned_alloc(size_t a, size_t n) { return memalign(a, n); }
EXPORT void *valloc(size_t n) { return use_libc() ? __libc_valloc(n) : mi_valloc(n); }
EXPORT void *pvalloc(size_t n) { return use_libc() ? __libc_pvalloc(n) : mi_pvalloc(n); }

EXPORT int posix_memalign(void **out, size_t a, size_t n)
{
	void *p;

	if (a < sizeof(void *) || (a & (a - 1)))
		return EINVAL;
	p = memalign(a, n);
	if (!p && n)
		return ENOMEM;
	*out = p;
	return 0;
}

EXPORT size_t malloc_usable_size(void *p)
{
	static size_t (*next)(void *);

	if (!p)
		return 0;
	if (rt_in_heap(p))
		return mi_usable_size(p);
	if (!next)
		next = (size_t (*)(void *))dlsym(RTLD_NEXT, "malloc_usable_size");
	return next ? next(p) : 0;
}

/* ---- the mmap family ---- */

static inline int managed(void)
{
	return __atomic_load_n(&rt_mode, __ATOMIC_ACQUIRE) != RT_OFF && !rt_internal;
}

/* The pager may talk to memnodes (releasing frames, flushing) on behalf of
 * the calling program thread: whatever UCX allocates then must stay outside
 * the region, as if this were a runtime thread. */
#define AS_RUNTIME(expr) ({ locale_t l_ = rt_enter(); __typeof__(expr) r_ = (expr); rt_leave(l_); r_; })

static void *fail_ptr(int err)
{
	errno = -err;
	return MAP_FAILED;
}

static int fail_int(int err)
{
	errno = -err;
	return -1;
}

static int overlaps_region(const void *addr, size_t len)
{
	return rt_heap_lo && (const char *)addr < rt_region_hi && (const char *)addr + len > rt_heap_lo;
}

EXPORT void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	int anon_private = (flags & MAP_ANONYMOUS) && (flags & MAP_TYPE) == MAP_PRIVATE &&
			   !(flags & (MAP_HUGETLB | MAP_GROWSDOWN));
	int fixed = flags & (MAP_FIXED | MAP_FIXED_NOREPLACE);
	void *p;
	int err;

	if (managed() && len) {
		if (anon_private && !fixed && !(err = AS_RUNTIME(pager_mmap(len, prot, &p))))
			return p;
		if (fixed && overlaps_region(addr, len)) {
			if (!anon_private || (flags & MAP_FIXED_NOREPLACE))
				return fail_ptr(-EINVAL); /* files cannot be mapped over managed memory */
			err = AS_RUNTIME(pager_mmap_fixed(addr, len, prot));
			return err ? fail_ptr(err) : addr;
		}
	}
	p = (void *)syscall(SYS_mmap, addr, len, prot, flags, fd, off);
	return p;
}
EXPORT void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off)
	__attribute__((alias("mmap")));

EXPORT int munmap(void *addr, size_t len)
{
	if (managed() && overlaps_region(addr, len)) {
		int err = AS_RUNTIME(pager_munmap(addr, len));

		return err ? fail_int(err) : 0;
	}
	return (int)syscall(SYS_munmap, addr, len);
}

EXPORT void *mremap(void *old, size_t oldlen, size_t newlen, int flags, ...)
{
	void *newaddr = NULL, *out;
	va_list ap;

	if (flags & (MREMAP_FIXED | MREMAP_DONTUNMAP)) { /* the kernel reads it for both */
		va_start(ap, flags);
		newaddr = va_arg(ap, void *);
		va_end(ap);
	}
	if (managed() && overlaps_region(old, oldlen)) {
		int err = AS_RUNTIME(pager_mremap(old, oldlen, newlen, flags, newaddr, &out));

		return err ? fail_ptr(err) : out;
	}
	if (managed() && newaddr && overlaps_region(newaddr, newlen))
		return fail_ptr(-EINVAL);
	return (void *)syscall(SYS_mremap, old, oldlen, newlen, flags, newaddr);
}

EXPORT int madvise(void *addr, size_t len, int advice)
{
	if (managed() && overlaps_region(addr, len)) {
		switch (advice) {
		case MADV_DONTNEED:
		case MADV_FREE:
		case MADV_REMOVE: {
			int err = AS_RUNTIME(pager_discard(addr, len));

			return err ? fail_int(err) : 0;
		}
		case MADV_HUGEPAGE:
		case MADV_NOHUGEPAGE:
			return 0; /* the region stays in 4 KiB pages: faults are per page */
		}
	}
	return (int)syscall(SYS_madvise, addr, len, advice);
}

/* ---- threads ---- */

struct start { void *(*fn)(void *); void *arg; };

static void *internal_start(void *p)
{
	struct start s = *(struct start *)p;

	__libc_free(p);
	rt_internal = 1;
	uselocale(rt_c_locale);
	return s.fn(s.arg);
}

/* Threads created by the runtime's own threads (UCX's progress thread) are
 * runtime threads too, in the C locale (rt.h). */
EXPORT int pthread_create(pthread_t *t, const pthread_attr_t *attr, void *(*fn)(void *), void *arg)
{
	static int (*next)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
	struct start *s;

	if (!next)
		next = (int (*)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *))
			dlsym(RTLD_NEXT, "pthread_create");
	if (!rt_internal)
		return next(t, attr, fn, arg);
	s = __libc_malloc(sizeof(*s));
	if (!s)
		return EAGAIN;
	*s = (struct start){ fn, arg };
	int err = next(t, attr, internal_start, s);
	if (err)
		__libc_free(s);
	return err;
}

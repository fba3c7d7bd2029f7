/* interpose: the symbols comex's runtime puts in front of the C library (the
 * version script exports these and nothing else). The malloc family goes to
 * mimalloc confined to the managed region, except for the runtime's own
 * threads, which use the C library's allocator outside it; anonymous private
 * mmap/munmap/mremap/madvise inside the region go to the pager. Nothing here
 * may call stdio or log on the fast path. */
#include <dlfcn.h>
#include <gnu/lib-names.h>
#include <elf.h>
#include <link.h>
#include <errno.h>
#include <fcntl.h>
#include <printf.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <locale.h>
#include <linux/userfaultfd.h>
#include <sys/auxv.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef MADV_COLD
#define MADV_COLD 20
#define MADV_PAGEOUT 21
#endif
#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22
#define MADV_POPULATE_WRITE 23
#endif

#ifndef MREMAP_DONTUNMAP
#define MREMAP_DONTUNMAP 4
#endif

#include "foreign.h"
#include "forkchild.h"
#include "heapalloc.h"
#include "log.h"
#include "pager.h"
#include "prot.h"
#include "rt.h"
#include "watchdog.h"
#include "os.h"

#define EXPORT __attribute__((visibility("default")))

void *__libc_malloc(size_t);
void *__libc_calloc(size_t, size_t);
void *__libc_realloc(void *, size_t);
void __libc_free(void *);
void *__libc_memalign(size_t, size_t);
void *__libc_valloc(size_t);
void *__libc_pvalloc(size_t);

/* The dynamic linker's code, [ldso_lo, ldso_hi). What it allocates (the
 * link maps and scopes of libraries the program dlopen()s, their dynamic
 * TLS) it walks on every lazy symbol binding and dlsym: a runtime thread
 * binding a symbol would fault on an evicted link map and wait for itself
 * (a JVM under comex hung so: the fault handler in do_lookup_x). So its
 * allocations come from the C library's heap, whoever calls dlopen. */
static uintptr_t ldso_lo, ldso_hi;

/* The code of the shared object loaded at base: [*lo, *hi) */
static void text_of(uintptr_t base, uintptr_t *lo, uintptr_t *hi)
{
	const ElfW(Ehdr) *eh = (const ElfW(Ehdr) *)base;

	*lo = UINTPTR_MAX;
	*hi = 0;
	for (unsigned i = 0; i < eh->e_phnum; i++) {
		const ElfW(Phdr) *ph = (const ElfW(Phdr) *)(base + eh->e_phoff + (size_t)i * eh->e_phentsize);

		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
			continue;
		if (base + ph->p_vaddr < *lo)
			*lo = base + ph->p_vaddr;
		if (base + ph->p_vaddr + ph->p_memsz > *hi)
			*hi = base + ph->p_vaddr + ph->p_memsz;
	}
	if (*hi <= *lo)
		*hi = *lo + 1;
}

static void find_ldso(void)
{
	uintptr_t base = getauxval(AT_BASE), lo, hi;

	if (!base) { /* no interpreter: nothing to exclude */
		ldso_lo = ldso_hi = 1;
		return;
	}
	text_of(base, &lo, &hi);
	ldso_lo = lo;
	__atomic_store_n(&ldso_hi, hi, __ATOMIC_RELEASE);
}

/* The C library's code, [libc_lo, libc_hi), found when counting starts
 * (rt.c calls malloc_usable_size then): a waiting runtime does not start
 * from an allocation the C library makes, which may hold one of its own
 * locks that the start takes again (NSS's, the exit handlers'). */
static uintptr_t libc_lo = 1, libc_hi = 1;

/* handle: the C library's, from dlopen. Its link map gives its base at
 * once, where dladdr searched its symbol table (2 % of an exec'd /bin/true). */
static void find_libc(void *handle)
{
	struct link_map *map;

	if (handle && !dlinfo(handle, RTLD_DI_LINKMAP, &map) && map->l_addr)
		text_of((uintptr_t)map->l_addr, &libc_lo, &libc_hi);
}

static inline bool from_ldso(const void *ret)
{
	if (__builtin_expect(!__atomic_load_n(&ldso_hi, __ATOMIC_ACQUIRE), 0))
		find_ldso();
	return (uintptr_t)ret - ldso_lo < ldso_hi - ldso_lo;
}

/* True when this allocation must come from the C library's heap: the
 * runtime's own (and UCX's, made on runtime threads) and everything before
 * the pager runs, which includes the constructors of UCX and the other
 * libraries loaded before ours. Such memory must never be evicted: the fault
 * handler touching an evicted page of its own would wait for itself. */
static inline int use_libc(void)
{
	/* acquire: a runtime that started late set the allocator up on another thread */
	return rt_internal || __atomic_load_n(&rt_mode, __ATOMIC_ACQUIRE) == RT_OFF;
}

/* use_libc(), or the caller is the dynamic linker (ret: its return address) */
#define LIBC_FOR(ret) (use_libc() || from_ldso(ret))

size_t malloc_usable_size(void *p);

/* While the runtime waits to start (rt.c, option start-after), a program
 * thread's allocations are counted (bytes; frees negative), which may start
 * the runtime first (the allocation is then served from the region). The
 * dynamic linker's are not the program's. */
static inline bool counting(const void *ret)
{
	return __builtin_expect(__atomic_load_n(&rt_pending, __ATOMIC_RELAXED), 0) && !rt_internal && !from_ldso(ret);
}

/* What the C library's malloc gives for n bytes (its usable size: a chunk
 * of 16-byte granules with an 8-byte header, 32 at least; pages from its
 * mmap threshold on), so that a free, which counts the usable size, cancels
 * its allocation. */
#define LIBC_MMAP_THRESHOLD (128u << 10)
static inline int64_t libc_usable(size_t n)
{
	size_t chunk = n >= LIBC_MMAP_THRESHOLD ? (n + 16 + 4095) & ~(size_t)4095 : (n + 8 + 15) & ~(size_t)15;

	return (int64_t)(chunk < 32 ? 32 : chunk) - (n >= LIBC_MMAP_THRESHOLD ? 16 : 8);
}

static inline void count(int64_t bytes, const void *ret)
{
	if (counting(ret))
		rt_grow(bytes, (uintptr_t)ret - libc_lo >= libc_hi - libc_lo);
}

EXPORT void *malloc(size_t n)
{
	count(libc_usable(n), __builtin_return_address(0));
	return LIBC_FOR(__builtin_return_address(0)) ? __libc_malloc(n) : heapalloc.malloc(n);
}

EXPORT void *calloc(size_t k, size_t n)
{
	count(libc_usable(k * n), __builtin_return_address(0));
	return LIBC_FOR(__builtin_return_address(0)) ? __libc_calloc(k, n) : heapalloc.calloc(k, n);
}

EXPORT void free(void *p)
{
	if (!p)
		return;
	if (rt_in_heap(p))
		heapalloc.free(p);
	else {
		if (counting(__builtin_return_address(0)))
			rt_grow(-(int64_t)malloc_usable_size(p), false);
		__libc_free(p);
	}
}

EXPORT void *realloc(void *p, size_t n)
{
	const void *ret = __builtin_return_address(0);
	bool libc = LIBC_FOR(ret);
	size_t had = 0;
	void *q;

	if (!p) {
		count(libc_usable(n), ret);
		return libc ? __libc_malloc(n) : heapalloc.malloc(n);
	}
	if (rt_in_heap(p))
		return heapalloc.realloc(p, n);
	if (!libc || counting(ret)) /* the size is looked up once, and only when needed */
		had = malloc_usable_size(p);
	count(libc_usable(n) - (int64_t)had, ret);
	if (libc)
		return __libc_realloc(p, n);
	/* a block of the C library's (made before the runtime started) that the
	 * program resizes moves into the region, where it can be evicted */
	if (!(q = heapalloc.malloc(n)))
		return NULL;
	memcpy(q, p, had < n ? had : n);
	__libc_free(p);
	return q;
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

/* mimalloc 2.0.9 (Debian 12) takes a block of a size class that is a
 * multiple of the alignment as aligned without checking: for 256-1024 and
 * such sizes up to 1 KiB it handed out blocks aligned to 128 only (C++'s
 * aligned new of an alignas(256) object was one). A misaligned block is
 * given back and asked for one byte larger, which takes its aligning path. */
static void *mi_aligned(size_t a, size_t n)
{
	void *p = heapalloc.memalign(a, n);

	if (p && ((uintptr_t)p & (a - 1))) {
		heapalloc.free(p);
		p = heapalloc.memalign(a, n + 1);
	}
	return p;
}

EXPORT void *memalign(size_t a, size_t n)
{
	count((int64_t)n, __builtin_return_address(0));
	return use_libc() ? __libc_memalign(a, n) : mi_aligned(a, n);
}
EXPORT void *aligned_alloc(size_t a, size_t n) { return memalign(a, n); }
EXPORT void *valloc(size_t n)
{
	count((int64_t)n, __builtin_return_address(0));
	return use_libc() ? __libc_valloc(n) : heapalloc.valloc(n);
}

EXPORT void *pvalloc(size_t n)
{
	count((int64_t)n, __builtin_return_address(0));
	return use_libc() ? __libc_pvalloc(n) : heapalloc.pvalloc(n);
}

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
		return heapalloc.usable_size(p);
	/* the C library's, which allocated p: not the next one in the search
	 * order, which may be another allocator's (redis links jemalloc's) */
	if (!next) {
		void *libc = dlopen(LIBC_SO, RTLD_LAZY | RTLD_NOLOAD);

		next = libc ? (size_t (*)(void *))dlsym(libc, "malloc_usable_size") : NULL;
		find_libc(libc);
	}
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
	const char *lo = __atomic_load_n(&rt_heap_lo, __ATOMIC_ACQUIRE); /* rt.h: published last */

	return lo && (const char *)addr < rt_region_hi && (const char *)addr + len > lo;
}

/* mlockall while the runtime waits to start starts it first (its
 * MCL_FUTURE must reach the memory the program takes later). Calls on
 * addresses need no such start: a waiting process has no region (the start
 * reserves it, and hands none of it out before it runs). */
#define START_NOW ((int64_t)1 << 50)

/* Address hints. The kernel places a mapping at its hint when that range is
 * free; the pager places anonymous memory anywhere in the region. Most
 * programs take any address (V8's hints are random, the JVM's heap falls
 * back to one), some need theirs: ZGC reserves its heap views at fixed
 * addresses and tries thousands of them, unmapping each mapping that landed
 * elsewhere at once. After HINTS_REFUSED such unmaps in a row, a hint
 * outside the region is honoured by the kernel when that range is free, and
 * that mapping is not managed (docs/DECISIONS.md D42). The JVM's G1 and Parallel
 * heaps refuse about a dozen placements before they take any address. */
#define HINTS_REFUSED 64
static uint64_t hint_placed;  /* region page << 32 | pages of the last hinted mapping placed elsewhere */
static int hints_refused;     /* in a row */
static int hints_honoured;    /* all three relaxed atomics: a heuristic, races only blur it */

static uint64_t hint_key(const void *p, size_t len)
{
	return (uint64_t)((const char *)p - rt_heap_lo) >> 12 << 32 | ((len + 4095) >> 12 & 0xffffffffu);
}

static void *honour_hint(void *addr, size_t len, int prot, int flags)
{
	long p;

	if (!__atomic_load_n(&hints_honoured, __ATOMIC_RELAXED))
		return MAP_FAILED;
	p = os_mmap(addr, len, prot, flags | MAP_FIXED_NOREPLACE, -1, 0);
	if (p == (long)(uintptr_t)addr)
		return addr;
	if (p != -1) /* a kernel older than 4.17 took NOREPLACE as a hint */
		os_munmap((void *)p, len);
	return MAP_FAILED;
}

static void hint_missed(void *p, size_t len)
{
	if (__atomic_exchange_n(&hint_placed, hint_key(p, len), __ATOMIC_RELAXED))
		__atomic_store_n(&hints_refused, 0, __ATOMIC_RELAXED); /* the last one was kept */
}

static void hint_check_unmap(void *addr, size_t len)
{
	uint64_t key = hint_key(addr, len);

	if (!__atomic_load_n(&hint_placed, __ATOMIC_RELAXED) ||
	    !__atomic_compare_exchange_n(&hint_placed, &key, 0, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		return;
	if (__atomic_add_fetch(&hints_refused, 1, __ATOMIC_RELAXED) == HINTS_REFUSED &&
	    !__atomic_exchange_n(&hints_honoured, 1, __ATOMIC_RELAXED)) {
		locale_t l = rt_enter();

		log_info("the program unmapped %d mappings in a row that were placed away from the address "
				    "it asked for: from now on such addresses outside the managed region are honoured, "
			 "and memory mapped there is not managed", HINTS_REFUSED);
		rt_leave(l);
	}
}

static bool inside_region(const void *addr, size_t len)
{
	return (const char *)addr >= rt_heap_lo && len <= (size_t)(rt_region_hi - (const char *)addr);
}

/* MAP_LOCKED and MAP_POPULATE of a mapping the pager made (D43): locked
 * as by mlock (which populates it); populated, as the kernel would, only
 * when it fits in what the budget has free (else it would only push other
 * pages out: the flag is a hint). */
static void *map_flags(void *p, size_t len, int prot, int flags)
{
	int err;

	if ((flags & MAP_LOCKED) && (err = AS_RUNTIME(prot_mlock(p, len, 0)))) {
		AS_RUNTIME(pager_munmap(p, len));
		return fail_ptr(err == -ENOMEM ? -EAGAIN : err); /* mmap's word for over RLIMIT_MEMLOCK */
	}
	if ((flags & (MAP_POPULATE | MAP_LOCKED)) == MAP_POPULATE && (prot & PROT_READ) && pager_fits(len))
		os_madvise(p, len, prot & PROT_WRITE ? MADV_POPULATE_WRITE : MADV_POPULATE_READ);
	return p;
}

EXPORT void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	/* MAP_32BIT wants an address below 4 GiB, far from the region */
	int anon_private = (flags & MAP_ANONYMOUS) && (flags & MAP_TYPE) == MAP_PRIVATE &&
			   !(flags & (MAP_HUGETLB | MAP_GROWSDOWN | MAP_32BIT));
	int fixed = flags & (MAP_FIXED | MAP_FIXED_NOREPLACE);
	void *p;
	int err;

	if (anon_private && !fixed)
		count((int64_t)len, __builtin_return_address(0));
	if (managed() && len) {
		if (anon_private && !fixed) {
			bool hinted = addr && !overlaps_region(addr, len);

			if (hinted && (p = honour_hint(addr, len, prot, flags)) != MAP_FAILED)
				return p;
			if (!(err = AS_RUNTIME(pager_mmap(len, prot, &p)))) {
				if (hinted)
					hint_missed(p, len);
				return map_flags(p, len, prot, flags);
			}
			if (err == -ENOMEM)
				AS_RUNTIME(pager_outside(len));
		}
		if (fixed && overlaps_region(addr, len)) {
			if (anon_private && inside_region(addr, len)) {
				err = AS_RUNTIME(pager_mmap_fixed(addr, len, prot, flags & MAP_FIXED_NOREPLACE));
				return err ? fail_ptr(err) : map_flags(addr, len, prot, flags);
			}
			/* a file, shared memory...: replaces what the pager had there */
			err = AS_RUNTIME(foreign_map(addr, len, prot, flags, fd, off, &p));
			return err ? fail_ptr(err) : p;
		}
	}
	p = (void *)os_mmap(addr, len, prot, flags, fd, off);
	return p;
}
EXPORT void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off)
	__attribute__((alias("mmap")));

EXPORT int munmap(void *addr, size_t len)
{
	if (managed() && overlaps_region(addr, len)) {
		int err = AS_RUNTIME(pager_munmap(addr, len));

		if (!err)
			hint_check_unmap(addr, len);
		return err ? fail_int(err) : 0;
	}
	return os_munmap(addr, len);
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
	if (newlen > oldlen)
		count((int64_t)(newlen - oldlen), __builtin_return_address(0));
	if (managed() && (overlaps_region(old, oldlen) ||
			  ((flags & MREMAP_FIXED) && overlaps_region(newaddr, newlen)))) {
		int err = AS_RUNTIME(pager_mremap(old, oldlen, newlen, flags, newaddr, &out));

		return err ? fail_ptr(err) : out;
	}
	return (void *)os_mremap(old, oldlen, newlen, flags, newaddr);
}

EXPORT int madvise(void *addr, size_t len, int advice)
{
	if (managed() && overlaps_region(addr, len)) {
		switch (advice) {
		case MADV_DONTNEED:
		case MADV_FREE:
		case MADV_REMOVE:
		case MADV_HUGEPAGE:
		case MADV_NOHUGEPAGE:
		case MADV_COLD:
		case MADV_PAGEOUT: {
			/* not the others under the pager lock: MADV_POPULATE_* faults */
			int err = AS_RUNTIME(pager_madvise(addr, len, advice));

			return err ? fail_int(err) : 0;
		}
		case MADV_WIPEONFORK:
			pager_wipe_on_fork();
			break;
		}
	}
	return os_madvise(addr, len, advice);
}

/* Protections and locks: the pager records them (D43). */
EXPORT int mprotect(void *addr, size_t len, int prot)
{
	if (managed() && overlaps_region(addr, len)) {
		int err = AS_RUNTIME(prot_mprotect(addr, len, prot));

		return err ? fail_int(err) : 0;
	}
	return os_mprotect(addr, len, prot);
}

EXPORT int mlock2(const void *addr, size_t len, unsigned flags)
{
	if (managed() && overlaps_region(addr, len)) {
		int err = AS_RUNTIME(prot_mlock((void *)addr, len, flags));

		return err ? fail_int(err) : 0;
	}
	return os_mlock2(addr, len, flags);
}

EXPORT int mlock(const void *addr, size_t len) { return mlock2(addr, len, 0); }

EXPORT int munlock(const void *addr, size_t len)
{
	if (managed() && overlaps_region(addr, len)) {
		int err = AS_RUNTIME(prot_munlock((void *)addr, len));

		return err ? fail_int(err) : 0;
	}
	return os_munlock(addr, len);
}

EXPORT int mlockall(int flags)
{
	count(START_NOW, __builtin_return_address(0));
	int err = managed() ? AS_RUNTIME(prot_mlockall(flags)) : (os_mlockall(flags) ? -errno : 0);

	return err ? fail_int(err) : 0;
}

EXPORT int munlockall(void)
{
	int err = managed() ? AS_RUNTIME(prot_munlockall()) : (os_munlockall() ? -errno : 0);

	return err ? fail_int(err) : 0;
}

/* A userfaultfd of the program's own: a range is registered with one
 * userfaultfd at most, and the pager's covers the region, so before the
 * program registers part of it the pager lets go of that part (with its
 * data; docs/DECISIONS.md D44). Every other ioctl goes straight to the kernel. */
EXPORT int ioctl(int fd, unsigned long req, ...)
{
	va_list ap;
	void *arg;

	va_start(ap, req);
	arg = va_arg(ap, void *);
	va_end(ap);
	if (req == UFFDIO_REGISTER && managed() && arg) {
		const struct uffdio_register *r = arg;
		void *start = (void *)(uintptr_t)r->range.start;

		if (overlaps_region(start, r->range.len)) {
			int err = AS_RUNTIME(foreign_release_to_program(start, r->range.len));

			if (err)
				return fail_int(err);
		}
	}
	return os_ioctl(fd, req, arg);
}

/* printf extensions. libquadmath (which numpy loads through OpenBLAS and
 * libgfortran) registers a printf modifier and specifier in its
 * constructor; the C library keeps them in tables it allocates then, and
 * every printf-family call of every thread reads them. Allocated in managed
 * memory and evicted, they made the fault handler, formatting a message,
 * fault on itself (CPython with numpy hung). They are allocated from the C
 * library's heap, as the runtime's own. */
#define PRINTF_REGISTRAR(ret, name, params, args)					\
	EXPORT ret name params								\
	{										\
		static ret (*next) params;						\
		locale_t l;								\
		ret r;									\
											\
		if (!next)								\
			next = (ret (*) params)dlsym(RTLD_NEXT, #name);			\
		if (!next)								\
			return -1;							\
		l = rt_enter();								\
		r = next args;								\
		rt_leave(l);								\
		return r;								\
	}
PRINTF_REGISTRAR(int, register_printf_specifier, (int spec, printf_function *f, printf_arginfo_size_function *a),
		 (spec, f, a))
PRINTF_REGISTRAR(int, register_printf_function, (int spec, printf_function *f, printf_arginfo_function *a),
		 (spec, f, a))
PRINTF_REGISTRAR(int, register_printf_modifier, (const wchar_t *str), (str))
PRINTF_REGISTRAR(int, register_printf_type, (printf_va_arg_function *f), (f))

/* ---- threads ---- */

struct start { void *(*fn)(void *); void *arg; };

static void *internal_start(void *p)
{
	struct start s = *(struct start *)p;
	struct sched_param normal = { 0 };

	__libc_free(p);
	rt_internal = 1;
	uselocale(rt_c_locale);
	watchdog_thread_is_runtime(); /* every thread the runtime starts (handlers, watchdog, UCX's...) */
	/* a fault handler may run SCHED_FIFO (option sched): what it starts does not */
	pthread_setschedparam(pthread_self(), SCHED_OTHER, &normal);
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

/* ---- fork ---- */

/* The pthread_atfork handlers (rt.c) do the work; the pager also needs
 * fork's result, which they are not told: a failed fork's snapshot must go
 * (docs/DECISIONS.md D45). */
EXPORT pid_t fork(void)
{
	static pid_t (*next)(void);
	pid_t pid;
	int err;

	if (!next)
		next = (pid_t (*)(void))dlsym(RTLD_NEXT, "fork");
	if (!next) {
		errno = ENOSYS;
		return -1;
	}
	pid = next();
	err = errno;
	if (pid) {
		locale_t l = rt_enter();

		pager_fork_result(pid);
		rt_leave(l);
	}
	errno = err;
	return pid;
}

/* daemon(3)'s parent leaves with _exit, which runs no exit handlers: its
 * lazily served child (D45) would never be handed its pages, and would be
 * stopped when the parent is gone. The same steps, the parent handing the
 * child every page first, as exit() does (docs/DECISIONS.md D46). */
EXPORT int daemon(int nochdir, int noclose)
{
	pid_t pid = fork();
	int fd;

	if (pid < 0)
		return -1;
	if (pid) {
		locale_t l = rt_enter();

		pager_exit();
		rt_leave(l);
		_exit(0);
	}
	if (setsid() < 0)
		return -1;
	if (!nochdir && chdir("/"))
		return -1;
	if (!noclose && (fd = open("/dev/null", O_RDWR)) >= 0) {
		dup2(fd, 0);
		dup2(fd, 1);
		dup2(fd, 2);
		if (fd > 2)
			close(fd);
	}
	return 0;
}

/* ---- exec ---- */

/* A parent that execs first hands its lazy children (D45) every page they
 * have not read, as at exit. A lazy child that execs no longer needs the
 * parent that served it, and the new program must not die of its
 * parent-death signal; the runtime of the new image forgets that signal
 * too, for exec calls that bypass these (execl and its kin). */
#define EXEC_WRAPPER(name, params, args)						\
	EXPORT int name params								\
	{										\
		static int (*next) params;						\
											\
		if (!next)								\
			next = (int (*) params)dlsym(RTLD_NEXT, #name);			\
		if (!next) {								\
			errno = ENOSYS;							\
			return -1;							\
		}									\
		locale_t l = rt_enter();						\
											\
		pager_exit(); /* UCX may allocate: as a runtime thread */		\
		forkchild_forget_parent();						\
		rt_leave(l);								\
		return next args;							\
	}
EXEC_WRAPPER(execve, (const char *path, char *const argv[], char *const envp[]), (path, argv, envp))
EXEC_WRAPPER(execv, (const char *path, char *const argv[]), (path, argv))
EXEC_WRAPPER(execvp, (const char *file, char *const argv[]), (file, argv))
EXEC_WRAPPER(execvpe, (const char *file, char *const argv[], char *const envp[]), (file, argv, envp))

/* ---- error texts ----
 * glibc's strerror, strerror_r and printf's %m look the text up through
 * gettext, which walks the program's text-domain bindings (bindtextdomain,
 * called by most GNU programs at start) and caches: the program's malloc
 * made them, so they live in the managed region. A runtime thread reading
 * an evicted page of them faults on itself: the fault handler then waits for
 * itself (UCX formats strerror(ENOMEM) when its memory pool cannot grow in a
 * full cgroup, and GNU sort hung so). Runtime threads get the untranslated
 * text, from a table in the C library that touches no heap; the program's
 * threads get glibc's own. log.c expands %m the same way for every caller. */
static const char *error_text(int errnum)
{
	const char *d = strerrordesc_np(errnum);

	return d ? d : "Unknown error";
}

EXPORT char *strerror(int errnum)
{
	if (rt_internal)
		return (char *)error_text(errnum);
	return strerror_l(errnum, uselocale((locale_t)0));
}

EXPORT char *strerror_r(int errnum, char *buf, size_t len)
{
	static char *(*next)(int, char *, size_t);

	if (rt_internal || !(next || (next = (char *(*)(int, char *, size_t))dlsym(RTLD_NEXT, "strerror_r"))))
		return (char *)error_text(errnum);
	return next(errnum, buf, len);
}

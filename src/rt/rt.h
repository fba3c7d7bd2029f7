/* rt: the preloaded runtime's start-up and global state. rt_early() reads
 * the options; the start (at exec, or once the process grows: D87) reserves
 * the managed region, points the allocator at it, connects to the memnodes
 * and starts the fault handler and the watchdog. Threads of the runtime itself (and the threads
 * they create) are marked rt_internal: their allocations and mappings stay
 * outside the region, so the handler can never fault on itself. */
#ifndef COMEX_RT_RT_H
#define COMEX_RT_RT_H

#include <locale.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

enum rt_mode { RT_OFF, RT_MANAGED, RT_DETACHED };

extern __thread int rt_internal __attribute__((tls_model("initial-exec")));
extern int rt_mode;
/* Nonzero while the runtime waits to start (option start-after); the
 * interposed allocation calls of program threads then count what they take
 * (bytes; a free negative) with rt_grow, which starts it first when the
 * count passes start-after and may_start (not within the C library). */
extern int rt_pending;
void rt_grow(int64_t bytes, bool may_start);
extern char *rt_heap_lo, *rt_heap_hi, *rt_region_hi; /* heap arena, then the mmap area */

/* The C locale, which libc keeps in static memory. Runtime code runs under it:
 * libc calls on the fault path (UCX's keepalive parses /proc with sscanf)
 * must not read the program's locale, which setlocale() put in managed
 * memory that may be evicted: the handler would wait for itself. */
extern locale_t rt_c_locale;

void rt_early(void);
/* Starts fn(arg) as a detached runtime thread named name, which takes no
 * signals and whose stack stays out of core dumps. Returns 0 (its id in
 * *t_out unless NULL) or -errno. */
int rt_start_thread(void *(*fn)(void *), void *arg, const char *name, pthread_t *t_out);
/* Looks up the C library's descriptor calls behind interpose_fd.c's, once,
 * before any runtime thread runs (dlsym takes the dynamic linker's lock). */
void interpose_fd_resolve(void);
/* Takes the core-dumping signals the program leaves at their default, so
 * that a core holds every page (interpose_sig.c; docs/DECISIONS.md D48). */
void interpose_sig_install(void);

/* Runtime code on a program thread (an interposed call reaching the pager, a
 * fork handler): allocations outside the region, libc in the C locale.
 * Returns what rt_leave restores. */
static inline locale_t rt_enter(void)
{
	rt_internal++;
	return uselocale(rt_c_locale);
}

static inline void rt_leave(locale_t prev)
{
	uselocale(prev);
	rt_internal--;
}

/* rt_heap_lo is published last (acquire here): a process that waited to
 * start reserves the region while its other threads free blocks. NULL: no
 * region yet, so nothing is in it. */
static inline bool rt_in_heap(const void *p)
{
	const char *lo = __atomic_load_n(&rt_heap_lo, __ATOMIC_ACQUIRE);

	return lo && (const char *)p >= lo && (const char *)p < rt_heap_hi;
}

static inline bool rt_in_region(const void *p)
{
	const char *lo = __atomic_load_n(&rt_heap_lo, __ATOMIC_ACQUIRE);

	return lo && (const char *)p >= lo && (const char *)p < rt_region_hi;
}

#endif

/* interpose_cxx: C++'s global operator new and delete (Itanium ABI names),
 * put in front of the C++ runtime's so that every C++
 * allocation takes comex's malloc family (interpose.c) and no C++ runtime
 * has to be loaded into C programs (docs/DECISIONS.md D17). */
#include <dlfcn.h>
#include <malloc.h>
#include <stdbool.h>
#include <stdlib.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))

/* Out of memory: what operator new must do, done by the program's own C++
 * runtime, found by name (libstdc++ and libc++ spell it alike under these
 * Itanium names; a program calling operator new has one of them loaded).
 * Calls the new_handler while there is one and retries, else throws
 * std::bad_alloc (the throw unwinds through this frame: x86-64 and arm64
 * compilers emit unwind tables for C, and CMake adds -funwind-tables).
 * nothrow: returns NULL instead of throwing, without the handler (a handler
 * that throws could not be caught here). align 0: malloc's alignment. */
static void *out_of_memory(size_t n, size_t align, bool nothrow)
{
	void (*(*get_handler)(void))(void) = nothrow ? NULL : dlsym(RTLD_DEFAULT, "_ZSt15get_new_handlerv");
	void (*throw_bad_alloc)(void);
	static const char msg[] = "comex: operator new: out of memory and no C++ runtime to throw std::bad_alloc\n";

	for (void (*h)(void); get_handler && (h = get_handler());) {
		void *p;

		h();
		if ((p = align ? memalign(align, n) : malloc(n)))
			return p;
	}
	if (nothrow)
		return NULL;
	if ((throw_bad_alloc = (void (*)(void))dlsym(RTLD_DEFAULT, "_ZSt17__throw_bad_allocv")) ||
	    (throw_bad_alloc = (void (*)(void))dlsym(RTLD_DEFAULT, "_ZNSt3__117__throw_bad_allocEv")))
		throw_bad_alloc();
	(void)!write(2, msg, sizeof(msg) - 1);
	abort();
}

static void *new_of(size_t n, size_t align, bool nothrow)
{
	void *p;

	n = n ? n : 1; /* operator new(0) returns a unique pointer */
	p = align ? memalign(align, n) : malloc(n);
	return p ? p : out_of_memory(n, align, nothrow);
}

/* new and new[] (std::size_t), nothrow, aligned (std::align_val_t). As in
 * the C++ runtimes, new[] is new, and every delete form is the plain
 * delete: a program that replaces operator new and delete (a pool) gets
 * every form through its own. A nothrow new calls the program's operator
 * new when it replaced it; C cannot catch what that throws, so then the
 * next library's nothrow new (its C++ runtime's) does. */
EXPORT void *_Znwm(size_t n);
EXPORT void *_Znam(size_t n);
EXPORT void *_ZnwmRKSt9nothrow_t(size_t n, const void *nt);
EXPORT void *_ZnamRKSt9nothrow_t(size_t n, const void *nt);
EXPORT void *_ZnwmSt11align_val_t(size_t n, size_t a);
EXPORT void *_ZnamSt11align_val_t(size_t n, size_t a);
EXPORT void *_ZnwmSt11align_val_tRKSt9nothrow_t(size_t n, size_t a, const void *nt);
EXPORT void *_ZnamSt11align_val_tRKSt9nothrow_t(size_t n, size_t a, const void *nt);
/* ours, whatever the program defines (hidden aliases: no interposition) */
extern void *own_new(size_t n) __attribute__((alias("_Znwm"), visibility("hidden")));
extern void *own_new_aligned(size_t n, size_t a) __attribute__((alias("_ZnwmSt11align_val_t"), visibility("hidden")));

void *_Znwm(size_t n) { return new_of(n, 0, false); }
void *_Znam(size_t n) { return _Znwm(n); }
void *_ZnwmSt11align_val_t(size_t n, size_t a) { return new_of(n, a, false); }
void *_ZnamSt11align_val_t(size_t n, size_t a) { return _ZnwmSt11align_val_t(n, a); }

/* nothrow new of n bytes (align: 0, or the alignment) by the next
 * library's, which catches what the program's operator new throws */
static void *replaced_nothrow(const char *sym, size_t n, size_t align, const void *nt)
{
	void *next = dlsym(RTLD_NEXT, sym);

	if (!next)
		return NULL;
	return align ? ((void *(*)(size_t, size_t, const void *))next)(n, align, nt)
		     : ((void *(*)(size_t, const void *))next)(n, nt);
}

void *_ZnwmRKSt9nothrow_t(size_t n, const void *nt)
{
	return (void *)_Znwm == (void *)own_new ? new_of(n, 0, true) : replaced_nothrow("_ZnwmRKSt9nothrow_t", n, 0, nt);
}

void *_ZnamRKSt9nothrow_t(size_t n, const void *nt) { return _ZnwmRKSt9nothrow_t(n, nt); }

void *_ZnwmSt11align_val_tRKSt9nothrow_t(size_t n, size_t a, const void *nt)
{
	return (void *)_ZnwmSt11align_val_t == (void *)own_new_aligned
		       ? new_of(n, a, true)
		       : replaced_nothrow("_ZnwmSt11align_val_tRKSt9nothrow_t", n, a, nt);
}

void *_ZnamSt11align_val_tRKSt9nothrow_t(size_t n, size_t a, const void *nt)
{
	return _ZnwmSt11align_val_tRKSt9nothrow_t(n, a, nt);
}

/* delete and delete[]: plain, sized, aligned, sized and aligned, nothrow */
EXPORT void _ZdlPv(void *p);
EXPORT void _ZdaPv(void *p);
EXPORT void _ZdlPvm(void *p, size_t n);
EXPORT void _ZdaPvm(void *p, size_t n);
EXPORT void _ZdlPvSt11align_val_t(void *p, size_t a);
EXPORT void _ZdaPvSt11align_val_t(void *p, size_t a);
EXPORT void _ZdlPvmSt11align_val_t(void *p, size_t n, size_t a);
EXPORT void _ZdaPvmSt11align_val_t(void *p, size_t n, size_t a);
EXPORT void _ZdlPvRKSt9nothrow_t(void *p, const void *nt);
EXPORT void _ZdaPvRKSt9nothrow_t(void *p, const void *nt);
EXPORT void _ZdlPvSt11align_val_tRKSt9nothrow_t(void *p, size_t a, const void *nt);
EXPORT void _ZdaPvSt11align_val_tRKSt9nothrow_t(void *p, size_t a, const void *nt);

void _ZdlPv(void *p) { free(p); }
void _ZdaPv(void *p) { _ZdlPv(p); }
void _ZdlPvm(void *p, size_t n) { (void)n; _ZdlPv(p); }
void _ZdaPvm(void *p, size_t n) { (void)n; _ZdaPv(p); }
void _ZdlPvSt11align_val_t(void *p, size_t a) { (void)a; free(p); }
void _ZdaPvSt11align_val_t(void *p, size_t a) { _ZdlPvSt11align_val_t(p, a); }
void _ZdlPvmSt11align_val_t(void *p, size_t n, size_t a) { (void)n; _ZdlPvSt11align_val_t(p, a); }
void _ZdaPvmSt11align_val_t(void *p, size_t n, size_t a) { (void)n; _ZdaPvSt11align_val_t(p, a); }
void _ZdlPvRKSt9nothrow_t(void *p, const void *nt) { (void)nt; _ZdlPv(p); }
void _ZdaPvRKSt9nothrow_t(void *p, const void *nt) { (void)nt; _ZdaPv(p); }
void _ZdlPvSt11align_val_tRKSt9nothrow_t(void *p, size_t a, const void *nt) { (void)nt; _ZdlPvSt11align_val_t(p, a); }
void _ZdaPvSt11align_val_tRKSt9nothrow_t(void *p, size_t a, const void *nt) { (void)nt; _ZdaPvSt11align_val_t(p, a); }

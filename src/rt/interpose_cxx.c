/* interpose_cxx: C++'s global operator new and delete (Itanium ABI names),
 * put in front of the C++ runtime's and mimalloc's so that every C++
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

/* new and new[] (std::size_t), nothrow, aligned (std::align_val_t) */
EXPORT void *_Znwm(size_t n);
EXPORT void *_Znam(size_t n);
EXPORT void *_ZnwmRKSt9nothrow_t(size_t n, const void *nt);
EXPORT void *_ZnamRKSt9nothrow_t(size_t n, const void *nt);
EXPORT void *_ZnwmSt11align_val_t(size_t n, size_t a);
EXPORT void *_ZnamSt11align_val_t(size_t n, size_t a);
EXPORT void *_ZnwmSt11align_val_tRKSt9nothrow_t(size_t n, size_t a, const void *nt);
EXPORT void *_ZnamSt11align_val_tRKSt9nothrow_t(size_t n, size_t a, const void *nt);

void *_Znwm(size_t n) { return new_of(n, 0, false); }
void *_Znam(size_t n) { return new_of(n, 0, false); }
void *_ZnwmRKSt9nothrow_t(size_t n, const void *nt) { (void)nt; return new_of(n, 0, true); }
void *_ZnamRKSt9nothrow_t(size_t n, const void *nt) { (void)nt; return new_of(n, 0, true); }
void *_ZnwmSt11align_val_t(size_t n, size_t a) { return new_of(n, a, false); }
void *_ZnamSt11align_val_t(size_t n, size_t a) { return new_of(n, a, false); }
void *_ZnwmSt11align_val_tRKSt9nothrow_t(size_t n, size_t a, const void *nt) { (void)nt; return new_of(n, a, true); }
void *_ZnamSt11align_val_tRKSt9nothrow_t(size_t n, size_t a, const void *nt) { (void)nt; return new_of(n, a, true); }

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
void _ZdaPv(void *p) { free(p); }
void _ZdlPvm(void *p, size_t n) { (void)n; free(p); }
void _ZdaPvm(void *p, size_t n) { (void)n; free(p); }
void _ZdlPvSt11align_val_t(void *p, size_t a) { (void)a; free(p); }
void _ZdaPvSt11align_val_t(void *p, size_t a) { (void)a; free(p); }
void _ZdlPvmSt11align_val_t(void *p, size_t n, size_t a) { (void)n; (void)a; free(p); }
void _ZdaPvmSt11align_val_t(void *p, size_t n, size_t a) { (void)n; (void)a; free(p); }
void _ZdlPvRKSt9nothrow_t(void *p, const void *nt) { (void)nt; free(p); }
void _ZdaPvRKSt9nothrow_t(void *p, const void *nt) { (void)nt; free(p); }
void _ZdlPvSt11align_val_tRKSt9nothrow_t(void *p, size_t a, const void *nt) { (void)a; (void)nt; free(p); }
void _ZdaPvSt11align_val_tRKSt9nothrow_t(void *p, size_t a, const void *nt) { (void)a; (void)nt; free(p); }

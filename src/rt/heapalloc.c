/* heapalloc: mimalloc loaded with dlopen at the runtime's start. Linked into
 * libcomex-rt.so instead, it was one more shared object that every process
 * comex run execs loaded, relocated and initialised, paging or not.
 * RTLD_LOCAL: mimalloc's own malloc and operator new (Debian's build exports
 * them) stay out of the program's symbol search (D17); only the entries
 * below are used, through this table. */
#include "heapalloc.h"

#include <dlfcn.h>
#include <mimalloc.h>
#include <stdbool.h>
#include <stdio.h>

struct heapalloc heapalloc;

/* mimalloc's entries by name; the table's order */
static const char *const entry[] = { "mi_malloc", "mi_calloc", "mi_realloc", "mi_free", "mi_memalign",
				     "mi_valloc", "mi_pvalloc", "mi_usable_size" };

const char *heapalloc_start(void *base, size_t len)
{
	void (*set)(mi_option_t, long);
	bool (*manage)(void *, size_t, bool, bool, bool, int, bool, mi_arena_id_t *);
	void *h = dlopen(HEAPALLOC_SO, RTLD_NOW | RTLD_LOCAL);
	void *fn[sizeof(entry) / sizeof(entry[0])];
	bool missing = false;
	mi_arena_id_t arena;

	_Static_assert(sizeof(fn) == sizeof(heapalloc), "one name per entry of struct heapalloc");
	if (!h) { /* said once, by the start's caller; a start is serialized (arming, or exec) */
		static char why[512];

		snprintf(why, sizeof(why), "cannot load the allocator, mimalloc (Debian: apt-get install libmimalloc2.0): %s",
			 dlerror());
		return why;
	}
	set = (void (*)(mi_option_t, long))dlsym(h, "mi_option_set");
	manage = (bool (*)(void *, size_t, bool, bool, bool, int, bool, mi_arena_id_t *))dlsym(
		h, "mi_manage_os_memory_ex");
	for (unsigned i = 0; i < sizeof(entry) / sizeof(entry[0]); i++)
		missing |= !(fn[i] = dlsym(h, entry[i]));
	if (missing || !set || !manage)
		return HEAPALLOC_SO " lacks an entry the runtime uses (mimalloc 2.0 or later is needed)";
	set(mi_option_limit_os_alloc, 1); /* the region, and nothing else */
	if (!manage(base, len, true, false, true, -1, false, &arena))
		return "the allocator refused the managed region";
	__builtin_memcpy(&heapalloc, fn, sizeof(heapalloc));
	return NULL;
}

bool heapalloc_loadable(void)
{
	return dlopen(HEAPALLOC_SO, RTLD_NOW | RTLD_LOCAL) != NULL;
}

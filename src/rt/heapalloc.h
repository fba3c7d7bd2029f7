/* heapalloc: the allocator of the managed heap, mimalloc, confined to the
 * first half of the region. It is loaded when the runtime starts, not at
 * exec: a process that never pages never loads it (docs/DECISIONS.md D87). */
#ifndef COMEX_RT_HEAPALLOC_H
#define COMEX_RT_HEAPALLOC_H

#include <stdbool.h>
#include <stddef.h>

/* mimalloc's entries. Set by heapalloc_start before rt_mode leaves RT_OFF
 * and before rt_heap_lo is published (both with release), never after:
 * callers read either with acquire first (use_libc, rt_in_heap). */
struct heapalloc {
	void *(*malloc)(size_t n);
	void *(*calloc)(size_t k, size_t n);
	void *(*realloc)(void *p, size_t n);
	void (*free)(void *p);
	void *(*memalign)(size_t align, size_t n);
	void *(*valloc)(size_t n);
	void *(*pvalloc)(size_t n);
	size_t (*usable_size)(const void *p);
};
extern struct heapalloc heapalloc;

/* Loads mimalloc and gives it [base, base + len) as the only memory it may
 * use. NULL, or why not (the dynamic linker's words; a program that used up
 * the static TLS surplus cannot load it: mimalloc needs 16 bytes). At the
 * start only: it waits for the dynamic linker's lock. The calling thread
 * (after a lazy start, any program thread) owns mimalloc's main heap; after
 * it ended, what other threads freed of its blocks was reused all the same
 * (measured by hand: resident size 36 MiB after one round, 71 after six). */
const char *heapalloc_start(void *base, size_t len);
/* Whether mimalloc can be loaded; it is then, and stays (the root asks at
 * exec, so that a missing library is said then, not at a late start). */
bool heapalloc_loadable(void);

#endif

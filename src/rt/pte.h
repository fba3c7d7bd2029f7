/* pte: the runtime's page table, one 64-bit entry per 4 KiB page of the
 * managed region. Only the fault-handler thread and holders of the pager lock
 * change entries; anyone may read them as hints (fork preparation does). */
#ifndef COMEX_RT_PTE_H
#define COMEX_RT_PTE_H

#include <stdint.h>

#define PAGE_SHIFT 12
#define PAGE_SIZE  (1ul << PAGE_SHIFT)

enum pte_state {
	PTE_FREE = 0,    /* never touched, or not mapped: which of the two, in the mmap area, is
			  * the ranges allocator's to say (D50); a mapped one reads as zero */
	PTE_EMPTY,       /* discarded, or a free page a call forgot: reads as zero */
	PTE_DIRTY,       /* resident, no valid remote copy */
	PTE_CLEAN,       /* resident, write-protected, remote copy at (node, pfn) valid */
	PTE_REMOTE,      /* only at (node, pfn); maybe also in the read buffer */
	PTE_WBUF,        /* in node's write buffer, frame pfn reserved, not yet written */
	PTE_FOREIGN,     /* a file or shared mapping the program placed over the region */
	PTE_LOST,        /* its only copy was on a memnode that failed: a fault on it stops the program */
};

/* bits 0-2 state, 3 referenced (second chance), 4-15 generation (matches the
 * eviction ring's item for this residency), 16-23 node, 24-55 pfn, 56 keep,
 * 57-59 protection, 60 locked.
 * Keep (DIRTY only, never carried over by pte_make): the page still owns its
 * frame (node, pfn) and will be rewritten there, so pages evicted together
 * stay in consecutive frames and come back in one read. */
typedef uint64_t pte_t;

#define PTE_REF    (1ull << 3)
#define PTE_KEEP   (1ull << 56)
/* The page's protection as the program last set it through mprotect (or
 * mmap), stored XOR PROT_READ|PROT_WRITE so that 0 is read-write; and
 * whether the program locked it (mlock, MAP_LOCKED, mlockall): never
 * evicted. Attributes of the mapping, not of the contents: every state
 * change keeps them; only unmapping (PTE_FREE) clears them (prot.c). */
#define PTE_PROT_SHIFT 57
#define PTE_PROT_RW    3ull /* PROT_READ | PROT_WRITE */
#define PTE_LOCKED (1ull << 60)
#define PTE_ATTRS  (7ull << PTE_PROT_SHIFT | PTE_LOCKED)
#define PTE_GEN_SHIFT 4
#define PTE_GEN_MASK  0xfffull

static inline unsigned pte_state(pte_t e) { return e & 7; }
static inline unsigned pte_node(pte_t e) { return (e >> 16) & 0xff; }
static inline uint32_t pte_pfn(pte_t e) { return (uint32_t)(e >> 24); }
static inline unsigned pte_gen(pte_t e) { return (e >> PTE_GEN_SHIFT) & PTE_GEN_MASK; }

/* PROT_* bits of the page's mapping. */
static inline unsigned pte_prot(pte_t e) { return (unsigned)(((e >> PTE_PROT_SHIFT) & 7) ^ PTE_PROT_RW); }
static inline pte_t pte_set_prot(pte_t e, unsigned prot)
{
	return (e & ~(7ull << PTE_PROT_SHIFT)) | (((pte_t)prot & 7) ^ PTE_PROT_RW) << PTE_PROT_SHIFT;
}

/* Same gen, ref and attributes, new state and location. */
static inline pte_t pte_make(pte_t old, unsigned state, unsigned node, uint32_t pfn)
{
	return (old & ((PTE_GEN_MASK << PTE_GEN_SHIFT) | PTE_REF | PTE_ATTRS)) | state |
	       ((uint64_t)node << 16) | ((uint64_t)pfn << 24);
}

static inline pte_t pte_set_state(pte_t old, unsigned state) { return (old & ~7ull) | state; }

static inline int pte_resident(pte_t e)
{
	unsigned s = pte_state(e);
	return s == PTE_DIRTY || s == PTE_CLEAN;
}

static inline int pte_has_frame(pte_t e)
{
	unsigned s = pte_state(e);
	return s == PTE_CLEAN || s == PTE_REMOTE || s == PTE_WBUF;
}

#endif

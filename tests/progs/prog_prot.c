/* prog_prot [MiB=48]: protections, JIT and memory advice over memory larger
 * than local memory. Each phase pushes everything out (a filler of MiB
 * bytes) between steps, so pages are remote when they are flipped, executed,
 * read or advised:
 * - read-only and PROT_NONE ranges keep their data; a PROT_NONE page faults
 *   (SIGSEGV, SEGV_ACCERR) resident, remote, and next to a page just read;
 *   mprotect back to read-write gives the data back;
 * - JIT: x86-64 functions written into pages (mmap'd and malloc'd), made
 *   RX, called, pushed out, called again, flipped RW while remote, rewritten,
 *   RX again, called; also a read-write-execute mapping;
 * - pages made writable again by a raw mprotect system call keep writes;
 * - mremap keeps a read-only mapping read-only;
 * - a fork while PROT_NONE pages are remote: the child gets their data;
 * - mlock'ed pages and a MAP_LOCKED mapping stay resident (mincore);
 * - a garbage collector's write barrier: read-only pages made writable by
 *   mprotect in the SIGSEGV handler of their first write;
 * - MADV_FREE, DONTFORK, WIPEONFORK, (NO)HUGEPAGE, COLD, PAGEOUT,
 *   POPULATE_READ/WRITE, and MAP_POPULATE, MAP_GROWSDOWN, MAP_HUGETLB.
 * Prints one line per phase; identical natively and under comex. */
#include <setjmp.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common.h"

#ifndef MADV_COLD
#define MADV_COLD 20
#endif
#ifndef MADV_PAGEOUT
#define MADV_PAGEOUT 21
#endif
#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22
#endif
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif
#ifndef MADV_WIPEONFORK
#define MADV_WIPEONFORK 18
#endif

#define WPP (PAGE / 8)

static uint64_t *filler;
static size_t filler_bytes;

static void push_out(void) { push_out_with(filler, filler_bytes); }

/* ---- SIGSEGV probes ---- */

static sigjmp_buf probe_env;
static volatile void *probe_addr;
static volatile int probe_code;

static void on_segv(int sig, siginfo_t *si, void *ctx)
{
	(void)sig;
	(void)ctx;
	probe_addr = si->si_addr;
	probe_code = si->si_code;
	siglongjmp(probe_env, 1);
}

/* 1 if reading (or writing) p faults with SIGSEGV at p with code, 0 if it
 * does not. */
static int faults_with(volatile char *p, int write, int code)
{
	struct sigaction sa = { .sa_sigaction = on_segv, .sa_flags = SA_SIGINFO | SA_NODEFER }, old;
	int hit = 0;

	sigaction(SIGSEGV, &sa, &old);
	if (!sigsetjmp(probe_env, 1)) {
		if (write)
			*p = 1;
		else
			(void)*p;
	} else {
		if (probe_addr != (void *)p || probe_code != code)
			die("fault at %p code %d, expected %p code %d", (void *)probe_addr, probe_code, (void *)p, code);
		hit = 1;
	}
	sigaction(SIGSEGV, &old, NULL);
	return hit;
}

static int faults(volatile char *p, int write) { return faults_with(p, write, SEGV_ACCERR); }

static void protect(void *p, size_t len, int prot)
{
	if (mprotect(p, len, prot))
		die("mprotect %p+%zu %d: %s", p, len, prot, strerror(errno));
}

/* ---- phase 1: read-only and PROT_NONE ---- */

static void phase_prot(size_t size)
{
	size_t words = size / 8, pages = size / PAGE;
	uint64_t *a = map_anon(size);
	char *c = (char *)a;
	size_t ro = pages / 4, none = pages / 2, nn = 16; /* RO: [ro, ro+nn), NONE: [none, none+nn) */
	int segv = 0;

	fill(a, words, 0x91, 0);
	protect(c + ro * PAGE, nn * PAGE, PROT_READ);
	protect(c + none * PAGE, nn * PAGE, PROT_NONE);
	segv += faults(c + none * PAGE, 0);          /* resident */
	segv += faults(c + ro * PAGE + 8, 1);        /* read-only, resident */
	push_out();
	expect(a + ro * WPP, nn * WPP, 0x91, ro * WPP, "read-only range after push-out");
	segv += faults(c + ro * PAGE + 16, 1);       /* read-only, brought back by a read */
	segv += faults(c + (none + 3) * PAGE, 0);    /* remote */
	(void)*(volatile char *)(c + (none - 1) * PAGE); /* its neighbour, read (prefetch) */
	segv += faults(c + none * PAGE + 100, 0);
	segv += faults(c + (none + nn - 1) * PAGE, 1);
	expect(a, words / 8, 0x91, 0, "first eighth");
	push_out();
	/* remote while flipped: NONE -> RW and RO -> RW, written, back to NONE */
	protect(c + none * PAGE, nn * PAGE, PROT_READ | PROT_WRITE);
	protect(c + ro * PAGE, nn * PAGE, PROT_READ | PROT_WRITE);
	expect(a + none * WPP, nn * WPP, 0x91, none * WPP, "PROT_NONE range made read-write again");
	fill(a + ro * WPP, nn * WPP, 0x92, 0);
	protect(c + ro * PAGE, nn * PAGE, PROT_READ);
	protect(c + none * PAGE, nn * PAGE, PROT_NONE);
	push_out();
	segv += faults(c + (none + 5) * PAGE, 1);
	expect(a + ro * WPP, nn * WPP, 0x92, 0, "read-only range rewritten while read-write");
	protect(c + none * PAGE, nn * PAGE, PROT_READ);
	expect(a + none * WPP, nn * WPP, 0x91, none * WPP, "PROT_NONE range made read-only");
	expect(a + (none + nn) * WPP, words - (none + nn) * WPP, 0x91, (none + nn) * WPP, "the rest");
	printf("prot: %d faults on protected pages, sum %016" PRIx64 "\n", segv, sum64(a, size, 0));

	/* an mprotect that bypasses the C library (a raw system call): the
	 * pages are writable although comex saw them made read-only */
	uint64_t *r = map_anon(64 * PAGE);
	fill(r, 64 * WPP, 0x94, 0);
	protect(r, 64 * PAGE, PROT_READ);
	push_out();
	if (syscall(SYS_mprotect, r, 64 * PAGE, PROT_READ | PROT_WRITE))
		die("mprotect system call: %s", strerror(errno));
	fill(r, 64 * WPP, 0x95, 0);
	push_out();
	expect(r, 64 * WPP, 0x95, 0, "pages made writable by a raw mprotect");
	fill(r, 64 * WPP, 0x96, 0);
	push_out();
	expect(r, 64 * WPP, 0x96, 0, "pages made writable by a raw mprotect, rewritten");
	munmap(r, 64 * PAGE);

	/* mremap moves a read-only mapping with its protection */
	uint64_t *m = map_anon(64 * PAGE);
	fill(m, 64 * WPP, 0x93, 0);
	protect(m, 64 * PAGE, PROT_READ);
	push_out();
	uint64_t *to = map_anon(128 * PAGE); /* a move, not a growth in place */
	uint64_t *m2 = mremap(m, 64 * PAGE, 128 * PAGE, MREMAP_MAYMOVE | MREMAP_FIXED, to);
	if (m2 == MAP_FAILED)
		die("mremap: %s", strerror(errno));
	expect(m2, 64 * WPP, 0x93, 0, "read-only mapping moved by mremap");
	printf("mremap: read-only mapping moved: write faults %d\n", faults((char *)m2 + 5 * PAGE, 1));
	munmap(m2, 128 * PAGE);

	/* fork while PROT_NONE pages are remote (flipped while remote): the
	 * child has their data */
	protect(c + none * PAGE, nn * PAGE, PROT_READ | PROT_WRITE);
	push_out();
	protect(c + none * PAGE, nn * PAGE, PROT_NONE);
	pid_t pid = fork();
	if (pid < 0)
		die("fork: %s", strerror(errno));
	if (!pid) {
		protect(c + none * PAGE, nn * PAGE, PROT_READ | PROT_WRITE);
		_exit(check(a + none * WPP, nn * WPP, 0x91, none * WPP) == nn * WPP ? 0 : 3);
	}
	int st;
	waitpid(pid, &st, 0);
	printf("fork: child read the PROT_NONE pages: %s\n", WIFEXITED(st) && !WEXITSTATUS(st) ? "intact" : "WRONG");
	munmap(a, size);
}

/* ---- phase 2: JIT ---- */

#if defined(__x86_64__)
/* lea eax, [rdi + imm32]; ret: f(x) = x + imm */
static void emit(unsigned char *p, int32_t imm)
{
	p[0] = 0x8d;
	p[1] = 0x87;
	memcpy(p + 2, &imm, 4);
	p[6] = 0xc3;
}

static uint64_t call_all(unsigned char *code, size_t pages, int x)
{
	uint64_t h = 0;

	for (size_t i = 0; i < pages; i++) {
		int (*f)(int) = (int (*)(int))(void *)(code + i * PAGE + (i * 64) % (PAGE - 64));
		h = mix64(h ^ (uint32_t)f(x + (int)i));
	}
	return h;
}

static void emit_all(unsigned char *code, size_t pages, int32_t base)
{
	for (size_t i = 0; i < pages; i++)
		emit(code + i * PAGE + (i * 64) % (PAGE - 64), base + (int32_t)(i * 7));
}

/* Write, RX, call, push out, call, flip RW (remote), rewrite, RX, push out, call. */
static uint64_t jit_round(unsigned char *code, size_t pages, int rwx)
{
	int rx = rwx ? PROT_READ | PROT_WRITE | PROT_EXEC : PROT_READ | PROT_EXEC;
	int rw = rwx ? rx : PROT_READ | PROT_WRITE;
	uint64_t h;

	protect(code, pages * PAGE, rw);
	emit_all(code, pages, 1000);
	protect(code, pages * PAGE, rx);
	h = call_all(code, pages, 1);
	push_out();
	h = mix64(h ^ call_all(code, pages, 2));
	push_out();
	protect(code, pages * PAGE, rw);
	emit_all(code, pages, 5000);
	protect(code, pages * PAGE, rx);
	push_out();
	h = mix64(h ^ call_all(code, pages, 3));
	protect(code, pages * PAGE, rw); /* W^X: writable again, not executable */
	push_out();
	emit_all(code, pages, 9000);
	protect(code, pages * PAGE, rx);
	return mix64(h ^ call_all(code, pages, 4));
}

static void phase_jit(void)
{
	size_t pages = 256;
	unsigned char *code = map_anon(pages * PAGE), *heap;

	printf("jit mmap: %016" PRIx64 "\n", jit_round(code, pages, 0));
	printf("jit rwx: %016" PRIx64 "\n", jit_round(code, pages, 1));
	munmap(code, pages * PAGE);
	if (posix_memalign((void **)&heap, PAGE, 64 * PAGE))
		die("posix_memalign");
	printf("jit heap: %016" PRIx64 "\n", jit_round(heap, 64, 0));
	protect(heap, 64 * PAGE, PROT_READ | PROT_WRITE);
	free(heap);
}
#else
static void phase_jit(void) { printf("jit: not x86-64\n"); }
#endif

/* ---- phase 3: locked memory ---- */

static size_t resident_pages(void *p, size_t len)
{
	unsigned char vec[1024];
	size_t n = 0;

	if (len / PAGE > sizeof vec || mincore(p, len, vec))
		die("mincore %p+%zu: %s", p, len, strerror(errno));
	for (size_t i = 0; i < len / PAGE; i++)
		n += vec[i] & 1;
	return n;
}

static void phase_lock(void)
{
	size_t len = 256 * PAGE;
	uint64_t *l = map_anon(len), *ml;

	fill(l, len / 8, 0xa1, 0);
	if (mlock(l, len)) {
		printf("mlock: unavailable\n");
	} else {
		push_out();
		push_out();
		printf("mlock: %zu of %zu pages resident after push-out\n", resident_pages(l, len), len / PAGE);
		expect(l, len / 8, 0xa1, 0, "mlock'ed pages");
		/* mremap moves the lock with the pages */
		uint64_t *to = map_anon(len);
		uint64_t *l2 = mremap(l, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, to);
		if (l2 == MAP_FAILED)
			die("mremap of locked pages: %s", strerror(errno));
		l = l2;
		push_out();
		printf("mlock: %zu of %zu pages resident after mremap and push-out\n", resident_pages(l, len), len / PAGE);
		expect(l, len / 8, 0xa1, 0, "mlock'ed pages moved by mremap");
		munlock(l, len);
		push_out();
		expect(l, len / 8, 0xa1, 0, "munlock'ed pages");
	}
	munmap(l, len);
	ml = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_LOCKED, -1, 0);
	if (ml == MAP_FAILED) {
		printf("map_locked: unavailable\n");
		return;
	}
	printf("map_locked: %zu of %zu pages resident at once\n", resident_pages(ml, len), len / PAGE);
	fill(ml, len / 8, 0xa2, 0);
	push_out();
	printf("map_locked: %zu of %zu pages resident after push-out\n", resident_pages(ml, len), len / PAGE);
	expect(ml, len / 8, 0xa2, 0, "MAP_LOCKED pages");
	munmap(ml, len);
	/* whatever lands where the locked pages were reads zero */
	ml = map_anon(len);
	printf("after a locked mapping: zero %d\n", all_zero(ml, len));
	munmap(ml, len);
}

/* ---- phase 3b: a garbage collector's write barrier ----
 * Pages read-only; the first write to each takes SIGSEGV, whose handler
 * notes the page dirty and makes it writable (mprotect in a signal
 * handler), and the write is retried. */

static char *wb_base;
static size_t wb_pages, wb_faults;
static unsigned char *wb_dirty;

static void on_barrier(int sig, siginfo_t *si, void *ctx)
{
	size_t p = (size_t)((char *)si->si_addr - wb_base) / PAGE;

	(void)sig;
	(void)ctx;
	if ((char *)si->si_addr < wb_base || p >= wb_pages || wb_dirty[p])
		abort();
	wb_dirty[p] = 1;
	wb_faults++;
	if (mprotect(wb_base + p * PAGE, PAGE, PROT_READ | PROT_WRITE))
		abort();
}

static void phase_barrier(void)
{
	struct sigaction sa = { .sa_sigaction = on_barrier, .sa_flags = SA_SIGINFO }, old;
	size_t len = 1024 * PAGE, marked = 0;
	uint64_t *w = map_anon(len);

	wb_base = (char *)w;
	wb_pages = len / PAGE;
	wb_dirty = calloc(wb_pages, 1);
	fill(w, len / 8, 0xd1, 0);
	protect(w, len, PROT_READ);
	push_out();
	sigaction(SIGSEGV, &sa, &old);
	for (size_t i = 0; i < 3000; i++) {
		size_t p = mix64(i) % wb_pages;
		w[p * WPP + i % WPP] ^= 0x5555;
	}
	sigaction(SIGSEGV, &old, NULL);
	for (size_t p = 0; p < wb_pages; p++)
		marked += wb_dirty[p];
	push_out();
	printf("write barrier: %zu faults, %zu pages marked, sum %016" PRIx64 "\n", wb_faults, marked,
	       sum64(w, len, 0));
	munmap(w, len);
	free(wb_dirty);
}

/* ---- phase 4: advice and mmap flags ---- */

static void advise(void *p, size_t len, int advice, const char *name)
{
	if (madvise(p, len, advice))
		printf("madvise %s: %s\n", name, strerror(errno));
}

static void phase_advice(size_t size)
{
	size_t words = size / 8, pages = size / PAGE;
	uint64_t *a = map_anon(size);
	char *c = (char *)a;

	fill(a, words, 0xb1, 0);
	push_out();
	advise(a, size / 4, MADV_HUGEPAGE, "HUGEPAGE");
	advise(c + size / 4, size / 4, MADV_NOHUGEPAGE, "NOHUGEPAGE");
	advise(c + size / 2, size / 8, MADV_COLD, "COLD");
	advise(c + size / 2 + size / 8, size / 8, MADV_PAGEOUT, "PAGEOUT");
	expect(a, words, 0xb1, 0, "after HUGEPAGE, NOHUGEPAGE, COLD, PAGEOUT");
	advise(c + size / 2, size / 8, MADV_PAGEOUT, "PAGEOUT");   /* resident now */
	expect(a, words, 0xb1, 0, "after PAGEOUT of resident pages");
	push_out();
	advise(a, size / 2, MADV_POPULATE_READ, "POPULATE_READ");
	advise(c + size / 2, size / 4, MADV_POPULATE_WRITE, "POPULATE_WRITE");
	expect(a, words, 0xb1, 0, "after POPULATE_READ/WRITE");
	/* MADV_FREE: each page reads back intact or zero, and keeps later writes */
	advise(c + PAGE, 64 * PAGE, MADV_FREE, "FREE");
	size_t freed = 0;
	for (size_t p = 1; p < 65; p++) {
		if (all_zero(a + p * WPP, PAGE))
			freed++;
		else
			expect(a + p * WPP, WPP, 0xb1, p * WPP, "MADV_FREE'd page not freed");
	}
	fill(a + WPP, 64 * WPP, 0xb1, WPP);
	push_out();
	expect(a, words, 0xb1, 0, "after MADV_FREE and rewrite");
	(void)freed; /* how many the kernel took is its business */

	/* DONTFORK: gone in the child; WIPEONFORK: zero in the child */
	size_t q = pages / 4;
	advise(a, q * PAGE, MADV_DONTFORK, "DONTFORK");
	advise(c + q * PAGE, q * PAGE, MADV_WIPEONFORK, "WIPEONFORK");
	push_out();
	pid_t pid = fork();
	if (pid < 0)
		die("fork: %s", strerror(errno));
	if (!pid) {
		int r = 0;
		if (!faults_with(c + 5 * PAGE, 0, SEGV_MAPERR))
			r |= 1; /* still mapped in the child */
		if (!all_zero(c + q * PAGE, q * PAGE))
			r |= 2;
		if (check(a + 2 * q * WPP, (words - 2 * q * WPP), 0xb1, 2 * q * WPP) != words - 2 * q * WPP)
			r |= 4;
		_exit(r);
	}
	int st;
	waitpid(pid, &st, 0);
	printf("dontfork/wipeonfork: child status %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : 100 + WTERMSIG(st));
	expect(a, words, 0xb1, 0, "parent after fork with DONTFORK/WIPEONFORK");
	advise(a, q * PAGE, MADV_DOFORK, "DOFORK");
	advise(c + q * PAGE, q * PAGE, MADV_KEEPONFORK, "KEEPONFORK");
	printf("advice: sum %016" PRIx64 "\n", sum64(a, size, 0));
	munmap(a, size);

	/* mmap flags */
	size_t len = 1024 * PAGE;
	uint64_t *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (p == MAP_FAILED)
		die("mmap MAP_POPULATE: %s", strerror(errno));
	printf("map_populate: zero %d\n", all_zero(p, len));
	fill(p, len / 8, 0xb2, 0);
	push_out();
	expect(p, len / 8, 0xb2, 0, "MAP_POPULATE mapping");
	munmap(p, len);

	char *g = mmap(NULL, 16 * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_GROWSDOWN, -1, 0);
	if (g == MAP_FAILED)
		die("mmap MAP_GROWSDOWN: %s", strerror(errno));
	fill((uint64_t *)g, 16 * WPP, 0xb3, 0);
	push_out();
	expect((uint64_t *)g, 16 * WPP, 0xb3, 0, "MAP_GROWSDOWN mapping");
	munmap(g, 16 * PAGE);

	char *h = mmap(NULL, 2 * MiB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB, -1, 0);
	if (h == MAP_FAILED) {
		printf("map_hugetlb: unavailable\n"); /* no huge pages reserved: the same without comex */
	} else {
		fill((uint64_t *)h, 2 * MiB / 8, 0xb4, 0);
		push_out();
		expect((uint64_t *)h, 2 * MiB / 8, 0xb4, 0, "MAP_HUGETLB mapping");
		printf("map_hugetlb: intact\n");
		munmap(h, 2 * MiB);
	}
}

/* ---- phase 5: mlockall, and memory still locked at exit ---- */

static void phase_lockall(void)
{
	size_t len = 512 * PAGE;
	uint64_t *p, *more;

	munmap(filler, filler_bytes);
	if (mlockall(MCL_CURRENT | MCL_FUTURE)) {
		printf("mlockall: unavailable\n");
		return;
	}
	p = map_anon(len);
	fill(p, len / 8, 0xc1, 0);
	more = map_anon(filler_bytes / 2); /* locked too: nothing may be pushed out */
	fill(more, filler_bytes / 16, 0xc2, 0);
	printf("mlockall: %zu of %zu pages resident\n", resident_pages(p, len), len / PAGE);
	munlockall();
	munmap(more, filler_bytes / 2);
	expect(p, len / 8, 0xc1, 0, "after munlockall");
	munmap(p, len);
}

int main(int argc, char **argv)
{
	size_t size = arg_mib(argc, argv, 1, 48);

	setvbuf(stdout, NULL, _IOLBF, 0);
	filler_bytes = size;
	filler = map_anon(filler_bytes);
	phase_prot(size / 2);
	phase_jit();
	phase_lock();
	phase_barrier();
	phase_advice(size / 2);
	phase_lockall();
	/* locked until exit: comex's stats count it (locked_bytes) */
	uint64_t *keep = map_anon(16 * PAGE);
	fill(keep, 16 * WPP, 0xc3, 0);
	printf("locked at exit: %s\n", mlock(keep, 16 * PAGE) ? "unavailable" : "64 KiB");
	printf("done\n");
	return 0;
}

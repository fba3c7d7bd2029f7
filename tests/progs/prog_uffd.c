/* prog_uffd [MiB=32]: a program with a userfaultfd of its own (as CRIU,
 * QEMU or a GC would): 4x the given size of anonymous memory is filled and
 * pushed out of memory; then part of it, still holding its data, and a fresh
 * mapping are registered with the program's own descriptor for missing
 * pages; a thread of the program serves those faults with a pattern. The
 * registered data must be intact, discarded pages must come from the
 * program's handler, and the rest must be unchanged. Skips (exit 77) where
 * the program may not use userfaultfd. */
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <pthread.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common.h"

static size_t U;
static uint64_t *pusher;
static int ufd;
static char *page_buf;
static long served;

static void push_out(void)
{
	push_out_with(pusher, 2 * U);
}

/* The program's own fault handler: every missing page gets pattern 9 at its
 * address's word index, so the content says which page it is. */
static void *serve(void *arg)
{
	(void)arg;
	for (;;) {
		struct uffd_msg m;
		struct pollfd p = { .fd = ufd, .events = POLLIN };

		if (poll(&p, 1, -1) < 0 || read(ufd, &m, sizeof(m)) != sizeof(m))
			continue;
		if (m.event != UFFD_EVENT_PAGEFAULT)
			continue;
		uintptr_t a = m.arg.pagefault.address & ~(PAGE - 1);
		fill((uint64_t *)page_buf, PAGE / 8, 9, a / 8);
		struct uffdio_copy c = { .dst = a, .src = (uintptr_t)page_buf, .len = PAGE };
		/* counted before the copy wakes the faulting thread, which reads it */
		__atomic_add_fetch(&served, 1, __ATOMIC_RELEASE);
		if (ioctl(ufd, UFFDIO_COPY, &c) && errno != EEXIST)
			die("UFFDIO_COPY: %s", strerror(errno));
	}
	return NULL;
}

static void reg(void *p, size_t len, const char *what)
{
	struct uffdio_register r = { .range = { (uintptr_t)p, len }, .mode = UFFDIO_REGISTER_MODE_MISSING };
	if (ioctl(ufd, UFFDIO_REGISTER, &r))
		die("UFFDIO_REGISTER %s: %s", what, strerror(errno));
}

int main(int argc, char **argv)
{
	U = arg_mib(argc, argv, 1, 32);
	size_t W = U / 8, S = U / 2, SW = S / 8;
	pthread_t t;

	ufd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
	if (ufd < 0) {
		fprintf(stderr, "skip: userfaultfd: %s\n", strerror(errno));
		return 77;
	}
	struct uffdio_api api = { .api = UFFD_API };
	if (ioctl(ufd, UFFDIO_API, &api))
		die("UFFDIO_API: %s", strerror(errno));
	page_buf = map_anon(PAGE);
	pusher = map_anon(2 * U);
	uint64_t *a = map_anon(4 * U);
	fill(a, 4 * W, 1, 0);
	push_out();

	if (pthread_create(&t, NULL, serve, NULL))
		die("pthread_create");
	/* part of the filled memory: its data must survive the registration */
	char *part = (char *)a + U;
	reg(part, S, "filled memory");
	expect((uint64_t *)part, SW, 1, W, "registered memory keeps its data");
	/* discarded pages now fault to the program's handler */
	if (madvise(part, S / 2, MADV_DONTNEED))
		die("madvise: %s", strerror(errno));
	expect((uint64_t *)part, SW / 2, 9, (uintptr_t)part / 8, "discarded pages served by the program");
	expect((uint64_t *)part + SW / 2, SW / 2, 1, W + SW / 2, "registered pages not discarded");
	/* a fresh mapping, registered before any touch: every page from the program */
	uint64_t *f = map_anon(S);
	reg(f, S, "fresh mapping");
	expect(f, SW, 9, (uintptr_t)f / 8, "fresh registered mapping");
	long got = __atomic_load_n(&served, __ATOMIC_ACQUIRE);
	if (got != (long)(S / 2 / PAGE + S / PAGE))
		die("the program's handler served %ld faults, expected %zu", got, S / 2 / PAGE + S / PAGE);
	/* the rest of the memory is unchanged, also after more eviction */
	push_out();
	expect(a, W, 1, 0, "memory before the registered part");
	expect((uint64_t *)(part + S), 3 * W - SW, 1, W + SW, "memory after the registered part");
	/* unmapped and mapped again, the registered range is ordinary memory */
	struct uffdio_range ur = { (uintptr_t)part, S };
	if (ioctl(ufd, UFFDIO_UNREGISTER, &ur))
		die("UFFDIO_UNREGISTER: %s", strerror(errno));
	munmap(part, S);
	if (mmap(part, S, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) != part)
		die("mmap again: %s", strerror(errno));
	fill((uint64_t *)part, SW, 2, 0);
	push_out();
	expect((uint64_t *)part, SW, 2, 0, "memory mapped again where the registered range was");
	printf("prog_uffd: %zu MiB, %ld faults served by the program's own userfaultfd, ok %016" PRIx64 "\n",
	       4 * U / MiB, got, sum64(a, U, 0) ^ sum64(part, S, 0));
	return 0;
}

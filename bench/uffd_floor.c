/* uffd_floor: the fault-path floor of this machine, what any user-space pager
 * built on userfaultfd pays per fault before it moves a single byte over a
 * transport (bench/pager.py adds a 4 KiB shared-memory read to it).
 *
 *   uffd_floor [--iters N] [--warmup W] [--cpus A,B] [--modes m1,m2,...]
 *
 * Modes (all by default), each over N fresh 4 KiB pages after W untimed ones:
 *   same_core         faulting thread and handler thread pinned to CPU A; the
 *                     handler blocks in poll() on the userfaultfd (registered
 *                     MISSING on an anonymous region) and answers each fault
 *                     with UFFDIO_COPY of one page;
 *   cross_core_spin   handler on CPU B busy-polling a non-blocking read();
 *   cross_core_block  handler on CPU B blocking in poll();
 *   kernel_minor      no userfaultfd: first write to a fresh anonymous page
 *                     (the kernel allocates and zeroes it);
 *   kernel_zero_read  no userfaultfd: first read of a fresh anonymous page
 *                     (the kernel maps the shared zero page);
 *   zero_window       same_core, but the handler answers each fault with
 *                     UFFDIO_ZEROPAGE over the 512-page window around it; each
 *                     first write then takes a kernel fault off the zero page;
 *   populate_window   same_core, answering with one UFFDIO_COPY of 512 zeroed
 *                     pages: the writes that follow take no fault at all.
 *   sigbus            UFFD_FEATURE_SIGBUS: no handler thread; the faulting thread
 *                     takes SIGBUS and its signal handler answers with
 *                     UFFDIO_COPY of one page (issue 9 item 2(b), D35).
 * The two window modes compare first-touch costs (their mean_us is the cost
 * per page filled, next to kernel_minor's); DECISIONS.md D29.
 * Each touch writes one byte of a fresh page; the faulting thread times it
 * with CLOCK_MONOTONIC (clock_gettime before and after).
 *
 * Output: one JSON object on stdout,
 *   {"schema":"comex-uffd-floor/1","iters":N,"cpus":[A,B],"uffd":"dev"|"syscall",
 *    "results":{"same_core":{"median_us":..,"p99_us":..,"mean_us":..,
 *               "min_us":..,"max_us":..,"n":N,"faults_served":N+W},...}}
 * A mode that cannot run (one usable CPU: the cross-core ones) is null with
 * a reason in "skipped". Exit status 0; 77 if userfaultfd is unavailable
 * (message on stderr); 2 on a usage error; 1 on any other failure. */
#include <errno.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define PAGE 4096ul
#define EXIT_SKIP 77
#define MAX_MODES 16

#ifndef USERFAULTFD_IOC_NEW
#define USERFAULTFD_IOC_NEW _IO(0xAA, 0x00)
#endif

enum wait_kind { WAIT_NONE, WAIT_POLL, WAIT_SPIN, WAIT_SIGBUS };

struct mode {
	const char *name;
	enum wait_kind wait;            /* how the handler waits; WAIT_NONE: no uffd */
	bool cross;                     /* handler on the other CPU */
	bool read_touch;                /* kernel modes: read instead of write */
	int window;                     /* 0: one page per fault; else pages per answer */
	bool zero;                      /* window answered with UFFDIO_ZEROPAGE, not COPY */
};

#define WINDOW 512 /* pages: the 2 MiB comex maps per first touch while it has room */

static const struct mode MODES[] = {
	{ "same_core", WAIT_POLL, false, false, 0, false },
	{ "cross_core_spin", WAIT_SPIN, true, false, 0, false },
	{ "cross_core_block", WAIT_POLL, true, false, 0, false },
	{ "kernel_minor", WAIT_NONE, false, false, 0, false },
	{ "kernel_zero_read", WAIT_NONE, false, true, 0, false },
	{ "zero_window", WAIT_POLL, false, false, WINDOW, true },
	{ "populate_window", WAIT_POLL, false, false, WINDOW, false },
	{ "sigbus", WAIT_SIGBUS, false, false, 0, false },
};
#define NMODES (sizeof(MODES) / sizeof(MODES[0]))

struct handler {
	int uffd, stopfd;
	enum wait_kind wait;
	char *src;                      /* what every UFFDIO_COPY copies (window pages) */
	char *base;                     /* the registered region, npages long */
	size_t npages;
	const struct mode *m;
	atomic_bool stop;
	unsigned long served;
	int err;                        /* errno of a failure, 0 if none */
};

static const char *uffd_source = "none";

static void die(const char *what)
{
	fprintf(stderr, "uffd_floor: %s: %s\n", what, strerror(errno));
	exit(1);
}

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int pin(pthread_t t, int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return pthread_setaffinity_np(t, sizeof(set), &set);
}

/* A userfaultfd from /dev/userfaultfd, or from the system call; -1 if neither works. */
static int uffd_open(void)
{
	int flags = O_CLOEXEC | O_NONBLOCK;
	int dev = open("/dev/userfaultfd", O_RDWR | O_CLOEXEC);

	if (dev >= 0) {
		int fd = ioctl(dev, USERFAULTFD_IOC_NEW, flags);

		close(dev);
		if (fd >= 0) {
			uffd_source = "dev";
			return fd;
		}
	}
	int fd = (int)syscall(SYS_userfaultfd, flags);

	if (fd >= 0)
		uffd_source = "syscall";
	return fd;
}

static int uffd_setup(bool sigbus)
{
	int fd = uffd_open();
	struct uffdio_api api = { .api = UFFD_API, .features = sigbus ? UFFD_FEATURE_SIGBUS : 0 };

	if (fd < 0) {
		fprintf(stderr, "uffd_floor: userfaultfd unavailable (/dev/userfaultfd and the system call: %s)\n",
			strerror(errno));
		exit(EXIT_SKIP);
	}
	if (ioctl(fd, UFFDIO_API, &api))
		die("UFFDIO_API");
	return fd;
}

static void uffd_register(int fd, char *base, size_t len)
{
	struct uffdio_register reg = {
		.range = { .start = (uintptr_t)base, .len = len },
		.mode = UFFDIO_REGISTER_MODE_MISSING,
	};

	if (ioctl(fd, UFFDIO_REGISTER, &reg))
		die("UFFDIO_REGISTER");
}

static char *map_pages(size_t npages)
{
	char *p = mmap(NULL, npages * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		die("mmap");
	madvise(p, npages * PAGE, MADV_NOHUGEPAGE);
	return p;
}

/* Waits for the uffd to become readable; false when told to stop. */
static bool handler_wait(struct handler *h)
{
	if (h->wait == WAIT_SPIN)
		return !atomic_load_explicit(&h->stop, memory_order_relaxed);
	struct pollfd pfd[2] = { { .fd = h->uffd, .events = POLLIN }, { .fd = h->stopfd, .events = POLLIN } };

	while (poll(pfd, 2, -1) < 0)
		if (errno != EINTR)
			return false;
	return !(pfd[1].revents & POLLIN);
}

static int serve(struct handler *h, const struct uffd_msg *msg)
{
	size_t page = ((msg->arg.pagefault.address & ~(PAGE - 1)) - (uintptr_t)h->base) / PAGE;
	size_t first = h->m->window ? page - page % h->m->window : page;
	size_t len = (h->m->window ? h->m->window : 1) * PAGE;
	struct uffdio_copy copy = { .dst = (uintptr_t)h->base + first * PAGE, .src = (uintptr_t)h->src };
	struct uffdio_zeropage zero = { .range = { .start = copy.dst } };
	int rc;

	if (msg->event != UFFD_EVENT_PAGEFAULT)
		return 0;
	if (first * PAGE + len > h->npages * PAGE)
		len = (h->npages - first) * PAGE;
	copy.len = zero.range.len = len;
	rc = h->m->zero ? ioctl(h->uffd, UFFDIO_ZEROPAGE, &zero) : ioctl(h->uffd, UFFDIO_COPY, &copy);
	if (rc && errno != EEXIST)
		return errno;
	h->served++;
	return 0;
}

static void *handler_main(void *arg)
{
	struct handler *h = arg;
	struct uffd_msg msg;

	while (handler_wait(h)) {
		ssize_t n = read(h->uffd, &msg, sizeof(msg));

		if (n == sizeof(msg))
			h->err = serve(h, &msg);
		else if (n < 0 && errno != EAGAIN && errno != EINTR)
			h->err = errno;
		if (h->err)
			break;
	}
	return NULL;
}

/* Touches pages [0, n) of base in order, each timed into lat (ns) from index warmup on. */
static void touch_pages(char *base, size_t n, size_t warmup, bool read_touch, double *lat)
{
	for (size_t i = 0; i < n; i++) {
		volatile char *p = base + i * PAGE;
		double t0 = now_ns();

		if (read_touch)
			(void)*p;
		else
			*p = 1;
		double t1 = now_ns();

		if (i >= warmup)
			lat[i - warmup] = t1 - t0;
	}
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* Index of the q-quantile of n sorted values (nearest rank). */
static size_t rank(size_t n, double q)
{
	size_t r = (size_t)(q * (double)n + 0.999999);

	return r ? r - 1 : 0;
}

static void print_stats(const char *name, double *lat, size_t n, long served)
{
	double sum = 0;

	qsort(lat, n, sizeof(*lat), cmp_double);
	for (size_t i = 0; i < n; i++)
		sum += lat[i];
	printf("\"%s\":{\"median_us\":%.3f,\"p99_us\":%.3f,\"mean_us\":%.3f,\"min_us\":%.3f,\"max_us\":%.3f,"
	       "\"n\":%zu,\"faults_served\":%ld}",
	       name, lat[rank(n, 0.5)] / 1e3, lat[rank(n, 0.99)] / 1e3, sum / (double)n / 1e3, lat[0] / 1e3, lat[n - 1] / 1e3, n,
	       served);
}

/* One uffd mode: faulting thread (this one) on cpu_fault, handler on cpu_handler. */
static long run_uffd(const struct mode *m, int cpu_fault, int cpu_handler, size_t iters, size_t warmup,
		     double *lat)
{
	size_t n = iters + warmup;
	char *base = map_pages(n);
	size_t src_pages = m->window ? WINDOW : 1;
	struct handler h = { .uffd = uffd_setup(false), .wait = m->wait, .src = map_pages(src_pages),
			     .base = base, .npages = n, .m = m };
	pthread_t t;

	if (!m->window)
		memset(h.src, 0x5a, PAGE); /* a window copies zeroes: a never-written source */
	h.stopfd = eventfd(0, EFD_CLOEXEC);
	if (h.stopfd < 0)
		die("eventfd");
	uffd_register(h.uffd, base, n * PAGE);
	if (pin(pthread_self(), cpu_fault))
		die("pinning the faulting thread");
	if ((errno = pthread_create(&t, NULL, handler_main, &h)))
		die("pthread_create");
	if ((errno = pin(t, cpu_handler)))
		die("pinning the handler");
	touch_pages(base, n, warmup, false, lat);
	atomic_store(&h.stop, true);
	if (eventfd_write(h.stopfd, 1))
		die("eventfd_write");
	pthread_join(t, NULL);
	if (h.err) {
		errno = h.err;
		die("handler");
	}
	close(h.stopfd);
	close(h.uffd);
	munmap(h.src, src_pages * PAGE);
	munmap(base, n * PAGE);
	return (long)h.served;
}

static void run_kernel(const struct mode *m, int cpu, size_t iters, size_t warmup, double *lat)
{
	size_t n = iters + warmup;
	char *base = map_pages(n);

	if (pin(pthread_self(), cpu))
		die("pinning");
	touch_pages(base, n, warmup, m->read_touch, lat);
	munmap(base, n * PAGE);
}

/* sigbus mode: the signal handler serves the fault on the faulting thread. */
static int sig_uffd;
static char *sig_src;

static void on_sigbus(int sig, siginfo_t *si, void *uc)
{
	struct uffdio_copy copy = {
		.dst = (uintptr_t)si->si_addr & ~(PAGE - 1), .src = (uintptr_t)sig_src, .len = PAGE,
	};

	(void)sig;
	(void)uc;
	if (ioctl(sig_uffd, UFFDIO_COPY, &copy) && errno != EEXIST)
		abort(); /* a fault nobody can serve: never return into it */
}

static long run_sigbus(int cpu, size_t iters, size_t warmup, double *lat)
{
	size_t n = iters + warmup;
	char *base = map_pages(n);
	struct sigaction sa = { .sa_sigaction = on_sigbus, .sa_flags = SA_SIGINFO }, old;

	sig_uffd = uffd_setup(true);
	sig_src = map_pages(1);
	memset(sig_src, 0x5a, PAGE);
	uffd_register(sig_uffd, base, n * PAGE);
	if (sigaction(SIGBUS, &sa, &old))
		die("sigaction");
	if (pin(pthread_self(), cpu))
		die("pinning");
	touch_pages(base, n, warmup, false, lat);
	sigaction(SIGBUS, &old, NULL);
	close(sig_uffd);
	munmap(sig_src, PAGE);
	munmap(base, n * PAGE);
	return (long)n;
}

static void usage(void)
{
	fprintf(stderr, "usage: uffd_floor [--iters N] [--warmup W] [--cpus A,B] [--modes m1,m2,...]\n"
			"modes: same_core cross_core_spin cross_core_block kernel_minor kernel_zero_read zero_window populate_window sigbus\n");
	exit(2);
}

static size_t num(const char *s)
{
	char *end;
	unsigned long v;

	if (!s || !*s || *s == '-')
		usage();
	v = strtoul(s, &end, 10);
	if (*end || v < 1 || v > 10000000)
		usage();
	return v;
}

/* The first two CPUs this process may run on; b = -1 if there is only one. */
static void default_cpus(int *a, int *b)
{
	cpu_set_t set;

	*a = *b = -1;
	if (sched_getaffinity(0, sizeof(set), &set))
		die("sched_getaffinity");
	for (int c = 0; c < CPU_SETSIZE && *b < 0; c++)
		if (CPU_ISSET(c, &set))
			*(*a < 0 ? a : b) = c;
}

static void parse_cpus(const char *s, int *a, int *b)
{
	if (!s || sscanf(s, "%d,%d", a, b) != 2 || *a < 0 || *b < 0)
		usage();
}

/* Marks the modes named in the comma-separated list s. */
static void parse_modes(const char *s, bool *chosen)
{
	char buf[256];

	if (!s || strlen(s) >= sizeof(buf))
		usage();
	strcpy(buf, s);
	for (char *save, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		size_t i = 0;

		while (i < NMODES && strcmp(MODES[i].name, tok))
			i++;
		if (i == NMODES)
			usage();
		chosen[i] = true;
	}
}

int main(int argc, char **argv)
{
	size_t iters = 20000, warmup = 200;
	int cpu_a, cpu_b;
	bool chosen[NMODES] = { false }, any = false;

	default_cpus(&cpu_a, &cpu_b);
	for (int i = 1; i < argc; i += 2) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(a, "--iters"))
			iters = num(v);
		else if (!strcmp(a, "--warmup"))
			warmup = num(v);
		else if (!strcmp(a, "--cpus"))
			parse_cpus(v, &cpu_a, &cpu_b);
		else if (!strcmp(a, "--modes"))
			parse_modes(v, chosen);
		else
			usage();
	}
	for (size_t i = 0; i < NMODES; i++)
		any |= chosen[i];
	if (!any)
		memset(chosen, true, sizeof(chosen));
	close(uffd_setup(false)); /* exit 77 before printing anything if userfaultfd is unavailable */

	double *lat = malloc(iters * sizeof(*lat));
	const char *sep = "";

	if (!lat)
		die("malloc");
	printf("{\"schema\":\"comex-uffd-floor/1\",\"iters\":%zu,\"warmup\":%zu,\"page\":%lu,\"cpus\":[%d,%d],"
	       "\"uffd\":\"%s\",\"results\":{",
	       iters, warmup, PAGE, cpu_a, cpu_b, uffd_source);
	for (size_t i = 0; i < NMODES; i++) {
		const struct mode *m = &MODES[i];

		if (!chosen[i])
			continue;
		printf("%s", sep);
		sep = ",";
		if (m->cross && cpu_b < 0) {
			printf("\"%s\":null", m->name);
			continue;
		}
		if (m->wait == WAIT_SIGBUS) {
			long served = run_sigbus(cpu_a, iters, warmup, lat);

			print_stats(m->name, lat, iters, served);
		} else if (m->wait == WAIT_NONE) {
			run_kernel(m, cpu_a, iters, warmup, lat);
			print_stats(m->name, lat, iters, 0);
		} else {
			long served = run_uffd(m, cpu_a, m->cross ? cpu_b : cpu_a, iters, warmup, lat);

			print_stats(m->name, lat, iters, served);
		}
		fflush(stdout);
	}
	printf("},\"skipped\":%s}\n", cpu_b < 0 ? "{\"cross_core\":\"only one usable CPU\"}" : "{}");
	free(lat);
	return 0;
}

/* fusedev: the FUSE protocol subset a one-file filesystem needs, spoken
 * directly on /dev/fuse (docs/DECISIONS.md D53). The filesystem's root is the
 * file itself (rootmode S_IFREG, mounted on a regular file), so there is
 * no directory and no lookup. Each serving thread owns one request buffer
 * and one reply buffer, allocated before the first request; a WRITE's data
 * is handed to the callback where the kernel put it, a READ's is written
 * by the callback straight into the reply. */
#include "fusedev.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <linux/fuse.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/ioctl.h>
#include <poll.h>
#include <unistd.h>

#include "clock.h"
#include "fuse_uring.h"
#include "log.h"

/* The kernel refuses a read of /dev/fuse into less than a whole request:
 * the largest WRITE plus its headers, and never less than its minimum. */
#define REQ_BUF (FUSEDEV_MAX_IO + FUSE_MIN_READ_BUFFER)
#define MAX_THREADS 64
#define ATTR_VALID_S 3600 /* the size never changes: the kernel may keep attributes */

struct fusedev {
	int fd;                 /* /dev/fuse */
	char path[256];
	uint64_t size;
	const struct fusedev_ops *ops;
	void *ctx;
	int err;                /* atomic: the first failure of a serving thread */
	struct fuse_uring *uring; /* the rings set up for INIT, or NULL */
	bool uring_serves;      /* every queue registered: requests come over the rings */
};

struct worker {
	struct fusedev *d;
	int fd;                 /* d->fd, or a clone of it (non-blocking) that this worker polls */
	uint64_t spin_ns;       /* how long it polls after a request; 0: it sleeps in read */
	pthread_t tid;
	uint8_t *req;           /* REQ_BUF */
	uint8_t *reply;         /* FUSEDEV_MAX_IO */
};

/* The answer goes on the descriptor the request was read from: each one
 * has its own list of requests being processed. */
static int reply(struct worker *wk, uint64_t unique, int error, const void *arg, size_t len)
{
	struct fuse_out_header h = { .len = (uint32_t)(sizeof(h) + len), .error = error, .unique = unique };
	struct iovec iov[2] = { { &h, sizeof(h) }, { (void *)arg, len } };
	ssize_t w = writev(wk->fd, iov, len ? 2 : 1);

	/* ENOENT: the request was interrupted and is gone; not our failure */
	if (w < 0 && errno != ENOENT) {
		log_error("FUSE reply to request %llu (%zu bytes) failed: %m", (unsigned long long)unique, len);
		return -errno;
	}
	return 0;
}

static void fill_attr(const struct fusedev *d, struct fuse_attr *a)
{
	*a = (struct fuse_attr){ .ino = FUSE_ROOT_ID, .size = d->size, .blocks = d->size / 512, .mode = S_IFREG | 0600,
				 .nlink = 1, .blksize = 4096 };
}

/* INIT, on the first /dev/fuse read; with uring, the answer takes FUSE
 * over io_uring (flags2, which FUSE_INIT_EXT makes the kernel read). */
static int do_init(struct worker *w, uint64_t unique, const struct fuse_init_in *in, bool uring)
{
	struct fuse_init_out out = {
		.major = FUSE_KERNEL_VERSION,
		.minor = in->minor < FUSE_KERNEL_MINOR_VERSION ? in->minor : FUSE_KERNEL_MINOR_VERSION,
		.max_readahead = in->max_readahead, .flags = FUSE_BIG_WRITES | FUSE_MAX_PAGES,
		.max_background = 64, .congestion_threshold = 48, .max_write = FUSEDEV_MAX_IO, .time_gran = 1,
		.max_pages = FUSEDEV_MAX_IO / 4096,
	};

	if (in->major != FUSE_KERNEL_VERSION) {
		log_error("the kernel speaks FUSE %u.%u; this build speaks %u.x", in->major, in->minor, FUSE_KERNEL_VERSION);
		reply(w, unique, -EPROTO, NULL, 0);
		return -EPROTO;
	}
	if (uring) {
		out.flags |= FUSE_INIT_EXT;
		out.flags2 = fuse_uring_init_flags2();
	}
	return reply(w, unique, 0, &out, sizeof(out));
}

static int do_read(struct fusedev *d, const struct fuse_read_in *in, void *out, uint32_t *out_len)
{
	uint32_t len = in->size;
	int err;

	if (in->offset >= d->size)
		return 0;
	if (len > d->size - in->offset)
		len = (uint32_t)(d->size - in->offset);
	if (len > FUSEDEV_MAX_IO)
		len = FUSEDEV_MAX_IO;
	if ((err = d->ops->read(d->ctx, in->offset, len, out)))
		return err;
	*out_len = len;
	return 0;
}

static int do_write(struct fusedev *d, const struct fuse_write_in *in, const void *data, size_t have, void *out,
		    uint32_t *out_len)
{
	struct fuse_write_out wo = { .size = in->size };
	int err;

	if (in->size > have)
		return -EINVAL;
	if (in->offset > d->size || in->size > d->size - in->offset)
		return -ENOSPC; /* the file never grows */
	if ((err = d->ops->write(d->ctx, in->offset, in->size, data)))
		return err;
	memcpy(out, &wo, sizeof(wo)); /* after the callback: out may be data's buffer */
	*out_len = sizeof(wo);
	return 0;
}

/* A discard from the loop device is a hole punched (keep-size); a zeroed
 * range reads as zero afterwards just the same. Anything else (growing the
 * file) is refused. */
static int do_fallocate(struct fusedev *d, const struct fuse_fallocate_in *in)
{
	int mode = (int)in->mode;

	if (!(mode & (FALLOC_FL_PUNCH_HOLE | FALLOC_FL_ZERO_RANGE)) || !(mode & FALLOC_FL_KEEP_SIZE) ||
	    in->offset > d->size || in->length > d->size - in->offset)
		return -EOPNOTSUPP;
	return d->ops->discard(d->ctx, in->offset, in->length);
}

/* The reply body of a fixed-size answer. */
static int answer(void *out, uint32_t *out_len, const void *body, uint32_t len)
{
	memcpy(out, body, len);
	*out_len = len;
	return 0;
}

/* Every request but INIT, from either transport (fuse_uring_handler). */
static int handle(void *ctx, const struct fuse_in_header *h, const void *op, const void *data, uint32_t data_len,
		  void *out, uint32_t *out_len)
{
	struct fusedev *d = ctx;

	*out_len = 0;
	switch (h->opcode) {
	case FUSE_GETATTR:
	case FUSE_SETATTR: { /* nothing to set: a one-file device of a fixed size */
		struct fuse_attr_out a = { .attr_valid = ATTR_VALID_S };

		fill_attr(d, &a.attr);
		return answer(out, out_len, &a, sizeof(a));
	}
	case FUSE_OPEN: {
		struct fuse_open_out o = { .open_flags = FOPEN_DIRECT_IO };

		return answer(out, out_len, &o, sizeof(o));
	}
	case FUSE_READ:
		return do_read(d, op, out, out_len);
	case FUSE_WRITE:
		return do_write(d, op, data, data_len, out, out_len);
	case FUSE_FALLOCATE:
		return do_fallocate(d, op);
	case FUSE_STATFS: {
		struct fuse_statfs_out st = { .st = { .blocks = d->size / 4096, .bsize = 4096, .frsize = 4096,
						      .namelen = 255, .files = 1 } };

		return answer(out, out_len, &st, sizeof(st));
	}
	case FUSE_FLUSH:
	case FUSE_FSYNC:
	case FUSE_RELEASE:
	case FUSE_DESTROY:
		return 0; /* writes are in memnode memory when answered */
	case FUSE_FORGET:
	case FUSE_BATCH_FORGET:
	case FUSE_INTERRUPT:
		return FUSE_URING_NO_REPLY; /* nothing of ours is interruptible */
	default:
		return -ENOSYS;
	}
}

/* One request read from /dev/fuse; 0, or -errno when the device itself
 * failed. Only a WRITE has data after its fixed argument. */
static int dispatch(struct worker *w, size_t n)
{
	const struct fuse_in_header *h = (const void *)w->req;
	const uint8_t *arg = w->req + sizeof(*h);
	size_t have = n - sizeof(*h), lead = h->opcode == FUSE_WRITE ? sizeof(struct fuse_write_in) : have;
	uint32_t len;
	int r;

	if (have < lead)
		return reply(w, h->unique, -EINVAL, NULL, 0);
	r = handle(w->d, h, arg, arg + lead, (uint32_t)(have - lead), w->reply, &len);
	if (r == FUSE_URING_NO_REPLY)
		return 0;
	return r ? reply(w, h->unique, r, NULL, 0) : reply(w, h->unique, 0, w->reply, len);
}

/* Reads one request; 0 with *n set, -ENODEV once unmounted, -errno. A
 * worker with a spin budget polls its own non-blocking descriptor that
 * long after its last request before it sleeps in poll(2). */
static int next_request(struct worker *w, size_t *n)
{
	uint64_t until = w->spin_ns ? now_ns() + w->spin_ns : 0;

	for (;;) {
		ssize_t r = read(w->fd, w->req, REQ_BUF);

		if (r < 0 && errno == EAGAIN && w->spin_ns) {
			if (now_ns() < until) {
				sched_yield(); /* a thread it just woke on this CPU runs first */
				continue;
			}
			struct pollfd p = { .fd = w->fd, .events = POLLIN };
			poll(&p, 1, -1);
			until = now_ns() + w->spin_ns;
			continue;
		}

		if (r >= (ssize_t)sizeof(struct fuse_in_header)) {
			*n = (size_t)r;
			return 0;
		}
		if (r < 0 && (errno == EINTR || errno == EAGAIN || errno == ENOENT))
			continue; /* ENOENT: an interrupted request vanished before we read it */
		if (r < 0 && errno == ENODEV)
			return -ENODEV;
		log_error("reading FUSE requests failed (%zd bytes): %m", r);
		return r < 0 ? -errno : -EIO;
	}
}

static void *serve(void *arg)
{
	struct worker *w = arg;
	size_t n;
	int err;

	while (!(err = next_request(w, &n)) && !(err = dispatch(w, n)))
		;
	if (err != -ENODEV)
		__atomic_compare_exchange_n(&w->d->err, &(int){ 0 }, err, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
	return NULL;
}

static int worker_init(struct worker *w, struct fusedev *d)
{
	void *b = mmap(NULL, REQ_BUF + FUSEDEV_MAX_IO, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE,
		       -1, 0);

	if (b == MAP_FAILED) {
		int err = errno ? -errno : -ENOMEM; /* never 0: the caller then has no worker */

		log_error("cannot map %u bytes of FUSE buffers: %m", REQ_BUF + FUSEDEV_MAX_IO);
		return err;
	}
	*w = (struct worker){ .d = d, .fd = d->fd, .req = b, .reply = (uint8_t *)b + REQ_BUF };
	return 0;
}

static void worker_fini(struct worker *w)
{
	if (w->fd >= 0 && w->fd != w->d->fd)
		close(w->fd);
	if (w->req)
		munmap(w->req, REQ_BUF + FUSEDEV_MAX_IO);
}

/* A descriptor of the same connection for w alone, non-blocking, so that
 * w can poll it while the other workers sleep in read. */
static int worker_clone(struct worker *w, uint64_t spin_ns)
{
	uint32_t master = (uint32_t)w->d->fd;
	int fd = open("/dev/fuse", O_RDWR | O_CLOEXEC | O_NONBLOCK);

	if (fd < 0 || ioctl(fd, FUSE_DEV_IOC_CLONE, &master)) {
		log_error("cannot clone the FUSE descriptor for a polling worker: %m");
		if (fd >= 0)
			close(fd);
		return -errno;
	}
	w->fd = fd;
	w->spin_ns = spin_ns;
	return 0;
}

/* In uring mode /dev/fuse carries only FORGET and INTERRUPT (the kernel
 * sends nothing else there once the rings are ready): one sleeping reader,
 * and swap-spin is the rings' (D60). */
int fusedev_serve(struct fusedev *d, unsigned threads, uint64_t spin_ns)
{
	struct worker w[MAX_THREADS] = { 0 };
	unsigned started = 1, ready = 0;
	int err = 0, uerr = 0;

	if (d->uring_serves) {
		fuse_uring_set_spin(d->uring, spin_ns);
		threads = 1;
		spin_ns = 0;
	}
	if (threads < 1)
		threads = 1;
	if (threads > MAX_THREADS)
		threads = MAX_THREADS;
	while (ready < threads && !(err = worker_init(&w[ready], d))) /* logs its failure */
		ready++;
	if (ready && !err && spin_ns)
		err = worker_clone(&w[0], spin_ns); /* logs its failure */
	for (; started < ready && !err; started++)
		if ((err = -pthread_create(&w[started].tid, NULL, serve, &w[started]))) {
			log_error("cannot start FUSE request thread %u: %s", started, strerror(-err));
			break;
		}
	if (ready)
		serve(&w[0]);
	for (unsigned i = 1; i < started; i++)
		pthread_join(w[i].tid, NULL);
	for (unsigned i = 0; i < ready; i++)
		worker_fini(&w[i]);
	if (d->uring)
		uerr = fuse_uring_join(d->uring); /* its threads end with the connection, as the readers */
	return err ? err : uerr ? uerr : __atomic_load_n(&d->err, __ATOMIC_RELAXED);
}

#define ENABLE_URING "/sys/module/fuse/parameters/enable_uring"

/* swap-uring auto and on: the kernel offers io_uring in INIT only while
 * the fuse module's enable_uring is Y when the file is mounted; root may
 * set it. Decision (docs/DECISIONS.md D60): auto sets it too, since Y only lets
 * a FUSE server ask for io_uring (no other one changes unless it asks), and
 * it made swap-ins faster here. */
static void enable_uring(enum fusedev_uring mode)
{
	char v = 0;
	FILE *f = fopen(ENABLE_URING, "r");

	if (!f) {
		log_warn("no %s: this kernel has no FUSE over io_uring (CONFIG_FUSE_IO_URING)", ENABLE_URING);
		return;
	}
	if (fread(&v, 1, 1, f) != 1)
		v = 0;
	fclose(f);
	if (v != 'N' || geteuid() != 0)
		return;
	if (!(f = fopen(ENABLE_URING, "w")) || fputs("Y", f) < 0 || fclose(f)) {
		log_warn("cannot set %s to Y: %m", ENABLE_URING);
		return;
	}
	log_info("set %s to Y (swap-uring %s)", ENABLE_URING, mode == FUSEDEV_URING_ON ? "on" : "auto");
}

/* Before INIT is answered: the rings, when mode and the kernel allow.
 * -errno only when mode on cannot have them. */
static int uring_prepare(struct fusedev *d, enum fusedev_uring mode, const struct fuse_init_in *in)
{
	int err;

	if (mode == FUSEDEV_URING_OFF)
		return 0;
	if (!fuse_uring_offered(in)) {
		if (mode == FUSEDEV_URING_ON) {
			log_error("swap-uring on: the kernel does not offer FUSE over io_uring in INIT (%s is N, "
				  "or a kernel older than 6.14 or without CONFIG_FUSE_IO_URING)", ENABLE_URING);
			return -EOPNOTSUPP;
		}
		log_warn("FUSE requests come by /dev/fuse reads: the kernel does not offer io_uring (%s is N, or no "
			 "CONFIG_FUSE_IO_URING; swap-uring auto)", ENABLE_URING);
		return 0;
	}
	if ((err = fuse_uring_create(d->fd, handle, d, &d->uring)) && mode == FUSEDEV_URING_ON) {
		log_error("swap-uring on: FUSE over io_uring cannot be used here (above); swap-uring auto or off reads "
			  "/dev/fuse instead");
		return err;
	}
	if (err)
		log_warn("FUSE requests come by /dev/fuse reads: io_uring could not be set up (swap-uring auto)");
	return 0;
}

/* After INIT was answered with io_uring: registers the rings. */
static int uring_start(struct fusedev *d, enum fusedev_uring mode)
{
	int err = fuse_uring_start(d->uring);

	if (!err) {
		d->uring_serves = true;
		log_info("FUSE requests come over io_uring: one queue per possible CPU");
		return 0;
	}
	if (mode == FUSEDEV_URING_ON) {
		log_error("swap-uring on: the kernel refused the FUSE io_uring queues (above); swap-uring auto or off reads "
			  "/dev/fuse instead");
		return err;
	}
	/* the kernel sends to /dev/fuse after a refused REGISTER; the queues' threads end with the connection */
	log_warn("FUSE requests come by /dev/fuse reads: the kernel refused the io_uring queues (%s; swap-uring auto)",
		 strerror(-err));
	return 0;
}

/* The kernel sends INIT first; answering it makes the mount usable. */
static int answer_init(struct fusedev *d, enum fusedev_uring mode)
{
	struct worker w;
	const struct fuse_in_header *h;
	size_t n;
	int err = worker_init(&w, d);

	if (err)
		return err;
	if ((err = next_request(&w, &n)))
		goto fini_worker;
	h = (const void *)w.req;
	if (h->opcode != FUSE_INIT || n < sizeof(*h) + sizeof(struct fuse_init_in)) {
		err = -EPROTO;
		goto fini_worker;
	}
	if (!(err = uring_prepare(d, mode, (const void *)(h + 1))) &&
	    !(err = do_init(&w, h->unique, (const void *)(h + 1), d->uring != NULL)) && d->uring)
		err = uring_start(d, mode);
fini_worker:
	worker_fini(&w);
	return err;
}

int fusedev_mount(const char *path, uint64_t size, const struct fusedev_ops *ops, void *ctx, enum fusedev_uring uring,
		  struct fusedev **out)
{
	struct fusedev *d = calloc(1, sizeof(*d));
	char data[128];
	int err;

	if (!d)
		return -ENOMEM;
	*d = (struct fusedev){ .size = size, .ops = ops, .ctx = ctx };
	snprintf(d->path, sizeof(d->path), "%s", path);
	if (uring != FUSEDEV_URING_OFF)
		enable_uring(uring);
	d->fd = open("/dev/fuse", O_RDWR | O_CLOEXEC);
	if (d->fd < 0) {
		err = -errno;
		log_error("cannot open /dev/fuse: %m (is the fuse module loaded, and are we root?)");
		goto free_dev;
	}
	snprintf(data, sizeof(data), "fd=%d,rootmode=%o,user_id=0,group_id=0,allow_other,max_read=%u", d->fd,
		 S_IFREG, FUSEDEV_MAX_IO);
	if (mount("comex-swap", path, "fuse.comex-swap", MS_NOSUID | MS_NODEV | MS_NOATIME, data)) {
		err = -errno;
		log_error("cannot mount the FUSE file on %s: %m", path);
		goto close_fd;
	}
	if ((err = answer_init(d, uring))) {
		log_error("cannot answer the kernel's FUSE INIT for %s: %s", path, strerror(-err));
		goto unmount;
	}
	*out = d;
	return 0;
unmount:
	umount2(path, MNT_DETACH); /* the connection ends: so do the queues' threads */
	fuse_uring_free(d->uring);
close_fd:
	close(d->fd);
free_dev:
	free(d);
	return err;
}

bool fusedev_uses_uring(const struct fusedev *d) { return d->uring_serves; }

void fusedev_unmount(struct fusedev *d)
{
	if (umount2(d->path, MNT_DETACH) && errno != EINVAL)
		log_warn("cannot unmount the FUSE file %s: %m", d->path);
}

void fusedev_free(struct fusedev *d)
{
	if (!d)
		return;
	fuse_uring_free(d->uring);
	close(d->fd);
	free(d);
}

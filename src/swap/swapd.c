/* swapd: FUSE requests of the swap device's file to its block map (docs/SWAP.md).
 * Before serving: every buffer allocated (fusedev's per thread, the map's
 * table), memory locked, PR_SET_IO_FLUSHER (D56). */
#include "swapd.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "blockmap.h"
#include "client.h"
#include "clock.h"
#include "fusedev.h"
#include "log.h"
#include "noreclaim.h"
#include "options.h"

#define SERVE_THREADS 4 /* FUSE request threads: the loop device queues a few requests at once */
#define REPAIR_CHECK_S 1 /* how often re-replication looks for lost memnodes and short blocks */
#define REPAIR_RETRY_S 30 /* after a pass that found no room: a pass costs a walk of the whole map */

struct swapd {
	struct blockmap *map;
	struct comex_client *c;
	struct swapd_stats *st;
	pthread_t repairer;
	bool repairing;                         /* the repairer runs */
	bool stop;                              /* atomic: the repairer ends */
};

static void count(uint64_t *n, uint64_t v) { __atomic_fetch_add(n, v, __ATOMIC_RELAXED); }

static void publish_counts(struct swapd *s)
{
	uint64_t stored, degraded;

	blockmap_counts(s->map, &stored, &degraded);
	__atomic_store_n(&s->st->stored_blocks, stored, __ATOMIC_RELAXED);
	__atomic_store_n(&s->st->degraded_blocks, degraded, __ATOMIC_RELAXED);
	blockmap_hedged(s->map, &stored, &degraded);
	__atomic_store_n(&s->st->reads_hedged, stored, __ATOMIC_RELAXED);
	__atomic_store_n(&s->st->writes_hedged, degraded, __ATOMIC_RELAXED);
}

/* Byte ranges of the file to blocks: the loop device sends whole 512-byte
 * sectors, swap whole pages; anything not block-aligned is refused. */
static int blocks_of(uint64_t off, uint64_t len, uint64_t *block, uint64_t *n)
{
	if (off % BLOCKMAP_BLOCK || len % BLOCKMAP_BLOCK)
		return -EINVAL;
	*block = off / BLOCKMAP_BLOCK;
	*n = len / BLOCKMAP_BLOCK;
	return 0;
}

/* A read or a write of the file, counted; the kernel sees -EIO for a
 * failed memnode, -ENOSPC when every memnode is full. */
static int transfer(struct swapd *s, bool write, uint64_t off, uint32_t len, void *buf)
{
	uint64_t b, n, ns, t0 = now_ns();
	int err = blocks_of(off, len, &b, &n);

	if (!err)
		err = write ? blockmap_write(s->map, b, (uint32_t)n, buf) : blockmap_read(s->map, b, (uint32_t)n, buf);
	ns = now_ns() - t0;
	count(write ? &s->st->writes : &s->st->reads, 1);
	count(write ? &s->st->bytes_written : &s->st->bytes_read, len);
	count(write ? &s->st->write_ns : &s->st->read_ns, ns);
	count(write ? &s->st->hist_write_ns[stats_bucket(ns)] : &s->st->hist_read_ns[stats_bucket(ns)], 1);
	if (write)
		publish_counts(s);
	if (err)
		count(&s->st->errors, 1);
	return err == -ENOSPC ? -ENOSPC : err ? -EIO : 0;
}

static int on_read(void *ctx, uint64_t off, uint32_t len, void *dst) { return transfer(ctx, false, off, len, dst); }

static int on_write(void *ctx, uint64_t off, uint32_t len, const void *src)
{
	return transfer(ctx, true, off, len, (void *)src); /* blockmap_write only reads it */
}

static int on_discard(void *ctx, uint64_t off, uint64_t len)
{
	struct swapd *s = ctx;
	uint64_t b, n;
	int err = blocks_of(off, len, &b, &n);

	if (!err)
		err = blockmap_discard(s->map, b, n);
	count(&s->st->discards, 1);
	publish_counts(s);
	return err;
}

static const struct fusedev_ops ops = { on_read, on_write, on_discard };

/* One re-replication pass, logged when it changed something. */
static void repair_pass(struct swapd *s, uint64_t *short_out)
{
	uint64_t made, short_blocks;

	if (blockmap_repair(s->map, &made, &short_blocks))
		return;
	count(&s->st->copies_remade, made);
	publish_counts(s);
	if (made || short_blocks != *short_out)
		log_info("re-replication made %llu block copies; %llu blocks have fewer than %u copies%s",
			 (unsigned long long)made, (unsigned long long)short_blocks, s->st->copies,
			 short_blocks ? " (no other memnode has room: they get theirs once one has)" : "");
	*short_out = short_blocks;
}

/* The repairer (replicas 2-3, docs/DECISIONS.md D57): a pass whenever a memnode
 * was lost since the last complete one, or blocks are short of copies
 * (then again every REPAIR_RETRY_S while no pass completes them). */
static void *repairer(void *arg)
{
	struct swapd *s = arg;
	uint64_t done_out = 0, short_blocks = 0, stored, degraded;
	unsigned wait = 0;

	while (!__atomic_load_n(&s->stop, __ATOMIC_RELAXED)) {
		struct client_health h;

		sleep(REPAIR_CHECK_S);
		client_poll(s->c, &h);
		blockmap_counts(s->map, &stored, &degraded);
		if (h.out == done_out && (!degraded || (wait && --wait)))
			continue;
		repair_pass(s, &short_blocks);
		done_out = h.out;
		wait = short_blocks ? REPAIR_RETRY_S / REPAIR_CHECK_S : 0;
	}
	return NULL;
}

static void shm_name(const char *name, char *out, size_t cap) { snprintf(out, cap, "/comex-swap.%s", name); }

static int counters_create(const char *name, struct swapd_stats **out)
{
	char path[128];
	int fd;
	void *p;

	shm_name(name, path, sizeof(path));
	fd = shm_open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0 || ftruncate(fd, sizeof(struct swapd_stats))) {
		log_error("cannot create the counters /dev/shm%s: %m", path);
		if (fd >= 0)
			close(fd);
		return -errno;
	}
	p = mmap(NULL, sizeof(struct swapd_stats), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (p == MAP_FAILED)
		return -errno;
	*out = p;
	return 0;
}

static void counters_remove(const char *name)
{
	char path[128];

	shm_name(name, path, sizeof(path));
	shm_unlink(path);
}

int swapd_stats_open(const char *name, const struct swapd_stats **out)
{
	struct swapd_stats *p = MAP_FAILED;
	char path[128];
	struct stat st;
	int fd;

	shm_name(name, path, sizeof(path));
	if ((fd = shm_open(path, O_RDONLY | O_CLOEXEC, 0)) < 0)
		return -ESRCH;
	if (!fstat(fd, &st) && st.st_size >= (off_t)sizeof(*p))
		p = mmap(NULL, sizeof(*p), PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	if (p == MAP_FAILED)
		return -ESRCH;
	if (__atomic_load_n(&p->magic, __ATOMIC_ACQUIRE) != SWAPD_STATS_MAGIC) {
		munmap(p, sizeof(*p));
		return -ESRCH;
	}
	*out = p;
	return 0;
}

void swapd_stats_close(const struct swapd_stats *s) { munmap((void *)s, sizeof(*s)); }

int swapd_main(const struct options *o, const char *name, const char *path, int ready)
{
	uint64_t size = opt_num(o, OPT_SWAP_SIZE);
	struct comex_client *c = NULL;
	struct fusedev *d = NULL;
	struct swapd s = { 0 };
	int err;

	if ((err = counters_create(name, &s.st)))
		return 1;
	*s.st = (struct swapd_stats){ .size_bytes = size, .pid = (int32_t)getpid(),
				      .copies = (uint32_t)opt_num(o, OPT_REPLICAS) };
	snprintf(s.st->memnodes, sizeof(s.st->memnodes), "%s", opt_str(o, OPT_MEMNODE));
	__atomic_store_n(&s.st->magic, SWAPD_STATS_MAGIC, __ATOMIC_RELEASE);
	if ((err = client_connect(o, &c)))
		goto close_ready;
	client_board(c, &s.st->board);
	if ((err = blockmap_create(c, size / BLOCKMAP_BLOCK, (unsigned)opt_num(o, OPT_REPLICAS),
				   opt_num(o, OPT_TEST_REPAIR_DELAY), &s.map)))
		goto disconnect;
	noreclaim_enter("swap daemon");
	if ((err = fusedev_mount(path, size, &ops, &s, (enum fusedev_uring)opt_num(o, OPT_SWAP_URING), &d)))
		goto destroy_map;
	snprintf(s.st->transport, sizeof(s.st->transport), "%s", fusedev_uses_uring(d) ? "uring" : "read");
	if (write(ready, "r", 1) != 1)
		log_warn("cannot tell comex swap up that the device serves: %m");
	close(ready);
	ready = -1;
	s.c = c;
	if (s.st->copies > 1 && !(s.repairing = !(err = pthread_create(&s.repairer, NULL, repairer, &s))))
		log_warn("cannot start re-replication (%s): copies lost with a memnode are not made again",
			 strerror(err));
	err = fusedev_serve(d, SERVE_THREADS, opt_num(o, OPT_SWAP_SPIN));
	fusedev_free(d);
	if (s.repairing) {
		__atomic_store_n(&s.stop, true, __ATOMIC_RELAXED);
		pthread_join(s.repairer, NULL);
	}
destroy_map:
	blockmap_destroy(s.map);
disconnect:
	client_close(c);
close_ready:
	if (ready >= 0)
		close(ready);
	counters_remove(name);
	return err ? 1 : 0;
}

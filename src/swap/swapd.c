/* swapd: FUSE requests of the swap device's file to its block map (docs/SWAP.md).
 * Before serving: every buffer allocated (fusedev's per thread, the map's
 * table), memory locked, PR_SET_IO_FLUSHER (S4). */
#include "swapd.h"

#include <errno.h>
#include <fcntl.h>
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

struct swapd {
	struct blockmap *map;
	struct swapd_stats *st;
};

static void count(uint64_t *n, uint64_t v) { __atomic_fetch_add(n, v, __ATOMIC_RELAXED); }

static void publish_counts(struct swapd *s)
{
	uint64_t stored, degraded;

	blockmap_counts(s->map, &stored, &degraded);
	__atomic_store_n(&s->st->stored_blocks, stored, __ATOMIC_RELAXED);
	__atomic_store_n(&s->st->degraded_blocks, degraded, __ATOMIC_RELAXED);
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
	char path[128];
	int fd;
	void *p;

	shm_name(name, path, sizeof(path));
	if ((fd = shm_open(path, O_RDONLY | O_CLOEXEC, 0)) < 0)
		return -errno;
	p = mmap(NULL, sizeof(struct swapd_stats), PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	if (p == MAP_FAILED)
		return -errno;
	*out = p;
	return 0;
}

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
	if ((err = client_connect(o, &c)))
		goto close_ready;
	if ((err = blockmap_create(c, size / BLOCKMAP_BLOCK, (unsigned)opt_num(o, OPT_REPLICAS), &s.map)))
		goto disconnect;
	noreclaim_enter("swap daemon");
	if ((err = fusedev_mount(path, size, &ops, &s, &d)))
		goto destroy_map;
	if (write(ready, "r", 1) != 1)
		log_warn("cannot tell comex swap up that the device serves: %m");
	close(ready);
	ready = -1;
	err = fusedev_serve(d, SERVE_THREADS, opt_num(o, OPT_SWAP_SPIN));
	fusedev_free(d);
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

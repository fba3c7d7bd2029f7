/* fusedev: one regular file of a fixed size served over the raw FUSE
 * protocol (/dev/fuse), mounted on a regular file, for a loop device with
 * direct I/O in front (docs/DECISIONS.md D53). Reads, writes and discards of the
 * file go to callbacks; nothing is allocated per request. */
#ifndef COMEX_SWAP_FUSEDEV_H
#define COMEX_SWAP_FUSEDEV_H

#include <stdbool.h>
#include <stdint.h>

#define FUSEDEV_MAX_IO (1u << 20) /* bytes one READ or WRITE carries at most (max_write, max_pages) */

/* Offsets and lengths are bytes within the file; each returns 0 or -errno
 * (the errno the kernel hands to the reader or writer). */
struct fusedev_ops {
	int (*read)(void *ctx, uint64_t off, uint32_t len, void *dst);
	int (*write)(void *ctx, uint64_t off, uint32_t len, const void *src);
	int (*discard)(void *ctx, uint64_t off, uint64_t len);
};

struct fusedev;

/* How requests reach us (option swap-uring, in its order; docs/DECISIONS.md
 * D60): auto and on set the fuse module's enable_uring (root) and take
 * FUSE over io_uring; auto falls back to /dev/fuse reads (with a warning)
 * where the kernel does not offer it or refuses it, on fails; off reads
 * /dev/fuse. */
enum fusedev_uring { FUSEDEV_URING_AUTO, FUSEDEV_URING_ON, FUSEDEV_URING_OFF };

/* Mounts a file of size bytes on path (an existing regular file, root
 * only) and answers the kernel's INIT, with io_uring as uring says (its
 * queues' threads then serve from now on). -errno (logged) on failure. */
int fusedev_mount(const char *path, uint64_t size, const struct fusedev_ops *ops, void *ctx, enum fusedev_uring uring,
		  struct fusedev **out);
/* Whether requests come over io_uring (else by /dev/fuse reads). */
bool fusedev_uses_uring(const struct fusedev *d);
/* Serves requests on threads threads (the caller's among them) until the
 * file is unmounted; 0, or -errno when the device failed. With spin_ns,
 * the caller's thread polls for spin_ns after each request before it
 * sleeps (a sleeping server is woken at the cost of a wake-up). Over
 * io_uring: each CPU's queue thread polls its ring so, and one thread
 * reads what still comes on /dev/fuse. */
int fusedev_serve(struct fusedev *d, unsigned threads, uint64_t spin_ns);
/* Unmounts lazily: the file goes once nothing holds it open (the loop
 * device), and then fusedev_serve returns. */
void fusedev_unmount(struct fusedev *d);
/* After fusedev_serve returned. */
void fusedev_free(struct fusedev *d);

#endif

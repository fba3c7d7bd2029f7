/* fuse_uring: FUSE requests over io_uring (CONFIG_FUSE_IO_URING, Linux
 * 6.14+), for fusedev: one ring per possible CPU, each served by a thread
 * pinned to that CPU, buffers allocated before INIT is answered (docs/DECISIONS.md D60). */
#ifndef COMEX_SWAP_FUSE_URING_H
#define COMEX_SWAP_FUSE_URING_H

#include <linux/fuse.h>
#include <stdbool.h>
#include <stdint.h>

#define FUSE_URING_NO_REPLY 1 /* a handler's answer to a request that takes none */

/* Answers one request: h, its opcode's fixed argument op, the data after it
 * (a WRITE's, data_len bytes). Writes the reply's body to out (room for
 * FUSEDEV_MAX_IO bytes; it may be data's buffer, read first) and sets
 * *out_len. Returns 0, -errno to answer with that error, or FUSE_URING_NO_REPLY. */
typedef int (*fuse_uring_handler)(void *ctx, const struct fuse_in_header *h, const void *op, const void *data,
				  uint32_t data_len, void *out, uint32_t *out_len);

struct fuse_uring;

/* Whether the kernel's INIT offers FUSE over io_uring (enable_uring=Y). */
bool fuse_uring_offered(const struct fuse_init_in *in);
/* The flags2 bit our INIT reply sets to take it. */
uint32_t fuse_uring_init_flags2(void);
/* Before INIT is answered: a ring, a thread and buffers for each possible
 * CPU, for the FUSE descriptor fd; -errno (logged) if io_uring cannot be set up. */
int fuse_uring_create(int fd, fuse_uring_handler fn, void *ctx, struct fuse_uring **out);
/* After INIT was answered with fuse_uring_init_flags2: starts the threads
 * and registers every entry. 0 once all are, and requests come over the
 * rings; -errno (logged) when the kernel refused, the threads are stopped
 * and the kernel sends requests to /dev/fuse reads instead. */
int fuse_uring_start(struct fuse_uring *u);
/* Each queue's thread polls its ring for spin_ns after each request before
 * it sleeps (yielding its CPU between polls); 0: it always sleeps. */
void fuse_uring_set_spin(struct fuse_uring *u, uint64_t spin_ns);
/* Waits for the threads, which end with the connection (unmount); 0, or
 * the first -errno a queue failed with. */
int fuse_uring_join(struct fuse_uring *u);
/* After fuse_uring_join, or fuse_uring_start failed, or it was never called. */
void fuse_uring_free(struct fuse_uring *u);

#endif

/* poolfile: the embedded memnode's pool, mapped into the process (comex
 * run names its file in CLIENT_POOL_ENV): frames of that memnode move by
 * copies of our own, waking nobody. Process-wide: a forked child inherits
 * the mapping and keeps it when it reconnects. */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "client.h"
#include "client_impl.h"
#include "log.h"
#include "proto.h"

static struct { uint8_t *map; uint64_t bytes; char addr[256]; } pool_file; /* map NULL: none */

bool pool_file_serves(const char *addr, uint64_t frames)
{
	return pool_file.map && !strcmp(pool_file.addr, addr) && frames * PROTO_FRAME_SIZE <= pool_file.bytes;
}

void *pool_file_at(uint32_t pfn)
{
	return pool_file.map + (size_t)pfn * PROTO_FRAME_SIZE;
}

/* One transfer through the pool file: a copy, done when it returns (the
 * mapping is the pool's memory itself). Frames granted to us are populated
 * by the memnode before it grants them, so the copy never allocates. */
void pool_file_copy(enum tp_rma_kind kind, void *local, uint32_t count, uint32_t pfn)
{
	uint8_t *frames = pool_file.map + (size_t)pfn * PROTO_FRAME_SIZE;
	size_t len = (size_t)count * PROTO_FRAME_SIZE;

	if (kind == TP_GET)
		memcpy(local, frames, len);
	else
		memcpy(frames, local, len);
}

/* Maps frames just granted to us into our page table at once (the memnode
 * populated them), so no copy takes a minor fault on a frame's first use:
 * 2-3 us each on this VM, against a fraction of that in one batch. Best
 * effort: a kernel without MADV_POPULATE_WRITE (5.14) faults them in. */
void pool_file_populate(uint32_t pfn, uint32_t count)
{
	(void)madvise(pool_file.map + (size_t)pfn * PROTO_FRAME_SIZE, (size_t)count * PROTO_FRAME_SIZE,
		      MADV_POPULATE_WRITE);
}

/* The pool file comex run named, mapped once per process (D38). By
 * path, not by an inherited descriptor: a program exec'd by the one comex
 * run started (a shell, env, timeout) finds it too, and no descriptor
 * leaks into a child the runtime does not manage. Shared and not dumped
 * (a core holds the program's memory, not the pool's, which can be as big
 * as the host's); its pages show in the program's RssShmem, charged to the
 * memnode that populated them (docs/DECISIONS.md D38). */
void pool_file_take(void)
{
	static bool taken;
	const char *v = getenv(CLIENT_POOL_ENV), *at = v ? strrchr(v, '@') : NULL;
	char path[128];
	struct stat st;
	void *map = MAP_FAILED;
	int fd;

	if (taken || !at || at - v >= (ptrdiff_t)sizeof(path))
		return;
	taken = true;
	memcpy(path, v, (size_t)(at - v));
	path[at - v] = 0;
	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd >= 0 && !fstat(fd, &st) && S_ISREG(st.st_mode) && st.st_size > 0)
		map = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, fd, 0);
	if (map == MAP_FAILED) {
		log_info("cannot map the embedded memnode's pool file %s (%m): its pages move by messages", path);
		if (fd >= 0)
			close(fd);
		return;
	}
	close(fd);
	(void)madvise(map, (size_t)st.st_size, MADV_DONTDUMP);
	pool_file.map = map;
	pool_file.bytes = (uint64_t)st.st_size;
	snprintf(pool_file.addr, sizeof(pool_file.addr), "%s", at + 1);
}

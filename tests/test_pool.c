/* test_pool: a growing memnode pool grows by steps, synchronously or a step ahead on its grower thread, every frame handed over resident and zero; growth stops at max and at the host reserve; a fixed pool never grows; a pool in a memfd is the file's memory. */
#include "pool.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "testing.h"

#define MIB (1ull << 20)
#define FRAMES(bytes) ((uint32_t)((bytes) / 4096))

/* Every frame of [0, frames) is resident (populated by the pool, not by
 * this check: mincore does not fault anything in) and holds zero. */
static void check_resident(struct pool *p, uint32_t frames)
{
	uint8_t *base = pool_base(p);
	size_t len = (size_t)frames * 4096;
	unsigned char *vec = malloc(frames);

	CHECK(vec);
	CHECK(mincore(base, len, vec) == 0);
	for (uint32_t i = 0; i < frames; i++)
		if (!(vec[i] & 1)) { fprintf(stderr, "frame %u of %u not resident\n", i, frames); exit(1); }
	for (size_t off = 0; off < len; off += 4096)
		CHECK(base[off] == 0 && base[off + 4095] == 0);
	free(vec);
}

/* The step grown ahead is resident before pool_grow takes it over. */
static void grow_ahead(void)
{
	struct pool *p;
	uint32_t frames = FRAMES(8 * MIB), got = 0;

	CHECK(pool_create(8 * MIB, 200 * MIB, false, false, 0, -1, &p) == 0);
	check_resident(p, frames);
	/* more than a step (64 MiB) free: nothing to do yet */
	pool_grow_ahead(p, frames, FRAMES(100 * MIB));
	CHECK(pool_grow(p, frames, 1, &got) == 0);
	CHECK(got == FRAMES(72 * MIB)); /* nothing was ahead: a synchronous step */
	check_resident(p, got);
	frames = got;
	/* less than a step free: the grower populates the next one */
	pool_grow_ahead(p, frames, 0);
	CHECK(pool_grow(p, frames, 1, &got) == 0); /* waits for the grower */
	CHECK(got == FRAMES(136 * MIB));
	check_resident(p, got);
	frames = got;
	/* the last step is cut at max; beyond it nothing grows */
	pool_grow_ahead(p, frames, 0);
	CHECK(pool_grow(p, frames, 1, &got) == 0);
	CHECK(got == FRAMES(200 * MIB));
	check_resident(p, got);
	pool_grow_ahead(p, got, 0);
	CHECK(pool_grow(p, got, 1, &got) == -ENOMEM);
	pool_destroy(p);
}

/* A pool without pool-max has no grower and refuses to grow. */
static void fixed(void)
{
	struct pool *p;
	uint32_t got = 0;

	CHECK(pool_create(16 * MIB, 16 * MIB, true, false, 0, -1, &p) == 0);
	check_resident(p, FRAMES(16 * MIB));
	pool_grow_ahead(p, FRAMES(16 * MIB), 0);
	CHECK(pool_grow(p, FRAMES(16 * MIB), 1, &got) == -ENOMEM);
	pool_destroy(p);
}

/* A host reserve larger than the machine: growth is refused, not fatal. */
static void host_reserve(void)
{
	struct pool *p;
	uint32_t got = 0;

	CHECK(pool_create(4 * MIB, 64 * MIB, false, false, UINT64_MAX / 2, -1, &p) == 0);
	pool_grow_ahead(p, FRAMES(4 * MIB), 0);
	CHECK(pool_grow(p, FRAMES(4 * MIB), 1, &got) == -ENOMEM);
	pool_destroy(p);
}

/* A pool in a memfd (pool-fd, D38): what the pool holds is what a reader
 * of the file sees and the other way round; its grown steps are resident;
 * pool_discard punches the memory out (zero in the file too); a file
 * smaller than max is refused. */
static void shared_file(void)
{
	struct pool *p;
	uint32_t got = 0;
	uint8_t page[4096];
	int fd = memfd_create("test-pool", MFD_CLOEXEC);

	CHECK(fd >= 0 && ftruncate(fd, 64 * MIB) == 0);
	CHECK(pool_create(4 * MIB, 128 * MIB, false, false, 0, fd, &p) == -EINVAL); /* file too small */
	CHECK(pool_create(4 * MIB, 64 * MIB, false, false, 0, fd, &p) == 0);
	check_resident(p, FRAMES(4 * MIB));
	CHECK(pool_grow(p, FRAMES(4 * MIB), 1, &got) == 0 && got > FRAMES(4 * MIB));
	check_resident(p, got);
	memset(pool_base(p) + 4096 * 7, 0xab, 4096);
	CHECK(pread(fd, page, 4096, 4096 * 7) == 4096 && page[0] == 0xab && page[4095] == 0xab);
	memset(page, 0x5c, sizeof(page));
	CHECK(pwrite(fd, page, 4096, 4096 * 9) == 4096 && pool_base(p)[4096 * 9 + 100] == 0x5c);
	pool_discard(pool_base(p) + 4096 * 7, 4096);
	CHECK(pread(fd, page, 4096, 4096 * 7) == 4096 && page[0] == 0 && pool_base(p)[4096 * 7] == 0);
	pool_destroy(p);
	close(fd);
}

int main(void)
{
	grow_ahead();
	fixed();
	host_reserve();
	shared_file();
	printf("test_pool: ok\n");
	return 0;
}

/* fusedev_ram.h: what the FUSE file tests share: the file's content as a
 * RAM array (ram, allocated by the test), fusedev callbacks that count
 * requests and bytes discarded, and a hook each read and write calls
 * first (NULL: none). Include after fusedev.h. */
#ifndef COMEX_TESTS_FUSEDEV_RAM_H
#define COMEX_TESTS_FUSEDEV_RAM_H

static uint8_t *ram;
static uint64_t reads, writes, discarded;
static void (*ram_hook)(uint64_t off);

static int ram_read(void *ctx, uint64_t off, uint32_t len, void *dst)
{
	(void)ctx;
	if (ram_hook)
		ram_hook(off);
	memcpy(dst, ram + off, len);
	__atomic_fetch_add(&reads, 1, __ATOMIC_RELAXED);
	return 0;
}

static int ram_write(void *ctx, uint64_t off, uint32_t len, const void *src)
{
	(void)ctx;
	if (ram_hook)
		ram_hook(off);
	memcpy(ram + off, src, len);
	__atomic_fetch_add(&writes, 1, __ATOMIC_RELAXED);
	return 0;
}

static int ram_discard(void *ctx, uint64_t off, uint64_t len)
{
	(void)ctx;
	memset(ram + off, 0, len);
	__atomic_fetch_add(&discarded, len, __ATOMIC_RELAXED);
	return 0;
}

static const struct fusedev_ops ops = { ram_read, ram_write, ram_discard };

#endif

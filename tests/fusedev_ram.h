/* fusedev_ram.h: what the FUSE file tests share: the file's content as a
 * RAM array (ram, allocated by the test), fusedev callbacks that count
 * requests and bytes discarded, and a hook each read and write calls
 * first (NULL: none); a loop device with direct I/O on the file, as the
 * swap device has. Include after fusedev.h and testing.h. */
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

/* losetup --direct-io on path: 0 with dev (/dev/loopN), -1 when there is
 * no losetup or no free loop device. */
static int loop_attach(const char *path, char *dev, int cap)
{
	char cmd[512];
	FILE *p;

	snprintf(cmd, sizeof(cmd), "losetup --direct-io=on --find --show %s 2>/dev/null", path);
	if (!(p = popen(cmd, "r")) || !fgets(dev, cap, p) || pclose(p) != 0 || strncmp(dev, "/dev/loop", 9))
		return -1;
	dev[strcspn(dev, "\n")] = 0;
	return 0;
}

static void loop_detach(const char *dev)
{
	char cmd[512];

	snprintf(cmd, sizeof(cmd), "losetup -d %s", dev);
	CHECK(system(cmd) == 0);
}

#endif

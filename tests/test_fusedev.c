/* test_fusedev: a one-file FUSE device over a RAM array: O_DIRECT writes and reads of it (and through a loop device with direct I/O) reach the callbacks and come back equal, a punched hole reaches discard, the size is fixed, unmounting ends the service (root and /dev/fuse, else skipped). */
#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fusedev.h"
#include "testing.h"

#define SIZE (8u << 20)

#include "fusedev_ram.h"

/* The path the swap device takes: a loop device with direct I/O on the
 * file; a write to the loop device lands in the array. Skipped without
 * losetup or free loop devices. */
static void through_loop(const char *path)
{
	char dev[64] = "";
	uint8_t *buf;
	int fd;

	if (loop_attach(path, dev, sizeof(dev))) {
		puts("fusedev: no loop device here, that part skipped");
		return;
	}
	CHECK((fd = open(dev, O_RDWR | O_DIRECT)) >= 0);
	CHECK((buf = mmap(NULL, 65536, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)) != MAP_FAILED);
	memset(buf, 0xc5, 65536);
	CHECK(pwrite(fd, buf, 65536, 1 << 20) == 65536 && fsync(fd) == 0);
	CHECK(ram[1 << 20] == 0xc5 && ram[(1 << 20) + 65535] == 0xc5);
	memset(buf, 0, 65536);
	CHECK(pread(fd, buf, 65536, 1 << 20) == 65536 && buf[0] == 0xc5 && buf[65535] == 0xc5);
	close(fd);
	munmap(buf, 65536);
	loop_detach(dev);
	printf("fusedev: %s with direct I/O reached the file\n", dev);
}

static void *serve(void *arg)
{
	return (void *)(intptr_t)fusedev_serve(arg, 2, 100000); /* one polling worker: its path is served too */
}

int main(void)
{
	char path[] = "/tmp/test_fusedev.XXXXXX";
	struct fusedev *d;
	pthread_t t;
	struct stat st;
	uint8_t *buf;
	void *rc;
	int fd, err;

	if (geteuid() != 0 || access("/dev/fuse", R_OK | W_OK)) {
		puts("SKIP: needs root and /dev/fuse");
		return 77;
	}
	CHECK((fd = mkstemp(path)) >= 0);
	close(fd);
	CHECK((ram = calloc(1, SIZE)) != NULL);
	err = fusedev_mount(path, SIZE, &ops, NULL, FUSEDEV_URING_OFF, &d);
	if (err == -EPERM || err == -ENODEV) {
		unlink(path);
		puts("SKIP: cannot mount FUSE here");
		return 77;
	}
	CHECK(err == 0);
	CHECK(pthread_create(&t, NULL, serve, d) == 0);

	CHECK(stat(path, &st) == 0 && S_ISREG(st.st_mode) && (uint64_t)st.st_size == SIZE);
	CHECK((fd = open(path, O_RDWR | O_DIRECT)) >= 0);
	CHECK((buf = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)) != MAP_FAILED);
	for (size_t i = 0; i < (1 << 20); i++)
		buf[i] = (uint8_t)(i * 7 + 3);
	CHECK(pwrite(fd, buf, 1 << 20, 3 << 20) == 1 << 20);   /* one large write */
	CHECK(memcmp(ram + (3 << 20), buf, 1 << 20) == 0);      /* reached the callback, in place */
	memset(buf, 0, 1 << 20);
	CHECK(pread(fd, buf, 1 << 20, 3 << 20) == 1 << 20);
	CHECK(memcmp(ram + (3 << 20), buf, 1 << 20) == 0);
	CHECK(pwrite(fd, buf, 4096, SIZE) < 0);                 /* past the end: the file never grows */
	CHECK(fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 3 << 20, 8192) == 0);
	CHECK(discarded == 8192 && ram[3 << 20] == 0);
	CHECK(pread(fd, buf, 4096, 3 << 20) == 4096 && buf[0] == 0 && buf[4095] == 0);
	CHECK(writes >= 1 && reads >= 2);
	close(fd);
	through_loop(path);

	fusedev_unmount(d); /* the serving threads see ENODEV and return */
	CHECK(pthread_join(t, &rc) == 0 && rc == NULL);
	fusedev_free(d);
	unlink(path);
	printf("fusedev: ok (%llu writes, %llu reads)\n", (unsigned long long)writes, (unsigned long long)reads);
	return 0;
}

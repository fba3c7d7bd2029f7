/* test_fuse_uring: the one-file FUSE device over io_uring (swap-uring, docs/DECISIONS.md D60): with io_uring disabled (kernel.io_uring_disabled 2), auto falls back to /dev/fuse reads and still serves; auto and on set enable_uring to Y and serves over the rings: O_DIRECT writes, reads and punched holes of the file from a thread pinned to each CPU come back equal, each served on the CPU that issued it, also through a loop device with direct I/O; unmounting ends every queue's thread. enable_uring is put back as it was. Root, /dev/fuse and a kernel with CONFIG_FUSE_IO_URING, else skipped. */
#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fusedev.h"
#include "testing.h"

#define ENABLE "/sys/module/fuse/parameters/enable_uring"
#define SIZE (16u << 20)
#define MAX_CPUS 64
#define REGION (SIZE / MAX_CPUS) /* each CPU's thread writes its own part of the file */
#define ROUNDS 200

static char old_enable = 'N';
static unsigned ncpu;
static uint64_t off_cpu, off_ring;

#include "fusedev_ram.h"

/* A request for region r came from the thread pinned to CPU r: its
 * queue's thread, pinned there too, serves it. */
static void note_cpu(uint64_t off)
{
	unsigned r = (unsigned)(off / REGION);
	char name[16] = "";

	if (r < ncpu && sched_getcpu() != (int)r)
		__atomic_fetch_add(&off_cpu, 1, __ATOMIC_RELAXED);
	pthread_getname_np(pthread_self(), name, sizeof(name));
	if (strncmp(name, "fuse-uring/", 11))
		__atomic_fetch_add(&off_ring, 1, __ATOMIC_RELAXED); /* served by a /dev/fuse reader */
}


/* One character into a sysfs or procfs file (best effort). */
static void put_char(const char *path, char v)
{
	FILE *f = fopen(path, "w");

	if (f) {
		fputc(v, f);
		fclose(f);
	}
}

static void set_enable(char v) { put_char(ENABLE, v); }

#define IO_URING_DISABLED "/proc/sys/kernel/io_uring_disabled"
static char old_disabled; /* 0: not read */

static void set_disabled(char v) { put_char(IO_URING_DISABLED, v); }

static void restore_enable(void)
{
	set_enable(old_enable);
	if (old_disabled)
		set_disabled(old_disabled);
}

static void *serve(void *d) { return (void *)(intptr_t)fusedev_serve(d, 2, 50000); }

struct mounted {
	struct fusedev *d;
	pthread_t t;
};

static int mount_file(const char *path, enum fusedev_uring mode, struct mounted *m)
{
	int err = fusedev_mount(path, SIZE, &ops, NULL, mode, &m->d);

	if (!err)
		CHECK(pthread_create(&m->t, NULL, serve, m->d) == 0);
	return err;
}

static void unmount_file(struct mounted *m)
{
	void *rc;

	fusedev_unmount(m->d); /* the readers see ENODEV, the queues ENOTCONN: all return */
	CHECK(pthread_join(m->t, &rc) == 0 && rc == NULL);
	fusedev_free(m->d);
}

/* Pinned to CPU arg: writes of 4 KiB to 256 KiB at random places of its
 * region, each read back and compared, some punched out. */
static void *cpu_worker(void *arg)
{
	unsigned cpu = (unsigned)(uintptr_t)arg, seed = cpu * 7919 + 1;
	const char *path = getenv("FUSE_URING_FILE");
	uint8_t *w, *r;
	cpu_set_t one;
	int fd;

	CPU_ZERO(&one);
	CPU_SET(cpu, &one);
	CHECK(sched_setaffinity(0, sizeof(one), &one) == 0);
	CHECK((fd = open(path, O_RDWR | O_DIRECT)) >= 0);
	CHECK((w = mmap(NULL, 2 << 18, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)) != MAP_FAILED);
	r = w + (1 << 18);
	for (int i = 0; i < ROUNDS; i++) {
		size_t len = 4096u * (1 + rand_r(&seed) % 64);
		off_t off = (off_t)cpu * REGION + 4096 * (rand_r(&seed) % ((REGION - len) / 4096 + 1));

		for (size_t j = 0; j < len; j += 8)
			*(uint64_t *)(w + j) = ((uint64_t)off + j) * 2654435761u ^ (uint64_t)i;
		CHECK(pwrite(fd, w, len, off) == (ssize_t)len);
		CHECK(pread(fd, r, len, off) == (ssize_t)len && memcmp(w, r, len) == 0);
		CHECK(memcmp(ram + off, w, len) == 0);
		if (i % 16 == 0) {
			CHECK(fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, off, 4096) == 0);
			CHECK(pread(fd, r, 4096, off) == 4096 && r[0] == 0 && r[4095] == 0);
		}
	}
	close(fd);
	munmap(w, 2 << 18);
	return NULL;
}

static void on_every_cpu(const char *path)
{
	pthread_t t[MAX_CPUS];

	setenv("FUSE_URING_FILE", path, 1);
	for (unsigned c = 0; c < ncpu; c++)
		CHECK(pthread_create(&t[c], NULL, cpu_worker, (void *)(uintptr_t)c) == 0);
	for (unsigned c = 0; c < ncpu; c++)
		CHECK(pthread_join(t[c], NULL) == 0);
}

/* The swap device's path: a loop device with direct I/O on the file. */
static void through_loop(const char *path)
{
	char dev[64] = "";
	uint8_t *buf;
	int fd;

	if (loop_attach(path, dev, sizeof(dev))) {
		puts("fuse_uring: no loop device here, that part skipped");
		return;
	}
	CHECK((fd = open(dev, O_RDWR | O_DIRECT)) >= 0);
	CHECK((buf = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)) != MAP_FAILED);
	for (int i = 0; i < 8; i++) {
		memset(buf, 0x30 + i, 1 << 20);
		CHECK(pwrite(fd, buf, 1 << 20, (off_t)i << 20) == 1 << 20);
	}
	CHECK(fsync(fd) == 0);
	for (int i = 7; i >= 0; i--) {
		CHECK(pread(fd, buf, 1 << 20, (off_t)i << 20) == 1 << 20);
		CHECK(buf[0] == 0x30 + i && buf[(1 << 20) - 1] == 0x30 + i && ram[((size_t)i << 20) + 12345] == 0x30 + i);
	}
	close(fd);
	munmap(buf, 1 << 20);
	loop_detach(dev);
	printf("fuse_uring: %s with direct I/O reached the file over io_uring\n", dev);
}

/* One 8 KiB write reaches the RAM file. */
static void write_once(const char *path, uint8_t v)
{
	uint8_t *buf;
	int fd;

	CHECK((fd = open(path, O_RDWR | O_DIRECT)) >= 0);
	CHECK((buf = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)) != MAP_FAILED);
	memset(buf, v, 8192);
	CHECK(pwrite(fd, buf, 8192, 0) == 8192 && ram[8191] == v);
	close(fd);
	munmap(buf, 8192);
}

/* io_uring refused to everyone (kernel.io_uring_disabled 2): auto reads
 * /dev/fuse, and the file still serves; then, enable_uring N and io_uring
 * allowed: auto sets enable_uring and takes io_uring. */
static void auto_modes(const char *path)
{
	struct mounted m;
	FILE *f = fopen(IO_URING_DISABLED, "r");

	if (f) {
		old_disabled = (char)fgetc(f);
		fclose(f);
		set_disabled('2');
		CHECK(mount_file(path, FUSEDEV_URING_AUTO, &m) == 0);
		CHECK(!fusedev_uses_uring(m.d));
		write_once(path, 0xa5);
		unmount_file(&m);
		set_disabled(old_disabled);
		puts("fuse_uring: auto with io_uring disabled serves by /dev/fuse reads");
	} else {
		puts("fuse_uring: no " IO_URING_DISABLED ", the fallback part skipped");
	}
	set_enable('N');
	if (mount_file(path, FUSEDEV_URING_AUTO, &m))
		return; /* main's on says why */
	if (fusedev_uses_uring(m.d))
		puts("fuse_uring: auto with enable_uring N set it and serves over io_uring");
	write_once(path, 0x5a);
	unmount_file(&m);
}

int main(void)
{
	char path[] = "/tmp/test_fuse_uring.XXXXXX";
	struct mounted m;
	FILE *f;
	int fd, err;

	if (geteuid() != 0 || access("/dev/fuse", R_OK | W_OK) || !(f = fopen(ENABLE, "r"))) {
		puts("SKIP: needs root, /dev/fuse and a kernel with FUSE over io_uring (" ENABLE ")");
		return 77;
	}
	old_enable = (char)fgetc(f);
	fclose(f);
	atexit(restore_enable);
	ram_hook = note_cpu;
	ncpu = (unsigned)sysconf(_SC_NPROCESSORS_ONLN);
	ncpu = ncpu > MAX_CPUS ? MAX_CPUS : ncpu;
	CHECK((fd = mkstemp(path)) >= 0);
	close(fd);
	CHECK((ram = calloc(1, SIZE)) != NULL);
	auto_modes(path);
	off_cpu = off_ring = 0; /* those were served by readers on any CPU */

	set_enable('N');
	err = mount_file(path, FUSEDEV_URING_ON, &m); /* sets enable_uring to Y */
	if (err == -EOPNOTSUPP || err == -EPERM || err == -ENODEV) {
		unlink(path);
		printf("SKIP: the kernel does not serve FUSE over io_uring here (%s)\n", strerror(-err));
		return 77;
	}
	CHECK(err == 0 && fusedev_uses_uring(m.d));
	on_every_cpu(path);
	CHECK(discarded > 0 && writes >= ROUNDS * ncpu && reads >= ROUNDS * ncpu);
	printf("fuse_uring: %u CPUs, %llu writes, %llu reads, %llu served off their CPU, %llu not by a queue\n", ncpu,
	       (unsigned long long)writes, (unsigned long long)reads, (unsigned long long)off_cpu,
	       (unsigned long long)off_ring);
	CHECK(off_cpu == 0 && off_ring == 0);
	through_loop(path);
	CHECK(off_ring == 0);
	unmount_file(&m);
	unlink(path);
	puts("fuse_uring: ok");
	return 0;
}

/* prog_readsys [MiB=128]: system calls that copy into or out of memory whose
 * pages are not resident (the kernel, not the program, takes the fault):
 * read(2) from a file and from a pipe into an evicted buffer at unaligned
 * offsets (bytes around the destination must keep their old contents),
 * readv/pread, fstat into an evicted struct, read into never-touched memory,
 * and write(2) out of an evicted buffer. Between steps a second buffer larger
 * than the first is rewritten so that the first is pushed out again. */
#include <fcntl.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "common.h"

static unsigned char *a, *b;
static size_t asz, bsz;
static uint64_t bround;

static void push_out(void)
{
	fill((uint64_t *)b, bsz / 8, 0xbb00 + ++bround, 0);
}

static void check_stream(const unsigned char *p, size_t len, uint64_t seed, uint64_t first, const char *what)
{
	uint64_t w = 0, wi = UINT64_MAX;
	for (size_t i = 0; i < len; i++) {
		uint64_t k = first + i;
		if (k / 8 != wi)
			w = pat(seed, wi = k / 8);
		unsigned char want = (unsigned char)(w >> (8 * (k % 8)));
		if (p[i] != want)
			die("%s: byte %zu is %#x, expected %#x", what, i, p[i], want);
	}
}

/* a's bytes outside [lo, hi) must still hold the pattern of seed 0xA0 */
static void check_a_outside(size_t lo, size_t hi, const char *what)
{
	check_stream(a, lo, 0xA0, 0, what);
	check_stream(a + hi, asz - hi, 0xA0, hi, what);
}

static void fill_stream(unsigned char *p, size_t len, uint64_t seed, uint64_t first)
{
	uint64_t w = 0, wi = UINT64_MAX;
	for (size_t i = 0; i < len; i++) {
		uint64_t k = first + i;
		if (k / 8 != wi)
			w = pat(seed, wi = k / 8);
		p[i] = (unsigned char)(w >> (8 * (k % 8)));
	}
}

struct pipe_job { int fd; size_t len; };

static void *pipe_writer(void *arg)
{
	struct pipe_job *j = arg;
	unsigned char chunk[70001];
	size_t off = 0, n = 1;
	while (off < j->len) {
		n = n * 7 % sizeof chunk + 1; /* odd sizes */
		if (n > j->len - off)
			n = j->len - off;
		fill_stream(chunk, n, 0x919e, off);
		for (size_t done = 0; done < n;) {
			ssize_t w = write(j->fd, chunk + done, n - done);
			if (w <= 0)
				die("pipe write: %s", strerror(errno));
			done += (size_t)w;
		}
		off += n;
	}
	close(j->fd);
	return NULL;
}

int main(int argc, char **argv)
{
	size_t size = arg_mib(argc, argv, 1, 128);
	asz = size / 2;
	bsz = size - asz + 32 * MiB;
	if (!(a = malloc(asz)) || !(b = malloc(bsz)))
		die("malloc");
	fill_stream(a, asz, 0xA0, 0);
	push_out();

	const char *tmp = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
	char path[4096];
	snprintf(path, sizeof path, "%s/prog_readsys.XXXXXX", tmp);
	int fd = mkstemp(path);
	if (fd < 0)
		die("mkstemp %s: %s", path, strerror(errno));
	unlink(path);

	/* 1. file -> evicted buffer, unaligned start and odd chunk sizes */
	size_t flen = 24 * MiB + 333;
	{
		unsigned char *tmpb = malloc(1 * MiB);
		for (size_t off = 0; off < flen; off += MiB) {
			size_t n = flen - off < MiB ? flen - off : MiB;
			fill_stream(tmpb, n, 0xF11E, off);
			if (write(fd, tmpb, n) != (ssize_t)n)
				die("write file");
		}
		free(tmpb);
	}
	push_out();
	size_t dst = 100;
	if (lseek(fd, 0, SEEK_SET) != 0)
		die("lseek");
	for (size_t off = 0, n = 1; off < flen;) {
		n = (n * 13 + 4093) % (3 * MiB) + 1;
		if (n > flen - off)
			n = flen - off;
		ssize_t r = read(fd, a + dst + off, n);
		if (r <= 0)
			die("read file: %s", r < 0 ? strerror(errno) : "eof");
		off += (size_t)r;
	}
	push_out();
	check_stream(a + dst, flen, 0xF11E, 0, "file read into evicted buffer");
	check_a_outside(dst, dst + flen, "bytes around the file read");
	fill_stream(a, asz, 0xA0, 0);
	push_out();

	/* 2. pipe -> evicted buffer */
	int pfd[2];
	if (pipe(pfd))
		die("pipe");
	struct pipe_job job = { pfd[1], 16 * MiB + 77 };
	pthread_t th;
	if (pthread_create(&th, NULL, pipe_writer, &job))
		die("pthread_create");
	dst = asz / 2 + 7;
	size_t got = 0;
	for (;;) {
		ssize_t r = read(pfd[0], a + dst + got, 1 * MiB + 5);
		if (r < 0)
			die("read pipe: %s", strerror(errno));
		if (r == 0)
			break;
		got += (size_t)r;
	}
	pthread_join(th, NULL);
	close(pfd[0]);
	if (got != job.len)
		die("pipe: got %zu bytes, expected %zu", got, job.len);
	push_out();
	check_stream(a + dst, got, 0x919e, 0, "pipe read into evicted buffer");
	check_a_outside(dst, dst + got, "bytes around the pipe read");
	fill_stream(a, asz, 0xA0, 0);
	push_out();

	/* 3. readv and pread into two evicted pieces */
	struct iovec iov[2] = { { a + 4096 * 3 + 1, 5 * MiB }, { a + asz - 6 * MiB - 3, 6 * MiB } };
	if (lseek(fd, 1000, SEEK_SET) != 1000)
		die("lseek");
	if (readv(fd, iov, 2) != (ssize_t)(11 * MiB))
		die("readv");
	if (pread(fd, a + 20 * MiB, 2 * MiB, 12345) != (ssize_t)(2 * MiB))
		die("pread");
	push_out();
	check_stream(iov[0].iov_base, 5 * MiB, 0xF11E, 1000, "readv piece 1");
	check_stream(iov[1].iov_base, 6 * MiB, 0xF11E, 1000 + 5 * MiB, "readv piece 2");
	check_stream(a + 20 * MiB, 2 * MiB, 0xF11E, 12345, "pread");
	check_stream(a + 5 * MiB + 4096 * 3 + 1, 20 * MiB - (5 * MiB + 4096 * 3 + 1), 0xA0, 5 * MiB + 4096 * 3 + 1,
		     "bytes between readv and pread");
	fill_stream(a, asz, 0xA0, 0);
	push_out();

	/* 4. fstat into an evicted struct */
	struct stat *st = (struct stat *)(a + 40 * MiB - 17 * 8);
	if (fstat(fd, st))
		die("fstat");
	if (st->st_size != (off_t)flen)
		die("fstat into evicted memory: size %lld, expected %zu", (long long)st->st_size, flen);
	check_stream(a, 40 * MiB - 17 * 8, 0xA0, 0, "bytes before the fstat");

	/* 5. read into memory never touched before (a fresh mapping: malloc need not zero) */
	unsigned char *fresh = mmap(NULL, 8 * MiB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (fresh == MAP_FAILED)
		die("mmap");
	if (pread(fd, fresh + 4095, 4 * MiB, 0) != (ssize_t)(4 * MiB))
		die("pread fresh");
	if (!all_zero(fresh, 4088) || fresh[4088] || fresh[4094])
		die("bytes before a read into fresh memory are not zero");
	check_stream(fresh + 4095, 4 * MiB, 0xF11E, 0, "read into fresh memory");
	for (size_t i = 4095 + 4 * MiB; i < 8 * MiB; i++)
		if (fresh[i])
			die("fresh memory after the read is not zero at %zu", i);
	munmap(fresh, 8 * MiB);
	fill_stream(a, asz, 0xA0, 0);
	push_out();

	/* 6. write(2) out of an evicted buffer, read back with pread into a small buffer */
	if (ftruncate(fd, 0) || lseek(fd, 0, SEEK_SET) != 0)
		die("truncate");
	for (size_t off = 0; off < asz;) {
		size_t n = asz - off < 5 * MiB + 1 ? asz - off : 5 * MiB + 1;
		ssize_t w = write(fd, a + off, n);
		if (w <= 0)
			die("write from evicted buffer");
		off += (size_t)w;
	}
	unsigned char *chk = malloc(MiB);
	uint64_t h = 0;
	for (size_t off = 0; off < asz; off += MiB) {
		if (pread(fd, chk, MiB, (off_t)off) != (ssize_t)MiB)
			die("pread back");
		check_stream(chk, MiB, 0xA0, off, "file written from evicted buffer");
		h = sum64(chk, MiB, h);
	}
	free(chk);
	close(fd);
	printf("readsys: %zu MiB, checksum %016" PRIx64 ", ok\n", size / MiB, h);
	return 0;
}

/* prog_sparse GiB MiB KiB [ROUNDS]: a big reservation touched sparsely, as
 * the JVM's heap, V8's cage or a database's arena are. Reserves GiB with
 * MAP_NORESERVE, writes MiB of it in pieces of KiB spread evenly over the
 * whole reservation, then reads every piece back ROUNDS times (default 2),
 * checking each word, and prints a checksum; then VmHWM, RssFile and
 * RssShmem from /proc/self/status on stderr. */
#include <sys/mman.h>

#include "common.h"

/* The kernel's peak resident size and the file and shared-memory parts of
 * the resident size now, on stderr: VmHWM less those is (about) the peak
 * of the process's own memory, the runtime's included. */
static void status_to_stderr(void)
{
	char line[256];
	FILE *f = fopen("/proc/self/status", "r");

	if (!f)
		die("/proc/self/status: %s", strerror(errno));
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "VmHWM:", 6) || !strncmp(line, "RssFile:", 8) || !strncmp(line, "RssShmem:", 9))
			fputs(line, stderr);
	fclose(f);
}

int main(int argc, char **argv)
{
	size_t len = arg_mib(argc, argv, 1, 256) * 1024, touched = arg_mib(argc, argv, 2, 256);
	size_t piece = (argc > 3 ? strtoul(argv[3], NULL, 0) : 4) * 1024;
	int rounds = argc > 4 ? atoi(argv[4]) : 2;
	size_t n = touched / piece, stride, words = piece / 8;
	uint64_t h = 0;
	char *base;

	if (!piece || piece % PAGE || !n)
		die("usage: prog_sparse GiB MiB KiB [ROUNDS]: KiB a multiple of 4, MiB at least one piece");
	stride = len / n / PAGE * PAGE;
	if (stride < piece)
		die("%zu pieces of %zu KiB do not fit in the reservation", n, piece >> 10);
	base = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (base == MAP_FAILED)
		die("mmap %zu GiB with MAP_NORESERVE: %s", len >> 30, strerror(errno));
	for (size_t i = 0; i < n; i++)
		fill((uint64_t *)(base + i * stride), words, 0x5a, i * words);
	for (int r = 0; r < rounds; r++)
		for (size_t i = 0; i < n; i++)
			expect((uint64_t *)(base + i * stride), words, 0x5a, i * words, "a piece read back");
	for (size_t i = 0; i < n; i++)
		h = sum64(base + i * stride, piece, h);
	printf("sparse: %zu GiB reserved, %zu pieces of %zu KiB, checksum %016" PRIx64 "\n", len >> 30, n,
	       piece >> 10, h);
	fflush(stdout);
	status_to_stderr();
	return 0;
}

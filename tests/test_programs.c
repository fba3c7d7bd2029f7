/* test_programs: the stats segment as comex top and the exporter read it: log2 bucket bounds, percentiles from a histogram, a live segment found by pid and by scan, a dead or foreign one skipped; the same for the swap devices' counters. */
#include "programs.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "stats.h"
#include "testing.h"

static void test_buckets(void)
{
	CHECK(stats_bucket(0) == 0 && stats_bucket(1) == 0 && stats_bucket(2) == 1 && stats_bucket(3) == 1);
	CHECK(stats_bucket(4) == 2 && stats_bucket(1023) == 9 && stats_bucket(1024) == 10);
	CHECK(stats_bucket((1ull << 31) - 1) == 30 && stats_bucket(1ull << 31) == 31);
	CHECK(stats_bucket(UINT64_MAX) == STATS_HIST_BUCKETS - 1);
}

static void test_quantiles(void)
{
	uint64_t h[STATS_HIST_BUCKETS] = { 0 };

	CHECK(programs_quantile(h, 0.5) < 0); /* empty */
	h[10] = 100;                           /* all in [1024, 2048) ns */
	CHECK(fabs(programs_quantile(h, 0.5) - 1536) < 1e-9);
	CHECK(fabs(programs_quantile(h, 0.99) - (1024 + 1024 * 0.99)) < 1e-9);
	h[20] = 100;                           /* half at ~1 us, half at ~1 ms */
	CHECK(programs_quantile(h, 0.25) < 2048);
	CHECK(programs_quantile(h, 0.99) >= (1 << 20) && programs_quantile(h, 0.99) < (1 << 21));
	CHECK(programs_quantile(h, 0.5) <= 2048); /* the 100th of 200 is the last of bucket 10 */
}

static void test_snapshot(void)
{
	struct stats *s;
	struct program *p;
	size_t n;
	char path[64];
	int fd;

	CHECK(stats_create(&s) == 0);
	s->local_mem_bytes = 24 << 20;
	s->frames_held[1] = 77;
	stats_remote_fault(s, 5000);
	CHECK(programs_snapshot(getpid(), &p, &n) == 0 && n == 1);
	CHECK(p[0].pid == getpid() && p[0].s.local_mem_bytes == 24 << 20 && p[0].s.frames_held[1] == 77);
	CHECK(p[0].s.hist_remote_ns[12] == 1 && p[0].s.ns_remote == 5000 && strlen(p[0].comm) > 0);
	free(p);
	CHECK(programs_snapshot(0, &p, &n) == 0 && programs_find(p, n, getpid()));
	free(p);
	stats_unlink(getpid());
	CHECK(programs_snapshot(getpid(), &p, &n) == -ESRCH);

	/* a segment of another layout (shorter) or of a dead process is skipped */
	snprintf(path, sizeof(path), "/dev/shm/comex-stats.%d", getpid());
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	CHECK(fd >= 0 && write(fd, "CXSTATS1", 8) == 8);
	close(fd);
	CHECK(programs_snapshot(getpid(), &p, &n) == -ESRCH);
	unlink(path);
	CHECK(programs_snapshot(999999999, &p, &n) == -ESRCH);
}

/* Writes /dev/shm/comex-swap.NAME holding bytes of st */
static void swap_segment(const char *name, const struct swapd_stats *st, size_t bytes)
{
	char path[128];
	int fd;

	snprintf(path, sizeof(path), "/dev/shm/comex-swap.%s", name);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	CHECK(fd >= 0 && write(fd, st, bytes) == (ssize_t)bytes);
	close(fd);
}

/* comex swap devices: a live daemon's counters found by the scan; another
 * layout (magic), a shorter file or a dead daemon's skipped */
static void test_swapdevs(void)
{
	struct swapd_stats st = { .magic = SWAPD_STATS_MAGIC, .pid = getpid(), .size_bytes = 32 << 20, .copies = 2 };
	char live[64], other[64], shorter[64], dead[64], path[128];
	const char *const names[] = { live, other, shorter, dead };
	const struct swapdev *d;
	struct swapdev *all;
	size_t n;

	snprintf(live, sizeof(live), "t%d-live", getpid());
	snprintf(other, sizeof(other), "t%d-other", getpid());
	snprintf(shorter, sizeof(shorter), "t%d-short", getpid());
	snprintf(dead, sizeof(dead), "t%d-dead", getpid());
	st.hist_read_ns[12] = 3;
	swap_segment(live, &st, sizeof(st));
	swap_segment(shorter, &st, sizeof(st) / 2);
	st.pid = 999999999;
	swap_segment(dead, &st, sizeof(st));
	st.pid = getpid();
	st.magic = 0x3130504157535842ull;
	swap_segment(other, &st, sizeof(st));
	CHECK(swapdevs_snapshot(&all, &n) == 0);
	d = swapdevs_find(all, n, live);
	CHECK(d && d->s.size_bytes == 32 << 20 && d->s.copies == 2 && d->s.pid == getpid() && d->s.hist_read_ns[12] == 3);
	CHECK(!swapdevs_find(all, n, other) && !swapdevs_find(all, n, shorter) && !swapdevs_find(all, n, dead));
	for (size_t i = 1; i < n; i++)
		CHECK(strcmp(all[i - 1].name, all[i].name) < 0); /* by name */
	free(all);
	for (int i = 0; i < 4; i++) {
		snprintf(path, sizeof(path), "/dev/shm/comex-swap.%s", names[i]);
		unlink(path);
	}
}

int main(void)
{
	test_buckets();
	test_quantiles();
	if (access("/dev/shm", W_OK)) {
		printf("test_programs: no writable /dev/shm, snapshot part skipped\n");
		return 77;
	}
	test_snapshot();
	test_swapdevs();
	printf("test_programs: ok\n");
	return 0;
}

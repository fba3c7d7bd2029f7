/* test_pollcore: three memnode processes and one polling core: two share it (POLLCORE_SHARE), the third takes a claim only once its holder has not renewed it for the stale time (also across the millisecond clock's wrap) or gave it back; the holder that stood still learns it lost it and is unpinned; a sharer moves to a first claim that comes free; a larger claim file is never shrunk. */
#include "pollcore.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testing.h"

#define MS 1000000ull

/* A child process that owns a pollcore and does what the parent asks: one
 * command byte and a time in, one answer byte out. */
struct peer {
	pid_t pid;
	int to, from;
};

enum { CMD_OPEN = 'o', CMD_TICK = 't', CMD_CLOSE = 'c', CMD_NCPU = 'n' };

static char dir[] = "/tmp/test_pollcore.XXXXXX";

static void serve(int in, int out)
{
	struct pollcore *pc = NULL;
	struct { char cmd; uint64_t now; } m;

	while (read(in, &m, sizeof(m)) == sizeof(m)) {
		char ans = 0;
		cpu_set_t set;

		if (m.cmd == CMD_OPEN)
			ans = (char)(pollcore_open(dir, &pc) == 0);
		else if (m.cmd == CMD_TICK)
			ans = (char)pollcore_tick(pc, m.now);
		else if (m.cmd == CMD_CLOSE) {
			pollcore_close(pc);
			pc = NULL;
			ans = 1;
		} else if (m.cmd == CMD_NCPU)
			ans = (char)(sched_getaffinity(0, sizeof(set), &set) ? -1 : CPU_COUNT(&set));
		if (write(out, &ans, 1) != 1)
			break;
	}
	_exit(0);
}

static struct peer spawn(void)
{
	int down[2], up[2];
	struct peer p;

	CHECK(pipe(down) == 0 && pipe(up) == 0);
	p.pid = fork();
	CHECK(p.pid >= 0);
	if (!p.pid) {
		close(down[1]);
		close(up[0]);
		serve(down[0], up[1]);
	}
	close(down[0]);
	close(up[1]);
	p.to = down[1];
	p.from = up[0];
	return p;
}

static int ask(struct peer *p, char cmd, uint64_t now)
{
	struct { char cmd; uint64_t now; } m;
	char ans;

	memset(&m, 0, sizeof(m));
	m.cmd = cmd;
	m.now = now;
	CHECK(write(p->to, &m, sizeof(m)) == sizeof(m));
	CHECK(read(p->from, &ans, 1) == 1);
	return ans;
}

/* Ends the peers (each holds the others' pipe ends too: all must close). */
static void end(struct peer *p, int n)
{
	int st;

	for (int i = 0; i < n; i++)
		close(p[i].to);
	for (int i = 0; i < n; i++) {
		CHECK(waitpid(p[i].pid, &st, 0) == p[i].pid && WIFEXITED(st) && WEXITSTATUS(st) == 0);
		close(p[i].from);
	}
}

/* The pid holding claim k of core 1, as the claim files say. */
static uint32_t holder(unsigned k)
{
	char path[sizeof(dir) + 32];
	uint64_t w = 0;
	int fd;

	snprintf(path, sizeof(path), k ? "%s/comex-pollcores.%u" : "%s/comex-pollcores", dir, k);
	fd = open(path, O_RDONLY);
	CHECK(fd >= 0 && pread(fd, &w, sizeof(w), sizeof(w)) == sizeof(w));
	close(fd);
	return (uint32_t)(w >> 32);
}

/* Runs the hand-over sequence from time t0 (ns). */
static void handover(uint64_t t0)
{
	struct peer p[3] = { spawn(), spawn(), spawn() }, *a = &p[0], *b = &p[1], *c = &p[2];

	_Static_assert(POLLCORE_SHARE == 2, "the sequence below shares one core two ways");
	CHECK(ask(a, CMD_OPEN, 0) == 1 && ask(b, CMD_OPEN, 0) == 1 && ask(c, CMD_OPEN, 0) == 1);
	CHECK(ask(a, CMD_TICK, t0) == 1);               /* the core was free */
	CHECK(ask(a, CMD_NCPU, 0) == 1);                /* pinned to it */
	CHECK(ask(b, CMD_TICK, t0) == 1);               /* its second claim */
	CHECK(ask(b, CMD_NCPU, 0) == 1);
	CHECK(ask(c, CMD_TICK, t0) == 0);               /* both held, fresh */
	CHECK(ask(c, CMD_NCPU, 0) == 2);
	CHECK(ask(a, CMD_TICK, t0 + 50 * MS) == 1);     /* renewed */
	CHECK(ask(b, CMD_TICK, t0 + 100 * MS) == 1);
	CHECK(ask(c, CMD_TICK, t0 + 140 * MS) == 0);    /* 90 ms since a's renewal: still held */
	CHECK(ask(c, CMD_TICK, t0 + (50 + POLLCORE_STALE_MS + 1) * MS) == 1); /* a stood still: taken */
	CHECK(ask(c, CMD_NCPU, 0) == 1);
	CHECK(ask(a, CMD_TICK, t0 + 160 * MS) == 0);    /* a runs again: it lost its claim, b holds the other */
	CHECK(ask(a, CMD_NCPU, 0) == 2);                /* and runs where it ran before */
	CHECK(ask(b, CMD_TICK, t0 + 170 * MS) == 1);    /* b and c keep theirs */
	CHECK(ask(c, CMD_TICK, t0 + 170 * MS) == 1);
	CHECK(ask(c, CMD_CLOSE, 0) == 1);               /* c ends: its claim is free at once */
	CHECK(ask(a, CMD_TICK, t0 + 171 * MS) == 1);
	CHECK(holder(0) == (uint32_t)a->pid && holder(1) == (uint32_t)b->pid);
	CHECK(ask(a, CMD_CLOSE, 0) == 1);               /* a ends: b's next tick moves it to the first claim */
	CHECK(ask(b, CMD_TICK, t0 + 172 * MS) == 1);
	CHECK(holder(0) == (uint32_t)b->pid && holder(1) == 0);
	CHECK(ask(b, CMD_CLOSE, 0) == 1);
	CHECK(holder(0) == 0);
	end(p, 3);
}

int main(void)
{
	cpu_set_t two;

	if (sysconf(_SC_NPROCESSORS_ONLN) < 2) {
		fprintf(stderr, "skip: one CPU, no polling core (core 0 is never claimed)\n");
		return 77;
	}
	/* cores 0 and 1 only: core 1 is the one polling core, whatever the machine */
	CPU_ZERO(&two);
	CPU_SET(0, &two);
	CPU_SET(1, &two);
	if (sched_setaffinity(0, sizeof(two), &two)) {
		fprintf(stderr, "skip: cannot run on cores 0 and 1: %s\n", strerror(errno));
		return 77;
	}
	CHECK(mkdtemp(dir));
	{ /* a claim file larger than this build's (another version's) is never shrunk: others map it */
		char path[sizeof(dir) + 32];
		struct stat st;
		int fd;

		snprintf(path, sizeof(path), "%s/comex-pollcores", dir);
		CHECK((fd = open(path, O_RDWR | O_CREAT, 0600)) >= 0 && ftruncate(fd, 3 << 13) == 0);
		close(fd);
		handover(1000 * 1000 * MS);
		CHECK(stat(path, &st) == 0 && st.st_size == 3 << 13);
	}
	/* the millisecond clock of a claim wraps at 2^32 ms (49.7 days) */
	handover(((1ull << 32) - 60) * MS);
	{
		char path[sizeof(dir) + 32];

		snprintf(path, sizeof(path), "%s/comex-pollcores", dir);
		CHECK(unlink(path) == 0);
		snprintf(path, sizeof(path), "%s/comex-pollcores.1", dir);
		CHECK(unlink(path) == 0);
		CHECK(rmdir(dir) == 0);
	}
	return 0;
}

/* e2e: helpers for tests that run a real `comex memnode` process. */
#ifndef COMEX_TEST_E2E_H
#define COMEX_TEST_E2E_H

#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "auth.h"
#include "client.h"
#include "log.h"
#include "options.h"
#include "testing.h"
#include "transport.h"

struct memnode_proc { pid_t pid; char addr[64]; char log[256]; };

static char e2e_dir[] = "/tmp/comex-e2e-XXXXXX";

static void e2e_init(void)
{
	CHECK(mkdtemp(e2e_dir));
	CHECK(getenv("COMEX_BIN"));
}

static void e2e_token(const char *name, char *path, size_t cap)
{
	snprintf(path, cap, "%s/%s", e2e_dir, name);
	if (access(path, F_OK))
		CHECK(auth_token_generate(path) == 0);
}

/* Starts `comex memnode --listen 127.0.0.1:0 ARGS...` and waits for its port. */
static void memnode_start(struct memnode_proc *mp, const char *const *args)
{
	static int n;
	const char *argv[32] = { getenv("COMEX_BIN"), "memnode", "--listen", "127.0.0.1:0" };
	int argc = 4;
	FILE *f;

	snprintf(mp->log, sizeof(mp->log), "%s/memnode%d.log", e2e_dir, n++);
	for (; *args; args++)
		argv[argc++] = *args;
	mp->pid = fork();
	CHECK(mp->pid >= 0);
	if (!mp->pid) {
		/* a failed CHECK must not leave the memnode holding ctest's
		 * output pipe (ctest then waits out its timeout) */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		CHECK(freopen(mp->log, "w", stderr));
		execv(argv[0], (char **)argv);
		_exit(127);
	}
	for (int tries = 0; tries < 3000; tries++) { /* readiness, not timing: up to 30 s */
		char line[512];
		int port = 0;

		f = fopen(mp->log, "r");
		while (f && fgets(line, sizeof(line), f)) {
			char *p = strstr(line, " on port ");
			if (p)
				port = atoi(p + 9);
		}
		if (f)
			fclose(f);
		if (port) {
			snprintf(mp->addr, sizeof(mp->addr), "127.0.0.1:%d", port);
			return;
		}
		CHECK(waitpid(mp->pid, NULL, WNOHANG) == 0); /* died at start-up */
		usleep(10000);
	}
	CHECK(!"memnode did not start");
}

static void memnode_stop(struct memnode_proc *mp)
{
	int st;

	kill(mp->pid, SIGTERM);
	CHECK(waitpid(mp->pid, &st, 0) == mp->pid);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

static int client_for(const char *const *flags, struct comex_client **out)
{
	/* per thread: test_two_clients connects from two threads at once, and a
	 * shared struct let one thread's HELLO go out without its token */
	static _Thread_local struct options o;
	const char *argv[32] = { "test" };
	int argc = 1, first;

	for (; *flags; flags++)
		argv[argc++] = *flags;
	CHECK(options_configure(&o, SC_CLIENT, argc, (char **)argv, &first) == 0);
	return client_connect(&o, out);
}

static uint64_t mix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/* Page contents are a function of (pfn, seed), so nothing needs storing. */
static void fill_page(uint64_t *p, uint32_t pfn, uint64_t seed)
{
	for (int i = 0; i < 512; i++)
		p[i] = mix64(seed ^ ((uint64_t)pfn << 12) ^ i);
}

static int page_ok(const uint64_t *p, uint32_t pfn, uint64_t seed)
{
	for (int i = 0; i < 512; i++)
		if (p[i] != mix64(seed ^ ((uint64_t)pfn << 12) ^ i))
			return 0;
	return 1;
}

#endif

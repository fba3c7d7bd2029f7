/* Pages are written in runs of up to RUN frames (so the transfers look like
 * the pager's batched writes) and read back in reverse order. */
#include "check.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "client.h"
#include "clock.h"
#include "log.h"
#include "options.h"

#define RUN 64
#define WORDS 512 /* 64-bit words in a 4 KiB frame */

struct run { uint32_t pfn, count; };

static uint64_t pattern(unsigned node, uint32_t pfn, unsigned word)
{
	return ((uint64_t)node << 56) ^ ((uint64_t)pfn << 20) ^ word ^ 0x5a5a5a5a5a5a5a5aull;
}

static int write_pages(struct comex_client *c, unsigned node, uint32_t pages, uint64_t *buf,
		       struct run *runs, uint32_t *nruns_out)
{
	uint32_t done = 0, nruns = 0;

	while (done < pages) {
		uint32_t pfn, got, want = pages - done < RUN ? pages - done : RUN;
		int err = client_alloc(c, node, want, &pfn, &got);

		if (!err)
			for (uint32_t i = 0; i < got * WORDS; i++)
				buf[i] = pattern(node, pfn + i / WORDS, i % WORDS);
		if (!err)
			err = client_write(c, node, pfn, got, buf);
		if (err)
			return err;
		runs[nruns++] = (struct run){ pfn, got };
		done += got;
	}
	*nruns_out = nruns;
	return 0;
}

static int verify_pages(struct comex_client *c, unsigned node, uint64_t *buf, const struct run *runs, uint32_t nruns)
{
	for (uint32_t r = nruns; r-- > 0;) {
		int err = client_read(c, node, runs[r].pfn, runs[r].count, buf);

		if (err)
			return err;
		for (uint32_t i = 0; i < runs[r].count * WORDS; i++) {
			if (buf[i] != pattern(node, runs[r].pfn + i / WORDS, i % WORDS)) {
				log_error("node %u: frame %u came back corrupted at byte %u", node,
					  runs[r].pfn + i / WORDS, (i % WORDS) * 8);
				return -EIO;
			}
		}
		err = client_release(c, node, runs[r].pfn, runs[r].count);
		if (err)
			return err;
	}
	return client_flush(c);
}

static int check_node(struct comex_client *c, unsigned node, uint32_t pages, uint64_t *buf, struct run *runs)
{
	struct client_node_stats st;
	uint32_t nruns;
	double t0 = now_s(), t1, t2;
	int err = write_pages(c, node, pages, buf, runs, &nruns);

	t1 = now_s();
	if (!err)
		err = verify_pages(c, node, buf, runs, nruns);
	t2 = now_s();
	if (!err)
		err = client_node_stats(c, node, &st);
	if (err) {
		printf("node %u: FAILED: %s\n", node, strerror(-err));
		return err;
	}
	printf("node %u (nid %u): %u pages written in %.0f ms (%.0f MiB/s), read back and verified in %.0f ms "
	       "(%.0f MiB/s)\n", node, st.nid, pages, (t1 - t0) * 1e3, pages / 256.0 / (t1 - t0),
	       (t2 - t1) * 1e3, pages / 256.0 / (t2 - t1));
	printf("  control RTT %.1f us; replenish threshold T %u (Eq. 1 suggests %u); %llu allocs, %llu nacks; "
	       "memnode has %llu MiB free\n", st.rtt_us, st.threshold, st.threshold_suggested,
	       (unsigned long long)st.allocs, (unsigned long long)st.nacks,
	       (unsigned long long)(st.memnode_free_frames >> 8));
	return 0;
}

int check_main(const struct options *o, uint32_t pages)
{
	struct comex_client *c;
	uint64_t *buf = malloc(RUN * 4096);
	struct run *runs = calloc(pages, sizeof(*runs));
	int err = buf && runs ? client_connect(o, &c) : -ENOMEM;

	if (!err) {
		for (unsigned node = 0; node < client_nodes(c) && !err; node++)
			err = check_node(c, node, pages, buf, runs);
		client_close(c);
	}
	free(buf);
	free(runs);
	printf("%s\n", err ? "check FAILED" : "check passed: every page came back intact");
	return err;
}

int drain_main(const struct options *o)
{
	struct comex_client *c;
	uint32_t clients = 0;
	uint64_t frames = 0;
	int err = client_connect(o, &c);

	if (err)
		return err;
	err = client_drain(c, 0, &clients, &frames);
	client_close(c);
	if (err) {
		printf("drain FAILED: %s\n", strerror(-err));
		return err;
	}
	printf("memnode %s is draining: %u clients told to move their pages (%llu frames); it exits when they are "
	       "done or after its drain-timeout\n", opt_str(o, OPT_MEMNODE), clients, (unsigned long long)frames);
	return 0;
}

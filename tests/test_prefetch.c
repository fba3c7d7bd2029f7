/* test_prefetch: fault sequences and the plan each prefetch policy makes for the last fault. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "prefetch.h"
#include "testing.h"

#define MAXSEQ 40
#define NONE (-1)

struct want { uint64_t lo, hi; int64_t stride; uint32_t reads; };

struct row {
	const char *name;
	enum prefetch_policy policy;
	uint32_t max_window;
	uint64_t seq[MAXSEQ]; /* faults, in order */
	int n;
	int fb_after;         /* feedback after seq[fb_after] (NONE: none) */
	uint32_t used, wasted;
	struct want want;     /* for seq[n - 1] */
};

/* Random-looking pages: no two adjacent, no repeated delta. */
#define NOISE7 90001, 52013, 77777, 10400, 63331, 30017, 88123

#define A PREFETCH_ADAPTIVE
#define W PREFETCH_WINDOW
#define RB PREFETCH_READ_BUFFER
#define R PREFETCH_MAX_READS

static const struct row rows[] = {
	/* 0 alone; 1 continues it: 4; each fault just past the last plan doubles */
	{ "sequential grows to max", A, 64, { 0, 1, 5, 13, 29, 61, 125 }, 7, NONE, 0, 0, { 125, 189, 1, R } },
	{ "sequential stays at max", A, 64, { 0, 1, 5, 13, 29, 61, 125, 189 }, 8, NONE, 0, 0, { 189, 253, 1, R } },
	{ "sequential, small max", A, 8, { 0, 1, 5, 13, 21 }, 5, NONE, 0, 0, { 21, 29, 1, R } },
	/* 28, a refault inside the plan [13, 29), does not hide that plan's end */
	{ "refault inside a plan", A, 64, { 0, 1, 5, 13, 28, 29 }, 6, NONE, 0, 0, { 29, 61, 1, R } },
	{ "backward", A, 64, { 1000, 999, 995, 987, 971 }, 5, NONE, 0, 0, { 940, 972, -1, R } },
	/* two deltas of 3 are a trend; the plan's end continued doubles it */
	{ "stride 3", A, 64, { 0, 3, 6 }, 3, NONE, 0, 0, { 6, 16, 3, R } },
	{ "stride 3 grows", A, 64, { 0, 3, 6, 18, 42 }, 5, NONE, 0, 0, { 42, 88, 3, R } },
	{ "stride 64", A, 64, { 0, 64, 128 }, 3, NONE, 0, 0, { 128, 321, 64, R } },
	{ "stride 64 grows", A, 64, { 0, 64, 128, 384 }, 4, NONE, 0, 0, { 384, 833, 64, R } },
	{ "backward stride 5", A, 64, { 500, 495, 490 }, 3, NONE, 0, 0, { 475, 491, -5, R } },
	/* deltas 950, 3, -943, 3: two of four is no majority */
	{ "half is no majority", A, 64, { 50, 1000, 1003, 60, 63 }, 5, NONE, 0, 0, { 63, 64, 1, R } },
	{ "random", A, 64, { 7, 9000, 12, 4000, 800, 33333, 5, 70000, 600, 20000 }, 10, NONE, 0, 0, { 20000, 20001, 1, R } },
	{ "interleaved streams", A, 64, { 0, 5000, 1, 5001, 5, 5005, 13, 5013 }, 8, NONE, 0, 0, { 5013, 5029, 1, R } },
	{ "interleaved, first stream", A, 64, { 0, 5000, 1, 5001, 5, 5005, 13 }, 7, NONE, 0, 0, { 13, 29, 1, R } },
	/* every page faults: no plan was used, the vote keeps 4 */
	{ "every page faults", A, 64, { 100, 101, 102, 103, 104, 105, 106 }, 7, NONE, 0, 0, { 106, 110, 1, R } },
	/* the stray fault gets no prefetch (it does not follow the trend) */
	{ "stray fault after a stream", A, 64, { 100, 101, 102, 103, 104, 105, 106, 90001 }, 8, NONE, 0, 0, { 90001, 90002, 1, R } },
	/* last 8 deltas: 6 of +1 */
	{ "one stray fault, 8-vote", A, 64,
	  { 100, 101, 102, 103, 104, 105, 106, 107, 108, 109, 110, 90001, 111 }, 13, NONE, 0, 0, { 111, 115, 1, R } },
	/* last 8 deltas: 4 of +1 (no majority); last 16: 12 */
	{ "three stray faults, 16-vote", A, 64,
	  { 100, 101, 102, 103, 104, 105, 106, 107, 108, 109, 110, 111, 112, 90001, 52013, 77777, 113 }, 17, NONE,
	  0, 0, { 113, 117, 1, R } },
	/* last 16 deltas: 8 of +1 (no majority); last 32: 24 */
	{ "seven stray faults, 32-vote", A, 64,
	  { 100, 101, 102, 103, 104, 105, 106, 107, 108, 109, 110, 111, 112, 113, 114, 115, 116, 117, 118, 119, 120,
	    121, 122, 123, 124, NOISE7, 125 }, 33, NONE, 0, 0, { 125, 129, 1, R } },
	/* 17 of the last 32 deltas are +1 (the oldest included), 1 of the last 16 */
	{ "fourteen stray faults, bare 32-vote", A, 64,
	  { 100, 101, 102, 103, 104, 105, 106, 107, 108, 109, 110, 111, 112, 113, 114, 115, 116, 117, NOISE7,
	    41011, 70707, 20202, 99991, 15151, 60606, 35353, 118 }, 33, NONE, 0, 0, { 118, 122, 1, R } },
	/* window 16 halves to 8 and is not doubled on the next hit */
	{ "waste shrinks", A, 64, { 0, 1, 5, 13, 29 }, 5, 3, 0, 15, { 29, 37, 1, R } },
	{ "use does not shrink", A, 64, { 0, 1, 5, 13, 29 }, 5, 3, 15, 0, { 29, 61, 1, R } },
	{ "waste, then grows again", A, 64, { 0, 1, 5, 13, 29, 37 }, 6, 3, 2, 13, { 37, 53, 1, R } },
	/* waste also halves the window a new stream opens with: 2, not 4 */
	{ "waste shrinks a new stream", A, 64, { 0, 1, 5, 13, 29, 1000, 1001 }, 7, 3, 0, 15, { 1001, 1003, 1, R } },
	{ "backward near 0", A, 64, { 10, 9, 5 }, 3, NONE, 0, 0, { 0, 6, -1, R } },
	{ "backward at 0", A, 64, { 2, 1, 0 }, 3, NONE, 0, 0, { 0, 1, -1, R } },
	{ "backward stride 64 near 0", A, 64, { 300, 236, 172 }, 3, NONE, 0, 0, { 44, 173, -64, R } },
	{ "max window 1", A, 1, { 0, 1, 2, 3 }, 4, NONE, 0, 0, { 3, 4, 1, R } },
	/* window: a first fault reads its page; one within a window of a recent
	 * window reads the whole aligned window, in one read */
	{ "window, first fault", W, 16, { 37 }, 1, NONE, 0, 0, { 37, 38, 1, 1 } },
	{ "window, stream", W, 16, { 37, 50 }, 2, NONE, 0, 0, { 48, 64, 1, 1 } },
	{ "window, stream backward", W, 16, { 37, 20 }, 2, NONE, 0, 0, { 16, 32, 1, 1 } },
	{ "window, far away", W, 16, { 37, 100 }, 2, NONE, 0, 0, { 100, 101, 1, 1 } },
	{ "window, one of 8 streams", W, 16, { 0, 1000, 2000, 3000, 4000, 5000, 6000, 7000, 17 }, 9, NONE, 0, 0,
	  { 16, 32, 1, 1 } },
	{ "window, a 9th forgets the 1st", W, 16, { 0, 1000, 2000, 3000, 4000, 5000, 6000, 7000, 8000, 17 }, 10,
	  NONE, 0, 0, { 17, 18, 1, 1 } },
	/* read buffer: every fault reads its whole aligned window */
	{ "read buffer, first fault", RB, 64, { 100 }, 1, NONE, 0, 0, { 64, 128, 1, 1 } },
};

static void run_row(const struct row *r)
{
	struct prefetch *pf;
	struct prefetch_plan p = { 0, 0, 0, 0 };

	CHECK(prefetch_create(r->policy, r->max_window, &pf) == 0);
	for (int i = 0; i < r->n; i++) {
		prefetch_fault(pf, r->seq[i], &p);
		CHECK(p.lo <= r->seq[i] && r->seq[i] < p.hi && p.hi - p.lo <= (uint64_t)(p.stride < 0 ? -p.stride : p.stride) * (r->max_window - 1) + 1);
		if (i == r->fb_after)
			prefetch_feedback(pf, r->used, r->wasted);
	}
	prefetch_destroy(pf);
	if (p.lo != r->want.lo || p.hi != r->want.hi || p.stride != r->want.stride || p.reads != r->want.reads) {
		fprintf(stderr, "%s: plan [%llu, %llu) stride %lld in %u reads, want [%llu, %llu) stride %lld in %u\n",
			r->name, (unsigned long long)p.lo, (unsigned long long)p.hi, (long long)p.stride, p.reads,
			(unsigned long long)r->want.lo, (unsigned long long)r->want.hi, (long long)r->want.stride,
			r->want.reads);
		exit(1);
	}
}

/* Counters: continued plans count their pages besides the fault; feedback (samples) adds nothing. */
static void test_counters(void)
{
	static const uint64_t seq[] = { 0, 1, 5, 13 };
	struct prefetch *pf;
	struct prefetch_plan p;
	uint64_t hits, wasted;

	CHECK(prefetch_create(PREFETCH_ADAPTIVE, 64, &pf) == 0);
	for (unsigned i = 0; i < sizeof(seq) / sizeof(seq[0]); i++)
		prefetch_fault(pf, seq[i], &p);
	prefetch_feedback(pf, 2, 5);
	prefetch_counters(pf, &hits, &wasted);
	CHECK(hits == 3 + 7 && wasted == 0);
	prefetch_destroy(pf);
	pf = NULL;
	CHECK(prefetch_create(PREFETCH_ADAPTIVE, 0, &pf) == -EINVAL && !pf);
	CHECK(prefetch_create(PREFETCH_ADAPTIVE, 12, &pf) == -EINVAL && !pf);
	CHECK(prefetch_create(PREFETCH_ADAPTIVE, 512, &pf) == -EINVAL && !pf);
	CHECK(prefetch_create(PREFETCH_READ_BUFFER + 1, 64, &pf) == -EINVAL && !pf);
	CHECK(prefetch_create(PREFETCH_ADAPTIVE, 256, &pf) == 0);
	prefetch_fault(pf, 1ull << 60, &p); /* beyond any page: just itself */
	CHECK(p.lo == 1ull << 60 && p.hi == p.lo + 1 && p.stride == 1);
	prefetch_destroy(pf);
}

/* The plan for a new stream (a fault on 7000, then 7001) after the feedback
 * rounds given (used, wasted pairs, 0 ending the list): its page count. */
static uint64_t new_stream_pages(const uint32_t *fb)
{
	struct prefetch *pf;
	struct prefetch_plan p;

	CHECK(prefetch_create(PREFETCH_ADAPTIVE, 64, &pf) == 0);
	for (; fb[0] || fb[1]; fb += 2)
		prefetch_feedback(pf, fb[0], fb[1]);
	prefetch_fault(pf, 7000, &p);
	prefetch_fault(pf, 7001, &p);
	prefetch_destroy(pf);
	CHECK(p.lo == 7001 && p.stride == 1);
	return p.hi - p.lo;
}

/* A new stream's window: halved by waste down to 1 (no neighbour fetched),
 * doubled back by use outweighing waste more than twice, never past 4. */
static void test_open_window(void)
{
	CHECK(new_stream_pages((const uint32_t[]){ 0, 0 }) == 4);
	CHECK(new_stream_pages((const uint32_t[]){ 1, 7, 0, 0 }) == 2);
	CHECK(new_stream_pages((const uint32_t[]){ 1, 7, 1, 7, 1, 7, 0, 0 }) == 1);
	CHECK(new_stream_pages((const uint32_t[]){ 1, 7, 1, 7, 5, 3, 0, 0 }) == 1);   /* not clearly used */
	CHECK(new_stream_pages((const uint32_t[]){ 1, 7, 1, 7, 7, 1, 0, 0 }) == 2);
	CHECK(new_stream_pages((const uint32_t[]){ 1, 7, 8, 0, 8, 0, 8, 0, 0, 0 }) == 4);
}

int main(void)
{
	for (unsigned i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
		run_row(&rows[i]);
	test_counters();
	test_open_window();
	return 0;
}

/* test_prefetch: fault sequences and the plan each prefetch policy makes for the last fault, and how verdicts on a class of plans bound its windows. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "prefetch.h"
#include "testing.h"

#define MAXSEQ 40

struct want { uint64_t lo, hi; int64_t stride; uint32_t reads; };

struct row {
	const char *name;
	enum prefetch_policy policy;
	uint32_t max_window;
	uint64_t seq[MAXSEQ]; /* faults, in order */
	int n;
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
	{ "sequential grows to max", A, 64, { 0, 1, 5, 13, 29, 61, 125 }, 7, { 125, 189, 1, R } },
	{ "sequential stays at max", A, 64, { 0, 1, 5, 13, 29, 61, 125, 189 }, 8, { 189, 253, 1, R } },
	{ "sequential, small max", A, 8, { 0, 1, 5, 13, 21 }, 5, { 21, 29, 1, R } },
	/* 28, a refault inside the plan [13, 29), does not hide that plan's end */
	{ "refault inside a plan", A, 64, { 0, 1, 5, 13, 28, 29 }, 6, { 29, 61, 1, R } },
	{ "backward", A, 64, { 1000, 999, 995, 987, 971 }, 5, { 940, 972, -1, R } },
	/* two deltas of 3 are a trend; the plan's end continued doubles it */
	{ "stride 3", A, 64, { 0, 3, 6 }, 3, { 6, 16, 3, R } },
	{ "stride 3 grows", A, 64, { 0, 3, 6, 18, 42 }, 5, { 42, 88, 3, R } },
	{ "stride 64", A, 64, { 0, 64, 128 }, 3, { 128, 321, 64, R } },
	{ "stride 64 grows", A, 64, { 0, 64, 128, 384 }, 4, { 384, 833, 64, R } },
	{ "backward stride 5", A, 64, { 500, 495, 490 }, 3, { 475, 491, -5, R } },
	/* deltas 950, 3, -943, 3: two of four is no majority */
	{ "half is no majority", A, 64, { 50, 1000, 1003, 60, 63 }, 5, { 63, 64, 1, R } },
	{ "random", A, 64, { 7, 9000, 12, 4000, 800, 33333, 5, 70000, 600, 20000 }, 10, { 20000, 20001, 1, R } },
	{ "interleaved streams", A, 64, { 0, 5000, 1, 5001, 5, 5005, 13, 5013 }, 8, { 5013, 5029, 1, R } },
	{ "interleaved, first stream", A, 64, { 0, 5000, 1, 5001, 5, 5005, 13 }, 7, { 13, 29, 1, R } },
	/* every page faults: no plan was used, the vote keeps 4 */
	{ "every page faults", A, 64, { 100, 101, 102, 103, 104, 105, 106 }, 7, { 106, 110, 1, R } },
	/* the stray fault gets no prefetch (it does not follow the trend) */
	{ "stray fault after a stream", A, 64, { 100, 101, 102, 103, 104, 105, 106, 90001 }, 8, { 90001, 90002, 1, R } },
	/* last 8 deltas: 6 of +1 */
	{ "one stray fault, 8-vote", A, 64,
	  { 100, 101, 102, 103, 104, 105, 106, 107, 108, 109, 110, 90001, 111 }, 13, { 111, 115, 1, R } },
	/* last 8 deltas: 4 of +1 (no majority); last 16: 12 */
	{ "three stray faults, 16-vote", A, 64,
	  { 100, 101, 102, 103, 104, 105, 106, 107, 108, 109, 110, 111, 112, 90001, 52013, 77777, 113 }, 17, { 113, 117, 1, R } },
	/* last 16 deltas: 8 of +1 (no majority); last 32: 24 */
	{ "seven stray faults, 32-vote", A, 64,
	  { 100, 101, 102, 103, 104, 105, 106, 107, 108, 109, 110, 111, 112, 113, 114, 115, 116, 117, 118, 119, 120,
	    121, 122, 123, 124, NOISE7, 125 }, 33, { 125, 129, 1, R } },
	/* 17 of the last 32 deltas are +1 (the oldest included), 1 of the last 16 */
	{ "fourteen stray faults, bare 32-vote", A, 64,
	  { 100, 101, 102, 103, 104, 105, 106, 107, 108, 109, 110, 111, 112, 113, 114, 115, 116, 117, NOISE7,
	    41011, 70707, 20202, 99991, 15151, 60606, 35353, 118 }, 33, { 118, 122, 1, R } },
	{ "backward near 0", A, 64, { 10, 9, 5 }, 3, { 0, 6, -1, R } },
	{ "backward at 0", A, 64, { 2, 1, 0 }, 3, { 0, 1, -1, R } },
	{ "backward stride 64 near 0", A, 64, { 300, 236, 172 }, 3, { 44, 173, -64, R } },
	{ "max window 1", A, 1, { 0, 1, 2, 3 }, 4, { 3, 4, 1, R } },
	/* window: a first fault reads its page; one within a window of a recent
	 * window reads the whole aligned window, in one read */
	{ "window, first fault", W, 16, { 37 }, 1, { 37, 38, 1, 1 } },
	{ "window, stream", W, 16, { 37, 50 }, 2, { 48, 64, 1, 1 } },
	{ "window, stream backward", W, 16, { 37, 20 }, 2, { 16, 32, 1, 1 } },
	{ "window, far away", W, 16, { 37, 100 }, 2, { 100, 101, 1, 1 } },
	{ "window, one of 8 streams", W, 16, { 0, 1000, 2000, 3000, 4000, 5000, 6000, 7000, 17 }, 9,
	  { 16, 32, 1, 1 } },
	{ "window, a 9th forgets the 1st", W, 16, { 0, 1000, 2000, 3000, 4000, 5000, 6000, 7000, 8000, 17 }, 10, { 17, 18, 1, 1 } },
	/* read buffer: every fault reads its whole aligned window */
	{ "read buffer, first fault", RB, 64, { 100 }, 1, { 64, 128, 1, 1 } },
};

static void run_row(const struct row *r)
{
	struct prefetch *pf;
	struct prefetch_plan p = { 0, 0, 0, 0, 0, false };

	CHECK(prefetch_create(r->policy, r->max_window, 80, &pf) == 0);
	for (int i = 0; i < r->n; i++) {
		prefetch_fault(pf, r->seq[i], &p);
		CHECK(p.lo <= r->seq[i] && r->seq[i] < p.hi && p.hi - p.lo <= (uint64_t)(p.stride < 0 ? -p.stride : p.stride) * (r->max_window - 1) + 1);
		CHECK(p.cls < PREFETCH_CLASSES);
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

/* Counters: continued plans count their pages besides the fault; verdicts (samples) add nothing. */
static void test_counters(void)
{
	static const uint64_t seq[] = { 0, 1, 5, 13 };
	struct prefetch *pf;
	struct prefetch_plan p;
	uint64_t hits, wasted;

	CHECK(prefetch_create(PREFETCH_ADAPTIVE, 64, 80, &pf) == 0);
	for (unsigned i = 0; i < sizeof(seq) / sizeof(seq[0]); i++)
		prefetch_fault(pf, seq[i], &p);
	for (int i = 0; i < 7; i++)
		prefetch_feedback(pf, p.cls, i < 2);
	prefetch_feedback(pf, PREFETCH_CLASSES, false); /* no such class: ignored */
	prefetch_counters(pf, &hits, &wasted);
	CHECK(hits == 3 + 7 && wasted == 0);
	prefetch_destroy(pf);
	pf = NULL;
	CHECK(prefetch_create(PREFETCH_ADAPTIVE, 0, 80, &pf) == -EINVAL && !pf);
	CHECK(prefetch_create(PREFETCH_ADAPTIVE, 12, 80, &pf) == -EINVAL && !pf);
	CHECK(prefetch_create(PREFETCH_ADAPTIVE, 512, 80, &pf) == -EINVAL && !pf);
	CHECK(prefetch_create(PREFETCH_READ_BUFFER + 1, 64, 80, &pf) == -EINVAL && !pf);
	CHECK(prefetch_create(PREFETCH_ADAPTIVE, 64, 101, &pf) == -EINVAL && !pf);
	CHECK(prefetch_create(PREFETCH_ADAPTIVE, 256, 80, &pf) == 0);
	prefetch_fault(pf, 1ull << 60, &p); /* beyond any page: just itself */
	CHECK(p.lo == 1ull << 60 && p.hi == p.lo + 1 && p.stride == 1);
	prefetch_destroy(pf);
}

/* A sequential stream, each fault at the last plan's end, from page 0 with
 * the floor given, after the verdicts given to classes (cls, used, count
 * triples, count 0 ending the list): the sizes of its plans 2..n (a plan
 * of 64 pages is the fifth, sizes 4, 8, 16, 32 before it), 1000 more for a
 * trial (read, not mapped: the next fault is on the page after). */
static void stream(uint32_t floor, const uint32_t *fb, int n, uint64_t *sizes)
{
	struct prefetch *pf;
	struct prefetch_plan p;
	uint64_t at = 0;

	CHECK(prefetch_create(PREFETCH_ADAPTIVE, 64, floor, &pf) == 0);
	for (; fb[2]; fb += 3)
		for (uint32_t i = 0; i < fb[2]; i++)
			prefetch_feedback(pf, fb[0], fb[1]);
	prefetch_fault(pf, at++, &p); /* alone: its page */
	for (int i = 0; i < n; i++) {
		prefetch_fault(pf, at, &p);
		CHECK(p.lo == at && p.stride == 1);
		sizes[i] = p.trial ? 1000 + p.hi - p.lo : p.hi - p.lo;
		at = p.trial ? p.lo + 1 : p.hi; /* a trial maps its page alone */
	}
	prefetch_destroy(pf);
}

/* Classes: 0 a stream's opening plan, 1 + log2(w) a continued plan of w. */
static void test_classes(void)
{
	static const uint64_t grow[6] = { 4, 8, 16, 32, 64, 64 };
	uint64_t got[64];
	struct prefetch *pf;
	struct prefetch_plan p;
	int n32 = 0;

	/* no verdicts, or fewer than 8, or a share at the floor: the window grows */
	stream(80, (const uint32_t[]){ 0, 0, 0 }, 6, got);
	CHECK(!memcmp(got, grow, sizeof(grow)));
	stream(80, (const uint32_t[]){ 6, 0, 7, 0, 0, 0 }, 6, got);
	CHECK(!memcmp(got, grow, sizeof(grow)));
	stream(80, (const uint32_t[]){ 6, 0, 2, 6, 1, 8, 0, 0, 0 }, 6, got); /* 8 of 10 */
	CHECK(!memcmp(got, grow, sizeof(grow)));
	/* windows of 32 below the floor (7 of 10): the stream stays at 16, then 64 is not reached */
	stream(80, (const uint32_t[]){ 6, 0, 3, 6, 1, 7, 0, 0, 0 }, 6, got);
	CHECK(got[2] == 16 && got[3] == 16 && got[4] == 16 && got[5] == 16);
	/* and 16 too: 8; floor 0 takes no notice */
	stream(80, (const uint32_t[]){ 6, 0, 8, 5, 0, 8, 0, 0, 0 }, 4, got);
	CHECK(got[0] == 4 && got[1] == 8 && got[2] == 8 && got[3] == 8);
	stream(0, (const uint32_t[]){ 6, 0, 8, 5, 0, 8, 0, 0, 0 }, 6, got);
	CHECK(!memcmp(got, grow, sizeof(grow)));
	/* openings below the floor: a new stream opens with its page alone, then grows from 2 */
	stream(80, (const uint32_t[]){ 0, 0, 8, 0, 0, 0 }, 3, got);
	CHECK(got[0] == 1 && got[1] == 2 && got[2] == 4);
	/* one refusal in 16 is a trial of the refused size; the stream goes on at 16 */
	stream(80, (const uint32_t[]){ 6, 0, 8, 7, 0, 8, 0, 0, 0 }, 64, got);
	for (int i = 3; i < 64; i++) {
		n32 += got[i] == 1000 + 32;
		CHECK(got[i] == 16 || got[i] == 1000 + 32);
	}
	CHECK(got[3] == 16 && n32 == 61 / 16);
	/* the share follows the last verdicts: 8 wasted, then 64 used */
	stream(80, (const uint32_t[]){ 6, 0, 8, 6, 1, 64, 0, 0, 0 }, 6, got);
	CHECK(!memcmp(got, grow, sizeof(grow)));
	/* a trial of an opening: 4 pages read, class 0; the stream goes on from the next page */
	CHECK(prefetch_create(PREFETCH_ADAPTIVE, 64, 80, &pf) == 0);
	for (int i = 0; i < 8; i++)
		prefetch_feedback(pf, 0, false);
	for (int i = 0; i < 16; i++) {
		prefetch_fault(pf, 1000 * (uint64_t)i + 50000, &p);
		prefetch_fault(pf, 1000 * (uint64_t)i + 50001, &p);
		CHECK(p.trial == (i == 15) && p.hi - p.lo == (i == 15 ? 4 : 1) && !p.cls);
	}
	prefetch_fault(pf, 65002, &p);
	CHECK(!p.trial && p.lo == 65002 && p.hi == 65004 && p.cls == 2);
	prefetch_destroy(pf);
	/* a stream's opening after a stream continued: class 0; a continued plan: its size's */
	CHECK(prefetch_create(PREFETCH_ADAPTIVE, 64, 80, &pf) == 0);
	prefetch_fault(pf, 100, &p);
	prefetch_fault(pf, 101, &p);
	CHECK(p.cls == 0 && p.hi - p.lo == 4);
	prefetch_fault(pf, 105, &p);
	CHECK(p.cls == 4 && p.hi - p.lo == 8);
	prefetch_destroy(pf);
}

int main(void)
{
	for (unsigned i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
		run_row(&rows[i]);
	test_counters();
	test_classes();
	return 0;
}

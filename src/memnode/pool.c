/* The memnode's pool. Growing it means populating and locking tens of MiB,
 * which on this VM cost 2.2-3 ms per MiB in huge pages and 0.3-0.5 ms in
 * 4 KiB pages (first touches of guest memory):
 * done inside an ALLOC, it held every request behind it, writes included,
 * for up to half a second (docs/DECISIONS.md D11). So a growing pool commits its
 * next step on a thread of its own as soon as less than a step is free, and
 * the serving thread only takes the step over.
 *
 * Ownership: [0, committed) belongs to the buddy (the serving thread);
 * [committed, committed + ahead) is populated and waits to be taken; while
 * `busy` one thread populates [committed, committed + step) outside mu and
 * nobody else touches committed; `want` asks the grower for a step.
 * Everything else under mu. */
#include "pool.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>

#include "clock.h"
#include "log.h"
#include "proto.h"
#include "sysmem.h"

#define HUGE_SIZE (2ull << 20)
/* A growing pool commits memory in whole order-10 blocks, at least GROW_MIN
 * at a time or a quarter of what it has, and leaves 1/32 of the memory we
 * may use (cgroup limit, else RAM) unused, within GROW_RESERVE_MIN..MAX.
 * After a refused growth it answers NACK without looking again for
 * GROW_RETRY_NS. */
#define GROW_ALIGN POOL_GROW_ALIGN
#define GROW_MIN (64ull << 20)
#define GROW_RESERVE_MIN (32ull << 20)
#define GROW_RESERVE_MAX (1ull << 30)
#define GROW_RETRY_NS 100000000ull

struct pool {
	uint8_t *base;
	uint64_t committed, max;
	bool lock, lock_warned, full_logged;
	uint64_t retry_at;     /* monotonic ns before which growth is not tried */
	uint64_t host_reserve; /* growth leaves at least this to the host */
	/* growing ahead */
	pthread_mutex_t mu;
	pthread_cond_t cond;
	pthread_t grower;
	bool has_grower, busy, want, stop;
	uint64_t ahead; /* bytes populated past committed, not yet taken */
};

/* Populates [at, at + bytes) and locks it; the range is given back when
 * the kernel cannot populate it. */
static int populate(struct pool *p, uint8_t *at, uint64_t bytes)
{
	int err = madvise(at, bytes, MADV_POPULATE_WRITE) ? -errno : 0;

	if (err == -EINVAL) {
		memset(at, 0, bytes); /* a kernel before 5.14 */
	} else if (err) {
		log_warn("cannot populate %llu MiB of the pool at %llu MiB: %m", (unsigned long long)(bytes >> 20),
			 (unsigned long long)((uint64_t)(at - p->base) >> 20));
		pool_discard(at, bytes);
		return err;
	}
	if (p->lock && mlock(at, bytes) && !p->lock_warned) {
		log_warn("cannot lock %llu MiB of the pool in RAM (%m); it may be swapped: raise RLIMIT_MEMLOCK "
			 "(ulimit -l) or run as root", (unsigned long long)(bytes >> 20));
		p->lock_warned = true;
	}
	return 0;
}

static uint64_t grow_reserve(void)
{
	uint64_t lim = sysmem_cgroup_limit();
	uint64_t r = (lim == UINT64_MAX ? sysmem_total() : lim) / 32;

	return r < GROW_RESERVE_MIN ? GROW_RESERVE_MIN : r > GROW_RESERVE_MAX ? GROW_RESERVE_MAX : r;
}

/* The next step past committed: at least GROW_MIN or a quarter of the pool. */
static uint64_t next_step(const struct pool *p)
{
	uint64_t step = p->committed / 4 > GROW_MIN ? p->committed / 4 : GROW_MIN;

	step = (step + GROW_ALIGN - 1) & ~(GROW_ALIGN - 1);
	return step > p->max - p->committed ? p->max - p->committed : step;
}

/* The step the host can spare now (0: none). A refusal of at least
 * need_bytes is logged once per time the pool fills up and turns into a
 * NACK for the client (which keeps its pages resident and counts a budget
 * overshoot) rather than an OOM kill of this process. Under mu. */
static uint64_t spare_step(struct pool *p, uint64_t need_bytes, uint64_t *avail_out)
{
	uint64_t step = next_step(p), avail, reserve, spare;

	if (now_ns() < p->retry_at)
		return 0;
	avail = sysmem_available();
	reserve = grow_reserve();
	if (reserve < p->host_reserve)
		reserve = p->host_reserve;
	spare = avail > reserve ? (avail - reserve) & ~(GROW_ALIGN - 1) : 0;
	if (step > spare)
		step = spare;
	*avail_out = avail;
	if (step >= need_bytes && step)
		return step;
	if (!p->full_logged)
		log_warn("pool full at %llu MiB: the host has %llu MiB available and %llu MiB stay in "
			 "reserve; ALLOCs get NACK until memory is freed",
			 (unsigned long long)(p->committed >> 20), (unsigned long long)(avail >> 20),
			 (unsigned long long)(reserve >> 20));
	p->full_logged = true;
	p->retry_at = now_ns() + GROW_RETRY_NS;
	return 0;
}

/* Populates the step at committed outside mu (busy keeps committed still). */
static int commit_step(struct pool *p, uint64_t step, bool ahead)
{
	uint8_t *at = p->base + p->committed;
	int err;

	p->busy = true;
	pthread_mutex_unlock(&p->mu);
	err = populate(p, at, step);
	pthread_mutex_lock(&p->mu);
	p->busy = false;
	pthread_cond_broadcast(&p->cond);
	if (err) {
		p->retry_at = now_ns() + GROW_RETRY_NS;
		return err;
	}
	if (ahead)
		p->ahead = step;
	else
		p->committed += step;
	p->full_logged = false;
	return 0;
}

static void *grower(void *arg)
{
	struct pool *p = arg;
	uint64_t step, avail;

	pthread_mutex_lock(&p->mu);
	for (;;) {
		while (!p->stop && !(p->want && !p->busy))
			pthread_cond_wait(&p->cond, &p->mu);
		if (p->stop)
			break;
		p->want = false;
		step = p->ahead ? 0 : spare_step(p, GROW_ALIGN, &avail);
		if (step && !commit_step(p, step, true))
			log_info("pool grown ahead to %llu MiB (+%llu MiB, %llu MiB of the host's memory available "
				 "before)", (unsigned long long)((p->committed + step) >> 20),
				 (unsigned long long)(step >> 20), (unsigned long long)(avail >> 20));
		pthread_cond_broadcast(&p->cond);
	}
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

void pool_grow_ahead(void *pool, uint32_t frames, uint32_t free_frames)
{
	struct pool *p = pool;

	(void)frames;
	if (!p->has_grower || pthread_mutex_trylock(&p->mu))
		return; /* the grower holds it only briefly; the next ALLOC asks again */
	if (!p->busy && !p->want && !p->ahead && p->committed < p->max &&
	    (uint64_t)free_frames * PROTO_FRAME_SIZE < next_step(p) && now_ns() >= p->retry_at) {
		p->want = true;
		pthread_cond_broadcast(&p->cond);
	}
	pthread_mutex_unlock(&p->mu);
}

int pool_grow(void *pool, uint32_t frames, uint32_t need, uint32_t *frames_out)
{
	struct pool *p = pool;
	uint64_t need_bytes = ((uint64_t)need * PROTO_FRAME_SIZE + GROW_ALIGN - 1) & ~(GROW_ALIGN - 1);
	uint64_t step, avail = 0, had;
	int err = 0;

	(void)frames; /* == committed / PROTO_FRAME_SIZE */
	pthread_mutex_lock(&p->mu);
	while (p->busy || p->want) /* the step under way comes sooner than a second one */
		pthread_cond_wait(&p->cond, &p->mu);
	had = p->committed;
	p->committed += p->ahead;
	p->ahead = 0;
	if (p->committed - had < need_bytes && p->committed < p->max) {
		step = spare_step(p, need_bytes, &avail);
		err = step ? commit_step(p, step, false) : -ENOMEM;
		if (!err)
			log_info("pool grown to %llu MiB (+%llu MiB, %llu MiB of the host's memory available before)",
				 (unsigned long long)(p->committed >> 20), (unsigned long long)(step >> 20),
				 (unsigned long long)(avail >> 20));
	}
	if (p->committed > had)
		err = 0; /* a step taken over is progress even if the next failed */
	else if (!err)
		err = -ENOMEM;
	if (!err)
		*frames_out = (uint32_t)(p->committed / PROTO_FRAME_SIZE);
	pthread_mutex_unlock(&p->mu);
	return err;
}

/* A fixed pool: hugetlbfs pages when reserved, else THP via madvise, else
 * 4 KiB pages, populated now so that the first client write does not pay
 * for it. A growing pool: max bytes of address space reserved (no memory,
 * no commit charge), of which bytes are populated now. */
static int map_pool(struct pool *p, uint64_t bytes, bool huge, int fd)
{
	void *a = MAP_FAILED;

	if (fd >= 0) { /* shared with the client (D38): 4 KiB shared-memory pages */
		struct stat st;

		if (fstat(fd, &st)) {
			log_error("option pool-fd: descriptor %d: %m", fd);
			return -EBADF;
		}
		if ((uint64_t)st.st_size < p->max) {
			log_error("option pool-fd: descriptor %d holds %llu bytes, less than the pool's %llu", fd,
				  (unsigned long long)st.st_size, (unsigned long long)p->max);
			return -EINVAL;
		}
		a = mmap(NULL, p->max, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, fd, 0);
		if (a == MAP_FAILED) {
			log_error("cannot map the pool's file (pool-fd %d, %llu MiB): %m", fd,
				  (unsigned long long)(p->max >> 20));
			return -ENOMEM;
		}
		goto populate;
	}
	if (huge && p->max == bytes && bytes % HUGE_SIZE == 0)
		a = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB | MAP_POPULATE,
			 -1, 0);
	if (a != MAP_FAILED) {
		p->base = a;
		p->committed = bytes;
		if (p->lock && mlock(a, bytes))
			log_warn("cannot lock the %llu-byte pool in RAM (%m); it may be swapped: raise "
				 "RLIMIT_MEMLOCK (ulimit -l) or run as root", (unsigned long long)bytes);
		return 0;
	}
	a = mmap(NULL, p->max, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (a == MAP_FAILED) {
		log_error("cannot map a pool of %llu MiB: %m", (unsigned long long)(p->max >> 20));
		return -ENOMEM;
	}
	/* Huge pages for a pool populated once; not for one that grows while
	 * clients wait: populating transparent huge pages cost 2.3 ms per MiB
	 * here against 0.3-0.5 ms for 4 KiB pages (D11) */
	if (huge && p->max == bytes)
		madvise(a, p->max, MADV_HUGEPAGE);
populate:
	p->base = a;
	if (populate(p, a, bytes)) {
		munmap(a, p->max);
		return -ENOMEM;
	}
	p->committed = bytes;
	return 0;
}

int pool_create(uint64_t bytes, uint64_t max, bool huge, bool lock, uint64_t host_reserve, int fd, struct pool **out)
{
	struct pool *p = calloc(1, sizeof(*p));
	int err;

	if (!p)
		return -ENOMEM;
	*p = (struct pool){ .max = max, .lock = lock, .host_reserve = host_reserve };
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->cond, NULL);
	err = map_pool(p, bytes, huge, fd);
	if (err)
		goto free_pool;
	/* created before the memnode pins its polling thread, so the grower
	 * keeps the process's affinity instead of sharing the polling core */
	if (max > bytes) {
		err = -pthread_create(&p->grower, NULL, grower, p);
		if (err) {
			log_error("cannot start the pool's grower thread: %s", strerror(-err));
			goto unmap_pool;
		}
		p->has_grower = true;
	}
	*out = p;
	return 0;
unmap_pool:
	munmap(p->base, p->max);
free_pool:
	free(p);
	return err;
}

void pool_destroy(struct pool *p)
{
	if (!p)
		return;
	if (p->has_grower) {
		pthread_mutex_lock(&p->mu);
		p->stop = true;
		pthread_cond_broadcast(&p->cond);
		pthread_mutex_unlock(&p->mu);
		pthread_join(p->grower, NULL);
	}
	munmap(p->base, p->max);
	free(p);
}

uint8_t *pool_base(const struct pool *p) { return p->base; }

void pool_discard(uint8_t *at, uint64_t len)
{
	if (madvise(at, len, MADV_REMOVE)) /* private memory: EINVAL */
		madvise(at, len, MADV_DONTNEED);
}

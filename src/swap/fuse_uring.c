/* fuse_uring: FUSE over io_uring with raw io_uring syscalls (docs/DECISIONS.md
 * D60). The kernel queues a request to the ring of the CPU that issued it
 * and completes one of that ring's fetch commands in the task that
 * submitted it: here the thread pinned to that CPU, so the request is
 * served where it was made. Each entry (a header and a payload buffer) is
 * registered once; an answer is committed with the command that fetches
 * the entry's next request. The kernel wants a queue for every possible
 * CPU before it sends anything to the rings, and needs INIT answered
 * (with FUSE_OVER_IO_URING) before the first REGISTER; until then, and for
 * FORGET and INTERRUPT always, requests come on /dev/fuse reads. */
#include "fuse_uring.h"

#include <errno.h>
#include <linux/io_uring.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "clock.h"
#include "fusedev.h"
#include "log.h"

/* The FUSE io_uring ABI as of kernel protocol 7.42 (Linux 6.14,
 * include/uapi/linux/fuse.h), which Debian 12's 7.38 headers lack. */
#define ABI_OVER_IO_URING_FLAGS2 (1u << 9) /* FUSE_OVER_IO_URING: bit 41 of the INIT flags, 9 of flags2 */
#define ABI_IN_OUT_SZ 128                  /* the fuse_in_header / fuse_out_header area */
#define ABI_OP_IN_SZ 128                   /* the opcode's fixed argument (fuse_read_in, ...) */
enum { ABI_CMD_REGISTER = 1, ABI_CMD_COMMIT_AND_FETCH = 2 }; /* enum fuse_uring_cmd, in sqe->cmd_op */

struct abi_ent_in_out {     /* struct fuse_uring_ent_in_out */
	uint64_t flags;
	uint64_t commit_id; /* the request's unique, to name it when committing */
	uint32_t payload_sz; /* bytes of the payload in use, either way */
	uint32_t padding;
	uint64_t reserved;
};

struct abi_req_header {     /* struct fuse_uring_req_header: iov[0] of a REGISTER */
	uint8_t in_out[ABI_IN_OUT_SZ];
	uint8_t op_in[ABI_OP_IN_SZ];
	struct abi_ent_in_out ent;
};

struct abi_cmd_req {        /* struct fuse_uring_cmd_req: the 80-byte command area of a 128-byte SQE */
	uint64_t flags;
	uint64_t commit_id;
	uint16_t qid;
	uint8_t padding[6];
};

_Static_assert(sizeof(struct abi_req_header) == 288, "fuse_uring_req_header of ABI 7.42");
_Static_assert(sizeof(struct abi_cmd_req) == 24, "fuse_uring_cmd_req of ABI 7.42");

/* One entry per queue: a queue's thread answers its requests one at a
 * time, and the commit that answers one fetches the next queued request
 * into the same entry, copied in the same system call; a second entry
 * would be filled in that thread's context at that same call, so it would
 * only double the locked memory (1 MiB a CPU). Code handles more. */
#define QUEUE_ENTRIES 1
/* The kernel refuses a payload smaller than max(max_write, max_pages pages)
 * of our INIT answer: FUSEDEV_MAX_IO. */
#define PAYLOAD FUSEDEV_MAX_IO
#define ENTRY_BYTES (4096 + PAYLOAD) /* the header in a page of its own, then the payload */
/* Each queue's buffers and stack are locked memory (the daemon's mlockall):
 * above this many possible CPUs, io_uring is not used. */
#define MAX_QUEUES 256
#define THREAD_STACK (1u << 20) /* locked and populated under mlockall: not the default 8 MiB */
#define SQE_BYTES 128 /* IORING_SETUP_SQE128: the command area holds the fuse_uring_cmd_req */
#define CONN_GONE(res) ((res) == -ENOTCONN || (res) == -ECONNABORTED || (res) == -ECANCELED)

struct entry {
	struct abi_req_header *hdr;
	uint8_t *payload;
	struct iovec iov[2]; /* read by the kernel at REGISTER */
	bool live;           /* a command of it is in the kernel */
	bool committed;      /* that command is a commit (else a REGISTER) */
};

struct queue {
	struct fuse_uring *u;
	unsigned qid;
	int ring;
	void *sq_map, *cq_map;
	size_t sq_len, cq_len;
	uint8_t *sqes;
	uint32_t *sq_head, *sq_tail, *sq_array, sq_mask;
	uint32_t *cq_head, *cq_tail, cq_mask;
	struct io_uring_cqe *cqes;
	unsigned pending; /* SQEs filled, not yet submitted */
	unsigned live;    /* entries live */
	uint8_t *buf;
	struct entry ent[QUEUE_ENTRIES];
	pthread_t tid;
	bool started, reported;
	int err;          /* the registration's outcome */
};

struct fuse_uring {
	int fd;
	fuse_uring_handler fn;
	void *ctx;
	uint64_t spin_ns; /* atomic */
	int err;          /* atomic: the first failure of a queue */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	unsigned nq;
	struct queue q[];
};

bool fuse_uring_offered(const struct fuse_init_in *in)
{
	return (in->flags & FUSE_INIT_EXT) && (in->flags2 & ABI_OVER_IO_URING_FLAGS2);
}

uint32_t fuse_uring_init_flags2(void) { return ABI_OVER_IO_URING_FLAGS2; }

/* The kernel's num_possible_cpus(): queue ids are CPU numbers 0..n-1. */
static int possible_cpus(unsigned *out)
{
	FILE *f = fopen("/sys/devices/system/cpu/possible", "r");
	char line[256];
	char *last;

	if (!f || !fgets(line, sizeof(line), f)) {
		log_error("cannot read /sys/devices/system/cpu/possible: %m");
		if (f)
			fclose(f);
		return -EIO;
	}
	fclose(f);
	last = line + strcspn(line, "\n");
	while (last > line && last[-1] != '-' && last[-1] != ',')
		last--;
	*out = (unsigned)strtoul(last, NULL, 10) + 1;
	return 0;
}

static int sys_enter(int ring, unsigned submit, unsigned wait, unsigned flags)
{
	long r;

	do
		r = syscall(__NR_io_uring_enter, ring, submit, wait, flags, NULL, 0);
	while (r < 0 && errno == EINTR);
	return r < 0 ? -errno : (int)r;
}

static int ring_map(struct queue *q, const struct io_uring_params *p)
{
	q->sq_len = p->sq_off.array + p->sq_entries * sizeof(uint32_t);
	q->cq_len = p->cq_off.cqes + p->cq_entries * sizeof(struct io_uring_cqe);
	q->sq_map = mmap(NULL, q->sq_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, q->ring, IORING_OFF_SQ_RING);
	q->cq_map = mmap(NULL, q->cq_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, q->ring, IORING_OFF_CQ_RING);
	q->sqes = mmap(NULL, p->sq_entries * SQE_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, q->ring,
		       IORING_OFF_SQES);
	if (q->sq_map == MAP_FAILED || q->cq_map == MAP_FAILED || q->sqes == MAP_FAILED) {
		log_error("cannot map io_uring queue %u's rings: %m", q->qid);
		return -errno;
	}
	q->sq_head = (uint32_t *)((uint8_t *)q->sq_map + p->sq_off.head);
	q->sq_tail = (uint32_t *)((uint8_t *)q->sq_map + p->sq_off.tail);
	q->sq_array = (uint32_t *)((uint8_t *)q->sq_map + p->sq_off.array);
	q->sq_mask = *(uint32_t *)((uint8_t *)q->sq_map + p->sq_off.ring_mask);
	q->cq_head = (uint32_t *)((uint8_t *)q->cq_map + p->cq_off.head);
	q->cq_tail = (uint32_t *)((uint8_t *)q->cq_map + p->cq_off.tail);
	q->cq_mask = *(uint32_t *)((uint8_t *)q->cq_map + p->cq_off.ring_mask);
	q->cqes = (struct io_uring_cqe *)((uint8_t *)q->cq_map + p->cq_off.cqes);
	return 0;
}

/* SQE128 for the command area; COOP_TASKRUN: the kernel hands a request to
 * the thread when it next enters the kernel (it is woken if it sleeps, and
 * a polling thread yields, a system call, between polls) rather than by
 * interrupting it. No SINGLE_ISSUER: the ring is set up on another thread. */
static int ring_setup(struct queue *q)
{
	struct io_uring_params p = { .flags = IORING_SETUP_SQE128 | IORING_SETUP_COOP_TASKRUN };
	long fd = syscall(__NR_io_uring_setup, QUEUE_ENTRIES, &p);

	if (fd < 0) {
		log_error("cannot set up io_uring queue %u (io_uring_setup): %m (kernel.io_uring_disabled?)", q->qid);
		return -errno;
	}
	q->ring = (int)fd;
	return ring_map(q, &p);
}

static int buffers_map(struct queue *q)
{
	q->buf = mmap(NULL, (size_t)ENTRY_BYTES * QUEUE_ENTRIES, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (q->buf == MAP_FAILED) {
		q->buf = NULL;
		log_error("cannot map %u bytes of FUSE io_uring buffers: %m", ENTRY_BYTES * QUEUE_ENTRIES);
		return -errno;
	}
	for (unsigned i = 0; i < QUEUE_ENTRIES; i++) {
		struct entry *e = &q->ent[i];

		e->hdr = (struct abi_req_header *)(q->buf + (size_t)i * ENTRY_BYTES);
		e->payload = q->buf + (size_t)i * ENTRY_BYTES + 4096;
		e->iov[0] = (struct iovec){ e->hdr, sizeof(*e->hdr) };
		e->iov[1] = (struct iovec){ e->payload, PAYLOAD };
	}
	return 0;
}

static void queue_fini(struct queue *q)
{
	if (q->sqes && q->sqes != MAP_FAILED)
		munmap(q->sqes, (size_t)(q->sq_mask + 1) * SQE_BYTES);
	if (q->cq_map && q->cq_map != MAP_FAILED)
		munmap(q->cq_map, q->cq_len);
	if (q->sq_map && q->sq_map != MAP_FAILED)
		munmap(q->sq_map, q->sq_len);
	if (q->ring >= 0)
		close(q->ring); /* cancels what the kernel still holds */
	if (q->buf)
		munmap(q->buf, (size_t)ENTRY_BYTES * QUEUE_ENTRIES);
}

/* Queues a command for entry i (submitted by the next sys_enter). */
static void sqe_cmd(struct queue *q, unsigned i, uint32_t op, uint64_t commit_id)
{
	uint32_t tail = *q->sq_tail + q->pending, idx = tail & q->sq_mask;
	struct io_uring_sqe *s = (struct io_uring_sqe *)(q->sqes + (size_t)idx * SQE_BYTES);
	struct abi_cmd_req *c = (struct abi_cmd_req *)s->cmd;

	memset(s, 0, SQE_BYTES);
	s->opcode = IORING_OP_URING_CMD;
	s->fd = q->u->fd;
	s->cmd_op = op;
	s->user_data = i;
	if (op == ABI_CMD_REGISTER) {
		s->addr = (uint64_t)(uintptr_t)q->ent[i].iov;
		s->len = 2;
	}
	*c = (struct abi_cmd_req){ .commit_id = commit_id, .qid = (uint16_t)q->qid };
	q->sq_array[idx] = idx;
	q->pending++;
}

/* Submits the pending SQEs, waiting for wait completions too. */
static int submit(struct queue *q, unsigned wait)
{
	unsigned n = q->pending;
	int r;

	__atomic_store_n(q->sq_tail, *q->sq_tail + n, __ATOMIC_RELEASE);
	q->pending = 0;
	r = sys_enter(q->ring, n, wait, wait ? IORING_ENTER_GETEVENTS : 0);
	if (r < 0) {
		errno = -r;
		log_error("io_uring queue %u: io_uring_enter failed: %m", q->qid);
		return r;
	}
	if ((unsigned)r < n) {
		log_error("io_uring queue %u: the kernel took %d of %u commands", q->qid, r, n);
		return -EIO;
	}
	return 0;
}

static bool cq_ready(struct queue *q) { return *q->cq_head != __atomic_load_n(q->cq_tail, __ATOMIC_ACQUIRE); }

/* Registers every entry. A REGISTER the kernel accepts completes only when
 * a request comes; one it refuses has completed (with the error) by the
 * time io_uring_enter returns. Completions are left for serving. */
static int queue_register(struct queue *q)
{
	int err;

	for (unsigned i = 0; i < QUEUE_ENTRIES; i++)
		sqe_cmd(q, i, ABI_CMD_REGISTER, 0);
	if ((err = submit(q, 0)))
		return err;
	for (unsigned i = 0; i < QUEUE_ENTRIES; i++)
		q->ent[i].live = true;
	q->live = QUEUE_ENTRIES;
	for (uint32_t h = *q->cq_head; h != __atomic_load_n(q->cq_tail, __ATOMIC_ACQUIRE); h++) {
		int res = q->cqes[h & q->cq_mask].res;

		if (res < 0) {
			errno = -res;
			log_error("the kernel refused FUSE io_uring queue %u's REGISTER: %m", q->qid);
			return res;
		}
	}
	return 0;
}

/* Answers entry e's request in place and queues the commit that fetches
 * its next one. */
static void answer(struct queue *q, struct entry *e)
{
	struct abi_req_header *hd = e->hdr;
	struct fuse_in_header in;
	uint32_t len = 0;
	int r;

	memcpy(&in, hd->in_out, sizeof(in));
	r = q->u->fn(q->u->ctx, &in, hd->op_in, e->payload, hd->ent.payload_sz, e->payload, &len);
	if (r > 0)
		r = -ENOSYS; /* FORGET and INTERRUPT come on /dev/fuse: the entry must come back all the same */
	struct fuse_out_header out = { .len = (uint32_t)sizeof(out) + (r ? 0 : len), .error = r, .unique = in.unique };
	memcpy(hd->in_out, &out, sizeof(out));
	hd->ent.payload_sz = r ? 0 : len;
	sqe_cmd(q, (unsigned)(e - q->ent), ABI_CMD_COMMIT_AND_FETCH, hd->ent.commit_id);
}

/* One completion: a request to answer, or an entry's end. */
static int completion(struct queue *q, const struct io_uring_cqe *c)
{
	unsigned i = (unsigned)c->user_data;
	struct entry *e;

	if (c->user_data >= QUEUE_ENTRIES)
		return -EIO; /* not ours: every SQE names its entry */
	e = &q->ent[i];
	if (c->res >= 0) {
		answer(q, e);
		e->committed = true;
		return 0;
	}
	if (CONN_GONE(c->res) || q->err || !e->committed) {
		e->live = false; /* the connection ended (unmount), or registering failed (reported) */
		q->live--;
		if (CONN_GONE(c->res) || q->err)
			return 0;
		errno = -c->res;
		log_error("io_uring queue %u: the kernel refused entry %u again: %m; its CPU's requests wait", q->qid, i);
		return c->res;
	}
	/* A commit refused (a request the kernel no longer knows): the kernel
	 * keeps the entry as ours, unused until the connection ends; the same
	 * buffers registered again are a new entry, so the queue goes on. */
	errno = -c->res;
	log_warn("io_uring queue %u: the kernel refused a commit (%m); registering entry %u again", q->qid, i);
	e->committed = false;
	sqe_cmd(q, i, ABI_CMD_REGISTER, 0);
	return 0;
}

/* Until a completion is there: submits what is pending, polls the ring
 * for spin_ns (yielding: a thread this CPU woke runs first, and the system
 * call hands over the kernel's completions), then sleeps in io_uring_enter. */
static int wait_completion(struct queue *q)
{
	uint64_t spin = __atomic_load_n(&q->u->spin_ns, __ATOMIC_RELAXED), until;
	int err;

	if (cq_ready(q))
		return q->pending ? submit(q, 0) : 0;
	if (spin) {
		if (q->pending && (err = submit(q, 0)))
			return err;
		for (until = now_ns() + spin; now_ns() < until;) {
			if (cq_ready(q))
				return 0;
			sched_yield();
		}
	}
	while (!cq_ready(q))
		if ((err = submit(q, 1)))
			return err;
	return 0;
}

static int queue_serve(struct queue *q)
{
	int err = 0;

	while (q->live && !err && !(err = wait_completion(q))) {
		uint32_t h = *q->cq_head;

		err = completion(q, &q->cqes[h & q->cq_mask]);
		__atomic_store_n(q->cq_head, h + 1, __ATOMIC_RELEASE);
	}
	return err;
}

static void report(struct queue *q, int err)
{
	pthread_mutex_lock(&q->u->lock);
	q->err = err;
	q->reported = true;
	pthread_cond_broadcast(&q->u->cond);
	pthread_mutex_unlock(&q->u->lock);
}

/* A queue's thread: registers, reports, serves until the connection ends.
 * It serves even after a failed registration of its own or another queue
 * (the kernel then sends nothing, or, if it made the ring ready anyway,
 * requests that must be answered). */
static void *queue_main(void *arg)
{
	struct queue *q = arg;
	char name[16];
	int err;

	snprintf(name, sizeof(name), "fuse-uring/%u", q->qid % 10000); /* ps -L names the queue */
	pthread_setname_np(pthread_self(), name);
	err = queue_register(q);

	report(q, err);
	err = queue_serve(q);
	if (err)
		__atomic_compare_exchange_n(&q->u->err, &(int){ 0 }, err, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
	return NULL;
}

/* A REGISTER the kernel refuses (no iovec): it then stops waiting for the
 * rings and sends requests to /dev/fuse, as after any failed REGISTER.
 * For a queue whose thread could not start. */
static void give_up(struct queue *q)
{
	struct io_uring_sqe *s;

	sqe_cmd(q, 0, ABI_CMD_REGISTER, 0);
	s = (struct io_uring_sqe *)(q->sqes + (size_t)((*q->sq_tail + q->pending - 1) & q->sq_mask) * SQE_BYTES);
	s->len = 0;
	submit(q, 0);
}

static int thread_start(struct queue *q, const cpu_set_t *allowed)
{
	pthread_attr_t a;
	cpu_set_t one;
	int err;

	pthread_attr_init(&a);
	pthread_attr_setstacksize(&a, THREAD_STACK);
	if (q->qid < CPU_SETSIZE && CPU_ISSET(q->qid, allowed)) {
		CPU_ZERO(&one);
		CPU_SET(q->qid, &one);
		pthread_attr_setaffinity_np(&a, sizeof(one), &one);
	} /* else a CPU we may not run on (cpuset, offline): its queue gets no requests from us, served unpinned */
	err = -pthread_create(&q->tid, &a, queue_main, q);
	pthread_attr_destroy(&a);
	if (err) {
		errno = -err;
		log_error("cannot start the thread of FUSE io_uring queue %u: %m", q->qid);
		return err;
	}
	q->started = true;
	return 0;
}

int fuse_uring_start(struct fuse_uring *u)
{
	cpu_set_t allowed;
	int err = 0;
	unsigned i;

	if (sched_getaffinity(0, sizeof(allowed), &allowed))
		CPU_ZERO(&allowed);
	for (i = 0; i < u->nq && !err; i++)
		if ((err = thread_start(&u->q[i], &allowed)))
			break;
	for (; i < u->nq; i++)
		give_up(&u->q[i]);
	pthread_mutex_lock(&u->lock);
	for (i = 0; i < u->nq; i++) {
		while (u->q[i].started && !u->q[i].reported)
			pthread_cond_wait(&u->cond, &u->lock);
		if (!err)
			err = u->q[i].err;
	}
	pthread_mutex_unlock(&u->lock);
	return err;
}

void fuse_uring_set_spin(struct fuse_uring *u, uint64_t spin_ns)
{
	__atomic_store_n(&u->spin_ns, spin_ns, __ATOMIC_RELAXED);
}

int fuse_uring_join(struct fuse_uring *u)
{
	for (unsigned i = 0; i < u->nq; i++)
		if (u->q[i].started) {
			pthread_join(u->q[i].tid, NULL);
			u->q[i].started = false;
		}
	return __atomic_load_n(&u->err, __ATOMIC_RELAXED);
}

int fuse_uring_create(int fd, fuse_uring_handler fn, void *ctx, struct fuse_uring **out)
{
	struct fuse_uring *u;
	unsigned nq;
	int err;

	if ((err = possible_cpus(&nq)))
		return err;
	if (nq > MAX_QUEUES) {
		log_error("%u possible CPUs: FUSE io_uring would lock %u MiB of queue buffers; at most %u queues", nq,
			  nq * (ENTRY_BYTES * QUEUE_ENTRIES + THREAD_STACK) >> 20, MAX_QUEUES);
		return -E2BIG;
	}
	if (!(u = calloc(1, sizeof(*u) + nq * sizeof(u->q[0]))))
		return -ENOMEM;
	*u = (struct fuse_uring){ .fd = fd, .fn = fn, .ctx = ctx, .nq = nq };
	pthread_mutex_init(&u->lock, NULL);
	pthread_cond_init(&u->cond, NULL);
	for (unsigned i = 0; i < nq; i++)
		u->q[i] = (struct queue){ .u = u, .qid = i, .ring = -1 };
	for (unsigned i = 0; i < nq && !err; i++)
		if (!(err = ring_setup(&u->q[i])))
			err = buffers_map(&u->q[i]);
	if (err) {
		fuse_uring_free(u);
		return err;
	}
	*out = u;
	return 0;
}

void fuse_uring_free(struct fuse_uring *u)
{
	if (!u)
		return;
	fuse_uring_join(u);
	for (unsigned i = 0; i < u->nq; i++)
		queue_fini(&u->q[i]);
	pthread_cond_destroy(&u->cond);
	pthread_mutex_destroy(&u->lock);
	free(u);
}

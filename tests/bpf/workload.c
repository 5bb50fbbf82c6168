// SPDX-License-Identifier: Apache-2.0
/*
 * An I/O workload whose system calls are known exactly, for the BPF tests.
 *
 * The measured I/O runs in a forked child (no exec, so no dynamic loader
 * I/O) that makes only the calls below and leaves with _exit(); the parent
 * prints the child's pid once the child is done (with --print-start 1, then
 * its starttime, /proc/PID/stat's field 22, read before it is reaped).
 * Per thread, with N = --iters:
 *   openat   1 ok (O_CREAT) + --bad-opens failing (ENOENT)
 *   pwrite64 N x --size bytes            (phase 1)
 *   [--pause-ms sleep: lets windows close mid-workload; with
 *    --pause-mid-writes 1 it falls after the first N/2 pwrites instead]
 *   pread64  N x --size bytes            (phase 2)
 *   writev   N x (1000 + 24) bytes       (phase 3, at EOF)
 *   fsync    --fsyncs
 *   pread64  --bad-reads failing on fd -1 (EBADF)
 *   close    1
 *   with --hops H > 0, then H times: read 1 byte from a pipe that a helper
 *   thread of the same process writes (read H x 1, write H x 1 per thread):
 *   the reader pins itself to CPU i before its read, and the helper, once the
 *   read has waited 2 ms, pins the reader to CPU i + 1, then writes; so every
 *   read returns on another CPU than it entered on (2+ CPUs), and each
 *   thread changes CPU between calls. The pipes are made before the fork:
 *   no pipe2 or close in the child.
 * Thread stacks come from mmap (by glibc): mmap is not part of the contract.
 *
 * With --blockdev DEV the child instead opens DEV with O_DIRECT and makes,
 * per thread in a region of its own, N aligned pwrites of --size bytes,
 * then N preads of them: N write and N read requests per thread of exactly
 * that size at the block layer.
 *
 * With --uring 1 the child instead creates one io_uring (raw io_uring_setup
 * and io_uring_enter, rings mmap()ed: no liburing) on a new file in --dir
 * and, one request at a time, completes: N IORING_OP_WRITE of --size bytes
 * (issued inline), N IORING_OP_READ of them with IOSQE_ASYNC (completed by
 * an io-wq worker thread), --bad-reads IORING_OP_READ failing on fd -1
 * (EBADF) and one IORING_OP_FSYNC. --uring 2 does the same through an
 * IORING_SETUP_SQPOLL ring, whose kernel thread submits the requests, then
 * one IORING_OP_TIMEOUT of 1 s (-ETIME) waited for, and followed by 1 s,
 * without I/O system calls: a window in which only io_uring sees the child.
 *
 * With --files N the child instead makes N files in --dir one after the
 * other, each by openat (O_CREAT), one pwrite64 of --size bytes and close,
 * sleeping --file-gap-ms after each: N keys of the file layer that are
 * used once and never again.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/io_uring.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int iters = 100, nthreads = 1, bad_opens = 3, bad_reads = 2, fsyncs = 1, pause_ms;
static int pause_mid_writes;
static int nfiles, file_gap_ms, print_start;
static unsigned long long start_ticks;
static size_t size = 4096;
static const char *dir = "/tmp";
static const char *comm;
static const char *blockdev;
static int uring;
static int hops, hop_pipes[64][2], ncpus = 1;

struct hop {
	int t;
	pid_t reader;
};

static void pin(pid_t tid, int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu % ncpus, &set);
	if (sched_setaffinity(tid, sizeof(set), &set))
		_exit(51);
}

static void *hop_writer(void *arg)
{
	struct hop *h = arg;
	struct timespec wait = {0, 2000000};

	for (int i = 0; i < hops; i++) {
		nanosleep(&wait, NULL);
		pin(h->reader, i + 1);
		if (write(hop_pipes[h->t][1], "h", 1) != 1)
			_exit(52);
	}
	return NULL;
}

static void hop_reads(int t)
{
	struct hop h = {t, (pid_t)syscall(SYS_gettid)};
	pthread_t w;
	char c;

	if (pthread_create(&w, NULL, hop_writer, &h))
		_exit(53);
	for (int i = 0; i < hops; i++) {
		pin(0, i);
		if (read(hop_pipes[t][0], &c, 1) != 1)
			_exit(54);
	}
	pthread_join(w, NULL);
}

/* Thread t's O_DIRECT requests: N writes then N reads of its own region
 * (threads keep several requests in flight at once). */
static void *block_thread(void *arg)
{
	off_t base = (off_t)(long)arg * iters * (off_t)size;
	void *buf;
	int fd;

	if (posix_memalign(&buf, 4096, size))
		_exit(30);
	memset(buf, 'b', size);
	fd = open(blockdev, O_RDWR | O_DIRECT | O_CLOEXEC);
	if (fd < 0)
		_exit(31);
	for (int i = 0; i < iters; i++)
		if (pwrite(fd, buf, size, base + (off_t)i * (off_t)size) != (ssize_t)size)
			_exit(32);
	for (int i = 0; i < iters; i++)
		if (pread(fd, buf, size, base + (off_t)i * (off_t)size) != (ssize_t)size)
			_exit(33);
	close(fd);
	free(buf);
	return NULL;
}

static void block_io(void)
{
	pthread_t th[64];

	for (long t = 1; t < nthreads; t++)
		if (pthread_create(&th[t], NULL, block_thread, (void *)t))
			_exit(20);
	block_thread((void *)0);
	for (long t = 1; t < nthreads; t++)
		pthread_join(th[t], NULL);
}

struct ring {
	int fd, sqpoll;
	unsigned *sq_flags, *sq_tail, *sq_mask, *sq_array, *cq_head, *cq_tail, *cq_mask;
	struct io_uring_sqe *sqes;
	struct io_uring_cqe *cqes;
};

static void ring_init(struct ring *r)
{
	struct io_uring_params p;
	size_t sq_len, cq_len;
	char *sq, *cq;

	memset(&p, 0, sizeof(p));
	r->sqpoll = uring == 2;
	if (r->sqpoll) {
		p.flags = IORING_SETUP_SQPOLL;
		p.sq_thread_idle = 1000; /* ms */
	}
	r->fd = (int)syscall(__NR_io_uring_setup, 4, &p);
	if (r->fd < 0)
		_exit(40);
	sq_len = p.sq_off.array + p.sq_entries * sizeof(unsigned);
	cq_len = p.cq_off.cqes + p.cq_entries * sizeof(struct io_uring_cqe);
	if (p.features & IORING_FEAT_SINGLE_MMAP)
		sq_len = cq_len = sq_len > cq_len ? sq_len : cq_len;
	sq = mmap(NULL, sq_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, r->fd,
		  IORING_OFF_SQ_RING);
	cq = p.features & IORING_FEAT_SINGLE_MMAP
		 ? sq
		 : mmap(NULL, cq_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, r->fd,
			IORING_OFF_CQ_RING);
	r->sqes = mmap(NULL, p.sq_entries * sizeof(struct io_uring_sqe), PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_POPULATE, r->fd, IORING_OFF_SQES);
	if (sq == MAP_FAILED || cq == MAP_FAILED || r->sqes == MAP_FAILED)
		_exit(41);
	r->sq_flags = (unsigned *)(sq + p.sq_off.flags);
	r->sq_tail = (unsigned *)(sq + p.sq_off.tail);
	r->sq_mask = (unsigned *)(sq + p.sq_off.ring_mask);
	r->sq_array = (unsigned *)(sq + p.sq_off.array);
	r->cq_head = (unsigned *)(cq + p.cq_off.head);
	r->cq_tail = (unsigned *)(cq + p.cq_off.tail);
	r->cq_mask = (unsigned *)(cq + p.cq_off.ring_mask);
	r->cqes = (struct io_uring_cqe *)(cq + p.cq_off.cqes);
}

/* Queue one request; an SQPOLL ring's thread takes it from there, once
 * woken if it went idle (the barrier orders the tail before reading the
 * flag, as io_uring(7) requires). Returns io_uring_enter() flags to pass. */
static unsigned ring_push(struct ring *r, int op, unsigned flags, int fd, const void *addr,
			  unsigned len, off_t off)
{
	unsigned tail = *r->sq_tail, idx = tail & *r->sq_mask;
	struct io_uring_sqe *sqe = &r->sqes[idx];

	memset(sqe, 0, sizeof(*sqe));
	sqe->opcode = (uint8_t)op;
	sqe->flags = (uint8_t)flags;
	sqe->fd = fd;
	sqe->addr = (uintptr_t)addr;
	sqe->len = len;
	sqe->off = (uint64_t)off;
	r->sq_array[idx] = idx;
	__atomic_store_n(r->sq_tail, tail + 1, __ATOMIC_RELEASE);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	return r->sqpoll && (__atomic_load_n(r->sq_flags, __ATOMIC_RELAXED) & IORING_SQ_NEED_WAKEUP)
		   ? IORING_ENTER_SQ_WAKEUP
		   : 0;
}

/* Take the next completion, which must be there: its res. */
static int ring_pop(struct ring *r)
{
	unsigned head = *r->cq_head;
	int res;

	if (head == __atomic_load_n(r->cq_tail, __ATOMIC_ACQUIRE))
		_exit(43);
	res = r->cqes[head & *r->cq_mask].res;
	__atomic_store_n(r->cq_head, head + 1, __ATOMIC_RELEASE);
	return res;
}

/* Submit one request and wait for its completion: its res. */
static int ring_do(struct ring *r, int op, unsigned flags, int fd, void *buf, unsigned len,
		   off_t off)
{
	unsigned enter = ring_push(r, op, flags, fd, buf, len, off) | IORING_ENTER_GETEVENTS;
	/* with SQPOLL the call only waits: the ring's thread submits */
	long ret = syscall(__NR_io_uring_enter, r->fd, r->sqpoll ? 0 : 1, 1, enter, NULL, 0);

	if (ret < 0 || (!r->sqpoll && ret != 1))
		_exit(42);
	return ring_pop(r);
}

/*
 * SQPOLL only: a 1 s IORING_OP_TIMEOUT (it completes with -ETIME) waited for
 * without I/O system calls (nanosleep is none), then 1 s more of the same,
 * so the window of its completion sees this process through io_uring alone.
 */
static void ring_quiet_timeout(struct ring *r)
{
	struct __kernel_timespec ts = {.tv_sec = 1};
	struct timespec nap = {0, 10 * 1000000L}, rest = {1, 0};
	unsigned enter = ring_push(r, IORING_OP_TIMEOUT, 0, -1, &ts, 1, 0);

	if (enter && syscall(__NR_io_uring_enter, r->fd, 0, 0, enter, NULL, 0) < 0)
		_exit(50);
	while (*r->cq_head == __atomic_load_n(r->cq_tail, __ATOMIC_ACQUIRE))
		nanosleep(&nap, NULL);
	if (ring_pop(r) != -ETIME)
		_exit(51);
	nanosleep(&rest, NULL);
}

static void uring_io(void)
{
	char path[4096], *buf = malloc(size);
	struct ring r;
	int fd;

	if (!buf)
		_exit(44);
	memset(buf, 'u', size);
	snprintf(path, sizeof(path), "%s/dc-workload.%d.0", dir, (int)getpid());
	fd = open(path, O_CREAT | O_RDWR | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		_exit(45);
	ring_init(&r);
	for (int i = 0; i < iters; i++)
		if (ring_do(&r, IORING_OP_WRITE, 0, fd, buf, (unsigned)size,
			    (off_t)i * (off_t)size) != (int)size)
			_exit(46);
	for (int i = 0; i < iters; i++)
		if (ring_do(&r, IORING_OP_READ, IOSQE_ASYNC, fd, buf, (unsigned)size,
			    (off_t)i * (off_t)size) != (int)size)
			_exit(47);
	for (int i = 0; i < bad_reads; i++)
		if (ring_do(&r, IORING_OP_READ, 0, -1, buf, 1, 0) != -EBADF)
			_exit(48);
	if (ring_do(&r, IORING_OP_FSYNC, 0, fd, NULL, 0, 0) != 0)
		_exit(49);
	if (r.sqpoll)
		ring_quiet_timeout(&r);
	close(r.fd);
	close(fd);
	free(buf);
}

static void files_io(void)
{
	struct timespec gap = {file_gap_ms / 1000, (long)(file_gap_ms % 1000) * 1000000L};
	char path[4096], *buf = malloc(size);

	if (!buf)
		_exit(50);
	memset(buf, 'f', size);
	for (int i = 0; i < nfiles; i++) {
		int fd;

		snprintf(path, sizeof(path), "%s/dc-files.%d.%d", dir, (int)getpid(), i);
		fd = openat(AT_FDCWD, path, O_CREAT | O_WRONLY | O_TRUNC | O_CLOEXEC, 0600);
		if (fd < 0)
			_exit(51);
		if (pwrite(fd, buf, size, 0) != (ssize_t)size)
			_exit(52);
		close(fd);
		nanosleep(&gap, NULL);
	}
	free(buf);
}

static void *worker(void *arg)
{
	long t = (long)arg;
	char path[4096], *buf = malloc(size);
	char a[1000], b[24];
	struct iovec iov[2] = {{a, sizeof(a)}, {b, sizeof(b)}};
	struct timespec ts = {pause_ms / 1000, (long)(pause_ms % 1000) * 1000000L};
	int fd;

	memset(buf, 'x', size);
	memset(a, 'a', sizeof(a));
	memset(b, 'b', sizeof(b));
	snprintf(path, sizeof(path), "%s/dc-workload.%d.%ld", dir, (int)getpid(), t);
	fd = openat(AT_FDCWD, path, O_CREAT | O_RDWR | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		_exit(10);
	for (int i = 0; i < bad_opens; i++)
		if (openat(AT_FDCWD, "/nonexistent/datacrumbs/x", O_RDONLY) >= 0)
			_exit(11);
	for (int i = 0; i < iters; i++) {
		if (pause_ms && pause_mid_writes && i == iters / 2)
			nanosleep(&ts, NULL);
		if (pwrite(fd, buf, size, (off_t)i * (off_t)size) != (ssize_t)size)
			_exit(12);
	}
	if (pause_ms && !pause_mid_writes)
		nanosleep(&ts, NULL);
	for (int i = 0; i < iters; i++)
		if (pread(fd, buf, size, (off_t)i * (off_t)size) != (ssize_t)size)
			_exit(13);
	lseek(fd, 0, SEEK_END); /* one lseek, part of the contract */
	for (int i = 0; i < iters; i++)
		if (writev(fd, iov, 2) != 1024)
			_exit(14);
	for (int i = 0; i < fsyncs; i++)
		fsync(fd);
	if (hops)
		hop_reads((int)t);
	for (int i = 0; i < bad_reads; i++)
		if (pread(-1, buf, 1, 0) >= 0)
			_exit(15);
	close(fd);
	free(buf);
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t th[64];
	int status;
	pid_t pid;

	for (int i = 1; i + 1 < argc; i += 2) {
		const char *k = argv[i], *v = argv[i + 1];

		if (!strcmp(k, "--iters"))
			iters = atoi(v);
		else if (!strcmp(k, "--threads"))
			nthreads = atoi(v);
		else if (!strcmp(k, "--size"))
			size = (size_t)atol(v);
		else if (!strcmp(k, "--bad-opens"))
			bad_opens = atoi(v);
		else if (!strcmp(k, "--bad-reads"))
			bad_reads = atoi(v);
		else if (!strcmp(k, "--fsyncs"))
			fsyncs = atoi(v);
		else if (!strcmp(k, "--pause-ms"))
			pause_ms = atoi(v);
		else if (!strcmp(k, "--pause-mid-writes"))
			pause_mid_writes = atoi(v);
		else if (!strcmp(k, "--dir"))
			dir = v;
		else if (!strcmp(k, "--comm"))
			comm = v;
		else if (!strcmp(k, "--blockdev"))
			blockdev = v;
		else if (!strcmp(k, "--uring"))
			uring = atoi(v);
		else if (!strcmp(k, "--hops"))
			hops = atoi(v);
		else if (!strcmp(k, "--files"))
			nfiles = atoi(v);
		else if (!strcmp(k, "--file-gap-ms"))
			file_gap_ms = atoi(v);
		else if (!strcmp(k, "--print-start"))
			print_start = atoi(v);
		else {
			fprintf(stderr, "workload: unknown option %s\n", k);
			return 2;
		}
	}
	if (nthreads < 1 || nthreads > 64)
		return 2;
	ncpus = (int)sysconf(_SC_NPROCESSORS_ONLN);
	if (ncpus < 1)
		ncpus = 1;
	for (int t = 0; hops && t < nthreads; t++)
		if (pipe(hop_pipes[t]))
			return 1;

	pid = fork();
	if (pid < 0)
		return 1;
	if (pid == 0) {
		/* prctl names the thread group leader: the comm the agent reports */
		if (comm)
			prctl(PR_SET_NAME, comm, 0, 0, 0);
		if (blockdev) {
			block_io();
			_exit(0);
		}
		if (uring) {
			uring_io();
			_exit(0);
		}
		if (nfiles) {
			files_io();
			_exit(0);
		}
		for (long t = 1; t < nthreads; t++)
			if (pthread_create(&th[t], NULL, worker, (void *)t))
				_exit(20);
		worker((void *)0);
		for (long t = 1; t < nthreads; t++)
			pthread_join(th[t], NULL);
		_exit(0);
	}
	if (print_start) {
		siginfo_t si;
		char path[64], line[1024], *p;
		FILE *f;

		/* a zombie keeps its stat until reaped */
		if (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOWAIT) < 0)
			return 1;
		snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
		f = fopen(path, "re");
		if (!f || !fgets(line, sizeof(line), f) || !(p = strrchr(line, ')')) ||
		    sscanf(p + 1,
			   " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d "
			   "%*d %*d %llu",
			   &start_ticks) != 1)
			return 1;
		fclose(f);
	}
	if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status)) {
		fprintf(stderr, "workload: child failed (status %d)\n", status);
		return 1;
	}
	for (int t = 0; t < nthreads && !blockdev; t++) {
		char path[4096];

		snprintf(path, sizeof(path), "%s/dc-workload.%d.%d", dir, (int)pid, t);
		unlink(path);
	}
	for (int i = 0; i < nfiles; i++) {
		char path[4096];

		snprintf(path, sizeof(path), "%s/dc-files.%d.%d", dir, (int)pid, i);
		unlink(path);
	}
	if (print_start)
		printf("%d %llu\n", (int)pid, start_ticks);
	else
		printf("%d\n", (int)pid);
	return 0;
}

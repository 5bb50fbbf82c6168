// SPDX-License-Identifier: Apache-2.0
/*
 * An I/O workload whose system calls are known exactly, for the BPF tests.
 *
 * The measured I/O runs in a forked child (no exec, so no dynamic loader
 * I/O) that makes only the calls below and leaves with _exit(); the parent
 * prints the child's pid once the child is done. Per thread, with N = --iters:
 *   openat   1 ok (O_CREAT) + --bad-opens failing (ENOENT)
 *   pwrite64 N x --size bytes            (phase 1)
 *   [--pause-ms sleep: lets windows close mid-workload]
 *   pread64  N x --size bytes            (phase 2)
 *   writev   N x (1000 + 24) bytes       (phase 3, at EOF)
 *   fsync    --fsyncs
 *   pread64  --bad-reads failing on fd -1 (EBADF)
 *   close    1
 * Thread stacks come from mmap (by glibc): mmap is not part of the contract.
 *
 * With --blockdev DEV the child instead opens DEV with O_DIRECT and makes
 * N aligned pwrites of --size bytes, then N preads of them: N write and N
 * read requests of exactly that size at the block layer.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int iters = 100, nthreads = 1, bad_opens = 3, bad_reads = 2, fsyncs = 1, pause_ms;
static size_t size = 4096;
static const char *dir = "/tmp";
static const char *comm;
static const char *blockdev;

static void block_io(void)
{
	void *buf;
	int fd;

	if (posix_memalign(&buf, 4096, size))
		_exit(30);
	memset(buf, 'b', size);
	fd = open(blockdev, O_RDWR | O_DIRECT | O_CLOEXEC);
	if (fd < 0)
		_exit(31);
	for (int i = 0; i < iters; i++)
		if (pwrite(fd, buf, size, (off_t)i * (off_t)size) != (ssize_t)size)
			_exit(32);
	for (int i = 0; i < iters; i++)
		if (pread(fd, buf, size, (off_t)i * (off_t)size) != (ssize_t)size)
			_exit(33);
	close(fd);
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
	for (int i = 0; i < iters; i++)
		if (pwrite(fd, buf, size, (off_t)i * (off_t)size) != (ssize_t)size)
			_exit(12);
	if (pause_ms)
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
		else if (!strcmp(k, "--dir"))
			dir = v;
		else if (!strcmp(k, "--comm"))
			comm = v;
		else if (!strcmp(k, "--blockdev"))
			blockdev = v;
		else {
			fprintf(stderr, "workload: unknown option %s\n", k);
			return 2;
		}
	}
	if (nthreads < 1 || nthreads > 64)
		return 2;

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
		for (long t = 1; t < nthreads; t++)
			if (pthread_create(&th[t], NULL, worker, (void *)t))
				_exit(20);
		worker((void *)0);
		for (long t = 1; t < nthreads; t++)
			pthread_join(th[t], NULL);
		_exit(0);
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
	printf("%d\n", (int)pid);
	return 0;
}

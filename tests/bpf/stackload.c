// SPDX-License-Identifier: Apache-2.0
/*
 * I/O from two known functions with known byte ratios, for the stack
 * profile tests (tests/bpf/test_stacks.py):
 *
 *   stackload PATH ITERS BYTES_A BYTES_B LINGER_MS [a|b|ab]
 *
 * writer_a() pwrites BYTES_A and writer_b() BYTES_B per iteration, through
 * libc (whose frameless wrapper is the case the caller fix-up is for);
 * syncer() fsyncs once at the end. Built with frame pointers; the functions
 * are noinline so each is a frame. The process then stays LINGER_MS alive:
 * the agent reads a process's mappings at the window's drain (docs/stacks.md),
 * and a process gone by then has its user frames unnamed. Prints its pid.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static char buf[1 << 20];

__attribute__((noinline)) static int writer_a(int fd, size_t n, off_t off)
{
	int r = pwrite(fd, buf, n, off) == (ssize_t)n ? 0 : -1;

	__asm__ volatile("" ::: "memory"); /* no tail call: this frame stays */
	return r;
}

__attribute__((noinline)) static int writer_b(int fd, size_t n, off_t off)
{
	int r = pwrite(fd, buf, n, off) == (ssize_t)n ? 0 : -1;

	__asm__ volatile("" ::: "memory");
	return r;
}

__attribute__((noinline)) static int syncer(int fd)
{
	int r = fsync(fd);

	__asm__ volatile("" ::: "memory");
	return r;
}

int main(int argc, char **argv)
{
	struct timespec ts;
	long iters, linger;
	size_t a, b;
	const char *which;
	off_t off = 0;
	int fd;

	if (argc < 6) {
		fprintf(stderr, "usage: stackload PATH ITERS BYTES_A BYTES_B LINGER_MS [a|b|ab]\n");
		return 2;
	}
	iters = atol(argv[2]);
	a = (size_t)atol(argv[3]);
	b = (size_t)atol(argv[4]);
	linger = atol(argv[5]);
	which = argc > 6 ? argv[6] : "ab";
	if (a > sizeof(buf) || b > sizeof(buf)) {
		fprintf(stderr, "stackload: at most %zu bytes per write\n", sizeof(buf));
		return 2;
	}
	memset(buf, 'x', sizeof(buf));
	fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd < 0) {
		perror(argv[1]);
		return 1;
	}
	for (long i = 0; i < iters; i++) {
		if (strchr(which, 'a')) {
			if (writer_a(fd, a, off))
				return 1;
			off += (off_t)a;
		}
		if (strchr(which, 'b')) {
			if (writer_b(fd, b, off))
				return 1;
			off += (off_t)b;
		}
	}
	if (syncer(fd))
		return 1;
	close(fd);
	printf("%d\n", getpid());
	fflush(stdout);
	ts.tv_sec = linger / 1000;
	ts.tv_nsec = (linger % 1000) * 1000000L;
	nanosleep(&ts, NULL);
	return 0;
}

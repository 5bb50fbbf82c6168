// SPDX-License-Identifier: Apache-2.0
/*
 * The worst case per call: 4 KiB pwrite then pread of the same block, in a
 * loop, on a file in tmpfs (no device, so the tracer's cost is not hidden
 * behind I/O time). Prints one line: "<ops> <elapsed ns> <ns per op>".
 * usage: iobench FILE OPS
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	static char buf[4096];
	struct timespec a, b;
	long ops;
	double ns;
	int fd;

	if (argc != 3) {
		fprintf(stderr, "usage: iobench FILE OPS\n");
		return 2;
	}
	ops = atol(argv[2]);
	fd = open(argv[1], O_CREAT | O_RDWR | O_TRUNC, 0600);
	if (fd < 0 || ops <= 0) {
		perror("iobench");
		return 1;
	}
	memset(buf, 'x', sizeof(buf));
	clock_gettime(CLOCK_MONOTONIC, &a);
	for (long i = 0; i < ops / 2; i++) {
		if (pwrite(fd, buf, sizeof(buf), 0) != sizeof(buf) ||
		    pread(fd, buf, sizeof(buf), 0) != sizeof(buf)) {
			perror("iobench");
			return 1;
		}
	}
	clock_gettime(CLOCK_MONOTONIC, &b);
	ns = (double)(b.tv_sec - a.tv_sec) * 1e9 + (double)(b.tv_nsec - a.tv_nsec);
	printf("%ld %.0f %.2f\n", ops, ns, ns / (double)ops);
	close(fd);
	unlink(argv[1]);
	return 0;
}

// SPDX-License-Identifier: Apache-2.0
/*
 * A realistic streaming workload: sequential 1 MiB writes or reads of one
 * file, buffered or O_DIRECT. A write phase ends with fsync, inside the
 * timing, so buffered writes are measured to the device and not to the page
 * cache. Prints one line: "<bytes> <elapsed ns> <MiB/s>".
 * usage: ext4bench write|read FILE MIB [direct]
 */
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define CHUNK (1 << 20) /* the workload's request size */
#define ALIGN 4096	/* O_DIRECT needs buffers aligned to the logical block */

static double elapsed_ns(const struct timespec *a, const struct timespec *b)
{
	return (double)(b->tv_sec - a->tv_sec) * 1e9 + (double)(b->tv_nsec - a->tv_nsec);
}

int main(int argc, char **argv)
{
	struct timespec a, b;
	long mib, done = 0;
	bool wr, direct;
	char *buf;
	double ns;
	int fd;

	if (argc < 4 || argc > 5 || (strcmp(argv[1], "write") && strcmp(argv[1], "read")) ||
	    (argc == 5 && strcmp(argv[4], "direct"))) {
		fprintf(stderr, "usage: ext4bench write|read FILE MIB [direct]\n");
		return 2;
	}
	wr = !strcmp(argv[1], "write");
	direct = argc == 5;
	mib = atol(argv[3]);
	if (mib <= 0 || posix_memalign((void **)&buf, ALIGN, CHUNK)) {
		fprintf(stderr, "ext4bench: bad size or out of memory\n");
		return 2;
	}
	memset(buf, 'x', CHUNK);
	fd = open(argv[2], (wr ? O_CREAT | O_WRONLY | O_TRUNC : O_RDONLY) | (direct ? O_DIRECT : 0),
		  0600);
	if (fd < 0) {
		perror("ext4bench: open");
		return 1;
	}
	clock_gettime(CLOCK_MONOTONIC, &a);
	for (; done < mib; done++) {
		ssize_t n = wr ? write(fd, buf, CHUNK) : read(fd, buf, CHUNK);

		if (n == 0 && !wr)
			break;
		if (n != CHUNK) {
			perror(wr ? "ext4bench: write" : "ext4bench: read");
			return 1;
		}
	}
	if (wr && fsync(fd)) {
		perror("ext4bench: fsync");
		return 1;
	}
	clock_gettime(CLOCK_MONOTONIC, &b);
	ns = elapsed_ns(&a, &b);
	printf("%ld %.0f %.2f\n", done * CHUNK, ns, (double)done / (ns / 1e9));
	close(fd);
	free(buf);
	return 0;
}

// SPDX-License-Identifier: Apache-2.0
/*
 * Workload for the sampled-trace tests (tests/bpf/test_traces.py):
 *   traceload FILE N [SLOW SLOW_MS]
 * N pwrite64 calls of 4096 bytes to FILE, one thread, then SLOW read calls
 * on a pipe that each wait SLOW_MS for a child to write. Prints its pid.
 * With TRACELOAD_ALTERNATE=1 in the environment, each pwrite64 is followed
 * by a pread64 of the same block: 2N calls alternating. Then two opens that
 * name no file the file layer follows: one that fails (FILE/absent) and
 * /dev/null, a character device.
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <fcntl.h>

static char buf[4096];

int main(int argc, char **argv)
{
	long n, slow = 0, slow_ms = 0;
	int fd, p[2];
	const char *alt = getenv("TRACELOAD_ALTERNATE");

	if (argc != 3 && argc != 5) {
		fprintf(stderr, "usage: traceload FILE N [SLOW SLOW_MS]\n");
		return 2;
	}
	n = atol(argv[2]);
	if (argc == 5) {
		slow = atol(argv[3]);
		slow_ms = atol(argv[4]);
	}
	fd = open(argv[1], O_CREAT | O_RDWR | O_TRUNC, 0644);
	if (fd < 0) {
		perror("open");
		return 2;
	}
	for (long i = 0; i < n; i++) {
		if (pwrite(fd, buf, sizeof(buf), (i % 256) * 4096) != (ssize_t)sizeof(buf)) {
			perror("pwrite");
			return 2;
		}
		if (alt && alt[0] == '1' &&
		    pread(fd, buf, sizeof(buf), (i % 256) * 4096) != (ssize_t)sizeof(buf)) {
			perror("pread");
			return 2;
		}
	}
	{
		char absent[4096];
		int nul;

		snprintf(absent, sizeof(absent), "%s/absent", argv[1]);
		if (open(absent, O_RDONLY) >= 0) {
			fprintf(stderr, "%s: opened\n", absent);
			return 2;
		}
		nul = open("/dev/null", O_RDONLY);
		if (nul < 0) {
			perror("/dev/null");
			return 2;
		}
		close(nul);
	}
	close(fd);
	if (slow) {
		if (pipe(p) < 0)
			return 2;
		if (!fork()) {
			struct timespec t = {slow_ms / 1000, (slow_ms % 1000) * 1000000};

			close(p[0]);
			for (long i = 0; i < slow; i++) {
				nanosleep(&t, NULL);
				if (write(p[1], "x", 1) != 1)
					_exit(2);
			}
			_exit(0);
		}
		close(p[1]);
		for (long i = 0; i < slow; i++)
			if (read(p[0], buf, 1) != 1)
				return 2;
		wait(NULL);
	}
	printf("%d\n", getpid());
	return 0;
}

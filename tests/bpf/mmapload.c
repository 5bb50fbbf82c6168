// SPDX-License-Identifier: Apache-2.0
/*
 * Workload for tests/bpf/test_mmap.py: file I/O through a mapping, which
 * makes no read or write call.
 *   mmapload none            (the process alone: its own faults)
 *   mmapload read FILE       (maps FILE, reads one byte of every page)
 *   mmapload random FILE     (the same, advised MADV_RANDOM: no readahead,
 *                             so each page not cached is a fault of its own)
 *   mmapload write FILE N    (creates FILE of N bytes, maps it shared,
 *                             writes one byte of every page, msync)
 * Then prints its pid. The mapping is advised MADV_NOHUGEPAGE: a large
 * folio mapped whole by one PMD makes no fault-around event, and the test
 * counts those events.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static int fail(const char *what)
{
	perror(what);
	return 1;
}

int main(int argc, char **argv)
{
	long page = sysconf(_SC_PAGESIZE);
	volatile unsigned char sum = 0;
	bool wr = argc == 4 && !strcmp(argv[1], "write");
	bool rnd = argc == 3 && !strcmp(argv[1], "random");
	unsigned char *m;
	struct stat st;
	size_t len;
	int fd;

	if (argc == 2 && !strcmp(argv[1], "none")) {
		printf("%d\n", getpid());
		return 0;
	}
	if (!wr && !rnd && !(argc == 3 && !strcmp(argv[1], "read"))) {
		fprintf(stderr,
			"usage: mmapload none | read FILE | random FILE | write FILE BYTES\n");
		return 2;
	}
	fd = open(argv[2], wr ? O_RDWR | O_CREAT | O_TRUNC : O_RDONLY, 0644);
	if (fd < 0)
		return fail(argv[2]);
	if (wr) {
		len = strtoul(argv[3], NULL, 0);
		if (ftruncate(fd, (off_t)len))
			return fail("ftruncate");
	} else {
		if (fstat(fd, &st))
			return fail("fstat");
		len = (size_t)st.st_size;
	}
	m = mmap(NULL, len, wr ? PROT_READ | PROT_WRITE : PROT_READ, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED)
		return fail("mmap");
	/* EINVAL: a kernel without transparent huge pages maps none anyway */
	if (madvise(m, len, MADV_NOHUGEPAGE) && errno != EINVAL)
		return fail("madvise");
	if (rnd && madvise(m, len, MADV_RANDOM))
		return fail("madvise");
	for (size_t off = 0; off < len; off += (size_t)page) {
		if (wr)
			m[off] = 1;
		else
			sum += m[off];
	}
	if (wr && msync(m, len, MS_SYNC))
		return fail("msync");
	munmap(m, len);
	close(fd);
	printf("%d\n", getpid());
	return 0;
}

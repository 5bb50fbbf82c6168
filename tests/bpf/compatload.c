// SPDX-License-Identifier: Apache-2.0
/*
 * Workload for tests/bpf/test_compat.py: 32-bit system calls from a 64-bit
 * process (int 0x80 takes the ia32 table: 5 open, 4 write, 6 close, which
 * the 64-bit table has as fstat, stat and lstat).
 *   compatload FILE N
 * Opens FILE (created), writes 100 bytes N times, closes it, all through
 * int 0x80, then prints its pid. x86-64 with CONFIG_IA32_EMULATION only.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static long int80(long nr, long a, long b, long c)
{
	long ret;

	__asm__ volatile("int $0x80" : "=a"(ret) : "a"(nr), "b"(a), "c"(b), "d"(c) : "memory");
	return ret;
}

int main(int argc, char **argv)
{
	char *low;
	long fd, n;

	if (argc != 3 || strlen(argv[1]) >= 4096) {
		fprintf(stderr, "usage: compatload FILE N\n");
		return 2;
	}
	n = atol(argv[2]);
	/* the ia32 calls take 32-bit pointers: the path and the data below 4 GiB */
	low = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_32BIT, -1,
		   0);
	if (low == MAP_FAILED) {
		perror("mmap(MAP_32BIT)");
		return 2;
	}
	strcpy(low, argv[1]);
	memset(low + 4096, 'c', 100);
	fd = int80(5, (long)low, 01 | 0100 | 01000, 0644); /* O_WRONLY | O_CREAT | O_TRUNC */
	if (fd < 0) {
		fprintf(stderr, "int 0x80 open: %ld\n", fd);
		return 2;
	}
	for (long i = 0; i < n; i++)
		if (int80(4, fd, (long)low + 4096, 100) != 100) {
			fprintf(stderr, "int 0x80 write failed\n");
			return 2;
		}
	if (int80(6, fd, 0, 0) != 0) {
		fprintf(stderr, "int 0x80 close failed\n");
		return 2;
	}
	printf("%d\n", (int)getpid());
	return 0;
}

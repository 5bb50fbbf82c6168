// SPDX-License-Identifier: Apache-2.0
/*
 * Deterministic file workload for the file layer's test (test_syscall.py
 * scenario "files"). Every step's effect on the per-file counters is the
 * test's expectation, so change both together.
 *
 *   fileload --dir D            the workload; prints its pid at the end
 *   fileload --after-exec FD    (internal) the same process after exec
 *
 * Files: H = D/<hostile name>, B = D/b.dat, P = D/p.dat, A = D/a.dat, C =
 * D/c.dat, and a ~4000-byte deep path under D opened relative to a directory
 * fd. A is written through an O_APPEND descriptor and a plain one: an
 * O_APPEND write lands at the end of file, whatever the descriptor's
 * position or pwrite's offset say. P's second
 * write follows a pause of PAUSE_US, which the test makes longer than three
 * of the agent's windows: long enough for the agent to take the key's slot
 * back, so the write counts as consecutive only if its position survived.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define PAUSE_US 1000000

static char buf[8192] __attribute__((aligned(4096)));

static void die(const char *what)
{
	perror(what);
	exit(2);
}

static void wr(int fd, const char *p, size_t n)
{
	if (write(fd, p, n) != (ssize_t)n)
		die("write");
}

/* dir/name, created empty */
static int create(const char *dir, const char *name, int flags)
{
	char path[4096];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_CREAT | O_TRUNC | flags, 0644);
	if (fd < 0)
		die(path);
	return fd;
}

static void prd(int fd, size_t n, off_t off)
{
	if (pread(fd, buf, n, off) != (ssize_t)n)
		die("pread");
}

int main(int argc, char **argv)
{
	const char *dir = NULL;
	char self[4096], fdarg[16];
	int fd, d, d2, b, c, dfd;
	ssize_t n;

	if (argc == 3 && !strcmp(argv[1], "--after-exec")) {
		/* C's descriptor survived exec: same process, same file */
		fd = atoi(argv[2]);
		wr(fd, buf, 4096);
		close(fd);
		printf("%d\n", getpid());
		return 0;
	}
	if (argc == 3 && !strcmp(argv[1], "--dir"))
		dir = argv[2];
	if (!dir) {
		fprintf(stderr, "usage: fileload --dir DIR\n");
		return 2;
	}

	/* H: 10 + 5 + 1 sequential writes through the fd and a dup */
	fd = create(dir, "h\"q\nnl\xffx.dat", O_RDWR);
	for (int i = 0; i < 10; i++)
		wr(fd, buf, 4096);
	d = dup(fd);
	for (int i = 0; i < 5; i++)
		wr(d, buf, 4096);
	close(fd);
	wr(d, buf, 100); /* through the dup after the original is closed */
	d2 = fcntl(d, F_DUPFD, 100);
	prd(d2, 4096, 0);    /* first read: neither sequential nor consecutive */
	prd(d2, 4096, 4096); /* consecutive (and sequential) */
	prd(d2, 4096, 0);    /* backwards */
	prd(d2, 4096, 8192); /* sequential, not consecutive */
	if (dup2(d2, 50) != 50)
		die("dup2");
	/* at the shared position 61540: consecutive, unaligned file offset and
	 * an unaligned buffer */
	wr(50, buf + 1, 4096);
	close(d);
	close(d2);
	close(50);

	/* B reuses the lowest free descriptor number, which was H's */
	b = create(dir, "b.dat", O_WRONLY);
	wr(b, buf, 4096);
	{
		struct stat stb;

		/* glibc's fstat is newfstatat(b, "", AT_EMPTY_PATH) since 2.33:
		 * both are B's; a path beside AT_EMPTY_PATH is another file's
		 * (ENOTDIR here) and is not */
		if (fstat(b, &stb) < 0 || syscall(SYS_newfstatat, b, "", &stb, AT_EMPTY_PATH) < 0)
			die("fstat");
		if (syscall(SYS_newfstatat, b, "x", &stb, AT_EMPTY_PATH) == 0)
			die("newfstatat with a path beside a file");
	}
	close(b);

	/* P: two consecutive writes with a pause between */
	b = create(dir, "p.dat", O_WRONLY);
	wr(b, buf, 4096);
	usleep(PAUSE_US);
	wr(b, buf, 4096);
	close(b);

	/* A: 100 bytes appended at 0, 1000 written at 100 through another
	 * descriptor, 100 appended (at 1100: the O_APPEND descriptor's own
	 * position is 100), then pwrite at offset 0 through the O_APPEND one
	 * (Linux appends: at 1200) */
	b = create(dir, "a.dat", O_WRONLY | O_APPEND);
	{
		char path[4096];

		snprintf(path, sizeof(path), "%s/a.dat", dir);
		fd = open(path, O_WRONLY);
		if (fd < 0)
			die(path);
	}
	wr(b, buf, 100);
	if (pwrite(fd, buf, 1000, 100) != 1000)
		die("pwrite");
	wr(b, buf, 100);
	if (pwrite(b, buf, 50, 0) != 50)
		die("pwrite");
	close(fd);
	close(b);

	/* a path near PATH_MAX, built and opened relative to directory fds */
	dfd = open(dir, O_RDONLY | O_DIRECTORY);
	for (int i = 0; i < 19; i++) {
		char comp[201];
		int nd;

		memset(comp, 'a' + i, 200);
		comp[200] = 0;
		if (mkdirat(dfd, comp, 0755) < 0)
			die("mkdirat");
		nd = openat(dfd, comp, O_RDONLY | O_DIRECTORY);
		if (nd < 0)
			die("openat dir");
		close(dfd);
		dfd = nd;
	}
	fd = openat(dfd, "deep.dat", O_CREAT | O_WRONLY | O_TRUNC, 0644);
	if (fd < 0)
		die("openat deep");
	wr(fd, buf, 1000);
	close(fd);
	close(dfd);

	/* C: opened here, written after exec */
	c = create(dir, "c.dat", O_WRONLY);
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n < 0)
		die("readlink");
	self[n] = 0;
	snprintf(fdarg, sizeof(fdarg), "%d", c);
	fflush(stdout);
	execl(self, self, "--after-exec", fdarg, (char *)NULL);
	die("exec");
}

// SPDX-License-Identifier: Apache-2.0
/*
 * The benchmark suite's workloads (bench/suite.py), one per command. Each
 * prints one line, "<calls> <bytes> <elapsed ns>": the I/O system calls it
 * timed, the bytes they moved and the time they took.
 *
 *   tmpfs4k FILE CALLS         4 KiB pwrite then pread of one block: the
 *                              worst case per call (no device time)
 *   write FILE MIB [direct]    sequential 1 MiB writes, then fsync (timed:
 *                              buffered data is measured to the device)
 *   read FILE MIB [direct]     sequential 1 MiB reads of FILE; buffered, the
 *                              file's pages are evicted first
 *                              (POSIX_FADV_DONTNEED) so they come from the
 *                              device, not from the cache
 *   meta DIR FILES             metadata storm: create (openat + close) every
 *                              file, then stat each, then unlink each
 *   mixed TMPFSDIR DIR CALLS MIB FILES
 *                              two threads, each running all of the above
 *                              (the second in reverse order) on its own files
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"

#define CHUNK (1 << 20) /* the streaming workloads' request size */
#define ALIGN 4096	/* O_DIRECT needs buffers aligned to the logical block */

struct tally {
	long calls;
	long bytes;
};

static int fail(const char *what, const char *path)
{
	fprintf(stderr, "workloads: %s %s: %s\n", what, path, strerror(errno));
	return -1;
}

static int tmpfs4k(const char *path, long calls, struct tally *t)
{
	static __thread char buf[4096];
	int fd = open(path, O_CREAT | O_RDWR | O_TRUNC, 0600);

	if (fd < 0)
		return fail("open", path);
	memset(buf, 'x', sizeof(buf));
	for (long i = 0; i < calls / 2; i++)
		if (pwrite(fd, buf, sizeof(buf), 0) != sizeof(buf) ||
		    pread(fd, buf, sizeof(buf), 0) != sizeof(buf)) {
			close(fd);
			return fail("pwrite/pread", path);
		}
	t->calls += calls / 2 * 2;
	t->bytes += calls / 2 * 2 * (long)sizeof(buf);
	close(fd);
	unlink(path);
	return 0;
}

static int stream(const char *path, bool wr, long mib, bool direct, struct tally *t)
{
	int flags = (wr ? O_CREAT | O_WRONLY | O_TRUNC : O_RDONLY) | (direct ? O_DIRECT : 0);
	char *buf;
	int fd, r = 0;

	if (posix_memalign((void **)&buf, ALIGN, CHUNK)) {
		errno = ENOMEM;
		return fail("buffer for", path);
	}
	memset(buf, 'x', CHUNK);
	fd = open(path, flags, 0600);
	if (fd < 0) {
		free(buf);
		return fail("open", path);
	}
	/* a buffered read measures the device: drop this file's cached pages
	 * (the file was fsynced when written, so they are clean) */
	if (!wr && !direct && (errno = posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED)))
		r = fail("posix_fadvise", path);
	for (long i = 0; !r && i < mib; i++) {
		ssize_t n = wr ? write(fd, buf, CHUNK) : read(fd, buf, CHUNK);

		if (n != CHUNK) {
			if (n >= 0) {
				fprintf(stderr, "workloads: %s %s: %zd bytes of %d at MiB %ld\n",
					wr ? "short write to" : "short read of (shorter than MIB?)",
					path, n, CHUNK, i);
				r = -1;
			} else
				r = fail(wr ? "write" : "read", path);
			break;
		}
		t->calls++;
		t->bytes += CHUNK;
	}
	if (!r && wr) {
		if (fsync(fd))
			r = fail("fsync", path);
		t->calls++;
	}
	close(fd);
	free(buf);
	return r;
}

static int meta(const char *dir, long files, struct tally *t)
{
	char path[4096];
	struct stat st;

	for (int pass = 0; pass < 3; pass++)
		for (long i = 0; i < files; i++) {
			snprintf(path, sizeof(path), "%s/f%ld", dir, i);
			if (pass == 0) {
				int fd = open(path, O_CREAT | O_EXCL | O_WRONLY, 0600);

				if (fd < 0)
					return fail("create", path);
				close(fd);
				t->calls += 2;
			} else if (pass == 1) {
				if (stat(path, &st))
					return fail("stat", path);
				t->calls++;
			} else {
				if (unlink(path))
					return fail("unlink", path);
				t->calls++;
			}
		}
	return 0;
}

struct mix {
	const char *tmpfs_dir, *dir;
	long calls, mib, files;
	bool reverse;
	int id;
	struct tally t;
	int r;
};

/* one thread's share of "mixed": every workload once, on its own files */
static void *mix_run(void *arg)
{
	struct mix *m = arg;
	char tmp[4096], data[4096], mdir[4096];

	snprintf(tmp, sizeof(tmp), "%s/mix%d", m->tmpfs_dir, m->id);
	snprintf(data, sizeof(data), "%s/mix%d.dat", m->dir, m->id);
	snprintf(mdir, sizeof(mdir), "%s/mix%d.d", m->dir, m->id);
	if (mkdir(mdir, 0700) && errno != EEXIST) {
		m->r = fail("mkdir", mdir);
		return NULL;
	}
	/* the second thread runs the groups in reverse, each write before its read */
	static const int order[2][6] = {{0, 1, 2, 3, 4, 5}, {5, 3, 4, 1, 2, 0}};

	for (int k = 0; k < 6 && !m->r; k++) {
		switch (order[m->reverse][k]) {
		case 0:
			m->r = tmpfs4k(tmp, m->calls, &m->t);
			break;
		case 1:
			m->r = stream(data, true, m->mib, false, &m->t);
			break;
		case 2:
			m->r = stream(data, false, m->mib, false, &m->t);
			break;
		case 3:
			m->r = stream(data, true, m->mib, true, &m->t);
			break;
		case 4:
			m->r = stream(data, false, m->mib, true, &m->t);
			break;
		case 5:
			m->r = meta(mdir, m->files, &m->t);
			break;
		}
	}
	unlink(data);
	rmdir(mdir);
	return NULL;
}

static int mixed(char **argv, struct tally *t)
{
	struct mix m[2];
	pthread_t th[2];

	for (int i = 0; i < 2; i++) {
		m[i] = (struct mix){.tmpfs_dir = argv[0],
				    .dir = argv[1],
				    .calls = atol(argv[2]),
				    .mib = atol(argv[3]),
				    .files = atol(argv[4]),
				    .reverse = i == 1,
				    .id = i};
		if ((errno = pthread_create(&th[i], NULL, mix_run, &m[i]))) {
			fail("pthread_create", "");
			if (i == 1)
				pthread_join(th[0], NULL);
			return -1;
		}
	}
	for (int i = 0; i < 2; i++) {
		pthread_join(th[i], NULL);
		t->calls += m[i].t.calls;
		t->bytes += m[i].t.bytes;
	}
	return m[0].r || m[1].r ? -1 : 0;
}

static int usage(void)
{
	fprintf(stderr, "usage: workloads tmpfs4k FILE CALLS\n"
			"       workloads write|read FILE MIB [direct]\n"
			"       workloads meta DIR FILES\n"
			"       workloads mixed TMPFSDIR DIR CALLS MIB FILES\n"
			"(CALLS, MIB and FILES are positive integers)\n");
	return 2;
}

static bool positive(const char *s)
{
	char *end;
	long v = strtol(s, &end, 10);

	return *s && !*end && v > 0;
}

int main(int argc, char **argv)
{
	struct tally t = {};
	const char *w = argc > 1 ? argv[1] : "";
	long long t0;
	int r;

	if (!strcmp(w, "tmpfs4k") && argc == 4 && positive(argv[3])) {
		t0 = now_ns();
		r = tmpfs4k(argv[2], atol(argv[3]), &t);
	} else if ((!strcmp(w, "write") || !strcmp(w, "read")) && (argc == 4 || argc == 5) &&
		   positive(argv[3]) && (argc == 4 || !strcmp(argv[4], "direct"))) {
		t0 = now_ns();
		r = stream(argv[2], w[0] == 'w', atol(argv[3]), argc == 5, &t);
	} else if (!strcmp(w, "meta") && argc == 4 && positive(argv[3])) {
		t0 = now_ns();
		r = meta(argv[2], atol(argv[3]), &t);
	} else if (!strcmp(w, "mixed") && argc == 7 && positive(argv[4]) && positive(argv[5]) &&
		   positive(argv[6])) {
		t0 = now_ns();
		r = mixed(argv + 2, &t);
	} else
		return usage();
	if (r)
		return 1;
	printf("%ld %ld %lld\n", t.calls, t.bytes, now_ns() - t0);
	return 0;
}

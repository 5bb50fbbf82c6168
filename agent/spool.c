// SPDX-License-Identifier: Apache-2.0
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fs-util.h"
#include "macro.h"
#include "segment.h"
#include "spool.h"

struct spool {
	char dir[PATH_MAX];
	int dir_fd;
	bool fsync;
	uint64_t next_seq;
	size_t skipped;	    /* names like a segment's that are none */
	unsigned recreated; /* the directory made again after it was removed */
	int unwritable;	    /* errno of the write check at open, 0: writable */
	struct spool_entry *existing;
	size_t n_existing;
};

static int cmp_entry(const void *a, const void *b)
{
	const struct spool_entry *x = a, *y = b;

	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

void spool_path(const struct spool *s, uint64_t seq, char *out, size_t len)
{
	snprintf(out, len, "%s/%020" PRIu64 ".seg", s->dir, seq);
}

/*
 * One agent per spool: two would number their segments from one listing,
 * each rename replacing the other's segment, and each delete the other's
 * delivered ones (a second agent run by hand beside the service, the
 * package's and a DaemonSet's on one directory). The lock lives as long as
 * dir_fd. A file system without flock (some NFS mounts) goes unlocked.
 */
static int spool_lock(int dir_fd)
{
	if (flock(dir_fd, LOCK_EX | LOCK_NB) == 0)
		return 0;
	return errno == EWOULDBLOCK ? -EBUSY : 0;
}

int spool_open(const char *dir, bool do_fsync, struct spool **ret)
{
	struct spool *s = calloc(1, sizeof(*s));
	DIR *d;
	struct dirent *de;
	int r;

	if (!s)
		return -ENOMEM;
	snprintf(s->dir, sizeof(s->dir), "%s", dir);
	s->fsync = do_fsync;
	r = mkdir_parents(dir, true);
	if (r < 0)
		goto fail;
	{
		/* a spool reached through a symlink (moved to /scratch) is made
		 * again where it is, should it be removed: not at the link */
		char real[PATH_MAX];

		if (realpath(dir, real))
			snprintf(s->dir, sizeof(s->dir), "%s", real);
	}
	s->dir_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (s->dir_fd < 0) {
		r = -errno;
		goto fail;
	}
	r = spool_lock(s->dir_fd);
	if (r < 0) {
		close(s->dir_fd);
		goto fail;
	}
	/* a spool the agent cannot write (a read-only mount, another owner's
	 * mode): said at start by the sink (spool_unwritable), not refused,
	 * as when it turns read-only later: windows wait in memory and still
	 * go to Kafka, and a refusal would stop the file sink and the traces
	 * too (and end the agent at a reload). access() answers EROFS for a
	 * read-only file system too. */
	if (faccessat(s->dir_fd, ".", W_OK | X_OK, AT_EACCESS) < 0)
		s->unwritable = errno;
	{
		int dfd = dup(s->dir_fd);

		d = dfd >= 0 ? fdopendir(dfd) : NULL;
		if (!d) {
			r = -errno;
			if (dfd >= 0)
				close(dfd);
			close(s->dir_fd);
			goto fail;
		}
	}
	/* errno reset for every entry: a listing cut short by an error would
	 * number new segments over ones it never saw */
	for (errno = 0; (de = readdir(d)); errno = 0) {
		size_t l = strlen(de->d_name);
		char *end;
		uint64_t seq;
		struct stat st;

		/* the agent's own temporary name (spool_write): a write that
		 * never completed. Other files are not the agent's to delete. */
		if (l == 28 && !strcmp(de->d_name + 20, ".seg.tmp") &&
		    strspn(de->d_name, "0123456789") == 20) {
			unlinkat(s->dir_fd, de->d_name, 0);
			continue;
		}
		/* a segment set aside (spool_set_aside) keeps its number: new
		 * ones are numbered past it, or a later one set aside under
		 * the same number would replace the evidence */
		if (l == 28 && !strcmp(de->d_name + 20, ".seg.bad") &&
		    strspn(de->d_name, "0123456789") == 20) {
			seq = strtoull(de->d_name, &end, 10);
			if (seq <= SPOOL_SEQ_MAX && seq >= s->next_seq)
				s->next_seq = seq + 1;
			continue;
		}
		if (l != 24 || strcmp(de->d_name + 20, ".seg"))
			continue;
		/* twenty digits, no sign (strtoull takes "-1" for 2^64 - 1), and
		 * far from the top: next_seq must never wrap to an older name.
		 * Anything else, a directory too, is not this agent's: left
		 * alone, and the sink names what it skipped (spool_skipped). */
		if (strspn(de->d_name, "0123456789") != 20) {
			s->skipped++;
			continue;
		}
		seq = strtoull(de->d_name, &end, 10);
		if (seq > SPOOL_SEQ_MAX) {
			s->skipped++;
			continue;
		}
		/* a name taken by something else (a directory, a FIFO) is left
		 * alone and never written: new segments are numbered past it */
		if (seq >= s->next_seq)
			s->next_seq = seq + 1;
		if (fstatat(s->dir_fd, de->d_name, &st, 0) < 0 || !S_ISREG(st.st_mode)) {
			s->skipped++;
			continue;
		}
		if (s->n_existing % 64 == 0) {
			void *n = realloc(s->existing, (s->n_existing + 64) * sizeof(*s->existing));

			if (!n) {
				closedir(d);
				close(s->dir_fd);
				r = -ENOMEM;
				goto fail;
			}
			s->existing = n;
		}
		s->existing[s->n_existing++] = (struct spool_entry){seq, (uint64_t)st.st_size};
	}
	if (errno) {
		r = -errno;
		closedir(d);
		close(s->dir_fd);
		goto fail;
	}
	closedir(d);
	qsort_safe(s->existing, s->n_existing, sizeof(*s->existing), cmp_entry);
	*ret = s;
	return 0;
fail:
	free(s->existing);
	free(s);
	return r;
}

struct spool *spool_free(struct spool *s)
{
	if (!s)
		return NULL;
	close(s->dir_fd);
	free(s->existing);
	free(s);
	return NULL;
}

const char *spool_dir(const struct spool *s)
{
	return s->dir;
}

const struct spool_entry *spool_existing(const struct spool *s, size_t *n)
{
	*n = s->n_existing;
	return s->existing;
}

int spool_unwritable(const struct spool *s)
{
	return s->unwritable;
}

size_t spool_skipped(const struct spool *s)
{
	return s->skipped;
}

uint64_t spool_next_seq(struct spool *s)
{
	return s->next_seq++;
}

unsigned spool_recreated(const struct spool *s)
{
	return s->recreated;
}

bool spool_gone(const struct spool *s)
{
	struct stat st;

	if (fstat(s->dir_fd, &st) < 0)
		return errno == ESTALE; /* NFS: removed by another client */
	return st.st_nlink == 0;
}

/*
 * The directory held open was removed (an operator's rm -rf, a cleanup
 * job): every later write would fail with ENOENT for the rest of the run.
 * It is made again at its path and held instead. A directory merely
 * renamed is still ours and still takes writes: left as it is.
 */
static int recreate_dir(struct spool *s)
{
	struct stat st;
	int fd, r;

	if (!spool_gone(s))
		return -ENOENT; /* not removed: the error was something else's */
	r = mkdir_parents(s->dir, true);
	if (r < 0)
		return r;
	fd = open(s->dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	/* made at run time under a parent others may write to (a spool in
	 * /tmp that a cleanup removed): one another user made first is not
	 * taken, nor one others could plant files in */
	if (fstat(fd, &st) < 0 || st.st_uid != geteuid() || (st.st_mode & 022)) {
		close(fd);
		return -EPERM;
	}
	r = spool_lock(fd);
	if (r < 0) {
		close(fd);
		return r;
	}
	close(s->dir_fd);
	s->dir_fd = fd;
	s->recreated++;
	return 0;
}

int spool_write(struct spool *s, uint64_t seq, const char *data, size_t len)
{
	char name[64], tmp[64];
	_cleanup_close_ int fd = -1;
	size_t off = 0;

	snprintf(name, sizeof(name), "%020" PRIu64 ".seg", seq);
	snprintf(tmp, sizeof(tmp), "%020" PRIu64 ".seg.tmp", seq);
	fd = openat(s->dir_fd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0640);
	if (fd < 0) {
		int r = -errno;

		/* ESTALE: an NFS directory removed by another client */
		if ((r != -ENOENT && r != -ESTALE) || (r = recreate_dir(s)) < 0)
			return r;
		fd = openat(s->dir_fd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC,
			    0640);
		if (fd < 0)
			return -errno;
	}
	while (off < len) {
		ssize_t n = write(fd, data + off, len - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			int r = n < 0 ? -errno : -EIO;

			unlinkat(s->dir_fd, tmp, 0);
			return r;
		}
		off += (size_t)n;
	}
	if (s->fsync && fsync(fd) < 0) {
		int r = -errno;

		unlinkat(s->dir_fd, tmp, 0);
		return r;
	}
	if (renameat(s->dir_fd, tmp, s->dir_fd, name) < 0) {
		int r = -errno;

		unlinkat(s->dir_fd, tmp, 0);
		return r;
	}
	/* the rename itself survives a power cut only once the directory is
	 * synced: failed (EIO), the segment is not counted written and stays
	 * held in memory, its file removed rather than left on disk
	 * uncounted (the spool's bound, a delivery's delete); a rewrite under
	 * its name puts it back */
	if (s->fsync && fsync(s->dir_fd) < 0) {
		int r = -errno;

		unlinkat(s->dir_fd, name, 0);
		return r;
	}
	return 0;
}

int spool_read(struct spool *s, uint64_t seq, struct dc_buf *out)
{
	char name[64];
	_cleanup_close_ int fd = -1;
	struct stat st;
	size_t off = 0;

	snprintf(name, sizeof(name), "%020" PRIu64 ".seg", seq);
	/* O_NONBLOCK: a FIFO put in a segment's place would hold the event
	 * loop in open() until the watchdog */
	fd = openat(s->dir_fd, name, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0 || fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -EINVAL;
	buf_reset(out);
	/* the magic's room first: a large stray file costs no allocation */
	if (buf_grow(out, sizeof(DC_SEG_MAGIC)))
		return -ENOMEM;
	while (off < (size_t)st.st_size) {
		/* the magic first: a stray file under a segment's name (a
		 * copy, an image) is told by its first bytes, not read whole
		 * into memory (512 MiB took 531 MB and 5 s, a review's run);
		 * seg_decode() names it */
		size_t want = off < sizeof(DC_SEG_MAGIC) - 1 ? sizeof(DC_SEG_MAGIC) - 1 - off
							     : (size_t)st.st_size - off;
		ssize_t n = read(fd, out->data + off, want);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			break;
		off += (size_t)n;
		if (off == sizeof(DC_SEG_MAGIC) - 1) {
			if (memcmp(out->data, DC_SEG_MAGIC, off))
				break;
			out->len = off;
			if (buf_grow(out, (size_t)st.st_size + 1 - off))
				return -ENOMEM;
		}
	}
	out->len = off;
	return 0;
}

int spool_remove(struct spool *s, uint64_t seq)
{
	char name[64];

	snprintf(name, sizeof(name), "%020" PRIu64 ".seg", seq);
	return unlinkat(s->dir_fd, name, 0) < 0 ? -errno : 0;
}

int spool_set_aside(struct spool *s, uint64_t seq)
{
	char name[64], bad[64];

	snprintf(name, sizeof(name), "%020" PRIu64 ".seg", seq);
	snprintf(bad, sizeof(bad), "%020" PRIu64 ".seg.bad", seq);
	return renameat(s->dir_fd, name, s->dir_fd, bad) < 0 ? -errno : 0;
}

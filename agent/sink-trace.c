// SPDX-License-Identifier: Apache-2.0
/*
 * Local trace files: each window's batch (one zstd frame of NDJSON) is
 * appended to trace-<start>-<host>-<seq>.pfw.zst; a file closes past its
 * size or age, and the directory's trace files stay under a bound by
 * deleting the oldest, counted. Concatenated zstd frames are one valid zstd
 * stream: `zstd -dc file.pfw.zst` gives the NDJSON of every window in it.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fs-util.h"
#include "log.h"
#include "macro.h"
#include "sink.h"

struct tfile {
	char name[320];
	uint64_t bytes;
};

struct sink_trace {
	struct dc_sink base;
	char dir[1024];
	char host[128];
	uint64_t rotate_bytes, rotate_usec, max_bytes;
	int fd;
	uint64_t opened_usec, seq; /* opened_usec: CLOCK_MONOTONIC */
	struct tfile *files;	   /* oldest first; the last is the open one */
	size_t n, cap;
	uint64_t total; /* bytes of every listed file */
	uint64_t deleted_files, deleted_bytes, write_errors;
	bool logged;
};

static uint64_t usec_of(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return (uint64_t)ts.tv_sec * USEC_PER_SEC + (uint64_t)ts.tv_nsec / 1000;
}

/* the name's time; a file's age is judged on the monotonic clock, which a
 * step of the wall clock does not move */
static uint64_t now_usec(void)
{
	return usec_of(CLOCK_REALTIME);
}

/* Whether name is one of this host's trace files,
 * trace-<16 digits>-<host>-<6 digits>.pfw.zst: a directory shared by
 * nodes holds the others' too, which are theirs to bound. */
static bool ours(const struct sink_trace *t, const char *name)
{
	size_t l = strlen(name), hl = strlen(t->host);

	return l == 6 + 16 + 1 + hl + 1 + 6 + 8 && !strncmp(name, "trace-", 6) && name[22] == '-' &&
	       !strncmp(name + 23, t->host, hl) && name[23 + hl] == '-' &&
	       !strcmp(name + l - 8, ".pfw.zst");
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(((const struct tfile *)a)->name, ((const struct tfile *)b)->name);
}

/* Trace files of earlier runs count against the bound too. Names sort by
 * their start time, so name order is age order. */
static int scan(struct sink_trace *t)
{
	DIR *d = opendir(t->dir);
	struct dirent *e;

	if (!d)
		return -errno;
	while ((e = readdir(d))) {
		struct tfile *f;
		struct stat st;

		if (!ours(t, e->d_name))
			continue;
		if (fstatat(dirfd(d), e->d_name, &st, 0) < 0)
			continue;
		f = VEC_PUSH(t->files, t->n, t->cap);
		if (!f)
			break;
		snprintf(f->name, sizeof(f->name), "%s", e->d_name);
		f->bytes = (uint64_t)st.st_size;
		t->total += f->bytes;
	}
	closedir(d);
	qsort_safe(t->files, t->n, sizeof(*t->files), name_cmp);
	return 0;
}

/* Delete the oldest closed files until extra more bytes fit. */
static void enforce(struct sink_trace *t, uint64_t extra)
{
	size_t keep_open = t->fd >= 0 ? 1 : 0;

	while (t->total + extra > t->max_bytes && t->n > keep_open) {
		char path[1400];

		snprintf(path, sizeof(path), "%s/%s", t->dir, t->files[0].name);
		if (unlink(path) < 0 && errno != ENOENT)
			log_warning_errno(-errno, "Cannot delete the old trace file %s: %m", path);
		t->total -= t->files[0].bytes;
		t->deleted_files++;
		t->deleted_bytes += t->files[0].bytes;
		memmove(t->files, t->files + 1, (t->n - 1) * sizeof(*t->files));
		t->n--;
	}
}

static int open_next(struct sink_trace *t)
{
	uint64_t now = now_usec();
	char path[1400];
	struct tfile *f;

	f = VEC_PUSH(t->files, t->n, t->cap);
	if (!f)
		return -ENOMEM;
	/* a new file each time: an agent restarted within the second would
	 * otherwise append to its predecessor's file, after a frame that may
	 * be torn, and list it twice */
	for (int tries = 0;; tries++) {
		/* zero-padded start time first: names sort by age */
		snprintf(f->name, sizeof(f->name), "trace-%016" PRIu64 "-%s-%06" PRIu64 ".pfw.zst",
			 (uint64_t)(now / USEC_PER_SEC), t->host, t->seq++ % 1000000);
		snprintf(path, sizeof(path), "%s/%s", t->dir, f->name);
		t->fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0640);
		if (t->fd >= 0 || errno != EEXIST || tries == 1000)
			break;
	}
	if (t->fd < 0) {
		int r = -errno;

		t->n--;
		return r;
	}
	t->opened_usec = usec_of(CLOCK_MONOTONIC);
	return 0;
}

static void close_current(struct sink_trace *t)
{
	if (t->fd >= 0)
		close(t->fd);
	t->fd = -1;
}

/*
 * The directory removed while the agent runs (an rm -rf, a cleanup job):
 * made again, as the spool and the records file are, where the batches
 * were dropped until the agent stopped. The files it held went with it:
 * the count of what the bound keeps starts again from what is there.
 */
static void check_removed(struct sink_trace *t)
{
	struct stat st;

	if (t->fd >= 0 && (fstat(t->fd, &st) < 0 || st.st_nlink > 0))
		return;
	if (t->fd < 0 && access(t->dir, F_OK) == 0)
		return;
	close_current(t);
	/* what the bound counted went with the directory: none of it is
	 * deleted (or counted so) later */
	t->n = 0;
	t->total = 0;
	if (mkdir_parents(t->dir, true) < 0)
		return; /* the write fails and says why */
	if (scan(t) == 0)
		log_warning("The trace directory %s (or its current file) was removed while the "
			    "agent ran: made again",
			    t->dir);
}

static int trace_write(struct dc_sink *s, enum dc_rec_type type, const struct dc_window *w,
		       const char *data, size_t len)
{
	struct sink_trace *t = (struct sink_trace *)s;
	ssize_t n;
	int r;

	if (type != DC_REC_TRACE)
		return 0;
	check_removed(t);
	if (t->fd >= 0 && (t->files[t->n - 1].bytes + len > t->rotate_bytes ||
			   usec_of(CLOCK_MONOTONIC) - t->opened_usec > t->rotate_usec))
		close_current(t);
	enforce(t, len);
	if (t->fd < 0) {
		r = open_next(t);
		if (r < 0)
			goto fail;
	}
	do
		n = write(t->fd, data, len);
	while (n < 0 && errno == EINTR);
	if (n != (ssize_t)len) {
		r = n < 0 ? -errno : -ENOSPC;
		/* a torn frame would spoil the file's stream (zstd -d stops at
		 * it): cut it off, else count what stays against the bound;
		 * then a new file */
		if (n > 0 && ftruncate(t->fd, (off_t)t->files[t->n - 1].bytes) < 0) {
			t->files[t->n - 1].bytes += (uint64_t)n;
			t->total += (uint64_t)n;
		}
		close_current(t);
		goto fail;
	}
	t->files[t->n - 1].bytes += len;
	t->total += len;
	s->stats.records++;
	s->stats.bytes += len;
	t->logged = false;
	return 0;
fail:
	t->write_errors++;
	s->stats.errors++;
	s->stats.dropped_bytes += len;
	if (!t->logged)
		log_error_errno(r,
				"Cannot write the trace batch of window %" PRIu64 " to %s: %m; "
				"dropping it (counted in the agent record)",
				(uint64_t)w->seq, t->dir);
	t->logged = true;
	return r;
}

static int trace_flush(struct dc_sink *s)
{
	return 0;
}

static void trace_report(struct dc_sink *s, struct dc_json *j)
{
	struct sink_trace *t = (struct sink_trace *)s;

	json_key(j, "trace_files");
	json_obj_begin(j);
	json_key(j, "dir");
	json_str(j, t->dir);
	json_key(j, "batches");
	json_u64(j, s->stats.records);
	json_key(j, "bytes");
	json_u64(j, s->stats.bytes);
	json_key(j, "files");
	json_u64(j, t->n);
	json_key(j, "dir_bytes");
	json_u64(j, t->total);
	json_key(j, "deleted_files");
	json_u64(j, t->deleted_files);
	json_key(j, "deleted_bytes");
	json_u64(j, t->deleted_bytes);
	json_key(j, "errors");
	json_u64(j, t->write_errors);
	json_key(j, "dropped_bytes");
	json_u64(j, s->stats.dropped_bytes);
	json_obj_end(j);
}

static void trace_free(struct dc_sink *s)
{
	struct sink_trace *t = (struct sink_trace *)s;

	close_current(t);
	free(t->files);
	free(t);
}

static const struct dc_sink_ops trace_ops = {
    .name = "trace_files",
    .write = trace_write,
    .flush = trace_flush,
    .report = trace_report,
    .free = trace_free,
};

int sink_trace_new(const struct sink_trace_params *p, struct dc_sink **ret)
{
	struct sink_trace *t = calloc(1, sizeof(*t));
	int r;

	if (!t)
		return -ENOMEM;
	t->base.ops = &trace_ops;
	t->fd = -1;
	snprintf(t->dir, sizeof(t->dir), "%s", p->dir);
	/* the host names the file: keep it to characters a path takes */
	snprintf(t->host, sizeof(t->host), "%s", p->host);
	for (char *c = t->host; *c; c++)
		if (*c == '/' || *c == ' ')
			*c = '_';
	t->rotate_bytes = p->rotate_bytes;
	t->rotate_usec = p->rotate_usec;
	t->max_bytes = p->max_bytes;
	r = mkdir_parents(t->dir, true);
	if (r == 0)
		r = scan(t);
	if (r < 0) {
		free(t->files);
		free(t);
		return r;
	}
	enforce(t, 0);
	*ret = &t->base;
	return 0;
}

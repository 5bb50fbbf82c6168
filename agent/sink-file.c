// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fs-util.h"
#include "json.h"
#include "log.h"
#include "macro.h"
#include "sink.h"

struct sink_file {
	struct dc_sink base;
	char path[PATH_MAX];
	int fd;
	bool owned;
	size_t max_pending;
	struct dc_buf buf; /* records not yet committed */
	uint64_t buf_records;
	int last_err;
};

static int file_write(struct dc_sink *s, enum dc_rec_type type, const struct dc_window *w,
		      const char *data, size_t len)
{
	struct sink_file *f = (struct sink_file *)s;

	buf_put(&f->buf, data, len);
	if (f->buf.err)
		return -f->buf.err;
	f->buf_records++;
	return 0;
}

/* Bytes after the last newline of a regular file opened by fd: a record
 * cut short (the disk full mid-write, a crash); 0 when it ends with a whole
 * line, or is no regular file; negative errno. */
static int64_t file_tail_partial(int fd)
{
	char chunk[65536];
	struct stat st;
	off_t end;

	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode) || !st.st_size)
		return 0;
	for (end = st.st_size; end > 0;) {
		size_t n = end < (off_t)sizeof(chunk) ? (size_t)end : sizeof(chunk);
		ssize_t got = pread(fd, chunk, n, end - (off_t)n);

		if (got < 0)
			return -errno;
		if ((size_t)got != n)
			return -EIO;
		for (size_t i = n; i > 0; i--)
			if (chunk[i - 1] == '\n')
				return st.st_size - (end - (off_t)n + (off_t)i);
		end -= (off_t)n;
	}
	return st.st_size;
}

/* The file back to its last whole line: what follows is a record cut short,
 * which the next append would glue onto a whole one. */
static int file_cut_partial(struct sink_file *f, int64_t partial)
{
	struct stat st;

	if (fstat(f->fd, &st) < 0 || ftruncate(f->fd, st.st_size - partial) < 0)
		return -errno;
	return 0;
}

static int file_flush(struct dc_sink *s)
{
	struct sink_file *f = (struct sink_file *)s;
	size_t off = 0;

	while (off < f->buf.len) {
		ssize_t n = write(f->fd, f->buf.data + off, f->buf.len - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			int r = n < 0 ? -errno : -EIO;
			const char *last = memrchr(f->buf.data, '\n', off);
			size_t whole = last ? (size_t)(last - f->buf.data) + 1 : 0;

			/* a record written in part: taken back out of the file and
			 * kept whole, so the file never ends mid-record (a stop or
			 * a cut below would leave it so, for the next append to
			 * glue onto) */
			if (f->owned && whole < off &&
			    file_cut_partial(f, (int64_t)(off - whole)) >= 0)
				off = whole;
			/* keep the uncommitted tail for the next flush */
			memmove(f->buf.data, f->buf.data + off, f->buf.len - off);
			f->buf.len -= off;
			s->stats.bytes += off;
			s->stats.errors++;
			if (r != f->last_err)
				log_error_errno(
				    r, "Cannot write records to %s: %m; keeping them for retry",
				    f->path);
			f->last_err = r;
			if (f->buf.len > f->max_pending) {
				/* bounded: drop the oldest whole lines beyond the limit */
				size_t cut = f->buf.len - f->max_pending;
				char *nl = memchr(f->buf.data + cut, '\n', f->buf.len - cut);

				cut = nl ? (size_t)(nl - f->buf.data) + 1 : f->buf.len;
				/* a record is one line: the lines cut are records lost */
				for (const char *c = f->buf.data;
				     (c = memchr(c, '\n', cut - (size_t)(c - f->buf.data))); c++)
					if (f->buf_records)
						f->buf_records--;
				memmove(f->buf.data, f->buf.data + cut, f->buf.len - cut);
				f->buf.len -= cut;
				s->stats.dropped_bytes += cut;
			}
			s->stats.pending_bytes = f->buf.len;
			return r;
		}
		off += (size_t)n;
	}
	if (f->last_err)
		log_notice("Writing records to %s works again", f->path);
	f->last_err = 0;
	s->stats.bytes += off;
	s->stats.records += f->buf_records;
	f->buf_records = 0;
	buf_reset(&f->buf);
	s->stats.pending_bytes = 0;
	return 0;
}

static void file_report(struct dc_sink *s, struct dc_json *j)
{
	struct sink_file *f = (struct sink_file *)s;

	json_key(j, "file");
	json_obj_begin(j);
	json_key(j, "path");
	json_str(j, f->path);
	json_key(j, "records");
	json_u64(j, s->stats.records);
	json_key(j, "bytes");
	json_u64(j, s->stats.bytes);
	json_key(j, "errors");
	json_u64(j, s->stats.errors);
	json_key(j, "pending_bytes");
	json_u64(j, s->stats.pending_bytes);
	json_key(j, "dropped_bytes");
	json_u64(j, s->stats.dropped_bytes);
	json_obj_end(j);
}

static void file_free(struct dc_sink *s)
{
	struct sink_file *f = (struct sink_file *)s;

	/* a last try; what it cannot write goes with the process (at stop, or
	 * a reload that reopens the outputs): said, with how much */
	if (f->buf.len && file_flush(s) < 0)
		log_error("Closing %s with %" PRIu64 " records (%zu bytes) it could not write: "
			  "they are lost",
			  f->path, f->buf_records, f->buf.len);
	if (f->owned && f->fd >= 0)
		close(f->fd);
	buf_free(&f->buf);
	free(f);
}

static const struct dc_sink_ops file_ops;

/* A file left ending mid-record (a crash, an agent killed at a full disk):
 * cut back to its last whole line before anything is appended. */
static int file_repair(struct sink_file *f)
{
	int64_t partial = file_tail_partial(f->fd);
	int r;

	if (partial <= 0)
		return (int)partial;
	r = file_cut_partial(f, partial);
	if (r < 0)
		return r;
	log_warning("%s ended in a record cut short (%" PRId64 " bytes after its last whole "
		    "line): cut back to that line",
		    f->path, partial);
	return 0;
}

int sink_file_reopen(struct dc_sink *s)
{
	struct sink_file *f = (struct sink_file *)s;
	int fd, r;

	if (s->ops != &file_ops || !f->owned)
		return 0;
	fd = open(f->path, O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0640);
	if (fd < 0)
		return -errno; /* the old file stays in use */
	close(f->fd);
	f->fd = fd;
	/* the new file is in use either way: a tail that cannot be cut is said */
	r = file_repair(f);
	if (r < 0)
		log_warning_errno(r, "Cannot check the end of %s for a record cut short: %m",
				  f->path);
	return 0;
}

uint64_t sink_file_take_pending(struct dc_sink *s, struct dc_buf *out)
{
	struct sink_file *f = (struct sink_file *)s;
	uint64_t n;

	if (s->ops != &file_ops || !f->buf.len)
		return 0;
	buf_put(out, f->buf.data, f->buf.len);
	if (out->err)
		return 0; /* they stay: file_free says what is lost */
	n = f->buf_records;
	buf_reset(&f->buf);
	f->buf_records = 0;
	s->stats.pending_bytes = 0;
	return n;
}

void sink_file_put_pending(struct dc_sink *s, struct dc_buf *in, uint64_t records)
{
	struct sink_file *f = (struct sink_file *)s;

	/* a new sink holds nothing yet: these go first, in their order */
	buf_put(&f->buf, in->data, in->len);
	if (f->buf.err)
		return;
	f->buf_records += records;
	s->stats.pending_bytes = f->buf.len;
}

static const struct dc_sink_ops file_ops = {
    .name = "file",
    .write = file_write,
    .flush = file_flush,
    .report = file_report,
    .free = file_free,
};

int sink_file_new(const char *path, size_t max_pending, struct dc_sink **ret)
{
	struct sink_file *f = calloc(1, sizeof(*f));
	int r;

	if (!f)
		return -ENOMEM;
	f->base.ops = &file_ops;
	f->max_pending = max_pending;
	snprintf(f->path, sizeof(f->path), "%s", path);
	if (!strcmp(path, "-")) {
		f->fd = STDOUT_FILENO;
		snprintf(f->path, sizeof(f->path), "standard output");
	} else {
		r = mkdir_parents(path, false);
		if (r < 0) {
			free(f);
			return r;
		}
		f->fd = open(path, O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0640);
		if (f->fd < 0) {
			r = -errno;
			free(f);
			return r;
		}
		f->owned = true;
		r = file_repair(f);
		if (r < 0) {
			close(f->fd);
			free(f);
			return r;
		}
	}
	*ret = &f->base;
	return 0;
}

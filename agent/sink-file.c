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
	/* bytes at the start of buf that end a record the file holds the
	 * beginning of (written in part, and not cut back: standard output,
	 * or a file another writer appended to): never dropped, or the next
	 * record would be glued onto half a line */
	size_t tail;
	int last_err;
	uint64_t shed;	  /* records dropped past max_pending since writes last worked */
	bool removed;	  /* its file removed, and not made again yet */
	bool unlinked_ok; /* the path itself names a removed file: not made again */
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

/* A record of this agent begins so: a tail after the last newline that
 * does is one of its records cut short; anything else is not its own. */
#define REC_START "{\"schema\":"

/* Cut the file back to size - partial, if it is still size long: a writer
 * that appended meanwhile (two agents on one path, tee) keeps its bytes. */
static int file_cut_to(struct sink_file *f, off_t size, off_t partial)
{
	struct stat st;

	if (fstat(f->fd, &st) < 0)
		return -errno;
	if (st.st_size != size)
		return -EBUSY;
	return ftruncate(f->fd, size - partial) < 0 ? -errno : 0;
}

static int open_output(const char *path);
static void file_repair(struct sink_file *f);

/* Bytes [from, to) leave the buffer (written or dropped). */
static void held_cut(struct sink_file *f, size_t from, size_t to)
{
	memmove(f->buf.data + from, f->buf.data + to, f->buf.len - to);
	f->buf.len -= to - from;
	f->base.stats.pending_bytes = f->buf.len;
}

/* The tail leaves the buffer: written (true) or lost. */
static void tail_off(struct sink_file *f, bool written)
{
	if (written) {
		f->base.stats.records++;
		f->base.stats.bytes += f->tail;
	} else {
		f->base.stats.dropped_records++;
		f->base.stats.dropped_bytes += f->tail;
	}
	f->buf_records -= f->buf_records > 0;
	held_cut(f, 0, f->tail);
	f->tail = 0;
}

/* One try at ending the tail's line in the file the fd is on: what a
 * short write got out leaves the tail, so it is never written twice. */
static bool tail_write(struct sink_file *f)
{
	while (f->tail) {
		ssize_t n = write(f->fd, f->buf.data, f->tail);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return false;
		if ((size_t)n == f->tail) {
			tail_off(f, true);
			break;
		}
		held_cut(f, 0, (size_t)n);
		f->tail -= (size_t)n;
		f->base.stats.bytes += (uint64_t)n;
	}
	return true;
}

/* Before the sink's fd moves to another file: the end of a record written
 * in part goes where its beginning is, in one last try, else it is lost.
 * At the top of the next file it would be half a record on a line. */
static void tail_settle(struct sink_file *f)
{
	if (!tail_write(f))
		tail_off(f, false);
}

/* fd is on the file st was taken of; with at_end, a regular file still
 * ends where it did too: not cut back by a repair, not appended to since */
static bool same_file(int fd, const struct stat *st, bool at_end)
{
	struct stat now;

	return fstat(fd, &now) == 0 && now.st_dev == st->st_dev && now.st_ino == st->st_ino &&
	       (!at_end || !S_ISREG(now.st_mode) || now.st_size == st->st_size);
}

/*
 * The records file moved away (logrotate) while the agent ran: the path
 * opened again, for the next records. Left to the reload that logrotate
 * runs after, they went to the old file for as long as the configuration
 * was broken (its check fails, no SIGHUP), and the new file, empty, was
 * never rotated again; and a rotation applied an edit not yet meant to.
 */
static bool file_moved(const struct sink_file *f, const struct stat *st)
{
	struct stat now;

	if (stat(f->path, &now) < 0)
		return errno == ENOENT;
	return now.st_dev != st->st_dev || now.st_ino != st->st_ino;
}

/*
 * The records file removed under the agent (rm, its directory with it):
 * made again at its path, as the spool is, where writing on to the open
 * file would lose every later record without a word. Moved, the same.
 */
static int file_check_removed(struct sink_file *f)
{
	struct stat st, now;
	bool moved = false;
	int fd;

	if (!f->owned || f->unlinked_ok)
		return 0;
	/* ESTALE: removed by another NFS client (removed here, NFS renames
	 * it .nfsXXXX and keeps a link: seen as moved) */
	if (fstat(f->fd, &st) < 0) {
		if (errno != ESTALE)
			return 0;
	} else if (!S_ISREG(st.st_mode))
		/* a FIFO removed keeps its reader: left alone */
		return 0;
	else if (st.st_nlink > 0 && !(moved = file_moved(f, &st)))
		return 0;
	fd = mkdir_parents(f->path, false);
	if (fd >= 0)
		fd = open_output(f->path);
	if (fd >= 0 && fstat(fd, &now) == 0 && now.st_nlink == 0) {
		/* the path names the removed file itself (/dev/stdout, an fd
		 * of /proc): it is what the operator gave, written on */
		close(fd);
		f->unlinked_ok = true;
		return 0;
	}
	if (fd < 0) {
		if (!f->removed)
			log_error_errno(fd,
					"The records file %s was %s while the agent ran and "
					"cannot be made again: %m; keeping its records for retry%s",
					f->path, moved ? "moved away" : "removed",
					moved && (fd == -ENXIO || fd == -EISDIR)
					    ? " (the path names a FIFO without a reader, or a "
					      "directory)"
					    : "");
		f->removed = true;
		f->last_err = fd; /* said: the write's error is not said again */
		return fd;
	}
	tail_settle(f);
	close(f->fd);
	f->fd = fd;
	f->removed = false;
	if (moved) {
		log_info("The records file %s was moved away (rotated): writing on to the file "
			 "now at its path",
			 f->path);
		/* one moved in by hand may end mid-line, as at a start */
		file_repair(f);
	} else
		log_warning("The records file %s was removed while the agent ran: made again "
			    "(what had been written to it went with it)",
			    f->path);
	return 0;
}

/* Records in the first len bytes of the buffer: a record is one line. */
static uint64_t lines_in(const char *p, size_t len)
{
	uint64_t n = 0;

	for (const char *c = p; (c = memchr(c, '\n', len - (size_t)(c - p))); c++)
		n++;
	return n;
}

/* n of the records held leave the buffer (written, or dropped) */
static void held_less(struct sink_file *f, uint64_t n)
{
	f->buf_records -= n < f->buf_records ? n : f->buf_records;
}

static int file_flush(struct dc_sink *s)
{
	struct sink_file *f = (struct sink_file *)s;
	size_t off = 0;
	int r = file_check_removed(f);

	while (off < f->buf.len) {
		ssize_t n = r < 0 ? 0 : write(f->fd, f->buf.data + off, f->buf.len - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			const char *last = memrchr(f->buf.data, '\n', off);
			size_t whole = last ? (size_t)(last - f->buf.data) + 1 : 0;
			uint64_t written;

			if (r == 0)
				r = n < 0 ? -errno : -EIO;
			/* a record written in part: taken back out of the file and
			 * kept whole, so the file never ends mid-record (a stop or
			 * a cut below would leave it so, for the next append to
			 * glue onto); O_APPEND left the offset at our end */
			if (f->owned && whole < off) {
				off_t end = lseek(f->fd, 0, SEEK_CUR);

				if (end >= (off_t)(off - whole) &&
				    file_cut_to(f, end, (off_t)(off - whole)) >= 0)
					off = whole;
			}
			/* nothing written keeps an earlier tail; a write that
			 * ended on a line's end left none; else what is left of
			 * that line is the tail now */
			if (off > whole) {
				const char *nl = memchr(f->buf.data + off, '\n', f->buf.len - off);

				f->tail =
				    nl ? (size_t)(nl - f->buf.data) + 1 - off : f->buf.len - off;
			} else if (off)
				f->tail = 0;
			/* the whole records written are committed: the count of
			 * those held, said lost if the last try fails, must
			 * not hold them too */
			written = lines_in(f->buf.data, off);
			held_less(f, written);
			s->stats.records += written;
			/* keep the uncommitted rest for the next flush */
			held_cut(f, 0, off);
			s->stats.bytes += off;
			s->stats.errors++;
			if (r != f->last_err)
				log_error_errno(
				    r, "Cannot write records to %s: %m; keeping them for retry",
				    f->path);
			f->last_err = r;
			if (f->buf.len > f->max_pending && f->buf.len > f->tail) {
				/* bounded: drop the oldest whole lines beyond the
				 * limit, after the tail (over the bound by at most
				 * a record's tail) */
				size_t from = f->tail, cut = from + f->buf.len - f->max_pending;
				char *nl = cut < f->buf.len
					       ? memchr(f->buf.data + cut, '\n', f->buf.len - cut)
					       : NULL;
				uint64_t lost;

				cut = nl ? (size_t)(nl - f->buf.data) + 1 : f->buf.len;
				lost = lines_in(f->buf.data + from, cut - from);
				if (!f->shed)
					log_error(
					    "Dropping the oldest records held for %s: more than "
					    "%zu bytes it could not write (counted in the agent "
					    "records' losses.sink_dropped_records)",
					    f->path, f->max_pending);
				held_less(f, lost);
				s->stats.dropped_records += lost;
				f->shed += lost;
				held_cut(f, from, cut);
				s->stats.dropped_bytes += cut - from;
			}
			s->stats.pending_bytes = f->buf.len;
			return r;
		}
		off += (size_t)n;
	}
	if (r < 0)
		return r; /* nothing to write: nothing kept either */
	if (f->last_err && f->shed)
		log_notice("Writing records to %s works again; %" PRIu64 " records were dropped "
			   "meanwhile",
			   f->path, f->shed);
	else if (f->last_err)
		log_notice("Writing records to %s works again", f->path);
	f->last_err = 0;
	f->shed = 0;
	s->stats.bytes += off;
	s->stats.records += f->buf_records;
	f->buf_records = 0;
	f->tail = 0;
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

/* A last try; what it cannot write goes with the process (at stop, or a
 * reload that reopens the outputs): said, with how much, and counted. */
static void file_close(struct dc_sink *s)
{
	struct sink_file *f = (struct sink_file *)s;

	if (!f->buf.len || file_flush(s) >= 0)
		return;
	log_error("Closing %s with %" PRIu64 " records (%zu bytes) it could not write: "
		  "they are lost",
		  f->path, f->buf_records, f->buf.len);
	s->stats.dropped_records += f->buf_records;
	s->stats.dropped_bytes += f->buf.len;
	s->stats.pending_bytes = 0;
	f->buf.len = 0;
	f->buf_records = 0;
	f->tail = 0;
}

static void file_free(struct dc_sink *s)
{
	struct sink_file *f = (struct sink_file *)s;

	file_close(s);
	if (f->owned && f->fd >= 0)
		close(f->fd);
	buf_free(&f->buf);
	free(f);
}

static const struct dc_sink_ops file_ops;

/* A file left ending mid-line: one of this agent's records cut short (a
 * crash, an agent killed at a full disk) is cut back to its last whole
 * line; any other tail (a file not the agent's) is kept, ended with a
 * newline. Either way the records appended next start on their own line.
 * Regular files only, read through a descriptor of its own: the output's
 * stays write-only (a FIFO's reader going away must still be seen). */
static void file_repair(struct sink_file *f)
{
	char chunk[65536], head[sizeof(REC_START) - 1], proc[64];
	off_t start = 0, end, partial;
	struct stat st;
	ssize_t n;
	int rfd, r;

	if (fstat(f->fd, &st) < 0 || !S_ISREG(st.st_mode) || !st.st_size)
		return;
	/* the same file as the descriptor (not whatever the path names now),
	 * never blocking */
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", f->fd);
	rfd = open(proc, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (rfd < 0) {
		log_warning_errno(-errno,
				  "Cannot read the end of %s to check for a record cut short: %m",
				  f->path);
		return;
	}
	/* the last newline, however long the last line (a stacks record can
	 * be hundreds of KiB) */
	for (end = st.st_size; end > 0 && !start;) {
		size_t len = end < (off_t)sizeof(chunk) ? (size_t)end : sizeof(chunk);

		n = pread(rfd, chunk, len, end - (off_t)len);
		if (n != (ssize_t)len)
			break;
		if (end == st.st_size && chunk[len - 1] == '\n') {
			close(rfd);
			return; /* ends with a whole line */
		}
		for (size_t i = len; i > 0; i--)
			if (chunk[i - 1] == '\n') {
				start = end - (off_t)len + (off_t)i;
				break;
			}
		end -= (off_t)len;
	}
	if (end > 0 && !start) {
		close(rfd); /* a read cut short: changed meanwhile */
		return;
	}
	partial = st.st_size - start;
	/* any beginning of one of this agent's records counts, however short */
	n = pread(rfd, head,
		  (size_t)(partial < (off_t)sizeof(head) ? partial : (off_t)sizeof(head)), start);
	close(rfd);
	if (n <= 0)
		return;
	if (!memcmp(head, REC_START, (size_t)n)) {
		r = file_cut_to(f, st.st_size, partial);
		if (r >= 0)
			log_warning("%s ended in a record cut short (%lld bytes after its last "
				    "whole line): cut back to that line",
				    f->path, (long long)partial);
		/* grown meanwhile (another writer): not ours to touch */
		if (r >= 0 || r == -EBUSY)
			return;
	}
	if (write(f->fd, "\n", 1) == 1)
		log_warning("%s did not end with a whole line, nor with one of the agent's records "
			    "cut short: kept, and ended with a newline",
			    f->path);
}

/* Opened without waiting: a FIFO with no reader is ENXIO, not an event
 * loop stuck in open() (at start, or at a reload's reopen); then writes
 * block as before, the sink's buffer bounding what waits. */
static int open_output(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NONBLOCK, 0640);
	int fl;

	if (fd < 0)
		return -errno;
	fl = fcntl(fd, F_GETFL);
	if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) < 0) {
		int r = -errno;

		close(fd);
		return r;
	}
	return fd;
}

int sink_file_reopen(struct dc_sink *s)
{
	struct sink_file *f = (struct sink_file *)s;
	struct stat st;
	int fd;

	if (s->ops != &file_ops || !f->owned)
		return 0;
	fd = mkdir_parents(f->path, false);
	if (fd >= 0)
		fd = open_output(f->path);
	if (fd < 0)
		return fd; /* the old file stays in use */
	if (fstat(f->fd, &st) == 0 && same_file(fd, &st, false)) {
		/* not moved: the open file is the path's (and a tail held for
		 * it stays, where a repair would cut its beginning off) */
		close(fd);
		return 0;
	}
	tail_settle(f);
	close(f->fd);
	f->fd = fd;
	f->removed = false;
	f->unlinked_ok = false;
	file_repair(f);
	return 0;
}

uint64_t sink_file_take_pending(struct dc_sink *s, struct dc_buf *out, struct sink_tail *tail)
{
	struct sink_file *f = (struct sink_file *)s;
	uint64_t n;

	if (s->ops != &file_ops || !f->buf.len)
		return 0;
	/* the end of a record written in part: ended in this file now, or
	 * carried with the file's identity, so that the next sink holds it
	 * first if it writes to the same file, and counts it lost if not
	 * (only the front of the carry can be a tail) */
	if (f->tail && !tail_write(f) && (out->len || fstat(f->fd, &tail->st) < 0))
		tail_off(f, false);
	if (f->tail)
		tail->len = f->tail;
	buf_put(out, f->buf.data, f->buf.len);
	if (out->err) {
		/* they stay: file_free says what is lost; the carry, empty
		 * (a single file sink), must not keep the error for later */
		buf_free(out);
		tail->len = 0;
		return 0;
	}
	n = f->buf_records;
	buf_reset(&f->buf);
	f->buf_records = 0;
	f->tail = 0;
	s->stats.pending_bytes = 0;
	return n;
}

void sink_file_put_pending(struct dc_sink *s, struct dc_buf *in, uint64_t records,
			   const struct sink_tail *tail)
{
	struct sink_file *f = (struct sink_file *)s;

	/* a new sink holds nothing yet: these go first, in their order */
	buf_put(&f->buf, in->data, in->len);
	if (f->buf.err) {
		log_error("Out of memory: %" PRIu64 " records carried from the previous output "
			  "are lost",
			  records);
		buf_reset(&f->buf);
		s->stats.dropped_records += records;
		s->stats.dropped_bytes += in->len;
		return;
	}
	f->buf_records += records;
	s->stats.pending_bytes = f->buf.len;
	if (tail->len) {
		f->tail = tail->len;
		/* the same file (the same path, or standard output on it):
		 * the tail ends its line there; any other file would get
		 * half a record on a line */
		if (!same_file(f->fd, &tail->st, true))
			tail_off(f, false);
	}
}

static const struct dc_sink_ops file_ops = {
    .name = "file",
    .write = file_write,
    .flush = file_flush,
    .close = file_close,
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
		f->fd = open_output(path);
		if (f->fd < 0) {
			r = f->fd;
			free(f);
			return r;
		}
		f->owned = true;
		file_repair(f);
	}
	*ret = &f->base;
	return 0;
}

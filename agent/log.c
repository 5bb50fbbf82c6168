// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"

static int max_level = LOG_INFO;
static int use_prefix;

void log_set_max_level(int level)
{
	max_level = level;
}

int log_get_max_level(void)
{
	return max_level;
}

int log_parse_level(const char *s)
{
	static const char *const names[] = {"emerg",   "alert",	 "crit", "err",
					    "warning", "notice", "info", "debug"};

	for (int i = 0; i < (int)(sizeof(names) / sizeof(names[0])); i++)
		if (!strcasecmp(s, names[i]))
			return i;
	if (!strcasecmp(s, "error"))
		return LOG_ERR;
	if (!strcasecmp(s, "warn"))
		return LOG_WARNING;
	return -EINVAL;
}

bool log_journal_stream_is(const char *env, dev_t dev, ino_t ino)
{
	unsigned long long d, i;
	char *end;

	if (!env || *env < '0' || *env > '9')
		return false;
	errno = 0;
	d = strtoull(env, &end, 10);
	if (errno || *end != ':' || end[1] < '0' || end[1] > '9')
		return false;
	i = strtoull(end + 1, &end, 10);
	return !errno && !*end && d == (unsigned long long)dev && i == (unsigned long long)ino;
}

void log_init(void)
{
	struct stat st;

	/* systemd puts stderr's "device:inode" in JOURNAL_STREAM when stderr
	 * is the journal (systemd.exec(5)). A process whose stderr was moved
	 * (a shell started by a user service, a pipe to a file) inherits the
	 * variable but not the stream, and must not print "<N>" at a person. */
	use_prefix = fstat(STDERR_FILENO, &st) == 0 &&
		     log_journal_stream_is(getenv("JOURNAL_STREAM"), st.st_dev, st.st_ino);
}

static void put(char *out, size_t size, size_t *o, const char *s, size_t n)
{
	if (*o < size)
		memcpy(out + *o, s, n < size - *o ? n : size - *o);
	*o += n;
}

size_t log_format(char *out, size_t size, int level, bool journal, const char *msg)
{
	size_t o = 0, len = strlen(msg);
	char pfx[16];
	int pl;

	/* one trailing newline is the caller's habit, not an empty line */
	if (len && msg[len - 1] == '\n')
		len--;
	if (!journal) {
		put(out, size, &o, "datacrumbs: ", 12);
		put(out, size, &o, msg, len);
		put(out, size, &o, "\n", 1);
	} else {
		/* journald reads the priority at the start of each line: a
		 * verifier log or a librdkafka dump keeps it on every line */
		pl = snprintf(pfx, sizeof(pfx), "<%d>", level < 0 ? 0 : level > 7 ? 7 : level);
		for (const char *p = msg, *end = msg + len; p <= end;) {
			const char *nl = memchr(p, '\n', (size_t)(end - p));
			size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);

			put(out, size, &o, pfx, (size_t)pl);
			put(out, size, &o, p, n);
			put(out, size, &o, "\n", 1);
			if (!nl)
				break;
			p = nl + 1;
		}
	}
	if (size)
		out[o < size ? o : size - 1] = 0;
	return o;
}

static void log_write(int level, const char *msg)
{
	char buf[4096], *out = buf, *heap = NULL;
	size_t n = log_format(buf, sizeof(buf), level, use_prefix, msg);

	if (n >= sizeof(buf) && (heap = malloc(n + 1))) {
		log_format(heap, n + 1, level, use_prefix, msg);
		out = heap;
	}
	/* one write: threads (librdkafka's) do not interleave inside a message */
	fputs(out, stderr);
	free(heap);
}

int log_internal(int level, int error, const char *fmt, ...)
{
	char buf[2048], *heap = NULL;
	va_list ap;
	int saved = errno, n;

	if (error < 0)
		error = -error;
	if (level > max_level)
		return -error;
	/* %m means the error passed in, not whatever errno happens to be */
	errno = error;
	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	/* verifier logs run long: only those are formatted again on the heap */
	if (n >= (int)sizeof(buf)) {
		errno = error;
		va_start(ap, fmt);
		if (vasprintf(&heap, fmt, ap) < 0)
			heap = NULL;
		va_end(ap);
	}
	log_write(level, heap ? heap : buf);
	free(heap);
	errno = saved;
	return -error;
}

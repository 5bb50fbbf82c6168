// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "macro.h"
#include "secrets.h"

/* a librdkafka property line is read into name[256] and value[1024]
 * (sink-kafka.c); refuse here what would be refused there, with a line */
#define NAME_MAX_LEN  255
#define VALUE_MAX_LEN 1023
/* far more than any set of credentials; a bigger file is a mistake */
#define FILE_MAX (64 * 1024)

static int fail(int r, char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int fail(int r, char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return r;
}

bool secret_property(const char *name, size_t len)
{
	/* librdkafka 2.0 marks ssl.key.password, ssl.keystore.password,
	 * sasl.password, ssl.key.pem and sasl.oauthbearer.config sensitive,
	 * but not sasl.oauthbearer.client.secret: match by word as well, so a
	 * property added later with such a name is covered too */
	static const char *const exact[] = {"ssl.key.pem", "sasl.oauthbearer.config"};

	for (size_t i = 0; i < ELEMENTSOF(exact); i++)
		if (len == strlen(exact[i]) && !memcmp(name, exact[i], len))
			return true;
	return memmem(name, len, "password", 8) || memmem(name, len, "secret", 6);
}

int secrets_check_stat(const struct stat *st, const char *file, char *err, size_t errlen)
{
	if (!S_ISREG(st->st_mode))
		return fail(-EPERM, err, errlen, "kafka.secrets_file %s: not a regular file", file);
	if (st->st_uid != 0)
		return fail(-EPERM, err, errlen,
			    "kafka.secrets_file %s: owned by uid %u, not root; a secrets file "
			    "must be root's alone (chown root:root %s)",
			    file, (unsigned)st->st_uid, file);
	if (st->st_mode & 077)
		return fail(-EPERM, err, errlen,
			    "kafka.secrets_file %s: mode %04o gives group or others access; a "
			    "secrets file must be readable by root only (chmod 0600 %s)",
			    file, (unsigned)(st->st_mode & 07777), file);
	return 0;
}

int secrets_parse(const char *text, size_t len, const char *file, char *props, size_t size,
		  char *err, size_t errlen)
{
	size_t start = strnlen(props, size), off = start;
	const char *p = text, *end = text + len;
	int line = 0, r = 0;

	if (start >= size)
		return fail(-EINVAL, err, errlen, "kafka.properties is not terminated");
	if (memchr(text, 0, len))
		return fail(-EINVAL, err, errlen, "%s: contains a NUL byte: not a text file", file);
	for (const char *next; p < end && !r; p = next) {
		const char *nl = memchr(p, '\n', (size_t)(end - p)), *eq;
		size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);

		next = nl ? nl + 1 : end;
		line++;
		/* a file written on another system: the \r would end up in the
		 * password, and the broker's refusal would not say why */
		if (n && p[n - 1] == '\r')
			n--;
		if (!n || p[0] == '#')
			continue;
		eq = memchr(p, '=', n);
		/* errors name the line, never its text: it may hold a secret */
		if (!eq || eq == p)
			r = fail(-EINVAL, err, errlen, "%s:%d: not name=value", file, line);
		else if ((size_t)(eq - p) > NAME_MAX_LEN)
			r = fail(-EINVAL, err, errlen, "%s:%d: name longer than %d bytes", file,
				 line, NAME_MAX_LEN);
		else if (n - (size_t)(eq - p) - 1 > VALUE_MAX_LEN)
			r = fail(-EINVAL, err, errlen, "%s:%d: value of %.*s longer than %d bytes",
				 file, line, (int)(eq - p), p, VALUE_MAX_LEN);
		else if (off + n + 2 > size)
			r = fail(-E2BIG, err, errlen,
				 "%s:%d: kafka.properties and %s together exceed %zu bytes", file,
				 line, file, size - 1);
		if (r)
			break;
		memcpy(props + off, p, n);
		off += n;
		props[off++] = '\n';
		props[off] = 0;
	}
	if (r)
		props[start] = 0; /* all or nothing */
	return r;
}

int secrets_load(const char *path, char *props, size_t size, char *err, size_t errlen)
{
	_cleanup_close_ int fd = -1;
	struct stat st;
	char *buf;
	size_t len = 0;
	int r;

	/* O_NONBLOCK: a FIFO put in its place must not hang the agent's start */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0 || fstat(fd, &st) < 0) {
		r = -errno;
		return fail(r, err, errlen, "kafka.secrets_file %s: %s", path, strerror(-r));
	}
	/* checked on the open file, not the name: no window to swap it */
	r = secrets_check_stat(&st, path, err, errlen);
	if (r < 0)
		return r;
	if (st.st_size > FILE_MAX)
		return fail(-E2BIG, err, errlen, "kafka.secrets_file %s: larger than %d bytes",
			    path, FILE_MAX);
	buf = malloc(FILE_MAX + 1);
	if (!buf)
		return fail(-ENOMEM, err, errlen, "kafka.secrets_file %s: out of memory", path);
	for (;;) {
		ssize_t n = read(fd, buf + len, FILE_MAX + 1 - len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			r = fail(-errno, err, errlen, "kafka.secrets_file %s: %s", path,
				 strerror(errno));
			break;
		}
		if (n == 0)
			break;
		len += (size_t)n;
		if (len > FILE_MAX) {
			r = fail(-E2BIG, err, errlen, "kafka.secrets_file %s: larger than %d bytes",
				 path, FILE_MAX);
			break;
		}
	}
	if (!r)
		r = secrets_parse(buf, len, path, props, size, err, errlen);
	/* the one copy of the credentials that is ours to wipe */
	explicit_bzero(buf, FILE_MAX + 1);
	free(buf);
	return r;
}

bool secrets_find(const char *props, char *name, size_t namelen)
{
	for (const char *p = props; p && *p;) {
		size_t n = strcspn(p, "\n");
		const char *eq = memchr(p, '=', n);

		if (eq && secret_property(p, (size_t)(eq - p))) {
			snprintf(name, namelen, "%.*s", (int)(eq - p), p);
			return true;
		}
		p += n + (p[n] == '\n');
	}
	return false;
}

/* Does a secret value of props start at s? Its length, or 0. */
static size_t secret_at(const char *s, const char *props)
{
	for (const char *p = props; p && *p;) {
		size_t n = strcspn(p, "\n");
		const char *eq = memchr(p, '=', n);
		size_t vlen = eq ? (size_t)(p + n - eq - 1) : 0;

		if (vlen && secret_property(p, (size_t)(eq - p)) && !strncmp(s, eq + 1, vlen))
			return vlen;
		p += n + (p[n] == '\n');
	}
	return 0;
}

void secrets_scrub(char *out, size_t size, const char *in, const char *props)
{
	static const char red[] = "[redacted]";
	size_t o = 0;

	if (!size)
		return;
	/* matched on the whole input before anything is cut to size, so a
	 * value never shows, not even its first bytes */
	while (*in && o + 1 < size) {
		size_t vlen = secret_at(in, props);

		if (vlen) {
			size_t n = sizeof(red) - 1 < size - 1 - o ? sizeof(red) - 1 : size - 1 - o;

			memcpy(out + o, red, n);
			o += n;
			in += vlen;
		} else {
			out[o++] = *in++;
		}
	}
	out[o] = 0;
}

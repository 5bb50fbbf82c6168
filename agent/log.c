// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

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

void log_init(void)
{
	/* journald sets JOURNAL_STREAM when stderr is connected to it */
	use_prefix = getenv("JOURNAL_STREAM") != NULL;
}

int log_internal(int level, int error, const char *fmt, ...)
{
	char buf[2048];
	va_list ap;
	int saved = errno;

	if (error < 0)
		error = -error;
	if (level > max_level)
		return -error;
	/* %m means the error passed in, not whatever errno happens to be */
	errno = error;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (use_prefix)
		fprintf(stderr, "<%d>%s\n", level, buf);
	else
		fprintf(stderr, "datacrumbs: %s\n", buf);
	errno = saved;
	return -error;
}

/* SPDX-License-Identifier: Apache-2.0 */
#ifndef DC_LOG_H
#define DC_LOG_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <syslog.h>

/*
 * Logging to stderr. When stderr is the journal (JOURNAL_STREAM names it)
 * each line carries a "<N>" syslog priority prefix, which journald turns
 * into the entry's priority; the most verbose level is the config's
 * log_level. log_*_errno(r, ...) return r (negative) so the boundary can log
 * and return in one statement; "%m" prints strerror(-r).
 */
void log_set_max_level(int level);
int log_get_max_level(void);
int log_parse_level(const char *s);
void log_init(void);
/* Is env ("device:inode", JOURNAL_STREAM's form) the stream dev:ino? */
bool log_journal_stream_is(const char *env, dev_t dev, ino_t ino);
/* One message as it is written: "<N>" on every line for the journal,
 * "datacrumbs: " before it otherwise. snprintf-like: returns the length
 * the whole text needs. */
size_t log_format(char *out, size_t size, int level, bool journal, const char *msg);
int log_internal(int level, int error, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#define log_full_errno(level, error, ...) log_internal((level), (error), __VA_ARGS__)
#define log_debug(...)			  log_full_errno(LOG_DEBUG, 0, __VA_ARGS__)
#define log_info(...)			  log_full_errno(LOG_INFO, 0, __VA_ARGS__)
#define log_notice(...)			  log_full_errno(LOG_NOTICE, 0, __VA_ARGS__)
#define log_warning(...)		  log_full_errno(LOG_WARNING, 0, __VA_ARGS__)
#define log_error(...)			  log_full_errno(LOG_ERR, 0, __VA_ARGS__)
#define log_debug_errno(e, ...)		  log_full_errno(LOG_DEBUG, (e), __VA_ARGS__)
#define log_warning_errno(e, ...)	  log_full_errno(LOG_WARNING, (e), __VA_ARGS__)
#define log_error_errno(e, ...)		  log_full_errno(LOG_ERR, (e), __VA_ARGS__)

#endif

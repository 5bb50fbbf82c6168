/* SPDX-License-Identifier: Apache-2.0 */
#ifndef DC_SECRETS_H
#define DC_SECRETS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>

/*
 * Kafka credentials kept out of the main configuration and out of the logs.
 * kafka.secrets_file names a file of "name=value" librdkafka properties
 * that only root may read; its lines are appended to kafka.properties, so
 * they apply after them. "Props" below are such "name=value\n" lines.
 */

/* Is this property's value a secret (len bytes of name)? */
bool secret_property(const char *name, size_t len);

/* -EPERM unless st is a regular file owned by root with no group or other
 * permission; err names file and its mode or owner. */
int secrets_check_stat(const struct stat *st, const char *file, char *err, size_t errlen);

/* Append text's "name=value" lines to props (size bytes in all); blank and
 * '#' lines are skipped. -EINVAL or -E2BIG with "file:line: ..." in err,
 * which never quotes a value. */
int secrets_parse(const char *text, size_t len, const char *file, char *props, size_t size,
		  char *err, size_t errlen);

/* Open, check and parse path into props. */
int secrets_load(const char *path, char *props, size_t size, char *err, size_t errlen);

/* The first secret property of props: true with its name in name. */
bool secrets_find(const char *props, char *name, size_t namelen);

/* Copy in to out (size bytes), every value of a secret property of props
 * replaced by "[redacted]": for text that is about to be logged. */
void secrets_scrub(char *out, size_t size, const char *in, const char *props);

#endif

/* SPDX-License-Identifier: Apache-2.0 */
/* Minimal TAP output for meson's 'tap' protocol: one line per check. */
#ifndef DC_TAP_H
#define DC_TAP_H

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static int tap_n, tap_failed;

/* One TAP line per check: a newline inside a compared string would start a
 * line TAP cannot parse, so it is written as \n. */
__attribute__((format(printf, 1, 2))) static inline void tap_msg(const char *fmt, ...)
{
	char buf[8192];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	for (const char *c = buf; *c; c++)
		if (*c == '\n')
			fputs("\\n", stdout);
		else
			putchar(*c);
	putchar('\n');
}

#define CHECK(cond, ...)                                                          \
	do {                                                                      \
		tap_n++;                                                          \
		if (cond) {                                                       \
			printf("ok %d - ", tap_n);                                \
		} else {                                                          \
			tap_failed++;                                             \
			printf("not ok %d - %s:%d: ", tap_n, __FILE__, __LINE__); \
		}                                                                 \
		tap_msg(__VA_ARGS__);                                             \
	} while (0)

#define CHECK_STR(got, want, what) \
	CHECK(strcmp((got), (want)) == 0, "%s: got [%s] want [%s]", (what), (got), (want))

#define CHECK_U64(got, want, what)                                                               \
	CHECK((unsigned long long)(got) == (unsigned long long)(want), "%s: got %llu want %llu", \
	      (what), (unsigned long long)(got), (unsigned long long)(want))

static inline int tap_done(void)
{
	printf("1..%d\n", tap_n);
	return tap_failed ? 1 : 0;
}

#endif

/* SPDX-License-Identifier: Apache-2.0 */
/* Minimal TAP output for meson's 'tap' protocol: one line per check. */
#ifndef DC_TAP_H
#define DC_TAP_H

#include <stdio.h>
#include <string.h>

static int tap_n, tap_failed;

#define CHECK(cond, ...)                                                          \
	do {                                                                      \
		tap_n++;                                                          \
		if (cond) {                                                       \
			printf("ok %d - ", tap_n);                                \
		} else {                                                          \
			tap_failed++;                                             \
			printf("not ok %d - %s:%d: ", tap_n, __FILE__, __LINE__); \
		}                                                                 \
		printf(__VA_ARGS__);                                              \
		printf("\n");                                                     \
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

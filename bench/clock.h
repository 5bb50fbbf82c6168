/* SPDX-License-Identifier: Apache-2.0 */
#ifndef DC_BENCH_CLOCK_H
#define DC_BENCH_CLOCK_H

#include <time.h>

/* CLOCK_MONOTONIC in nanoseconds, for the benchmarks' own timing. */
static inline long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

#endif

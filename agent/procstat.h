/* SPDX-License-Identifier: Apache-2.0 */
#ifndef DC_PROCSTAT_H
#define DC_PROCSTAT_H

#include <stdint.h>

/*
 * A process's start, the half of its identity a pid alone lacks: pids are
 * reused, and a consumer joining windows by pid would otherwise join two
 * processes. Pure: strings and numbers in, numbers out.
 */

/* starttime (field 22) of a /proc/PID/stat line: clock ticks since boot.
 * -EINVAL for a line that does not have it. */
int procstat_start_ticks(const char *stat, uint64_t *ticks);

/* ns since boot floored to whole ticks of hz (sysconf(_SC_CLK_TCK)), as
 * /proc shows a start: the kernel's own ns and /proc's ticks then give the
 * same figure for one process. ns itself for an hz that makes no tick. */
uint64_t proc_start_floor(uint64_t ns, long hz);

#endif

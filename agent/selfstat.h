/* SPDX-License-Identifier: Apache-2.0 */
#ifndef DC_SELFSTAT_H
#define DC_SELFSTAT_H

#include <stdint.h>

/* The agent's own cost: CPU time of all its threads and resident memory. */
struct dc_selfstat {
	uint64_t user_us, sys_us;
	uint64_t rss_kib;
};

int selfstat_read(struct dc_selfstat *s);

#endif

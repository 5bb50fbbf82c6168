/* SPDX-License-Identifier: Apache-2.0 */
#ifndef DC_SELFSTAT_H
#define DC_SELFSTAT_H

#include <stdint.h>

/* The agent's own cost: CPU time of all its threads and resident memory. */
struct dc_selfstat {
	uint64_t user_us, sys_us;
	uint64_t rss_kib;
	/* of which pages shared with files or the kernel: the binary and its
	 * libraries, and the BPF ring buffers, whose pages are the kernel's
	 * map memory mapped in (twice over for their data area) */
	uint64_t rss_shared_kib;
};

int selfstat_read(struct dc_selfstat *s);

#endif

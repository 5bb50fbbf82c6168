/* SPDX-License-Identifier: Apache-2.0 */
#ifndef DC_BLKVEC_H
#define DC_BLKVEC_H

#include <stddef.h>
#include <stdint.h>

#include "datacrumbs/block.h"

/* One drained block key with per-CPU values summed, 64-bit slots. */
struct dc_blk_sum {
	uint64_t count, bytes, queue_ns, device_ns;
	uint64_t qlat[DC_LAT_SLOTS];
	uint64_t dlat[DC_LAT_SLOTS];
	uint64_t size[DC_SIZE_SLOTS];
};

struct dc_blk_entry {
	uint64_t cgroup_id;
	uint32_t dev; /* kernel encoding, major << 20 | minor */
	uint32_t tgid;
	uint32_t op;
	struct dc_blk_sum v;
};

const char *blk_op_name(unsigned op);
void blk_sum_add_val(struct dc_blk_sum *s, const struct dc_blk_val *v);
void blk_sum_add(struct dc_blk_sum *s, const struct dc_blk_sum *o);
static inline unsigned blk_major(uint32_t dev)
{
	return dev >> 20;
}
static inline unsigned blk_minor(uint32_t dev)
{
	return dev & 0xfffff;
}
/* Sort for device records: by (dev, op, tgid, cgroup). */
void blk_sort_by_dev(struct dc_blk_entry *e, size_t n);
/* Sum the entries of one process (tgid, cgroup) per op into out[DC_BLK_OP_MAX]. */
void blk_sum_for(const struct dc_blk_entry *e, size_t n, uint32_t tgid, uint64_t cgroup_id,
		 struct dc_blk_sum out[DC_BLK_OP_MAX]);

#endif

// SPDX-License-Identifier: Apache-2.0
#include <stdlib.h>
#include <string.h>

#include "blkvec.h"
#include "macro.h"

const char *blk_op_name(unsigned op)
{
	static const char *const names[DC_BLK_OP_MAX] = {"read", "write", "flush", "discard",
							 "other"};

	return op < DC_BLK_OP_MAX ? names[op] : "other";
}

void blk_sum_add_val(struct dc_blk_sum *s, const struct dc_blk_val *v)
{
	s->bytes += v->bytes;
	s->queue_ns += v->queue_ns;
	s->device_ns += v->device_ns;
	for (unsigned i = 0; i < DC_LAT_SLOTS; i++) {
		/* every completed request lands in one device-latency slot */
		s->count += v->dlat_hist[i];
		s->dlat[i] += v->dlat_hist[i];
		s->qlat[i] += v->qlat_hist[i];
	}
	for (unsigned i = 0; i < DC_SIZE_SLOTS; i++)
		s->size[i] += v->size_hist[i];
}

void blk_sum_add(struct dc_blk_sum *s, const struct dc_blk_sum *o)
{
	s->count += o->count;
	s->bytes += o->bytes;
	s->queue_ns += o->queue_ns;
	s->device_ns += o->device_ns;
	for (unsigned i = 0; i < DC_LAT_SLOTS; i++) {
		s->dlat[i] += o->dlat[i];
		s->qlat[i] += o->qlat[i];
	}
	for (unsigned i = 0; i < DC_SIZE_SLOTS; i++)
		s->size[i] += o->size[i];
}

static int by_dev(const void *a, const void *b)
{
	const struct dc_blk_entry *x = a, *y = b;

	if (x->dev != y->dev)
		return x->dev < y->dev ? -1 : 1;
	if (x->op != y->op)
		return x->op < y->op ? -1 : 1;
	if (x->tgid != y->tgid)
		return x->tgid < y->tgid ? -1 : 1;
	return x->cgroup_id < y->cgroup_id ? -1 : x->cgroup_id > y->cgroup_id;
}

void blk_sort_by_dev(struct dc_blk_entry *e, size_t n)
{
	qsort_safe(e, n, sizeof(*e), by_dev);
}

void blk_sum_for(const struct dc_blk_entry *e, size_t n, uint32_t tgid, uint64_t cgroup_id,
		 struct dc_blk_sum out[DC_BLK_OP_MAX])
{
	memset(out, 0, sizeof(*out) * DC_BLK_OP_MAX);
	for (size_t i = 0; i < n; i++)
		if (e[i].tgid == tgid && e[i].cgroup_id == cgroup_id && e[i].op < DC_BLK_OP_MAX)
			blk_sum_add(&out[e[i].op], &e[i].v);
}

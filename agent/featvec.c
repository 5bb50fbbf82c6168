// SPDX-License-Identifier: Apache-2.0
#include <stdlib.h>
#include <string.h>

#include "featvec.h"
#include "macro.h"
#include "ops.h"

/* A value's histograms are mostly zeros (a key's calls fall in a few slots):
 * test them two slots (eight bytes) at a time and add only what is there.
 * The drain of a big window is this loop, once per key and CPU. */
_Static_assert(DC_LAT_SLOTS % 2 == 0 && DC_SIZE_SLOTS % 2 == 0, "slots in pairs");

void agg_sum_add_val(struct dc_agg_sum *s, const struct dc_agg_val *v)
{
	s->errors += v->errors;
	s->bytes += v->bytes;
	s->time_ns += v->time_ns;
	s->tr_kept += v->tr_kept;
	s->tr_out += v->tr_out;
	s->tr_drop += v->tr_drop;
	for (unsigned i = 0; i < DC_LAT_SLOTS; i += 2) {
		uint64_t pair;

		memcpy(&pair, &v->lat_hist[i], sizeof(pair));
		if (!pair)
			continue;
		/* every call lands in exactly one latency slot */
		s->count += (uint64_t)v->lat_hist[i] + v->lat_hist[i + 1];
		s->lat[i] += v->lat_hist[i];
		s->lat[i + 1] += v->lat_hist[i + 1];
	}
	for (unsigned i = 0; i < DC_SIZE_SLOTS; i += 2) {
		uint64_t pair;

		memcpy(&pair, &v->size_hist[i], sizeof(pair));
		if (!pair)
			continue;
		s->size[i] += v->size_hist[i];
		s->size[i + 1] += v->size_hist[i + 1];
	}
}

void agg_entry_fold(struct dc_agg_entry *e, const struct dc_agg_key *k, const void *values,
		    int ncpus)
{
	e->cgroup_id = k->cgroup_id;
	e->tgid = k->tgid;
	e->op = k->op;
	for (int c = 0; c < ncpus; c++)
		agg_sum_add_val(&e->v,
				(const struct dc_agg_val *)((const char *)values +
							    (size_t)c * sizeof(struct dc_agg_val)));
}

/* s = v, widened: the first of a key's values written straight over
 * whatever s held, not zeroed and then added to. A big window's entries
 * miss the cache; this is one pass over each instead of two, and a loop
 * without branches the compiler widens in vector registers. */
static void agg_sum_set_val(struct dc_agg_sum *s, const struct dc_agg_val *v)
{
	uint64_t count = 0;

	s->errors = v->errors;
	s->bytes = v->bytes;
	s->time_ns = v->time_ns;
	s->tr_kept = v->tr_kept;
	s->tr_out = v->tr_out;
	s->tr_drop = v->tr_drop;
	for (unsigned i = 0; i < DC_LAT_SLOTS; i++) {
		s->lat[i] = v->lat_hist[i];
		count += v->lat_hist[i];
	}
	s->count = count;
	for (unsigned i = 0; i < DC_SIZE_SLOTS; i++)
		s->size[i] = v->size_hist[i];
}

void agg_entry_fold_each(struct dc_agg_entry *e, const struct dc_agg_key *k,
			 const void *const *values, unsigned n)
{
	e->cgroup_id = k->cgroup_id;
	e->tgid = k->tgid;
	e->op = k->op;
	if (!n) {
		memset(&e->v, 0, sizeof(e->v));
		return;
	}
	agg_sum_set_val(&e->v, values[0]);
	for (unsigned i = 1; i < n; i++)
		agg_sum_add_val(&e->v, values[i]);
}

void agg_sum_add(struct dc_agg_sum *s, const struct dc_agg_sum *o)
{
	s->count += o->count;
	s->errors += o->errors;
	s->bytes += o->bytes;
	s->time_ns += o->time_ns;
	s->tr_kept += o->tr_kept;
	s->tr_out += o->tr_out;
	s->tr_drop += o->tr_drop;
	for (unsigned i = 0; i < DC_LAT_SLOTS; i++)
		s->lat[i] += o->lat[i];
	for (unsigned i = 0; i < DC_SIZE_SLOTS; i++)
		s->size[i] += o->size[i];
}

void agg_sum_delta(struct dc_agg_sum *d, const struct dc_agg_sum *cur,
		   const struct dc_agg_sum *prev)
{
	d->count = cur->count - prev->count;
	d->errors = cur->errors - prev->errors;
	d->bytes = cur->bytes - prev->bytes;
	d->time_ns = cur->time_ns - prev->time_ns;
	d->tr_kept = cur->tr_kept - prev->tr_kept;
	d->tr_out = cur->tr_out - prev->tr_out;
	d->tr_drop = cur->tr_drop - prev->tr_drop;
	for (unsigned i = 0; i < DC_LAT_SLOTS; i++)
		d->lat[i] = cur->lat[i] - prev->lat[i];
	for (unsigned i = 0; i < DC_SIZE_SLOTS; i++)
		d->size[i] = cur->size[i] - prev->size[i];
}

static int entry_cmp(const void *a, const void *b)
{
	const struct dc_agg_entry *x = a, *y = b;

	if (x->tgid != y->tgid)
		return x->tgid < y->tgid ? -1 : 1;
	if (x->cgroup_id != y->cgroup_id)
		return x->cgroup_id < y->cgroup_id ? -1 : 1;
	return (int)x->op - (int)y->op;
}

void featvec_sort(struct dc_agg_entry *e, size_t n)
{
	qsort_safe(e, n, sizeof(*e), entry_cmp);
}

size_t featvec_merge(struct dc_agg_entry *e, size_t n)
{
	size_t out = 0;

	for (size_t i = 0; i < n; i++) {
		if (out && !entry_cmp(&e[out - 1], &e[i]))
			agg_sum_add(&e[out - 1].v, &e[i].v);
		else if (out++ != i)
			e[out - 1] = e[i];
	}
	return out;
}

bool agg_val_touched(const void *value)
{
	const struct dc_agg_val *v = value;

	/* every call adds its latency and lands in a latency slot: a call
	 * of 0 ns lands in slot 0 */
	return v->time_ns || v->lat_hist[0];
}

bool featvec_has(const struct dc_agg_entry *e, size_t n, uint32_t tgid, uint64_t cgroup_id)
{
	struct dc_agg_entry key = {.tgid = tgid, .cgroup_id = cgroup_id};
	size_t lo = 0, hi = n;

	/* entries are sorted by (tgid, cgroup, op): find the first >= key */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (entry_cmp(&e[mid], &key) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && e[lo].tgid == tgid && e[lo].cgroup_id == cgroup_id;
}

size_t featvec_group_end(const struct dc_agg_entry *e, size_t n, size_t start)
{
	size_t i = start + 1;

	while (i < n && e[i].tgid == e[start].tgid && e[i].cgroup_id == e[start].cgroup_id)
		i++;
	return i;
}

static double per(double num, double den)
{
	return den > 0 ? num / den : 0;
}

void featvec_compute(const struct dc_agg_entry *e, size_t n, double window_sec,
		     struct dc_features *f)
{
	memset(f, 0, sizeof(*f));
	for (size_t i = 0; i < n; i++) {
		const struct dc_op_info *oi = ops_get(e[i].op);
		const struct dc_agg_sum *v = &e[i].v;

		if (!oi)
			continue;
		f->ops += v->count;
		f->errors += v->errors;
		f->time_ns += v->time_ns;
		switch (oi->cls) {
		case DC_CLASS_DATA_READ:
			f->read_ops += v->count;
			f->read_time_ns += v->time_ns;
			/* only transferred bytes make bandwidth */
			if (oi->size_src == DC_SZ_RET)
				f->read_bytes += v->bytes;
			break;
		case DC_CLASS_DATA_WRITE:
			f->write_ops += v->count;
			f->write_time_ns += v->time_ns;
			if (oi->size_src == DC_SZ_RET)
				f->write_bytes += v->bytes;
			break;
		case DC_CLASS_DATA_COPY:
			f->copy_ops += v->count;
			f->copy_time_ns += v->time_ns;
			f->copy_bytes += v->bytes;
			break;
		case DC_CLASS_METADATA:
			f->meta_ops += v->count;
			f->meta_time_ns += v->time_ns;
			break;
		case DC_CLASS_SYNC:
			f->sync_ops += v->count;
			f->sync_time_ns += v->time_ns;
			break;
		case DC_CLASS_ASYNC:
			f->async_ops += v->count;
			break;
		default:
			break;
		}
	}
	f->read_bw = per((double)f->read_bytes, window_sec);
	f->write_bw = per((double)f->write_bytes, window_sec);
	f->read_bw_io = per((double)f->read_bytes, (double)f->read_time_ns / 1e9);
	f->write_bw_io = per((double)f->write_bytes, (double)f->write_time_ns / 1e9);
	f->copy_bw = per((double)f->copy_bytes, window_sec);
	f->iops = per((double)(f->read_ops + f->write_ops + f->copy_ops), window_sec);
	f->ops_per_sec = per((double)f->ops, window_sec);
	f->meta_share = per((double)f->meta_ops, (double)f->ops);
	f->meta_time_share = per((double)f->meta_time_ns, (double)f->time_ns);
}

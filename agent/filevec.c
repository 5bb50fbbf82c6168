// SPDX-License-Identifier: Apache-2.0
#include <stdlib.h>

#include "filevec.h"
#include "macro.h"

#define MAX(a, b) ((a) > (b) ? (a) : (b))

void file_sum_add_val(struct dc_file_sum *s, const struct dc_file_val *v)
{
	s->read_ops += v->read_ops;
	s->write_ops += v->write_ops;
	s->read_bytes += v->read_bytes;
	s->write_bytes += v->write_bytes;
	s->read_time_ns += v->read_time_ns;
	s->write_time_ns += v->write_time_ns;
	s->meta_ops += v->meta_ops;
	s->meta_time_ns += v->meta_time_ns;
	s->sync_ops += v->sync_ops;
	s->sync_time_ns += v->sync_time_ns;
	s->opens += v->opens;
	s->errors += v->errors;
	s->seq_reads += v->seq_reads;
	s->seq_writes += v->seq_writes;
	s->consec_reads += v->consec_reads;
	s->consec_writes += v->consec_writes;
	s->rw_switches += v->rw_switches;
	s->file_unaligned += v->file_unaligned;
	s->mem_unaligned += v->mem_unaligned;
	s->max_read_end = MAX(s->max_read_end, v->max_read_end);
	s->max_write_end = MAX(s->max_write_end, v->max_write_end);
	for (unsigned i = 0; i < DC_DARSHAN_BUCKETS; i++) {
		s->read_size[i] += v->read_size[i];
		s->write_size[i] += v->write_size[i];
	}
}

void file_sum_add(struct dc_file_sum *s, const struct dc_file_sum *o)
{
	uint64_t rmax = MAX(s->max_read_end, o->max_read_end);
	uint64_t wmax = MAX(s->max_write_end, o->max_write_end);
	uint64_t *a = (uint64_t *)s;
	const uint64_t *b = (const uint64_t *)o;

	/* every member is a uint64_t: add them all, then fix the two maxima */
	for (size_t i = 0; i < sizeof(*s) / sizeof(uint64_t); i++)
		a[i] += b[i];
	s->max_read_end = rmax;
	s->max_write_end = wmax;
}

void file_sum_delta(struct dc_file_sum *d, const struct dc_file_sum *cur,
		    const struct dc_file_sum *prev)
{
	uint64_t *o = (uint64_t *)d;
	const uint64_t *a = (const uint64_t *)cur, *b = (const uint64_t *)prev;

	for (size_t i = 0; i < sizeof(*d) / sizeof(uint64_t); i++)
		o[i] = a[i] - b[i];
	d->max_read_end = cur->max_read_end;
	d->max_write_end = cur->max_write_end;
}

const char *file_bucket_name(unsigned i)
{
	static const char *const names[DC_DARSHAN_BUCKETS] = {
	    "0_100", "100_1K", "1K_10K",   "10K_100K", "100K_1M",
	    "1M_4M", "4M_10M", "10M_100M", "100M_1G",  "1G_PLUS",
	};

	return i < DC_DARSHAN_BUCKETS ? names[i] : "?";
}

static int cmp(const struct dc_file_entry *x, uint32_t tgid, uint64_t cgroup_id, uint32_t dev,
	       uint64_t ino, uint32_t igen)
{
	if (x->tgid != tgid)
		return x->tgid < tgid ? -1 : 1;
	if (x->cgroup_id != cgroup_id)
		return x->cgroup_id < cgroup_id ? -1 : 1;
	if (x->dev != dev)
		return x->dev < dev ? -1 : 1;
	if (x->ino != ino)
		return x->ino < ino ? -1 : 1;
	return x->igen < igen ? -1 : x->igen > igen;
}

static int entry_cmp(const void *a, const void *b)
{
	const struct dc_file_entry *y = b;

	return cmp(a, y->tgid, y->cgroup_id, y->dev, y->ino, y->igen);
}

size_t file_merge_sorted(struct dc_file_entry *e, size_t n)
{
	size_t w = 0;

	for (size_t i = 0; i < n; i++) {
		if (w &&
		    !cmp(&e[w - 1], e[i].tgid, e[i].cgroup_id, e[i].dev, e[i].ino, e[i].igen)) {
			file_sum_add(&e[w - 1].v, &e[i].v);
			e[w - 1].v.files = 1; /* still one file */
			continue;
		}
		if (w != i)
			e[w] = e[i];
		w++;
	}
	return w;
}

void file_sort(struct dc_file_entry *e, size_t n)
{
	qsort_safe(e, n, sizeof(*e), entry_cmp);
}

void file_range(const struct dc_file_entry *e, size_t n, uint32_t tgid, uint64_t cgroup_id,
		size_t *lo, size_t *hi)
{
	size_t l = 0, h = n;

	while (l < h) {
		size_t mid = l + (h - l) / 2;

		if (cmp(&e[mid], tgid, cgroup_id, 0, 0, 0) < 0)
			l = mid + 1;
		else
			h = mid;
	}
	*lo = l;
	while (l < n && e[l].tgid == tgid && e[l].cgroup_id == cgroup_id)
		l++;
	*hi = l;
}

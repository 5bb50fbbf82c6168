/* SPDX-License-Identifier: Apache-2.0 */
#ifndef DC_FEATVEC_H
#define DC_FEATVEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "datacrumbs/syscall.h"
#include "window.h"

/* One drained key with its per-CPU values summed (64-bit, unlike the
 * kernel's 32-bit slots, so sums over CPUs and windows cannot wrap). */
struct dc_agg_sum {
	uint64_t count, errors, bytes, time_ns;
	uint64_t tr_kept, tr_out, tr_drop; /* sampled traces: count = their sum when on */
	uint64_t lat[DC_LAT_SLOTS];
	uint64_t size[DC_SIZE_SLOTS];
};

struct dc_agg_entry {
	uint64_t cgroup_id;
	uint32_t tgid;
	uint16_t op;
	struct dc_agg_sum v;
};

void agg_sum_add_val(struct dc_agg_sum *s, const struct dc_agg_val *v);
/* e = the drained key k with its ncpus per-CPU values (packed dc_agg_val,
 * as a per-CPU map lookup returns them) summed; e->v must start zeroed. */
void agg_entry_fold(struct dc_agg_entry *e, const struct dc_agg_key *k, const void *values,
		    int ncpus);
/* The same from n values anywhere (the slot map's regions that counted);
 * e need not start zeroed. */
void agg_entry_fold_each(struct dc_agg_entry *e, const struct dc_agg_key *k,
			 const void *const *values, unsigned n);
void agg_sum_add(struct dc_agg_sum *s, const struct dc_agg_sum *o);
/* d = cur - prev, for monotonic counters; 32-bit kernel slots wrap, so the
 * slot deltas are taken modulo 2^32 by the caller's choice of inputs. */
void agg_sum_delta(struct dc_agg_sum *d, const struct dc_agg_sum *cur,
		   const struct dc_agg_sum *prev);

/* Sort by (tgid, cgroup, op) so that each record's ops are contiguous. */
void featvec_sort(struct dc_agg_entry *e, size_t n);
/* Sum sorted entries of the same key into one (a key that came back while
 * its old slot was given back has two slots for one window); the new n. */
size_t featvec_merge(struct dc_agg_entry *e, size_t n);
/* Has a struct dc_agg_val counted any call (the slot map's touched test)? */
bool agg_val_touched(const void *value);
/* Is (tgid, cgroup) among the sorted entries? */
bool featvec_has(const struct dc_agg_entry *e, size_t n, uint32_t tgid, uint64_t cgroup_id);
/* End (exclusive) of the group of entries sharing e[start]'s (tgid, cgroup). */
size_t featvec_group_end(const struct dc_agg_entry *e, size_t n, size_t start);

/* Totals and derived features of one record (one process in one window). */
struct dc_features {
	uint64_t ops, errors, time_ns;
	uint64_t read_ops, read_bytes, read_time_ns;
	uint64_t write_ops, write_bytes, write_time_ns;
	uint64_t copy_ops, copy_bytes, copy_time_ns;
	uint64_t meta_ops, meta_time_ns;
	uint64_t sync_ops, sync_time_ns;
	uint64_t async_ops;
	double read_bw; /* bytes per second of window */
	double write_bw;
	double read_bw_io; /* bytes per second of time spent in read calls */
	double write_bw_io;
	double copy_bw;
	double iops;		/* data calls (read, write, copy classes) per second of window */
	double ops_per_sec;	/* all calls per second of window */
	double meta_share;	/* metadata calls / all calls */
	double meta_time_share; /* metadata time / all call time */
};

void featvec_compute(const struct dc_agg_entry *e, size_t n, double window_sec,
		     struct dc_features *f);

#endif

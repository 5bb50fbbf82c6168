/* SPDX-License-Identifier: Apache-2.0 */
#ifndef DC_FILEVEC_H
#define DC_FILEVEC_H

#include <stddef.h>
#include <stdint.h>

#include "datacrumbs/file.h"

/* One (process, file) key of a window with its per-CPU values combined:
 * counts summed in 64 bits, the highest offsets taken as the maximum. */
struct dc_file_sum {
	uint64_t read_ops, write_ops, read_bytes, write_bytes, read_time_ns, write_time_ns;
	uint64_t meta_ops, meta_time_ns, sync_ops, sync_time_ns, opens, errors;
	uint64_t seq_reads, seq_writes, consec_reads, consec_writes, rw_switches;
	uint64_t file_unaligned, mem_unaligned;
	uint64_t max_read_end, max_write_end;
	uint64_t read_size[DC_DARSHAN_BUCKETS], write_size[DC_DARSHAN_BUCKETS];
	uint64_t files; /* distinct files summed into this (1 for one key) */
};

struct dc_file_entry {
	uint64_t cgroup_id;
	uint64_t ino;
	uint32_t tgid;
	uint32_t dev;
	uint32_t igen; /* the inode's generation: (dev, ino, igen) is the file */
	struct dc_file_sum v;
};

void file_sum_add_val(struct dc_file_sum *s, const struct dc_file_val *v);
void file_sum_add(struct dc_file_sum *s, const struct dc_file_sum *o);
/* Entries sorted by file_sort(): adjacent ones of the same key (a key that
 * held two slots in one window) summed into one. Returns the new count. */
size_t file_merge_sorted(struct dc_file_entry *e, size_t n);
/* d = cur - prev for the monotonic overflow totals (maxima are taken as is) */
void file_sum_delta(struct dc_file_sum *d, const struct dc_file_sum *cur,
		    const struct dc_file_sum *prev);

/* Darshan's names of the size buckets: "0_100", "100_1K", ..., "1G_PLUS" */
const char *file_bucket_name(unsigned i);

/* Sort by (tgid, cgroup, dev, ino, igen): each process's files are
 * contiguous. */
void file_sort(struct dc_file_entry *e, size_t n);
/* [*lo, *hi) of the sorted entries of (tgid, cgroup); empty if none */
void file_range(const struct dc_file_entry *e, size_t n, uint32_t tgid, uint64_t cgroup_id,
		size_t *lo, size_t *hi);

#endif

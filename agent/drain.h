/* SPDX-License-Identifier: Apache-2.0 */
#ifndef DC_DRAIN_H
#define DC_DRAIN_H

#include <stdbool.h>
#include <stddef.h>

/*
 * Empty a hash map that no BPF program writes any more, handing each key and
 * its value(s) to cb. percpu: values arrive as ncpus consecutive slots of
 * round_up(value_size, 8) bytes. Uses BPF_MAP_LOOKUP_AND_DELETE_BATCH (5.6+)
 * and falls back to get_next_key + lookup + delete where the kernel lacks it.
 * Returns the number of keys drained or -errno; *used_batch says which path.
 */
typedef int (*drain_cb)(const void *key, const void *values, int ncpus, void *ctx);

int drain_hash(int fd, size_t key_size, size_t value_size, bool percpu, int ncpus,
	       size_t max_entries, drain_cb cb, void *ctx, bool *used_batch);

#endif

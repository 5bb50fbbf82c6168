/* SPDX-License-Identifier: Apache-2.0 */
#ifndef DC_COUNTERS_H
#define DC_COUNTERS_H

#include <bpf/libbpf.h>
#include <stdint.h>

/*
 * Monotonic per-CPU counters (a BPF_MAP_TYPE_PERCPU_ARRAY of __u64 the
 * programs never reset): out[i] = this read's sum over CPUs - prev[i], and
 * prev updated. An unreadable slot reads as unchanged.
 */
int percpu_counters_delta(struct bpf_map *map, unsigned n, int ncpus, uint64_t *prev,
			  uint64_t *out);

#endif

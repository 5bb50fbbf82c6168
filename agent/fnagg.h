/* SPDX-License-Identifier: Apache-2.0 */
#ifndef DC_FNAGG_H
#define DC_FNAGG_H

#include <bpf/libbpf.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "datacrumbs/func.h"
#include "winmap.h"

/* One drained (process, cgroup, function) of a function-level family. */
struct dc_fn_entry {
	uint64_t cgroup_id;
	uint32_t tgid;
	uint32_t func;
	uint64_t count, time_ns, bytes, errors;
	uint64_t lat[DC_LAT_SLOTS];
};

struct dc_fn_drain {
	struct dc_fn_entry *entries; /* owned by the fn_agg, valid until its next drain */
	size_t n;
	uint64_t counters[DC_FN_CNT_MAX];
};

/* The user half of func.bpf.h: windows, drain, loss counters. */
struct fn_agg {
	struct winmap win;
	struct bpf_map *counters;
	int ncpus;
	struct dc_fn_entry *entries;
	size_t n, cap;
	uint64_t counters_prev[DC_FN_CNT_MAX];
};

/* Before load; clock_fd as winmap_prepare()'s. */
int fn_agg_prepare(struct fn_agg *a, struct bpf_map *agg_gen, struct bpf_map *clock, int clock_fd,
		   struct bpf_map *counters, const char *name, unsigned max_keys, bool percpu);
/* After load. */
int fn_agg_install(struct fn_agg *a);
int fn_agg_drain(struct fn_agg *a, struct dc_fn_drain *res);
void fn_agg_close(struct fn_agg *a);

#endif

/* SPDX-License-Identifier: Apache-2.0 */
#ifndef DC_PROBE_PAGECACHE_H
#define DC_PROBE_PAGECACHE_H

struct bpf_object;

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "datacrumbs/pagecache.h"

struct dc_pc_entry {
	uint64_t cgroup_id;
	uint32_t tgid;
	struct dc_pc_val v;
};

struct probe_pagecache;
struct winmap;

/* clock_fd: the windows' clock (winmap_prepare()), -1 for its own. */
int probe_pagecache_new(const struct dc_config *cfg, int clock_fd, struct probe_pagecache **ret);
struct probe_pagecache *probe_pagecache_free(struct probe_pagecache *p);
const char *probe_pagecache_mechanism(const struct probe_pagecache *p);
const char *probe_pagecache_detail(const struct probe_pagecache *p);

struct dc_pc_drain {
	struct dc_pc_entry *entries; /* owned by the probe, valid until the next drain */
	size_t n;
	struct dc_pc_val overflow; /* this window's unattributed activity */
	uint64_t counters[DC_PC_CNT_MAX];
	uint64_t recursion_misses;
};

int probe_pagecache_flip_and_drain(struct probe_pagecache *p, struct dc_pc_drain *res);
/* Its window map, for the close's flip of every layer at once (manager.c). */
struct winmap *probe_pagecache_winmap(struct probe_pagecache *p);

/* The entry of (tgid, cgroup) in a drain, or NULL. */
const struct dc_pc_entry *pc_find(const struct dc_pc_drain *d, uint32_t tgid, uint64_t cgroup_id);

/* *s += *v, every counter (a per-CPU value into its sum, entries into a
 * total). */
void pc_val_add(struct dc_pc_val *s, const struct dc_pc_val *v);

/* The family's BPF object: its programs' run times and its maps' fill. */
struct bpf_object *probe_pagecache_object(const struct probe_pagecache *p);

#endif

/* SPDX-License-Identifier: Apache-2.0 */
#ifndef DC_PROBE_URING_H
#define DC_PROBE_URING_H

struct bpf_object;

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "datacrumbs/uring.h"

/* One drained (process, cgroup, opcode) with its per-CPU values summed. */
struct dc_uring_entry {
	uint64_t cgroup_id;
	uint32_t tgid;
	uint16_t opcode;
	uint64_t count, errors, bytes, time_ns;
	uint64_t lat[DC_LAT_SLOTS];
};

struct probe_uring;
struct winmap;

/* clock_fd: the windows' clock (winmap_prepare()), -1 for its own. */
int probe_uring_new(const struct dc_config *cfg, int clock_fd, struct probe_uring **ret);
struct probe_uring *probe_uring_free(struct probe_uring *p);
const char *probe_uring_mechanism(const struct probe_uring *p);
const char *probe_uring_detail(const struct probe_uring *p);

struct dc_uring_drain {
	/* sorted by (tgid, cgroup, opcode); owned by the probe, valid until
	 * the next drain */
	struct dc_uring_entry *entries;
	size_t n;
	struct dc_uring_entry overflow; /* this window's completions whose key did not fit */
	uint64_t counters[DC_UR_CNT_MAX];
	uint64_t recursion_misses;
};

int probe_uring_flip_and_drain(struct probe_uring *p, struct dc_uring_drain *res);
/* Its window map, for the close's flip of every layer at once (manager.c). */
struct winmap *probe_uring_winmap(struct probe_uring *p);

/* The entries of (tgid, cgroup) in a drain: *n of them from the one returned. */
const struct dc_uring_entry *uring_find(const struct dc_uring_drain *d, uint32_t tgid,
					uint64_t cgroup_id, size_t *n);

/* The family's BPF object: its programs' run times and its maps' fill. */
struct bpf_object *probe_uring_object(const struct probe_uring *p);

#endif

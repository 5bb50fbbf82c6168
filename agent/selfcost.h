/* SPDX-License-Identifier: Apache-2.0 */
#ifndef DC_SELFCOST_H
#define DC_SELFCOST_H

#include <bpf/libbpf.h>
#include <stdbool.h>
#include <stdint.h>

#include "json.h"

/*
 * What the agent costs the node and how full its kernel state is, measured
 * every window: each BPF program's run time and run count (the kernel's
 * per-program statistics, switched on for the agent's lifetime through the
 * stats fd, not the global sysctl), per layer the kernel and user CPU it
 * took, the fill of its maps and ring buffers.
 */
struct selfcost;

/* One probe family in one window. */
struct selfcost_layer {
	const char *name;
	struct bpf_object *obj; /* NULL: the layer is off */
	uint64_t user_ns;	/* agent thread CPU that flipped and drained it */
};

/* map_scan_sec: how often hash maps are walked to count their entries
 * (a walk costs a system call per entry); 0: never. */
int selfcost_new(bool bpf_stats, double map_scan_sec, struct selfcost **ret);
struct selfcost *selfcost_free(struct selfcost *s);

/* Read the counters of every program of the layers: the account of the
 * window that ended at now_ns (CLOCK_MONOTONIC). */
void selfcost_window(struct selfcost *s, const struct selfcost_layer *layers, size_t n,
		     uint64_t window_ns, uint64_t now_ns);

/* The last window's run time of every program, in ns. */
uint64_t selfcost_bpf_ns(const struct selfcost *s);
/* "fd", "sysctl" (someone else turned the statistics on node-wide) or why
 * there are none: run times then read 0 and only user CPU is measured. */
const char *selfcost_bpf_stats(const struct selfcost *s);

/* "layers", "programs", "rings" and, in a window that walked them, "map_fill". */
void selfcost_json(const struct selfcost *s, struct dc_json *j);

#endif

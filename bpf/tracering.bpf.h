/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The half of sampled traces every emitting object shares (the system-call
 * programs through trace.bpf.h; func.bpf.h for libraries and VFS functions;
 * block.bpf.c): the ring, the policy, the full-trace cgroups and the
 * per-layer outcome counters. The agent creates them as the first object to
 * load declares them, and hands their fds to every object before its load
 * (traces_share()), so one reader and one batch take every layer's events
 * in the order the kernel wrote them.
 *
 * The non-syscall layers keep a call only when its workload is traced in
 * full or it is slow (include/datacrumbs/trace.h says why), so every kept
 * library call has its system calls, VFS calls and block requests kept
 * too: the layers nest (datacrumbs-flame layers).
 */
#ifndef DC_TRACERING_BPF_H
#define DC_TRACERING_BPF_H

#include "datacrumbs/trace.h"

const volatile bool traces_on = false;

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 8 << 20); /* sized from config before load */
} traces SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct dc_trace_cfg);
} trace_cfg SEC(".maps");

/* Workloads traced in full: cgroup ids, matched with their descendants. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 64);
	__type(key, __u64);
	__type(value, __u8);
} trace_full SEC(".maps");

/* Outcomes of the non-syscall layers' calls, never reset: the agent takes
 * differences at each window's end. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, DC_LAYER_MAX *DC_TR_OUTCOMES);
	__type(key, __u32);
	__type(value, __u64);
} trace_lcnt SEC(".maps");

/* Whether the current task's cgroup (or an ancestor) is traced in full. */
static __always_inline bool full_workload(const struct dc_trace_cfg *c, __u64 cgroup_id)
{
	if (!c->full_cgroups)
		return false;
	if (bpf_map_lookup_elem(&trace_full, &cgroup_id))
		return true;
	for (int level = 1; level < 16; level++) {
		__u64 a = bpf_get_current_ancestor_cgroup_id(level);

		if (!a || a == cgroup_id)
			break;
		if (bpf_map_lookup_elem(&trace_full, &a))
			return true;
	}
	return false;
}

/* the agent reads the ring on its own timer (dc_ring_wakeup) */
static __always_inline void trace_submit(struct dc_trace_ev *e)
{
	bpf_ringbuf_submit(e, dc_ring_wakeup(&traces));
}

/* Atomic although per CPU: a block completion in interrupt context can
 * interrupt a task-context run of the same program on the same CPU. */
static __always_inline void trace_layer_count(__u32 layer, __u32 outcome)
{
	__u32 k = layer * DC_TR_OUTCOMES + outcome;
	__u64 *v = bpf_map_lookup_elem(&trace_lcnt, &k);

	if (v)
		__sync_fetch_and_add(v, 1);
}

/* The policy of the current task's calls for the non-syscall layers:
 * DC_TEV_FULL, or 0 (only the slow rule can keep them); -1 when traces are
 * paused or off. Taken in the calling task's context (the cgroup walk reads
 * the current task). A call that is no process's (process false: an
 * interrupt's) is never part of a workload traced in full, whatever task
 * it interrupted. */
static __always_inline int trace_layer_policy(__u64 cgroup_id, bool process)
{
	__u32 zero = 0;
	struct dc_trace_cfg *c = bpf_map_lookup_elem(&trace_cfg, &zero);

	if (!c || c->mode == DC_TRACE_OFF)
		return -1;
	return process && full_workload(c, cgroup_id) ? DC_TEV_FULL : 0;
}

struct trace_layer_call {
	__u32 layer, op;
	__u32 pid, tid;
	__u64 ts, lat, cgroup_id;
	__u64 size, offset;
	long ret;
	__u32 dev;
	__u32 queue_us;
	__u16 flags; /* DC_TEV_OFFSET, DC_TEV_DEV */
};

/*
 * One call of a non-syscall layer: kept (full workload, or at least slow_ns
 * long), sampled out, or dropped (ring full), counted in trace_lcnt.
 * full: the caller's trace_layer_policy() result, taken where the task is
 * known (a block request completes in interrupt context).
 */
static __always_inline void trace_layer_call(const struct trace_layer_call *t, int full)
{
	__u32 zero = 0;
	struct dc_trace_cfg *c;
	struct dc_trace_ev *e;
	__u16 flags = t->flags;

	if (!traces_on)
		return;
	c = bpf_map_lookup_elem(&trace_cfg, &zero);
	if (!c || c->mode == DC_TRACE_OFF || full < 0) {
		trace_layer_count(t->layer, DC_TR_SAMPLED_OUT);
		return;
	}
	if (full > 0)
		flags |= DC_TEV_FULL;
	else if (c->slow_ns && t->lat >= c->slow_ns)
		flags |= DC_TEV_SLOW;
	else {
		trace_layer_count(t->layer, DC_TR_SAMPLED_OUT);
		return;
	}
	e = bpf_ringbuf_reserve(&traces, sizeof(*e), 0);
	if (!e) {
		trace_layer_count(t->layer, DC_TR_DROPPED);
		return;
	}
	e->version = DC_TRACE_VERSION;
	e->layer = t->layer;
	e->op = t->op;
	e->cpu = bpf_get_smp_processor_id();
	e->flags = flags;
	e->pid = t->pid;
	e->tid = t->tid;
	e->ts_ns = t->ts;
	e->dur_ns = t->lat;
	e->cgroup_id = t->cgroup_id;
	e->ino = 0;
	e->dev = t->dev;
	e->fd = -1;
	e->offset = t->offset;
	e->size = t->size;
	e->ret = t->ret;
	e->weight = 1;
	e->queue_us = t->queue_us;
	trace_submit(e);
	trace_layer_count(t->layer, DC_TR_KEPT);
}

#endif

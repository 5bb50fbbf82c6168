/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Sampled full traces: the per-event records the kernel keeps (bpf/trace.bpf.h)
 * and the sampling policy the agent writes into a map, so that a reload
 * changes the policy without reloading programs.
 *
 * Every struct crosses the kernel/user boundary: fixed-width fields, explicit
 * padding. An event starts with its version and layer tag, so a reader can
 * skip what it does not know.
 */
#ifndef DATACRUMBS_TRACE_H
#define DATACRUMBS_TRACE_H

#ifndef __bpf__
#include <linux/types.h>
#endif

#define DC_TRACE_VERSION 1

/*
 * The layers that emit events. The system-call layer samples by the whole
 * policy; the others (library uprobes, VFS functions, block requests) keep
 * only fully traced workloads' calls and slow calls, never 1-in-N or the
 * buckets: independent samples per layer would not nest into each other,
 * while "every call of this workload" and "every call slower than X" are
 * the same choice in every layer.
 */
enum dc_trace_layer {
	DC_LAYER_SYSCALL = 1,
	DC_LAYER_LIB = 2,   /* op: index into the agent's table of uprobed functions */
	DC_LAYER_VFS = 3,   /* op: enum dc_vfs_func (include/datacrumbs/vfs.h) */
	DC_LAYER_BLOCK = 4, /* op: enum dc_blk_op; pid, tid, cgroup: the submitter's */
	DC_LAYER_MAX = 5,
};

/* Per-layer outcome counters (trace_lcnt, a per-CPU array shared by every
 * object that emits): key layer * DC_TR_OUTCOMES + outcome. The syscall
 * layer counts in its window values instead, and leaves its row at 0. */
enum dc_trace_outcome {
	DC_TR_KEPT = 0,
	DC_TR_SAMPLED_OUT = 1,
	DC_TR_DROPPED = 2,
	DC_TR_OUTCOMES = 3,
};

enum dc_trace_ev_flags {
	DC_TEV_FILE = 1,   /* dev, ino, offset name a regular file or block device */
	DC_TEV_SLOW = 2,   /* kept as slower than the threshold */
	DC_TEV_FULL = 4,   /* kept as a fully traced workload */
	DC_TEV_OFFSET = 8, /* offset is meaningful (a data call on a file) */
	DC_TEV_DEV = 16,   /* dev names a block device (block layer; ino 0) */
};

struct dc_trace_ev {
	__u8 version; /* DC_TRACE_VERSION */
	__u8 layer;   /* enum dc_trace_layer */
	__u16 op;     /* the layer's operation: enum dc_op for the syscall layer */
	__u16 cpu;
	__u16 flags; /* enum dc_trace_ev_flags */
	__u32 pid;   /* thread-group id */
	__u32 tid;
	__u64 ts_ns;  /* bpf_ktime_get_ns() at entry (CLOCK_MONOTONIC) */
	__u64 dur_ns; /* entry to exit */
	__u64 cgroup_id;
	__u64 ino;
	__u32 dev; /* the kernel's dev_t: major << 20 | minor */
	__s32 fd;  /* -1 when the call has none */
	__u64 offset;
	__u64 size; /* bytes moved (return value of data calls) or the size argument */
	__s64 ret;
	__u32 weight; /* events this one stands for (>= 1) */
	union {
		/* DC_TEV_DEV (block layer): request start to issue, µs (saturated) */
		__u32 queue_us;
		/* DC_TEV_FILE: the inode's generation, with dev and ino the file
		 * (struct dc_file_key) */
		__u32 igen;
	};
};

/*
 * The sampling policy, one element of an array map. Decided in this order
 * for each call, before any ring space is reserved:
 *   mode off                          -> sampled out
 *   cgroup (or an ancestor) in full   -> kept, weight 1
 *   duration >= slow_ns (if set)      -> kept, weight 1
 *   outside the time slice (if set)   -> sampled out
 *   1-in-N per thread                 -> every Nth candidate goes on
 *   per-cgroup, then node token bucket (if set) -> kept or sampled out
 * A kept sampled event's weight is N x the candidates the buckets refused
 * on its CPU since the last one they let through, x period/slice: the sum
 * of weights estimates the calls, exactly for 1-in-N alone.
 */
enum dc_trace_mode {
	DC_TRACE_OFF = 0,
	DC_TRACE_ON = 1,
};

struct dc_trace_cfg {
	__u32 mode;
	__u32 one_in_n;	   /* 1 = every call is a candidate */
	__u64 slow_ns;	   /* 0 = no slow-call rule */
	__u64 slice_ns;	   /* 0 = no time slices; else everything during slice_ns ... */
	__u64 period_ns;   /* ... of every period_ns */
	__u64 node_gap_ns; /* token bucket: 1e9 / events per second; 0 = no node bucket */
	__u64 node_burst_ns;
	__u64 cg_gap_ns; /* per-cgroup bucket, same scheme; 0 = none */
	__u64 cg_burst_ns;
	__u32 full_cgroups; /* entries in trace_full: 0 skips the lookup */
	__u32 draw_max;	    /* dc_draw_max(one_in_n): the 1-in-N rule's bound */
};

/*
 * A 1-in-N rule's bound on a draw (bpf/common.bpf.h dc_draw, uniform on
 * 1..2^32-1): draw <= bound has the probability draw % N == 0 has, exactly
 * (both hold for floor((2^32-1)/N) of the draws), at the price of a compare
 * where the modulo was a division on every call (a division's latency is
 * tens of cycles). Computed by the agent, with the policy, so no program
 * divides. N = 0: no draw is kept.
 */
static inline __u32 dc_draw_max(__u32 n)
{
	return n ? 0xffffffffU / n : 0;
}

#endif

// SPDX-License-Identifier: GPL-2.0
/*
 * Comparison programs for bench/, on the same attach points as the agent
 * (tp_btf sys_enter/sys_exit):
 *   empty   - programs that return at once: the floor any tracer pays here
 *   minagg  - the minimal useful aggregation: entry time in task storage,
 *             count and total time per (pid, syscall nr) in a per-CPU hash;
 *             and per block request, issue time in a hash, count, bytes and
 *             issue-to-completion time in a per-CPU array
 *   drain_gen, drain_* - no program: the agent's window maps (per-window
 *             hash, slot map), for bench/drainbench.c to time the agent's
 *             flip and drain on
 *   floor   - empty programs attached by baseline.c to a list of
 *             tracepoints: the agent's whole default attach set (bench/suite.py)
 *   uprobe  - empty entry and return programs on library functions (attached
 *             by baseline.c): the floor of the agent's library layer
 */
#include "dc_vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "datacrumbs/syscall.h"
#include "common.bpf.h"
#include "slotmap.bpf.h"

DC_WINDOW_MAP(drain_gen, struct dc_agg_key, struct dc_agg_val);
DC_SLOT_MAP(drain, struct dc_agg_key, struct dc_agg_val);

struct key {
	__u32 pid;
	__u32 nr;
};

struct val {
	__u64 count;
	__u64 time_ns;
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, __u64);
} start SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, 16384);
	__type(key, struct key);
	__type(value, struct val);
} agg SEC(".maps");

SEC("tp_btf/sys_enter")
int BPF_PROG(empty_enter, struct pt_regs *regs, long nr)
{
	return 0;
}

SEC("tp_btf/sys_exit")
int BPF_PROG(empty_exit, struct pt_regs *regs, long ret)
{
	return 0;
}

SEC("tp_btf/sys_enter")
int BPF_PROG(minagg_enter, struct pt_regs *regs, long nr)
{
	__u64 *ts = bpf_task_storage_get(&start, bpf_get_current_task_btf(), 0,
					 BPF_LOCAL_STORAGE_GET_F_CREATE);

	if (ts)
		*ts = bpf_ktime_get_ns();
	return 0;
}

SEC("tp_btf/sys_exit")
int BPF_PROG(minagg_exit, struct pt_regs *regs, long ret)
{
	__u64 *ts = bpf_task_storage_get(&start, bpf_get_current_task_btf(), 0, 0);
	struct key k = {.pid = bpf_get_current_pid_tgid() >> 32, .nr = regs->orig_ax};
	struct val *v, zero = {};

	if (!ts || !*ts)
		return 0;
	v = bpf_map_lookup_elem(&agg, &k);
	if (!v) {
		bpf_map_update_elem(&agg, &k, &zero, BPF_NOEXIST);
		v = bpf_map_lookup_elem(&agg, &k);
		if (!v)
			return 0;
	}
	v->count++;
	v->time_ns += bpf_ktime_get_ns() - *ts;
	*ts = 0;
	return 0;
}

struct rq_val {
	__u64 count;
	__u64 bytes;
	__u64 time_ns;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384); /* requests in flight at once */
	__type(key, __u64);
	__type(value, __u64);
} rq_start SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct rq_val);
} rq_agg SEC(".maps");

SEC("tp_btf/block_rq_issue")
int BPF_PROG(minagg_rq_issue, struct request *rq)
{
	__u64 key = (__u64)rq, ts = bpf_ktime_get_ns();

	bpf_map_update_elem(&rq_start, &key, &ts, BPF_ANY);
	return 0;
}

SEC("tp_btf/block_rq_complete")
int BPF_PROG(minagg_rq_complete, struct request *rq, int error, unsigned int nr_bytes)
{
	__u64 key = (__u64)rq, *ts = bpf_map_lookup_elem(&rq_start, &key);
	__u32 zero = 0;
	struct rq_val *v;

	if (!ts)
		return 0;
	v = bpf_map_lookup_elem(&rq_agg, &zero);
	if (v) {
		v->count++;
		v->bytes += nr_bytes;
		v->time_ns += bpf_ktime_get_ns() - *ts;
	}
	bpf_map_delete_elem(&rq_start, &key);
	return 0;
}

SEC("raw_tp")
int floor_raw_tp(void *ctx)
{
	return 0;
}

SEC("tracepoint")
int floor_tp(void *ctx)
{
	return 0;
}

SEC("uprobe")
int empty_uprobe(struct pt_regs *ctx)
{
	return 0;
}

SEC("uretprobe")
int empty_uretprobe(struct pt_regs *ctx)
{
	return 0;
}

char LICENSE[] SEC("license") = "GPL";

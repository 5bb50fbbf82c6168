// SPDX-License-Identifier: GPL-2.0
/*
 * Comparison programs for bench/, on the same attach points as the agent
 * (tp_btf sys_enter/sys_exit):
 *   empty   - programs that return at once: the floor any tracer pays here
 *   minagg  - the minimal useful aggregation: entry time in task storage,
 *             count and total time per (pid, syscall nr) in a per-CPU hash
 *   uprobe  - empty entry and return programs on library functions (attached
 *             by baseline.c): the floor of the agent's library layer
 */
#include "dc_vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

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

// SPDX-License-Identifier: GPL-2.0
/*
 * Library layer: uprobes on the functions the configuration names (libc's
 * file API, MPI-IO, HDF5, ...). One entry and one return program serve every
 * function; the attachment's cookie says which function it is, and whether
 * its return value is a byte count. Uprobes cost microseconds per call:
 * this layer is off unless libraries are configured.
 */
#include "dc_vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "datacrumbs/uprobe.h"
#include "datacrumbs/hist.h"
#include "common.bpf.h"

const volatile bool plain_updates = false;
const volatile __u32 agent_tgid = 0;

static const struct dc_up_val zero_val;

struct agg_inner {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, 1024);
	__uint(key_size, sizeof(struct dc_up_key));
	__uint(value_size, sizeof(struct dc_up_val));
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, 1);
	__type(key, __u32);
	__array(values, struct agg_inner);
} agg_gen SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct dc_up_stack);
} up_stack SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, DC_UP_CNT_MAX);
	__type(key, __u32);
	__type(value, __u64);
} up_counters SEC(".maps");

static __always_inline void count(__u32 which)
{
	__u64 *c = bpf_map_lookup_elem(&up_counters, &which);

	if (c)
		dc_add(c, 1);
}

/* libbpf 1.1 has no BPF_UPROBE; uprobes pass the same pt_regs as kprobes */
SEC("uprobe")
int BPF_KPROBE(dc_up_entry)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct dc_up_stack *st;
	__u32 d;

	if ((__u32)(bpf_get_current_pid_tgid() >> 32) == agent_tgid)
		return 0;
	st = bpf_task_storage_get(&up_stack, task, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!st)
		return 0;
	d = st->depth;
	if (d >= DC_UP_DEPTH) {
		count(DC_UP_CNT_TOO_DEEP);
		st->depth = d + 1;
		return 0;
	}
	st->ts[d] = bpf_ktime_get_ns();
	st->depth = d + 1;
	return 0;
}

SEC("uretprobe")
int BPF_KRETPROBE(dc_up_return, long ret)
{
	__u64 cookie = bpf_get_attach_cookie(ctx), now = bpf_ktime_get_ns(), lat;
	struct task_struct *task = bpf_get_current_task_btf();
	struct dc_up_key k = {};
	struct dc_up_stack *st;
	struct dc_up_val *v;
	__u32 zero = 0, d;
	void *inner;

	if ((__u32)(bpf_get_current_pid_tgid() >> 32) == agent_tgid)
		return 0;
	st = bpf_task_storage_get(&up_stack, task, 0, 0);
	if (!st || !st->depth) {
		count(DC_UP_CNT_NO_ENTRY);
		return 0;
	}
	d = --st->depth;
	if (d >= DC_UP_DEPTH)
		return 0; /* counted as too deep at entry */
	lat = now - st->ts[d];

	k.tgid = BPF_CORE_READ(task, tgid);
	k.cgroup_id = bpf_get_current_cgroup_id();
	k.func = (__u32)cookie;
	inner = bpf_map_lookup_elem(&agg_gen, &zero);
	if (!inner)
		return 0;
	v = bpf_map_lookup_elem(inner, &k);
	if (!v) {
		bpf_map_update_elem(inner, &k, &zero_val, BPF_NOEXIST);
		v = bpf_map_lookup_elem(inner, &k);
		if (!v) {
			count(DC_UP_CNT_AGG_FULL);
			return 0;
		}
	}
	dc_add(&v->time_ns, lat);
	dc_add(&v->lat_hist[dc_hist_slot(lat, DC_LAT_SLOTS)], 1);
	if (cookie & DC_UP_COOKIE_BYTES) {
		if (ret >= 0)
			dc_add(&v->bytes, ret);
		else
			dc_add(&v->errors, 1);
	}
	return 0;
}

DC_SEC_LICENSE;

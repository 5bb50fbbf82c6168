/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Process filters (filter.include_* and filter.exclude_* in the
 * configuration), shared by every probe family: an event of a process left
 * out is dropped where the family attributes it to a process, before
 * anything is stashed or counted.
 *
 * Each BPF object has its own copy of the three maps (cgroup id, uid,
 * comm -> DC_FILTER_INCLUDE | DC_FILTER_EXCLUDE), filled by the agent after
 * load (agent/filter.c). Which lists are non-empty is .rodata: with no
 * filter configured every branch below is dead and the verifier removes
 * it. An event must match every non-empty include list and no exclude
 * list.
 *
 * uid and comm are the process's, as its records carry them: the
 * thread-group leader's real uid and comm (a thread renamed by prctl does
 * not escape its process's filter). A cgroup matches with its subtree: the
 * current task's ancestor is read at each level where a listed cgroup sits,
 * one helper call and one lookup per such level.
 */
#ifndef DC_FILTER_BPF_H
#define DC_FILTER_BPF_H

#include "datacrumbs/filter.h"

/* Set before load by name (agent/filter.c), not through the skeleton: every
 * family's object has them, and the probes share one writer. Each is read
 * once per event into a register: a volatile is loaded at every use, and
 * with no filter the one load of filter_lists is all that remains. */
const volatile __u32 filter_lists = 0;	   /* DC_FILTER_*_SHIFT: the lists in use */
const volatile __u32 filter_cg_levels = 0; /* bit l: a listed cgroup sits at level l */

/* max_entries: sized from the lists before load (1 when a list is empty) */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1);
	__type(key, __u64);
	__type(value, __u8);
} filter_cgroups SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u8);
} filter_uids SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1);
	__type(key, struct dc_filter_comm);
	__type(value, __u8);
} filter_comms SEC(".maps");

/* cgroup->ancestor_ids[] became ->ancestors[] in 6.1 (commit 7f203bc89eb6,
 * "cgroup: Replace cgroup->ancestor_ids[] with ->ancestors[]"): both are
 * relocated, the one this kernel lacks is dead code */
struct cgroup___dc_ptrs {
	int level;
	struct cgroup *ancestors[];
} __attribute__((preserve_access_index));

struct cgroup___dc_ids {
	int level;
	__u64 ancestor_ids[];
} __attribute__((preserve_access_index));

/* the lists in use for one key: its two bits of the filter_lists word */
static __always_inline __u8 filter_lists_at(__u32 on, int shift)
{
	return (on >> shift) & (DC_FILTER_INCLUDE | DC_FILTER_EXCLUDE);
}

/* a list's verdict: lists says which of the dimension's lists are in use,
 * got which of them the event's key (or an ancestor) is on */
static __always_inline bool filter_out(__u8 lists, __u8 got)
{
	return (got & DC_FILTER_EXCLUDE) ||
	       ((lists & DC_FILTER_INCLUDE) && !(got & DC_FILTER_INCLUDE));
}

static __always_inline __u8 filter_flags(void *map, const void *key)
{
	__u8 *f = bpf_map_lookup_elem(map, key);

	return f ? *f : 0;
}

static __always_inline __u8 filter_cgroup_current(void)
{
	__u32 levels = filter_cg_levels;
	__u8 got = 0;

#pragma unroll
	for (int l = 0; l < DC_FILTER_LEVELS; l++) {
		__u64 id;

		if (!(levels & (1u << l)))
			continue;
		/* 0: the task's cgroup is above this level. Tracing programs
		 * may call this since 5.14 (commit 95b861a7935b); with no
		 * cgroup list the call is dead code, so older kernels load */
		id = bpf_get_current_ancestor_cgroup_id(l);
		if (!id)
			break;
		got |= filter_flags(&filter_cgroups, &id);
	}
	return got;
}

static __always_inline __u64 filter_ancestor_id(struct cgroup *cg, int l)
{
	struct cgroup___dc_ptrs *p = (void *)cg;
	struct cgroup___dc_ids *i = (void *)cg;
	struct cgroup *a = NULL;
	__u64 id = 0;

	if (bpf_core_field_exists(p->ancestors)) {
		bpf_probe_read_kernel(&a, sizeof(a),
				      (char *)cg + bpf_core_field_offset(p->ancestors) +
					  l * sizeof(a));
		return a ? BPF_CORE_READ(a, kn, id) : 0;
	}
	if (bpf_core_field_exists(i->ancestor_ids))
		bpf_probe_read_kernel(&id, sizeof(id),
				      (char *)cg + bpf_core_field_offset(i->ancestor_ids) +
					  l * sizeof(id));
	return id;
}

static __always_inline __u8 filter_cgroup_of(struct cgroup *cg)
{
	__u32 levels = filter_cg_levels;
	__u8 got = 0;
	int level;

	if (!cg)
		return 0;
	level = BPF_CORE_READ((struct cgroup___dc_ptrs *)cg, level);
#pragma unroll
	for (int l = 0; l < DC_FILTER_LEVELS; l++) {
		__u64 id;

		if (!(levels & (1u << l)))
			continue;
		if (l > level)
			break;
		id = filter_ancestor_id(cg, l);
		got |= filter_flags(&filter_cgroups, &id);
	}
	return got;
}

/*
 * Whether the current task's event is left out; task is the current task.
 * Cheapest lists first: the uid is a few loads, the comm one probe read,
 * the cgroup a helper call per listed level.
 */
static __always_inline bool dc_filtered(struct task_struct *task)
{
	__u32 on = filter_lists;
	__u8 uids = filter_lists_at(on, DC_FILTER_UIDS_SHIFT);
	__u8 comms = filter_lists_at(on, DC_FILTER_COMMS_SHIFT);
	__u8 cgroups = filter_lists_at(on, DC_FILTER_CGROUPS_SHIFT);

	if (!on)
		return false;
	if (uids) {
		__u32 uid = BPF_CORE_READ(task, group_leader, real_cred, uid.val);

		if (filter_out(uids, filter_flags(&filter_uids, &uid)))
			return true;
	}
	if (comms) {
		struct dc_filter_comm c = {};

		BPF_CORE_READ_STR_INTO(&c.comm, task, group_leader, comm);
		if (filter_out(comms, filter_flags(&filter_comms, &c)))
			return true;
	}
	if (cgroups)
		return filter_out(cgroups, filter_cgroup_current());
	return false;
}

/*
 * The same for work a kernel thread does on behalf of a cgroup (the block
 * layer's writeback: the bio's cgroup): no process, so only the cgroup
 * lists apply. cg NULL (no cgroup2 cgroup known) is on no list.
 */
static __always_inline bool dc_filtered_cgroup(struct cgroup *cg)
{
	__u8 cgroups = filter_lists_at(filter_lists, DC_FILTER_CGROUPS_SHIFT);

	return cgroups && filter_out(cgroups, filter_cgroup_of(cg));
}

#endif

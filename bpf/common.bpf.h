/* SPDX-License-Identifier: Apache-2.0 */
#ifndef DC_COMMON_BPF_H
#define DC_COMMON_BPF_H

#include "datacrumbs/slotmap.h"

/*
 * Counter updates. A per-CPU value is only written by programs on its CPU,
 * but tracing programs run with migration disabled, not preemption: on a
 * preemptible kernel (full, lazy, RT) two threads of one process on one CPU
 * can interleave a plain read-modify-write and lose an increment. There, and
 * for shared maps, the lock prefix is paid. On "none" and "voluntary"
 * kernels a BPF program has no preemption point and plain adds are exact;
 * the agent sets plain_updates from the detected model (agent/preempt.h).
 * The flag is .rodata: the verifier drops the branch not taken.
 */
extern const volatile bool plain_updates;
#define dc_add(p, v)                                    \
	do {                                            \
		if (plain_updates)                      \
			*(p) += (v);                    \
		else                                    \
			__sync_fetch_and_add((p), (v)); \
	} while (0)

#define DC_SEC_LICENSE char LICENSE[] SEC("license") = "GPL"

/*
 * The next draw of a 1-in-N sampler whose state is *state (xorshift32,
 * seeded from the kernel's generator on first use): a call is kept when
 * the draw is at most dc_draw_max(N) (datacrumbs/trace.h), with
 * probability 1/N at no fixed position. A counter kept 1-in-N at fixed
 * positions instead: a thread making fewer calls than the start-up's did
 * before its I/O was never sampled, and a loop alternating two calls under
 * an even N kept only one of them. The draw is the state times an odd
 * constant (a bijection of 1..2^32-1, so uniform still): a small state is
 * followed by another small one for a few steps of xorshift, and a bound
 * on the bare state would keep calls in clusters. Shifts, xors and a
 * multiply: no helper call but the seed's.
 */
static __always_inline __u32 dc_draw(__u32 *state)
{
	__u32 x = *state;

	if (!x)
		x = bpf_get_prandom_u32() | 1;
	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	*state = x;
	return x * 0x9E3779B9U;
}

/*
 * Submit flags for a ring the agent reads on its own schedule (a timer, each
 * window's close): a wake-up only once the ring is past half full, so that
 * a busy node does not pay one wake-up of the agent per event.
 */
static __always_inline __u64 dc_ring_wakeup(void *ring)
{
	return bpf_ringbuf_query(ring, BPF_RB_AVAIL_DATA) >
		       bpf_ringbuf_query(ring, BPF_RB_RING_SIZE) / 2
		   ? BPF_RB_FORCE_WAKEUP
		   : BPF_RB_NO_WAKEUP;
}

/*
 * A family's per-window aggregation map: two slots of a map-of-maps, whose
 * inner maps the agent types (per-CPU or shared hash) and sizes, and a
 * clock whose seq's parity says which slot the window being filled writes.
 * In the agent every family's clock is one map, the system-call slot map's
 * state (agent/winmap.h): one store closes the window in every layer at
 * once, so a call counted at its exit and the pages it dirtied on the way
 * are in the same window (with a clock each, raised one after the other,
 * a preemption of the agent between two stores would split the calls of
 * that moment between two windows). The stack profile has a clock of its own,
 * turned on its own thread with its stack generations. The agent then
 * waits out running programs (a grace period) and drains the other slot.
 * Key and value by size, not __type(): clang emits only a forward
 * declaration for a struct named solely in a map-in-map template.
 */
#define DC_WINDOW_MAP(name, key_t, val_t)                                                \
	struct name##_inner {                                                            \
		__uint(type, BPF_MAP_TYPE_PERCPU_HASH);                                  \
		__uint(max_entries, 1024);                                               \
		__uint(key_size, sizeof(key_t));                                         \
		__uint(value_size, sizeof(val_t));                                       \
	};                                                                               \
	struct {                                                                         \
		__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);                                \
		__uint(max_entries, 2);                                                  \
		__type(key, __u32);                                                      \
		__array(values, struct name##_inner);                                    \
	} name SEC(".maps");                                                             \
	struct {                                                                         \
		__uint(type, BPF_MAP_TYPE_ARRAY);                                        \
		__uint(map_flags, BPF_F_MMAPABLE);                                       \
		__uint(max_entries, 1);                                                  \
		__type(key, __u32);                                                      \
		__type(value, struct dc_slot_state); /* seq alone read here */           \
	} name##_clock SEC(".maps");                                                     \
                                                                                         \
	/* the key's value in the window being filled (dc_window_value) */               \
	static __always_inline __attribute__((unused)) void *name##_value(               \
	    const key_t *key, const val_t *zero, bool *inserted)                         \
	{                                                                                \
		__u32 z = 0;                                                             \
		struct dc_slot_state *c = bpf_map_lookup_elem(&name##_clock, &z);        \
                                                                                         \
		*inserted = false;                                                       \
		if (!c)                                                                  \
			return NULL;                                                     \
		return dc_window_value(&name, *(volatile __u32 *)&c->seq & 1, key, zero, \
				       inserted);                                        \
	}

/* A family's loss counters: monotonic per-CPU, published as deltas. */
#define DC_COUNTERS(name, n)                             \
	struct {                                         \
		__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY); \
		__uint(max_entries, n);                  \
		__type(key, __u32);                      \
		__type(value, __u64);                    \
	} name SEC(".maps")

/*
 * The value of key in the map of the given slot (the window being filled:
 * name##_value of DC_WINDOW_MAP picks it), inserted zeroed on its first
 * use (*inserted then says so). NULL when the window map is full: the
 * caller counts that and falls back to its overflow totals. (Also, rarely,
 * when an interrupt's insert lands while this CPU holds the map's bucket
 * lock for another update: the kernel answers EBUSY, counted as full.)
 */
static __always_inline void *dc_window_value(void *agg_gen, __u32 slot, const void *key,
					     const void *zero, bool *inserted)
{
	void *inner = bpf_map_lookup_elem(agg_gen, &slot), *v;

	*inserted = false;
	if (!inner)
		return NULL;
	v = bpf_map_lookup_elem(inner, key);
	if (v)
		return v;
	*inserted = !bpf_map_update_elem(inner, key, zero, BPF_NOEXIST);
	return bpf_map_lookup_elem(inner, key);
}

/*
 * bpf_get_current_cgroup_id() without the helper: the same walk
 * (task_dfl_cgroup(task)->kn->id) as direct loads of the BTF-typed task,
 * safe because a tracing program runs inside an RCU read section, which is
 * what keeps a css_set alive. The helper call was 20 to 30 ns of sys_exit's
 * run time on the 4 KiB loop (docs/benchmarks.md); the other families'
 * programs showed no difference (bench/family_bench.py), and read it so
 * too for one way of naming a task's cgroup. The task is a typed pointer
 * in every program type they use (tp_btf, raw_tp, tracepoint, kprobe,
 * fentry, uprobe).
 */
static __always_inline __u64 dc_task_cgroup_id(struct task_struct *task)
{
	struct css_set *cs = task->cgroups;
	struct cgroup *cg = cs ? cs->dfl_cgrp : NULL;
	struct kernfs_node *kn = cg ? cg->kn : NULL;

	return kn ? kn->id : 0;
}

/*
 * Runs of this object's programs, every program counting itself first
 * thing: the kernel's run counts exist only while its statistics are on
 * (agent/selfcost.h samples them), and a sample scaled up by time reads
 * low, since the statistics' clock reads slow every call while they are
 * on. A plain add: a program preempted between the load and the store of
 * it can lose another's run on that CPU, which a cost estimate can bear.
 */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} dc_runs SEC(".maps");

static __always_inline void dc_run(void)
{
	__u32 z = 0;
	__u64 *c = bpf_map_lookup_elem(&dc_runs, &z);

	if (c)
		*c += 1;
}

static __always_inline void dc_count(void *counters, __u32 which)
{
	__u64 *c = bpf_map_lookup_elem(counters, &which);

	if (c)
		dc_add(c, 1);
}

#endif

/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Stack-attributed I/O profiles, compiled into the system-call programs.
 *
 * Entry: the policy marks the call (fully traced cgroup, 1-in-N) and asks
 * for its kernel stack to be watched (marked, or any call when a slow-call
 * threshold is set: slowness is only known at exit).
 * Switch-out: a watched call in flight that blocks has the kernel stack of
 * that moment captured, once (the first block): the path that waited
 * (folio_wait_bit, io_schedule, jbd2 commit, ...), not the syscall exit
 * path, which is all a stack taken at exit would show.
 * Exit: a marked or slow call takes its user stack (the same at entry or
 * exit) and adds (count, time, bytes) to the window's key.
 *
 * stacks_on (rodata) removes all of this, and the switch program is not
 * loaded, when probes.stacks.enable is false at start.
 */
#ifndef DC_STACKS_BPF_H
#define DC_STACKS_BPF_H

#include "datacrumbs/stacks.h"

const volatile bool stacks_on = false;

/* The generation the programs capture into; advanced by the agent at each
 * window close (agent/stacks.c). Read once per program run. */
__u32 stk_seq = 0;

#define DC_STACK_MAP(name)                                                \
	struct {                                                          \
		__uint(type, BPF_MAP_TYPE_STACK_TRACE);                   \
		__uint(max_entries, 1024); /* probes.stacks.max_stacks */ \
		__uint(key_size, sizeof(__u32));                          \
		__uint(value_size, DC_STACK_DEPTH * sizeof(__u64));       \
	} name SEC(".maps")

DC_STACK_MAP(stk_0);
DC_STACK_MAP(stk_1);
DC_STACK_MAP(stk_2);
DC_STACK_MAP(stk_3);

DC_WINDOW_MAP(stk_gen, struct dc_stk_key, struct dc_stk_val);

/* Kept calls whose key found no room, by op: totals stay exact. Monotonic. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, DC_OP_MAX);
	__type(key, __u32);
	__type(value, struct dc_stk_val);
} stk_overflow SEC(".maps");

DC_COUNTERS(stk_counters, DC_STK_CNT_MAX);

/* The 1-in-N count where the entry stash is a per-call hash. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} stk_percpu SEC(".maps");

static const struct dc_stk_val stk_zero;

/* Processes announced to the agent, by tgid: the identity of the address
 * space announced (start time, mm, mapping count), so that a reused pid,
 * an exec or new mappings announce it again. Only looked at on a window's
 * new key, so a process that maps and unmaps all the time is announced at
 * most once per new stack. LRU: a node's processes come and go; an
 * evicted live process is announced once more. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, __u64);
} stk_pids SEC(".maps");

/* Announcements: rare (once per process with captured stacks), so each
 * wakes the agent at once: a process living 100 ms is still there when
 * the agent reads its /proc entries. */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 64 << 10); /* 4096 announcements of 16 bytes + 8 of header */
} stk_newpid SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct dc_stk_cfg);
} stk_cfg SEC(".maps");

/* Workloads profiled in full: cgroup ids, matched with their descendants. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 64);
	__type(key, __u64);
	__type(value, __u8);
} stk_full SEC(".maps");

static __always_inline long stk_stackid(void *ctx, __u32 gen, __u64 flags)
{
	switch (gen & (DC_STACK_GENS - 1)) {
	case 0:
		return bpf_get_stackid(ctx, &stk_0, flags);
	case 1:
		return bpf_get_stackid(ctx, &stk_1, flags);
	case 2:
		return bpf_get_stackid(ctx, &stk_2, flags);
	default:
		return bpf_get_stackid(ctx, &stk_3, flags);
	}
}

static __always_inline bool stk_full_workload(__u64 cgroup_id)
{
	if (bpf_map_lookup_elem(&stk_full, &cgroup_id))
		return true;
	for (int level = 1; level < 16; level++) {
		__u64 a = bpf_get_current_ancestor_cgroup_id(level);

		if (!a || a == cgroup_id)
			break;
		if (bpf_map_lookup_elem(&stk_full, &a))
			return true;
	}
	return false;
}

/* Entry: mark and watch by policy; the 1-in-N count is per thread where the
 * stash persists (task storage), else per CPU. */
static __always_inline void stacks_enter(struct dc_stash *st, bool persistent)
{
	__u32 zero = 0, flags = 0, n;
	struct dc_stk_cfg *c = bpf_map_lookup_elem(&stk_cfg, &zero);

	st->kstack = DC_STACK_ONCPU;
	st->stk_flags = 0;
	if (!c || !c->mode)
		return;
	n = c->one_in_n;
	if (n) {
		__u32 seq;

		if (persistent)
			seq = dc_draw(&st->stk_seen);
		else {
			__u32 *pc = bpf_map_lookup_elem(&stk_percpu, &zero);

			seq = pc ? dc_draw(pc) : 0;
		}
		if (seq <= c->draw_max)
			flags = DC_STK_MARK;
	}
	if (!flags && c->full_cgroups && stk_full_workload(bpf_get_current_cgroup_id()))
		flags = DC_STK_MARK;
	if (flags || c->slow_ns)
		flags |= DC_STK_WATCH;
	st->stk_flags = flags;
}

/* Switch-out of the current task: the first block of a watched call. */
static __always_inline void stacks_switch(void *ctx, struct dc_stash *st)
{
	__u32 seq;
	long id;

	if (!st || !st->ts || !(st->stk_flags & DC_STK_WATCH) || st->kstack != DC_STACK_ONCPU)
		return;
	seq = *(volatile __u32 *)&stk_seq;
	id = stk_stackid(ctx, seq, 0);
	st->kstack = id >= 0 ? (__s32)id : DC_STACK_LOST;
	st->kseq = seq;
	dc_count(&stk_counters, DC_STK_CNT_CAPTURES);
}

struct stk_call {
	__u32 flags;
	__s32 kstack;
	__u32 kseq;
	__u32 pad;
	__u64 sp; /* user stack pointer at exit (x86_64), 0 if unknown */
};

/* The leaf's return address, where it follows a call instruction: read only
 * for a kept call. Checked here, while the caller's text is surely mapped,
 * not at drain, when the process may be gone. Other ISAs: no check written,
 * no fix-up. */
static __always_inline __u64 stk_leaf_caller(const struct stk_call *sc)
{
#if defined(__TARGET_ARCH_x86)
	__u8 b[DC_CALL_SITE_BYTES];
	__u64 r = 0;

	if (!sc->sp || bpf_probe_read_user(&r, sizeof(r), (void *)sc->sp))
		return 0;
	if (r < DC_CALL_SITE_BYTES ||
	    bpf_probe_read_user(b, sizeof(b), (void *)(r - DC_CALL_SITE_BYTES)) ||
	    !dc_follows_call_x86(b))
		return 0;
	return r;
#else
	return 0;
#endif
}

/* Exit: the call's verdict, its user stack, its key. */
/* On a new key of a window: announce the process if the agent has not
 * seen its address space as it is now. */
static __always_inline void stk_announce(__u32 tgid)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct mm_struct *mm = BPF_CORE_READ(task, mm);
	__u64 ident = BPF_CORE_READ(task, group_leader, start_time) ^
		      ((__u64)mm * 0x9E3779B97F4A7C15ULL) ^
		      ((__u64)(__u32)BPF_CORE_READ(mm, map_count) << 40);
	__u64 *seen = bpf_map_lookup_elem(&stk_pids, &tgid);
	struct dc_stk_newpid *e;

	if (seen && *seen == ident)
		return;
	if (bpf_map_update_elem(&stk_pids, &tgid, &ident, BPF_ANY))
		return;
	e = bpf_ringbuf_reserve(&stk_newpid, sizeof(*e), 0);
	if (!e) {
		/* announced at the drain instead, as before; forgotten here so a
		 * later call tries again */
		bpf_map_delete_elem(&stk_pids, &tgid);
		dc_count(&stk_counters, DC_STK_CNT_ANNOUNCE_LOST);
		return;
	}
	e->tgid = tgid;
	e->pad = 0;
	e->ident = ident;
	bpf_ringbuf_submit(e, 0);
	dc_count(&stk_counters, DC_STK_CNT_ANNOUNCED);
}

static __always_inline void stacks_exit(void *ctx, const struct stk_call *sc, __u64 cgroup_id,
					__u32 tgid, __u32 op, __u64 lat, __u64 bytes)
{
	__u32 zero = 0, seq;
	struct dc_stk_cfg *c = bpf_map_lookup_elem(&stk_cfg, &zero);
	struct dc_stk_key k = {};
	struct dc_stk_val *v;
	bool inserted;
	long id;

	if (!c || !c->mode)
		return;
	if (!(sc->flags & DC_STK_MARK) && !(c->slow_ns && lat >= c->slow_ns))
		return;
	seq = *(volatile __u32 *)&stk_seq;
	k.cgroup_id = cgroup_id;
	k.tgid = tgid;
	k.op = (__u16)op;
	id = stk_stackid(ctx, seq, BPF_F_USER_STACK);
	if (id < 0) {
		dc_count(&stk_counters, DC_STK_CNT_USTACK_LOST);
		id = DC_STACK_LOST;
	}
	k.ustack = (__s32)id;
	k.ugen = seq & (DC_STACK_GENS - 1);
	k.caller = id >= 0 ? stk_leaf_caller(sc) : 0;
	if (sc->kstack == DC_STACK_LOST)
		dc_count(&stk_counters, DC_STK_CNT_KSTACK_LOST);
	if (sc->kstack >= 0 && seq - sc->kseq > 1) {
		/* its map may have been cleared and refilled since */
		dc_count(&stk_counters, DC_STK_CNT_KSTACK_STALE);
		k.kstack = DC_STACK_STALE;
	} else {
		k.kstack = sc->kstack;
		k.kgen = sc->kstack >= 0 ? sc->kseq & (DC_STACK_GENS - 1) : 0;
	}
	v = stk_gen_value(&k, &stk_zero, &inserted);
	/* a process's first call has a new key: only then is it looked up */
	if (inserted && id >= 0)
		stk_announce(tgid);
	if (!v) {
		dc_count(&stk_counters, DC_STK_CNT_KEY_FULL);
		v = bpf_map_lookup_elem(&stk_overflow, &op);
		if (!v)
			return;
	}
	/* shared map, few updates (only chosen calls): always atomic */
	__sync_fetch_and_add(&v->count, 1);
	__sync_fetch_and_add(&v->time_ns, lat);
	__sync_fetch_and_add(&v->bytes, bytes);
}

#endif

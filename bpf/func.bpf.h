/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Function-level aggregation shared by the probe families that time calls
 * of named functions (uprobe.bpf.c: libraries; vfs.bpf.c: kernel VFS): a
 * per-thread stack of entry times, and per window (process, cgroup,
 * function) count, time, bytes, errors and a latency histogram.
 */
#ifndef DC_FUNC_BPF_H
#define DC_FUNC_BPF_H

#include "datacrumbs/func.h"
#include "datacrumbs/hist.h"
#include "common.bpf.h"
#include "filter.bpf.h"
#include "tracering.bpf.h"

/* The trace layer of this object's events: the includer says which. */
#ifndef DC_FN_LAYER
#error "define DC_FN_LAYER (enum dc_trace_layer) before including func.bpf.h"
#endif

const volatile bool plain_updates = false;
const volatile __u32 agent_tgid = 0;

static const struct dc_fn_val zero_val;

DC_WINDOW_MAP(agg_gen, struct dc_fn_key, struct dc_fn_val);

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct dc_fn_stack);
} fn_stack SEC(".maps");

DC_COUNTERS(fn_counters, DC_FN_CNT_MAX);

/*
 * Interrupt context. A catalogued function can run in an interrupt: the
 * bio category's bio_endio completes requests in the block softirq or a
 * device's hardirq. It then runs on whatever task it interrupted, whose
 * stack of entries, process and cgroup are not its own; under fentry its
 * program can even land between another program's reads and writes of
 * that stack. Such calls belong to no process: charged to tgid 0 and
 * cgroup 0, timed on a per-CPU stack per interrupt level (softirq,
 * hardirq), as a level does not nest within itself on one CPU.
 *
 * An interrupt level's stack has no outer call to clean it: an entry whose
 * return program was skipped (fentry and fexit each skip a run that lands
 * while the same program runs on the CPU, as a hardirq can inside a
 * task-context completion) would stay, and a later return whose entry was
 * skipped would take it, with its age for a latency. An interrupt's work is
 * short, so an entry there older than DC_FN_IRQ_STALE_NS is such a leftover:
 * dropped (counted an orphan) when the next entry comes, never matched.
 *
 * Only the programs of functions that may run there pass may_irq, a
 * constant: the others pay nothing, and do not name the preempt count's
 * symbol, which a verifier refuses where /proc/kallsyms lacks data
 * symbols (no CONFIG_KALLSYMS_ALL): the agent then leaves those functions
 * out, saying why (agent/probe-vfs.c).
 */

#define DC_FN_IRQ_STALE_NS 10000000ULL /* 10 ms */

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 2); /* softirq, hardirq */
	__type(key, __u32);
	__type(value, struct dc_fn_stack);
} fn_irq_stack SEC(".maps");

/* The CPU's preempt count: a per-CPU variable on x86 (in struct pcpu_hot
 * from 6.2 to 6.14), the task's thread_info on arm64. Both weak, so that
 * the object loads whichever the kernel has; where its BTF names neither,
 * the agent does not load these functions' programs. */
extern const int __preempt_count __ksym __weak;
struct pcpu_hot___dc {
	int preempt_count;
} __attribute__((preserve_access_index));
extern struct pcpu_hot___dc pcpu_hot __ksym __weak;

#define DC_SOFTIRQ_OFFSET 0x100 /* serving a softirq, not only BH disabled */
#define DC_HARDIRQ_MASK	  0xf0000
#define DC_NMI_MASK	  0xf00000
#define DC_NMI_ENTER	  0x110000 /* NMI_OFFSET + HARDIRQ_OFFSET */

/*
 * 0 in task context, else the level: 1 softirq, 2 hardirq. No catalogued
 * function runs in an NMI, but a kprobe trapped by int3 (x86, where the
 * kprobe is not on ftrace) runs its handler as one (irqentry_nmi_enter):
 * that layer is taken off, so the entry sees the level its return (from
 * the return trampoline, no trap) sees.
 */
static __always_inline __u32 dc_irq_level(void)
{
	int pc = 0;

#if defined(__TARGET_ARCH_x86)
	if (&pcpu_hot)
		pc = ((struct pcpu_hot___dc *)bpf_this_cpu_ptr(&pcpu_hot))->preempt_count;
	else if (&__preempt_count)
		pc = *(const int *)bpf_this_cpu_ptr(&__preempt_count);
#elif defined(__TARGET_ARCH_arm64)
	pc = (int)bpf_get_current_task_btf()->thread_info.preempt_count;
#endif
	if (pc & DC_NMI_MASK)
		pc -= DC_NMI_ENTER;
	if (pc & DC_HARDIRQ_MASK)
		return 2;
	return pc & DC_SOFTIRQ_OFFSET ? 1 : 0;
}

/* The interrupt level's stack, NULL in task context. */
static __always_inline struct dc_fn_stack *fn_irq_stack_of(bool may_irq)
{
	__u32 level;

	if (!may_irq)
		return NULL;
	level = dc_irq_level();
	if (!level)
		return NULL;
	level--;
	return bpf_map_lookup_elem(&fn_irq_stack, &level);
}

/* Atomic whatever plain_updates says: one array serves every program of
 * the object, and under fentry (one program per function, each guarded
 * against itself only) a catalogued function that completes in interrupt
 * context (bio_endio) runs its program on top of another's in the task it
 * interrupted. The window values are safe with plain adds there: a key
 * names its function, so two programs never share one. Losses are rare:
 * the lock prefix costs nothing on the common path. */
static __always_inline void fn_count_n(__u32 which, __u64 n)
{
	__u64 *c = bpf_map_lookup_elem(&fn_counters, &which);

	if (c)
		__sync_fetch_and_add(c, n);
}

static __always_inline void fn_count(__u32 which)
{
	fn_count_n(which, 1);
}

#define count(which) fn_count(which)

/* A return without its entry: a call in progress at attach, unless the
 * filters left its entry out (nothing pushed, already counted there). */
static __always_inline void fn_no_entry(struct task_struct *task)
{
	if (!dc_filtered(task))
		count(DC_FN_CNT_NO_ENTRY);
}

static __always_inline void fn_entry(__u32 func, bool may_irq)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct dc_fn_stack *st = fn_irq_stack_of(may_irq);
	__u32 d;

	dc_run(); /* every program of the layer runs one of these three */
	/* no process in an interrupt: none to leave out, by either test; a
	 * stale top (above) means the whole stack is leftovers */
	if (st) {
		d = st->depth;
		if (d > DC_FN_DEPTH ||
		    (d && bpf_ktime_get_ns() - st->ts[(d - 1) & (DC_FN_DEPTH - 1)] >
			      DC_FN_IRQ_STALE_NS)) {
			fn_count_n(DC_FN_CNT_ORPHAN, d < DC_FN_DEPTH ? d : DC_FN_DEPTH);
			st->depth = 0;
		}
		goto push;
	}
	/* the task is a typed pointer in every program type (uprobe, kprobe,
	 * fentry, raw_tp, tracepoint): plain loads, no probe-read call */
	if (task->tgid == agent_tgid)
		return;
	if (dc_filtered(task)) {
		count(DC_FN_CNT_FILTERED);
		return;
	}
	st = bpf_task_storage_get(&fn_stack, task, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!st)
		return;
push:
	d = st->depth;
	if (d >= DC_FN_DEPTH) {
		count(DC_FN_CNT_TOO_DEEP);
		st->depth = d + 1;
		return;
	}
	st->ts[d] = bpf_ktime_get_ns();
	st->func[d] = func;
	st->depth = d + 1;
}

/* func: the function's index; bytes: its return value is a byte count;
 * may_irq: the function may run in interrupt context (above) */
static __always_inline void fn_return(long ret, __u32 func, bool bytes, bool may_irq)
{
	struct task_struct *task = bpf_get_current_task_btf();
	__u64 now = bpf_ktime_get_ns(), lat;
	struct dc_fn_stack *st = fn_irq_stack_of(may_irq);
	bool irq = st != NULL;
	struct dc_fn_key k = {};
	struct dc_fn_val *v;
	__u64 start;
	__u32 d;
	bool inserted;

	dc_run();
	if (irq) {
		/* tgid and cgroup_id stay 0: no process */
		if (!st->depth) {
			count(DC_FN_CNT_NO_ENTRY);
			return;
		}
	} else {
		k.tgid = task->tgid;
		if (k.tgid == agent_tgid)
			return;
		st = bpf_task_storage_get(&fn_stack, task, 0, 0);
		if (!st || !st->depth) {
			fn_no_entry(task);
			return;
		}
	}
	d = st->depth;
	if (d > DC_FN_DEPTH) {
		/* beyond the stack: entries counted as too deep, not timed */
		st->depth = d - 1;
		return;
	}
	/* pop down to this function's entry; what lies above it are entries
	 * whose returns were lost */
	{
		int found = -1;

#pragma unroll
		for (int i = DC_FN_DEPTH - 1; i >= 0; i--)
			if (found < 0 && i < (int)d && st->func[i] == func)
				found = i;
		if (found < 0) {
			if (irq)
				count(DC_FN_CNT_NO_ENTRY);
			else
				fn_no_entry(task);
			return;
		}
		for (int i = 0; i < DC_FN_DEPTH; i++)
			if (i > found && i < (int)d)
				count(DC_FN_CNT_ORPHAN);
		st->depth = (__u32)found;
		start = st->ts[found & (DC_FN_DEPTH - 1)];
		lat = now - start;
		/* a leftover, not this call's entry (above): both lost */
		if (irq && lat > DC_FN_IRQ_STALE_NS) {
			count(DC_FN_CNT_ORPHAN);
			count(DC_FN_CNT_NO_ENTRY);
			return;
		}
	}

	if (!irq)
		k.cgroup_id = dc_task_cgroup_id(task);
	k.func = func;
	if (traces_on) {
		struct trace_layer_call t = {
		    .layer = DC_FN_LAYER,
		    .op = func,
		    .pid = k.tgid,
		    .tid = irq ? 0 : task->pid,
		    .ts = start,
		    .lat = lat,
		    .cgroup_id = k.cgroup_id,
		    .size = bytes && ret >= 0 ? (__u64)ret : 0,
		    .ret = ret,
		};

		trace_layer_call(&t, trace_layer_policy(k.cgroup_id, !irq));
	}
	v = agg_gen_value(&k, &zero_val, &inserted);
	if (!v) {
		count(DC_FN_CNT_AGG_FULL);
		return;
	}
	dc_add(&v->time_ns, lat);
	dc_add(&v->lat_hist[dc_hist_slot(lat, DC_LAT_SLOTS)], 1);
	if (bytes) {
		if (ret >= 0)
			dc_add(&v->bytes, ret);
		else
			dc_add(&v->errors, 1);
	}
}

/* A function seen by a single event (a tracepoint with no exit): counted,
 * not timed; it lands in the 0 ns slot so that count = sum(lat_hist). */
static __always_inline void fn_event(__u32 func)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct dc_fn_key k = {};
	struct dc_fn_val *v;
	bool inserted;

	dc_run();
	k.tgid = task->tgid;
	if (k.tgid == agent_tgid)
		return;
	if (dc_filtered(task)) {
		count(DC_FN_CNT_FILTERED);
		return;
	}
	k.cgroup_id = dc_task_cgroup_id(task);
	k.func = func;
	v = agg_gen_value(&k, &zero_val, &inserted);
	if (!v) {
		count(DC_FN_CNT_AGG_FULL);
		return;
	}
	dc_add(&v->lat_hist[0], 1);
}

#endif

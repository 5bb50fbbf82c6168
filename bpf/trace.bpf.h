/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Sampled full traces, compiled into the system-call programs: the decision
 * to keep a call is taken before any ring space is reserved (policy in
 * include/datacrumbs/trace.h), and every call ends in exactly one of kept,
 * sampled out or dropped (ring full), counted in the call's own window value
 * so that per window seen = kept + sampled out + dropped holds exactly.
 *
 * The policy is a map, not rodata: a reload rewrites it without reloading
 * the programs. traces_on (rodata) removes all of this when traces are off
 * in the configuration at start.
 */
#ifndef DC_TRACE_BPF_H
#define DC_TRACE_BPF_H

#include "tracering.bpf.h"

/* The node's token bucket as GCRA: the time the bucket is next empty. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} trace_node_tat SEC(".maps");

/* A cgroup's bucket, and the candidates it refused since it let one
 * through: they are that cgroup's calls, so its next kept event stands
 * for them (a count shared by the CPU would hand a busy cgroup's refusals
 * to a quiet one's events, whose own bucket always lets them through). */
struct trace_cg_bucket {
	__u64 tat;
	__u64 refused;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, __u64); /* cgroup id */
	__type(value, struct trace_cg_bucket);
} trace_cg_tat SEC(".maps");

/* Candidates the node's bucket refused on this CPU since it let one
 * through: the next kept event stands for them too (the node's bucket
 * picks whatever comes, so they go to whichever call comes next). Also
 * the 1-in-N count where the entry stash is a per-call hash (no
 * per-thread state survives). */
struct trace_cpu {
	__u32 refused;
	__u32 seen;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct trace_cpu);
} trace_percpu SEC(".maps");

enum trace_outcome { TR_OUT = 0, TR_KEPT = 1, TR_DROP = 2 };

/* GCRA: one event may pass if the bucket, advanced by one gap, stays within
 * the burst; a lost race retries, then refuses (never over the rate). */
static __always_inline bool bucket_take(__u64 *tat, __u64 now, __u64 gap, __u64 burst)
{
	for (int i = 0; i < 4; i++) {
		__u64 old = *tat, next = (old > now ? old : now) + gap;

		if (next - now > burst)
			return false;
		if (__sync_val_compare_and_swap(tat, old, next) == old)
			return true;
	}
	return false;
}

/* The policy's verdict for one call; *weight and *flags for a kept one. */
static __always_inline enum trace_outcome trace_decide(__u64 now, __u64 lat, __u64 cgroup_id,
						       __u32 seq, __u32 *weight, __u16 *flags,
						       __u64 *cpu_cands, __u64 *cg_cands)
{
	__u32 zero = 0, n;
	struct dc_trace_cfg *c = bpf_map_lookup_elem(&trace_cfg, &zero);
	struct trace_cg_bucket *cg = NULL;
	struct trace_cpu *pc;
	__u64 w, refused;

	if (!c || c->mode == DC_TRACE_OFF)
		return TR_OUT;
	*weight = 1;
	if (full_workload(c, cgroup_id)) {
		*flags |= DC_TEV_FULL;
		return TR_KEPT;
	}
	if (c->slow_ns && lat >= c->slow_ns) {
		*flags |= DC_TEV_SLOW;
		return TR_KEPT;
	}
	if (c->slice_ns && c->period_ns && now % c->period_ns >= c->slice_ns)
		return TR_OUT;
	n = c->one_in_n ? c->one_in_n : 1;
	if (seq > c->draw_max)
		return TR_OUT;
	pc = bpf_map_lookup_elem(&trace_percpu, &zero);
	if (!pc)
		return TR_OUT;
	if (c->cg_gap_ns) {
		cg = bpf_map_lookup_elem(&trace_cg_tat, &cgroup_id);
		if (!cg) {
			struct trace_cg_bucket z = {};

			bpf_map_update_elem(&trace_cg_tat, &cgroup_id, &z, BPF_NOEXIST);
			cg = bpf_map_lookup_elem(&trace_cg_tat, &cgroup_id);
		}
		if (!cg) {
			pc->refused++;
			return TR_OUT;
		}
		if (!bucket_take(&cg->tat, now, c->cg_gap_ns, c->cg_burst_ns)) {
			__sync_fetch_and_add(&cg->refused, 1);
			return TR_OUT;
		}
	}
	if (c->node_gap_ns) {
		__u64 *tat = bpf_map_lookup_elem(&trace_node_tat, &zero);

		if (!tat || !bucket_take(tat, now, c->node_gap_ns, c->node_burst_ns)) {
			pc->refused++;
			return TR_OUT;
		}
	}
	refused = pc->refused;
	*cpu_cands = refused + 1;
	if (cg) {
		*cg_cands = __sync_lock_test_and_set(&cg->refused, 0);
		refused += *cg_cands;
	}
	w = (__u64)n * (refused + 1);
	/* x period / slice, saturated (as below) before a product can wrap (a
	 * minute's period in ns times a weight of 3e8 would): the quotient's
	 * part, then the remainder's, whose product stays under 2^64 with
	 * both sides shifted where the slice is past 2^32 ns */
	if (c->slice_ns && c->period_ns) {
		__u64 q = c->period_ns / c->slice_ns, r = c->period_ns % c->slice_ns;
		int sh = c->slice_ns >> 32 ? 10 : 0;

		if (w >> 32 || q >> 32)
			w = ~0ULL;
		else
			w = w * q + w * (r >> sh) / (c->slice_ns >> sh);
	}
	pc->refused = 0;
	*weight = w > 0xffffffffULL ? 0xffffffffU : (__u32)w;
	return TR_KEPT;
}

/* A kept call the ring had no room for: the candidates its weight stood
 * for go to the next event kept, as refused calls' do (the full ring is
 * when weights matter most): those refused on this CPU and the call itself
 * to this CPU's count, those its cgroup's bucket refused back to the
 * cgroup, whose own next event stands for them. */
static __always_inline void trace_weight_back(__u64 cpu_cands, __u64 cg_cands, __u64 cgroup_id)
{
	__u32 zero = 0;
	struct trace_cpu *pc = bpf_map_lookup_elem(&trace_percpu, &zero);
	struct trace_cg_bucket *cg;

	if (pc && cpu_cands)
		pc->refused = cpu_cands > 0xffffffffULL - pc->refused
				  ? 0xffffffffU
				  : pc->refused + (__u32)cpu_cands;
	if (cg_cands && (cg = bpf_map_lookup_elem(&trace_cg_tat, &cgroup_id)))
		__sync_fetch_and_add(&cg->refused, cg_cands);
}

/* The 1-in-N draw of this call where the stash does not persist. */
static __always_inline __u32 trace_cpu_seq(void)
{
	__u32 zero = 0;
	struct trace_cpu *pc = bpf_map_lookup_elem(&trace_percpu, &zero);

	return pc ? dc_draw(&pc->seen) : 0;
}

/*
 * Decide, and for a kept call reserve, fill and submit its event. Wake-ups
 * only when the ring is half full: the agent reads on its own timer, so a
 * busy node does not pay a wake-up per event.
 */
static __always_inline enum trace_outcome trace_call(__u32 layer, __u32 op, __u64 ts, __u64 lat,
						     __u32 pid, __u32 tid, __u64 cgroup_id,
						     const struct dc_file_stash *fs, __u64 size,
						     long ret, __u32 seq)
{
	__u32 weight = 1;
	__u16 flags = 0;
	/* full and slow calls stand for themselves alone */
	__u64 cpu_cands = 0, cg_cands = 0;
	struct dc_trace_ev *e;
	enum trace_outcome o =
	    trace_decide(ts + lat, lat, cgroup_id, seq, &weight, &flags, &cpu_cands, &cg_cands);

	if (o != TR_KEPT)
		return o;
	e = bpf_ringbuf_reserve(&traces, sizeof(*e), 0);
	if (!e) {
		trace_weight_back(cpu_cands, cg_cands, cgroup_id);
		return TR_DROP;
	}
	e->version = DC_TRACE_VERSION;
	e->layer = layer;
	e->op = op;
	e->cpu = bpf_get_smp_processor_id();
	e->pid = pid;
	e->tid = tid;
	e->ts_ns = ts;
	e->dur_ns = lat;
	e->cgroup_id = cgroup_id;
	e->size = size;
	e->ret = ret;
	e->weight = weight;
	e->queue_us = 0;
	e->fd = fs->kind != DC_FK_NONE ? fs->fd : -1;
	if (fs->kind != DC_FK_NONE && fs->ino) {
		flags |= DC_TEV_FILE;
		if (fs->kind != DC_FK_META && fs->kind != DC_FK_META_AT && fs->kind != DC_FK_SYNC &&
		    fs->kind != DC_FK_OPEN)
			flags |= DC_TEV_OFFSET;
		e->ino = fs->ino;
		e->igen = fs->igen;
		e->dev = fs->dev;
		e->offset = fs->offset;
	} else {
		e->ino = 0;
		e->dev = 0;
		e->offset = 0;
	}
	e->flags = flags;
	trace_submit(e);
	return TR_KEPT;
}

#endif

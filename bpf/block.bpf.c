// SPDX-License-Identifier: GPL-2.0
/*
 * Block layer: every request of every device, timed from insert to issue
 * (queue) and from issue to completion (device), aggregated per window by
 * (device, operation, originating process, cgroup).
 *
 * Origin: a request is issued from whichever context runs the queue (the
 * submitter, a kworker, another CPU's completion), so the issuing task says
 * little. The submitter is recorded when its bio enters the block layer
 * (block_bio_queue, in the submitting task), keyed by the bio, and looked up
 * through the request's first bio. Kernel threads (writeback, journal) count
 * as tgid 0; the cgroup is taken from the bio's blkcg, which cgroup
 * writeback sets to the page owner's, so deferred writes still reach the
 * job that dirtied them.
 *
 * Mechanisms: tp_btf (typed pointers, direct reads), else raw_tp (the same
 * with probe reads). Both use the same windows (agg_gen, see winmap.h).
 */
#include "dc_vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "datacrumbs/block.h"
#include "datacrumbs/hist.h"
#include "common.bpf.h"
#include "filter.bpf.h"
#include "tracering.bpf.h"

const volatile bool plain_updates = false;
const volatile __u32 agent_tgid = 0;

static const struct dc_blk_val zero_val;

DC_WINDOW_MAP(agg_gen, struct dc_blk_key, struct dc_blk_val);

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, DC_BLK_OP_MAX);
	__type(key, __u32);
	__type(value, struct dc_blk_val);
} blk_overflow SEC(".maps");

DC_COUNTERS(blk_counters, DC_BLK_CNT_MAX);

/* bios on their way to a request; a bio merged away never completes as a
 * request, so this is an LRU: stale entries age out */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, __u64);
	__type(value, struct dc_blk_origin);
} bios SEC(".maps");

/* requests in flight; bounded by the devices' queue depths */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u64);
	__type(value, struct dc_blk_inflight);
} inflight SEC(".maps");

#define count(which) dc_count(&blk_counters, (which))

/* the whole disk's dev_t in the kernel's encoding, major << 20 | minor */
static __always_inline __u32 rq_dev(struct request *rq)
{
	struct gendisk *disk = BPF_CORE_READ(rq, q, disk);
	__u32 major = BPF_CORE_READ(disk, major), minor = BPF_CORE_READ(disk, first_minor);

	return (major << 20) | (minor & 0xfffff);
}

static __always_inline __u32 rq_op(struct request *rq)
{
	__u32 op = BPF_CORE_READ(rq, cmd_flags) & 0xff; /* REQ_OP_MASK */

	switch (op) {
	case 0:
		return DC_BLK_READ;
	case 1:
		return DC_BLK_WRITE;
	case 2:
		return DC_BLK_FLUSH;
	case 3:
		return DC_BLK_DISCARD;
	}
	return DC_BLK_OTHER;
}

/* The bio's cgroup when it is a cgroup2 one. On a hybrid host the io
 * controller lives in a v1 hierarchy, whose ids mean nothing to the cgroup2
 * ids every other layer records: NULL then, and the caller falls back to
 * the submitter's cgroup2 id. */
static __always_inline struct cgroup *bio_cgroup(struct bio *bio)
{
	struct cgroup *cg;

	if (!bpf_core_field_exists(bio->bi_blkg))
		return NULL;
	cg = BPF_CORE_READ(bio, bi_blkg, blkcg, css.cgroup);
	if (!cg || BPF_CORE_READ(cg, root, hierarchy_id) != 0)
		return NULL;
	return cg;
}

/* The trace policy of a request's submitter, decided in its context: a
 * user task by its cgroup and ancestors; a kernel thread only when the
 * cgroup it writes for is itself listed in full (no ancestor walk from
 * here: the current task is the kernel thread). */
static __always_inline __s16 origin_trace(struct dc_blk_origin *o)
{
	__u64 cg;
	int p;

	if (!traces_on)
		return -1;
	o->tid = o->tgid ? (__u32)bpf_get_current_pid_tgid() : 0;
	cg = o->tgid ? bpf_get_current_cgroup_id() : o->cgroup_id;
	p = trace_layer_policy(o->tgid ? cg : 0);
	if (p == 0 && !o->tgid && cg && bpf_map_lookup_elem(&trace_full, &cg))
		p = DC_TEV_FULL;
	return (__s16)p;
}

static __always_inline void on_bio_queue(struct bio *bio)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct dc_blk_origin o = {};
	__u64 key = (__u64)bio;
	struct cgroup *cg = bio_cgroup(bio);

	/* kernel threads have no mm: writeback, journal, loop workers */
	if (!BPF_CORE_READ(task, mm))
		o.tgid = 0;
	else
		o.tgid = BPF_CORE_READ(task, tgid);
	o.cgroup_id = cg ? BPF_CORE_READ(cg, kn, id) : 0;
	if (!o.cgroup_id)
		o.cgroup_id = o.tgid ? bpf_get_current_cgroup_id() : 0;
	/* a process is filtered as itself; a kernel thread has no uid or comm
	 * of its own to match, only the cgroup it writes for */
	o.filtered = o.tgid ? dc_filtered(task) : dc_filtered_cgroup(cg);
	o.trace = origin_trace(&o);
	bpf_map_update_elem(&bios, &key, &o, BPF_ANY);
}

static __always_inline void set_origin(struct dc_blk_inflight *f, struct request *rq)
{
	__u64 bkey = (__u64)BPF_CORE_READ(rq, bio);
	struct dc_blk_origin *o = bkey ? bpf_map_lookup_elem(&bios, &bkey) : NULL;

	if (o) {
		f->origin = *o;
		bpf_map_delete_elem(&bios, &bkey);
	} else {
		/* no bio seen (submitted before attach, or a passthrough request):
		 * the issuing context is the best we have */
		struct task_struct *task = bpf_get_current_task_btf();

		count(DC_BLK_CNT_NO_ORIGIN);
		f->origin.tgid = BPF_CORE_READ(task, mm) ? BPF_CORE_READ(task, tgid) : 0;
		f->origin.cgroup_id = f->origin.tgid ? bpf_get_current_cgroup_id() : 0;
		f->origin.filtered = f->origin.tgid ? dc_filtered(task) : dc_filtered_cgroup(NULL);
		f->origin.trace = origin_trace(&f->origin);
	}
}

/*
 * The entry of a request starting its life (insert, or issue without
 * insert). An entry that was already issued belongs to an earlier request
 * on the same struct whose completion the kernel never reported (seen on
 * loop devices: block_rq_complete missing for about 1 in 20,000 requests,
 * bpftrace agrees): count it and start afresh, so its origin and times do
 * not leak into this request.
 */
static __always_inline struct dc_blk_inflight *start_request(struct request *rq)
{
	__u64 key = (__u64)rq;
	struct dc_blk_inflight *f = bpf_map_lookup_elem(&inflight, &key);

	if (f) {
		if (!f->issue_ns)
			return f; /* inserted, now issued: the same request */
		count(DC_BLK_CNT_UNSEEN);
		f->insert_ns = 0;
		f->issue_ns = 0;
		set_origin(f, rq);
		return f;
	}
	if (bpf_map_update_elem(&inflight, &key, &(struct dc_blk_inflight){}, BPF_NOEXIST) &&
	    !bpf_map_lookup_elem(&inflight, &key)) {
		count(DC_BLK_CNT_RQ_FULL);
		return NULL;
	}
	f = bpf_map_lookup_elem(&inflight, &key);
	if (f)
		set_origin(f, rq);
	return f;
}

static __always_inline void on_insert(struct request *rq)
{
	struct dc_blk_inflight *f = start_request(rq);

	if (f)
		f->insert_ns = bpf_ktime_get_ns();
}

static __always_inline void on_issue(struct request *rq)
{
	struct dc_blk_inflight *f = start_request(rq);

	if (f) {
		f->issue_ns = bpf_ktime_get_ns();
		f->sector = BPF_CORE_READ(rq, __sector);
		f->bytes = BPF_CORE_READ(rq, __data_len);
	}
}

/* A requeued request is issued again later: not a lost completion. */
static __always_inline void on_requeue(struct request *rq)
{
	__u64 key = (__u64)rq;
	struct dc_blk_inflight *f = bpf_map_lookup_elem(&inflight, &key);

	if (f)
		f->issue_ns = 0;
}

static __always_inline void on_complete(struct request *rq, unsigned int nr_bytes)
{
	__u64 key = (__u64)rq, now = bpf_ktime_get_ns(), qlat = 0, dlat;
	struct dc_blk_inflight *f = bpf_map_lookup_elem(&inflight, &key);
	struct dc_blk_key k = {};
	struct dc_blk_val *v;
	__u32 op;
	bool final;
	bool inserted;

	if (!f || !f->issue_ns) {
		count(DC_BLK_CNT_NO_ISSUE);
		return;
	}
	/* the tracepoint fires before the request is updated: __data_len is
	 * what remained, so a completion of all of it is the last one */
	final = nr_bytes >= BPF_CORE_READ(rq, __data_len);
	/* the agent's own requests (filter.exclude_self), like its syscalls,
	 * and those the filters leave out: timed for nothing, counted once */
	if ((agent_tgid && f->origin.tgid == agent_tgid) || f->origin.filtered) {
		if (!final)
			return;
		if (f->origin.filtered)
			count(DC_BLK_CNT_FILTERED);
		bpf_map_delete_elem(&inflight, &key);
		return;
	}
	op = rq_op(rq);
	k.dev = rq_dev(rq);
	k.op = op;
	k.tgid = f->origin.tgid;
	k.cgroup_id = f->origin.cgroup_id;
	dlat = now - f->issue_ns;
	if (f->insert_ns && f->issue_ns > f->insert_ns)
		qlat = f->issue_ns - f->insert_ns;
	if (final && traces_on) {
		/* completed in interrupt context: the submitter's identity and
		 * policy come from the request's origin */
		struct trace_layer_call t = {
		    .layer = DC_LAYER_BLOCK,
		    .op = op,
		    .pid = f->origin.tgid,
		    .tid = f->origin.tid,
		    .ts = f->issue_ns,
		    .lat = dlat,
		    .cgroup_id = f->origin.cgroup_id,
		    .size = f->bytes,
		    .offset = f->sector << 9,
		    .dev = k.dev,
		    .queue_us = qlat / 1000 > 0xffffffffULL ? 0xffffffffU : (__u32)(qlat / 1000),
		    .flags = DC_TEV_OFFSET | DC_TEV_DEV,
		};

		trace_layer_call(&t, f->origin.trace);
	}
	if (final)
		bpf_map_delete_elem(&inflight, &key);

	v = dc_window_value(&agg_gen, &k, &zero_val, &inserted);
	if (!v) {
		count(DC_BLK_CNT_AGG_FULL);
		v = bpf_map_lookup_elem(&blk_overflow, &op);
		if (!v)
			return;
	}
	dc_add(&v->bytes, nr_bytes);
	if (!final)
		return;
	dc_add(&v->queue_ns, qlat);
	dc_add(&v->device_ns, dlat);
	dc_add(&v->qlat_hist[dc_hist_slot(qlat, DC_LAT_SLOTS)], 1);
	dc_add(&v->dlat_hist[dc_hist_slot(dlat, DC_LAT_SLOTS)], 1);
	dc_add(&v->size_hist[dc_hist_slot(BPF_CORE_READ(rq, __data_len), DC_SIZE_SLOTS)], 1);
}

SEC("tp_btf/block_bio_queue")
int BPF_PROG(dc_bio_queue_btf, struct bio *bio)
{
	on_bio_queue(bio);
	return 0;
}

SEC("tp_btf/block_rq_insert")
int BPF_PROG(dc_rq_insert_btf, struct request *rq)
{
	on_insert(rq);
	return 0;
}

SEC("tp_btf/block_rq_issue")
int BPF_PROG(dc_rq_issue_btf, struct request *rq)
{
	on_issue(rq);
	return 0;
}

SEC("tp_btf/block_rq_requeue")
int BPF_PROG(dc_rq_requeue_btf, struct request *rq)
{
	on_requeue(rq);
	return 0;
}

SEC("tp_btf/block_rq_complete")
int BPF_PROG(dc_rq_complete_btf, struct request *rq, int error, unsigned int nr_bytes)
{
	on_complete(rq, nr_bytes);
	return 0;
}

SEC("raw_tp/block_bio_queue")
int BPF_PROG(dc_bio_queue_raw, struct bio *bio)
{
	on_bio_queue(bio);
	return 0;
}

SEC("raw_tp/block_rq_insert")
int BPF_PROG(dc_rq_insert_raw, struct request *rq)
{
	on_insert(rq);
	return 0;
}

SEC("raw_tp/block_rq_issue")
int BPF_PROG(dc_rq_issue_raw, struct request *rq)
{
	on_issue(rq);
	return 0;
}

SEC("raw_tp/block_rq_requeue")
int BPF_PROG(dc_rq_requeue_raw, struct request *rq)
{
	on_requeue(rq);
	return 0;
}

SEC("raw_tp/block_rq_complete")
int BPF_PROG(dc_rq_complete_raw, struct request *rq, int error, unsigned int nr_bytes)
{
	on_complete(rq, nr_bytes);
	return 0;
}

DC_SEC_LICENSE;

// SPDX-License-Identifier: GPL-2.0
/*
 * Block layer: every request of every device, timed from its start to issue
 * (queue) and from issue to completion (device), aggregated per window by
 * (device, operation, originating process, cgroup).
 *
 * Queue time: the kernel stamps a request's start when it allocates it
 * (rq->start_time_ns, where iostat's await begins; the plug and the
 * scheduler's queue follow), for every device with I/O statistics or a
 * scheduler. Reading the stamp (at completion) spares a program at
 * block_rq_insert, one of the four a request ran on a device with a
 * scheduler. Where no stamp was taken, the queue time is 0.
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
/* where the io controller's cgroups live (/proc/cgroups, read before
 * load): 0 not known, checked per bio; 1 cgroup2; 2 a v1 hierarchy */
const volatile __u8 blkcg_where = 0;

static const struct dc_blk_val zero_val;

DC_WINDOW_MAP(agg_gen, struct dc_blk_key, struct dc_blk_val);

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, DC_BLK_OP_MAX);
	__type(key, __u32);
	__type(value, struct dc_blk_val);
} blk_overflow SEC(".maps");

DC_COUNTERS(blk_counters, DC_BLK_CNT_MAX);

/*
 * The bio and request tables (include/datacrumbs/block.h): each program
 * here runs once per request or bio, after the request's data went through
 * the caches, so every line it touches is a miss; a hash map update or
 * delete costs several (bucket, element, lock, free list) and an LRU
 * update more. A direct-mapped set is one line per way at most (a bio's
 * set is one line, a request's two), claimed by compare and exchange on
 * its tag.
 */
const volatile __u32 bio_set_mask = 0; /* sets - 1, set before load */
const volatile __u32 rq_set_mask = 0;

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct dc_blk_bio_set);
} bio_sets SEC(".maps");

/* the agent sweeps requests whose completion never came (mmap) */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct dc_blk_rq_set);
} rq_sets SEC(".maps");

/* requests whose set was taken: bounded by the devices' queue depths */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u64);
	__type(value, struct dc_blk_inflight);
} inflight SEC(".maps");

/* entries in inflight, so that the common case skips its look-up */
__u64 inflight_n = 0;

#define count(which) dc_count(&blk_counters, (which))

/*
 * RD(direct, p, a, b, ...): p->a->b... A program attached by tp_btf has
 * typed pointers and loads their fields directly (the JIT makes each a
 * load that may fault, no helper call); raw_tp reads them with
 * bpf_probe_read_kernel(), a call for every step. direct is a constant
 * in each program: the other branch is compiled away.
 */
#define RD_N(...)		      RD_N_(__VA_ARGS__, 4, 3, 2, 1, 0)
#define RD_N_(_1, _2, _3, _4, n, ...) n
#define RD_CAT(a, b)		      RD_CAT_(a, b)
#define RD_CAT_(a, b)		      a##b
#define RD_1(p, a)		      (p)->a
#define RD_2(p, a, b)		      (p)->a->b
#define RD_3(p, a, b, c)	      (p)->a->b->c
#define RD_4(p, a, b, c, d)	      (p)->a->b->c->d
#define RD(direct, p, ...) \
	((direct) ? RD_CAT(RD_, RD_N(__VA_ARGS__))(p, __VA_ARGS__) : BPF_CORE_READ(p, __VA_ARGS__))

/*
 * A set for an object's address. The objects in use sit close together:
 * requests are carved from a driver's 64 KiB chunks (blk_mq_alloc_rqs),
 * bios come from a few hot slab pages. The set keeps that closeness: the
 * address's 16 KiB block starts a run of sets anywhere in the table, by a
 * hash (blocks share their low and high bits: the product's middle bits
 * spread them), and its offset in units no larger than an object's slot
 * (1 << shift bytes) is the set in that run. The objects in flight then
 * touch a few of the table's pages, where a hash of the whole address put
 * each on a page of its own; with the TLB cold after an idle wait, a page
 * walk each is the likely cost (the block programs' time fell to 0.82x,
 * docs/benchmarks.md). Runs start at any set, not at a multiple of their
 * length: aligned, every queue's lowest tags fall on the same sets, and a
 * model (bench/blockset_sim.py) spills more requests there.
 */
static __always_inline __u32 ptr_set(__u64 p, __u32 mask, const int shift)
{
	__u32 run = (__u32)(((p >> 14) * 0x9E3779B97F4A7C15ULL) >> 32);

	return (run + (__u32)((p & 0x3fff) >> shift)) & mask;
}

/* struct request is 248 bytes on 6.18 and carved with the driver's data
 * after it, rounded to a cache line: 256 at least. A bio is 120 bytes, in
 * bioset slabs aligned to the cache line: 128 at least; a bio inside a
 * larger struct is further apart. */
#define RQ_SHIFT  8
#define BIO_SHIFT 7

/* A bio's entry can be replaced once it is this many ticks old (16 to 160
 * ms with HZ 1000 to 100): a bio merged into another's request never
 * starts one, so its entry stays behind. The tick count is a load; the
 * coarse clock is refused to tracing programs. */
#define BIO_STALE 16

/* Argument i of a tp_btf program as a number: its typed pointers allow no
 * arithmetic, and the tables hash the address (raw_tp's are numbers). */
static __always_inline __u64 ctx_addr(unsigned long long *ctx, int i)
{
	__u64 v = 0;

	bpf_probe_read_kernel(&v, sizeof(v), &ctx[i]);
	return v;
}

/* the whole disk's dev_t in the kernel's encoding, major << 20 | minor */
static __always_inline __u32 rq_dev(struct request *rq, const bool direct)
{
	struct gendisk *disk = RD(direct, rq, q, disk);
	__u32 major = RD(direct, disk, major), minor = RD(direct, disk, first_minor);

	return (major << 20) | (minor & 0xfffff);
}

static __always_inline __u32 rq_op(struct request *rq, const bool direct)
{
	__u32 op = RD(direct, rq, cmd_flags) & 0xff; /* REQ_OP_MASK */

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
static __always_inline struct cgroup *bio_cgroup(struct bio *bio, const bool direct)
{
	struct cgroup *cg;

	if (!bpf_core_field_exists(bio->bi_blkg) || blkcg_where == 2)
		return NULL;
	cg = RD(direct, bio, bi_blkg, blkcg, css.cgroup);
	if (!cg || (blkcg_where != 1 && RD(direct, cg, root, hierarchy_id) != 0))
		return NULL;
	return cg;
}

/* The trace policy of a request's submitter, decided in its context: a
 * user task by its cgroup and ancestors; a kernel thread only when the
 * cgroup it writes for is itself listed in full (no ancestor walk from
 * here: the current task is the kernel thread). */
static __always_inline __s16 origin_trace(struct dc_blk_origin *o, struct task_struct *task)
{
	__u64 cg;
	int p;

	if (!traces_on)
		return -1;
	o->tid = o->tgid ? task->pid : 0;
	cg = o->tgid ? dc_task_cgroup_id(task) : o->cgroup_id;
	p = trace_layer_policy(o->tgid ? cg : 0, true);
	if (p == 0 && !o->tgid && cg && bpf_map_lookup_elem(&trace_full, &cg))
		p = DC_TEV_FULL;
	return (__s16)p;
}

/*
 * Remember a bio's origin in a free way of its set, or one whose bio is
 * stale. A writer marks the way fresh before claiming its tag, so that no
 * other writer takes it while the origin is being written, and a reader
 * copies the origin, then frees the tag only if it is still the bio's (see
 * bio_take). No way to take: the bio goes without, and its request counts
 * issue_without_bio.
 */
static __always_inline struct dc_blk_bio_set *bio_set(__u64 bio)
{
	__u32 i = ptr_set(bio, bio_set_mask, BIO_SHIFT);

	return bpf_map_lookup_elem(&bio_sets, &i);
}

static __always_inline void bio_put(__u64 bio, struct dc_blk_origin *o)
{
	struct dc_blk_bio_set *s = bio_set(bio);
	__u32 now = (__u32)bpf_jiffies64();

	if (!s)
		return;
	o->when = now;
#pragma unroll
	for (int w = 0; w < 2; w++) {
		struct dc_blk_bio_way *way = &s->way[w];
		__u64 tag = *(volatile __u64 *)&way->bio;

		if (tag && tag != bio && now - way->o.when < BIO_STALE)
			continue;
		way->o.when = now;
		if (__sync_val_compare_and_swap(&way->bio, tag, bio) != tag)
			continue;
		way->o = *o;
		return;
	}
}

/* The bio's origin, taken out of the table; false: not there, or replaced
 * while copied (the copy may then mix two origins). */
static __always_inline bool bio_take(__u64 bio, struct dc_blk_origin *o)
{
	struct dc_blk_bio_set *s = bio_set(bio);

	if (!s)
		return false;
#pragma unroll
	for (int w = 0; w < 2; w++) {
		struct dc_blk_bio_way *way = &s->way[w];

		if (*(volatile __u64 *)&way->bio != bio)
			continue;
		*o = way->o;
		return __sync_val_compare_and_swap(&way->bio, bio, 0) == bio;
	}
	return false;
}

/* The origin of I/O for the bio's cgroup cg (NULL: none usable), as the
 * current task submits it. */
static __always_inline void origin_here(struct dc_blk_origin *o, struct cgroup *cg,
					const bool direct)
{
	struct task_struct *task = bpf_get_current_task_btf();

	__builtin_memset(o, 0, sizeof(*o));
	/* kernel threads have no mm: writeback, journal, loop workers (the
	 * task is a typed pointer in every program type) */
	o->tgid = task->mm ? task->tgid : 0;
	o->cgroup_id = cg ? RD(direct, cg, kn, id) : 0;
	if (!o->cgroup_id)
		o->cgroup_id = o->tgid ? dc_task_cgroup_id(task) : 0;
	/* a process is filtered as itself; a kernel thread has no uid or comm
	 * of its own to match, only the cgroup it writes for */
	o->filtered = o->tgid ? dc_filtered(task) : dc_filtered_cgroup(cg);
	o->trace = origin_trace(o, task);
}

static __always_inline void on_bio_queue(struct bio *bio, __u64 key, const bool direct)
{
	struct dc_blk_origin o;

	origin_here(&o, bio_cgroup(bio, direct), direct);
	bio_put(key, &o);
}

static __always_inline void set_origin(struct dc_blk_inflight *f, struct request *rq)
{
	struct bio *bio = BPF_CORE_READ(rq, bio);

	if (bio && bio_take((__u64)bio, &f->origin))
		return;
	/* no bio seen (submitted before attach, a passthrough request, or its
	 * entry replaced): the issuing context is the best we have, with the
	 * bio's cgroup where it has one (bio is a number here: probe reads).
	 * A request with no bio at all (a flush) has no submitter to miss. */
	if (bio)
		count(DC_BLK_CNT_NO_ORIGIN);
	origin_here(&f->origin, bio ? bio_cgroup(bio, false) : NULL, false);
}

static __always_inline struct dc_blk_rq_set *rq_set(__u64 rq)
{
	__u32 i = ptr_set(rq, rq_set_mask, RQ_SHIFT);

	return bpf_map_lookup_elem(&rq_sets, &i);
}

/* whether the spare hash holds any request (its look-up skipped if not) */
static __always_inline bool spilled_any(void)
{
	return *(volatile __u64 *)&inflight_n != 0;
}

/* A request's entry: its way in set s, else the spare hash. */
static __always_inline struct dc_blk_inflight *rq_find(struct dc_blk_rq_set *s, __u64 rq)
{
	if (s->way[0].rq == rq)
		return &s->way[0].f;
	if (s->way[1].rq == rq)
		return &s->way[1].f;
	return spilled_any() ? bpf_map_lookup_elem(&inflight, &rq) : NULL;
}

static __always_inline struct dc_blk_inflight *rq_lookup(__u64 rq)
{
	struct dc_blk_rq_set *s = rq_set(rq);

	return s ? rq_find(s, rq) : NULL;
}

/* After the last read of its entry. A free way has no times: the agent's
 * sweep (agent/probe-block.c) then never takes a way just claimed for a
 * stale one. */
static __always_inline void rq_release(__u64 rq)
{
	struct dc_blk_rq_set *s = rq_set(rq);

	if (s) {
#pragma unroll
		for (int w = 0; w < 2; w++)
			if (s->way[w].rq == rq) {
				s->way[w].f.issue_ns = 0;
				__sync_val_compare_and_swap(&s->way[w].rq, rq, 0);
				return;
			}
	}
	if (spilled_any() && !bpf_map_delete_elem(&inflight, &rq))
		__sync_fetch_and_add(&inflight_n, -1);
}

static const struct dc_blk_inflight zero_inflight;

/* A new request's entry: a free way of its set, claimed by its tag, else
 * the spare hash. */
static __always_inline struct dc_blk_inflight *rq_claim(struct dc_blk_rq_set *s, __u64 key)
{
#pragma unroll
	for (int w = 0; w < 2; w++)
		if (!s->way[w].rq && !__sync_val_compare_and_swap(&s->way[w].rq, 0, key))
			return &s->way[w].f;
	count(DC_BLK_CNT_RQ_SPILLED);
	if (bpf_map_update_elem(&inflight, &key, &zero_inflight, BPF_NOEXIST)) {
		count(DC_BLK_CNT_RQ_FULL);
		return NULL;
	}
	__sync_fetch_and_add(&inflight_n, 1);
	return bpf_map_lookup_elem(&inflight, &key);
}

/*
 * A request's issue. Its entry exists only if it was requeued (issue_ns
 * cleared: the same request, issued again, its origin kept); one still
 * marked issued belongs to an earlier request on the same struct whose
 * completion the kernel never reported (seen on loop devices:
 * block_rq_complete missing for about 1 in 12,000 requests, bpftrace
 * agrees): count it and start afresh, so its origin and times do not leak
 * into this request.
 */
static __always_inline void on_issue(struct request *rq, __u64 key, const bool direct)
{
	struct dc_blk_rq_set *s = rq_set(key);
	struct dc_blk_inflight *f;
	bool requeued;

	if (!s)
		return;
	f = rq_find(s, key);
	requeued = f && !f->issue_ns;
	if (f && !requeued)
		count(DC_BLK_CNT_UNSEEN);
	if (!f)
		f = rq_claim(s, key);
	if (!f)
		return;
	if (!requeued) {
		/* no issue time while the origin is written: the agent's sweep
		 * takes an entry with an old one for a lost request (a stale
		 * entry of this struct has one, and a way the sweep freed may
		 * keep one for an instant) */
		f->issue_ns = 0;
		set_origin(f, rq);
	}
	f->sector = RD(direct, rq, __sector);
	f->bytes = RD(direct, rq, __data_len);
	f->issue_ns = bpf_ktime_get_ns();
}

/* A requeued request is issued again later: not a lost completion. */
static __always_inline void on_requeue(__u64 key)
{
	struct dc_blk_inflight *f = rq_lookup(key);

	if (f)
		f->issue_ns = 0;
}

static __always_inline void on_complete(struct request *rq, __u64 key, unsigned int nr_bytes,
					const bool direct)
{
	__u64 now = bpf_ktime_get_ns(), qlat = 0, dlat, start, size;
	struct dc_blk_inflight *f = rq_lookup(key);
	struct dc_blk_key k = {};
	struct dc_blk_val *v;
	__u32 op, len;
	bool final;
	bool inserted;

	if (!f || !f->issue_ns) {
		count(DC_BLK_CNT_NO_ISSUE);
		/* requeued, then ended without a new issue (its queue torn
		 * down): released, or the struct's next request would take the
		 * entry for a requeued one and inherit its origin */
		if (f && nr_bytes >= RD(direct, rq, __data_len))
			rq_release(key);
		return;
	}
	/* the tracepoint fires before the request is updated: __data_len is
	 * what remained, so a completion of all of it is the last one */
	len = RD(direct, rq, __data_len);
	final = nr_bytes >= len;
	/* the agent's own requests (filter.exclude_self), like its syscalls,
	 * and those the filters leave out: timed for nothing, counted once */
	if ((agent_tgid && f->origin.tgid == agent_tgid) || f->origin.filtered) {
		if (!final)
			return;
		if (f->origin.filtered)
			count(DC_BLK_CNT_FILTERED);
		rq_release(key);
		return;
	}
	op = rq_op(rq, direct);
	k.dev = rq_dev(rq, direct);
	k.op = op;
	k.tgid = f->origin.tgid;
	k.cgroup_id = f->origin.cgroup_id;
	dlat = now - f->issue_ns;
	/* the request's size as issued: a request completed in parts has
	 * only its last part left in __data_len by the final completion */
	size = f->bytes;
	/* the stamp never changes after allocation; the completion that
	 * follows this program reads its line for the device's statistics */
	start = RD(direct, rq, start_time_ns);
	if (start && f->issue_ns > start)
		qlat = f->issue_ns - start;
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
		rq_release(key);

	v = agg_gen_value(&k, &zero_val, &inserted);
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
	dc_add(&v->size_hist[dc_hist_slot(size, DC_SIZE_SLOTS)], 1);
}

SEC("tp_btf/block_bio_queue")
int BPF_PROG(dc_bio_queue_btf, struct bio *bio)
{
	dc_run();
	on_bio_queue(bio, ctx_addr(ctx, 0), true);
	return 0;
}

/* A bio split to the queue's limits: the front part goes on as a new bio,
 * which block_bio_queue never sees (the part left is resubmitted, already
 * traced), and starts its own request. The split runs in the submitting
 * context, as the queueing did, and the part inherits the parent's blkcg:
 * the same origin. */
SEC("tp_btf/block_split")
int BPF_PROG(dc_bio_split_btf, struct bio *bio)
{
	dc_run();
	on_bio_queue(bio, ctx_addr(ctx, 0), true);
	return 0;
}

SEC("tp_btf/block_rq_issue")
int BPF_PROG(dc_rq_issue_btf, struct request *rq)
{
	dc_run();
	on_issue(rq, ctx_addr(ctx, 0), true);
	return 0;
}

SEC("tp_btf/block_rq_requeue")
int BPF_PROG(dc_rq_requeue_btf, struct request *rq)
{
	dc_run();
	on_requeue(ctx_addr(ctx, 0));
	return 0;
}

SEC("tp_btf/block_rq_complete")
int BPF_PROG(dc_rq_complete_btf, struct request *rq, int error, unsigned int nr_bytes)
{
	dc_run();
	on_complete(rq, ctx_addr(ctx, 0), nr_bytes, true);
	return 0;
}

SEC("raw_tp/block_bio_queue")
int BPF_PROG(dc_bio_queue_raw, struct bio *bio)
{
	dc_run();
	on_bio_queue(bio, ctx[0], false);
	return 0;
}

SEC("raw_tp/block_split")
int BPF_PROG(dc_bio_split_raw, struct bio *bio)
{
	dc_run();
	on_bio_queue(bio, ctx[0], false);
	return 0;
}

SEC("raw_tp/block_rq_issue")
int BPF_PROG(dc_rq_issue_raw, struct request *rq)
{
	dc_run();
	on_issue(rq, ctx[0], false);
	return 0;
}

SEC("raw_tp/block_rq_requeue")
int BPF_PROG(dc_rq_requeue_raw, struct request *rq)
{
	dc_run();
	on_requeue(ctx[0]);
	return 0;
}

SEC("raw_tp/block_rq_complete")
int BPF_PROG(dc_rq_complete_raw, struct request *rq, int error, unsigned int nr_bytes)
{
	dc_run();
	on_complete(rq, ctx[0], nr_bytes, false);
	return 0;
}

DC_SEC_LICENSE;

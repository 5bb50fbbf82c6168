/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Types shared by bpf/block.bpf.c and the agent: block requests aggregated
 * per window by (device, operation, originating process, cgroup).
 */
#ifndef DATACRUMBS_BLOCK_H
#define DATACRUMBS_BLOCK_H

#ifndef __bpf__
#include <linux/types.h>
#endif

#include "datacrumbs/syscall.h" /* histogram sizes */

enum dc_blk_op {
	DC_BLK_READ = 0,
	DC_BLK_WRITE = 1,
	DC_BLK_FLUSH = 2,
	DC_BLK_DISCARD = 3,
	DC_BLK_OTHER = 4,
	DC_BLK_OP_MAX = 5,
};

/*
 * tgid 0 means the request was not submitted by a user process: writeback,
 * journal and other kernel threads. Its cgroup is still the page owner's
 * when the kernel tracks it (cgroup writeback), so a job's deferred writes
 * are attributed to the job's cgroup, if not to a process.
 */
struct dc_blk_key {
	__u64 cgroup_id;
	__u32 dev; /* kernel dev_t: major << 20 | minor */
	__u32 tgid;
	__u32 op; /* enum dc_blk_op */
	__u32 pad;
};

/* Request count = sum of dlat_hist (every completed request lands there). */
struct dc_blk_val {
	__u64 bytes;
	__u64 queue_ns;	 /* start -> issue, summed (struct dc_blk_inflight) */
	__u64 device_ns; /* issue -> completion, summed */
	__u32 qlat_hist[DC_LAT_SLOTS];
	__u32 dlat_hist[DC_LAT_SLOTS];
	__u32 size_hist[DC_SIZE_SLOTS];
} __attribute__((aligned(8)));

/* Where a request came from, remembered from its first bio's submission. */
struct dc_blk_origin {
	__u64 cgroup_id;
	__u32 tgid;
	__u32 tid;	/* the submitting thread, for trace events (0 for kernel threads) */
	__u16 filtered; /* left out by filter.*: its completion is not counted */
	/* the trace policy for the submitter, decided where its task is known:
	 * -1 not traced, 0 only if slow, DC_TEV_FULL a fully traced workload */
	__s16 trace;
	__u32 when; /* in the bio table: submitted at (jiffies, low 32 bits) */
};

/*
 * A request in flight, from its issue. Its queue time runs from the
 * kernel's own start stamp (rq->start_time_ns, where iostat's await
 * begins: taken when the request is allocated, if the device keeps I/O
 * statistics or has a scheduler) to the issue, so no program runs at
 * insert; 0 where the kernel stamped nothing.
 */
struct dc_blk_inflight {
	__u64 issue_ns;
	__u64 sector; /* at issue, for trace events */
	__u64 bytes;  /* at issue: the request's whole size */
	struct dc_blk_origin origin;
};

/*
 * The two direct-mapped tables of bpf/block.bpf.c: a set is chosen by the
 * pointer (bio or request), keeping neighbours in neighbouring sets
 * (ptr_set), and holds two ways, a bio's in one
 * cache line, a request's in one line each (aligned: a way across two
 * lines costs two misses). A way is free while its tag is 0. Sizes (sets, a power of two) are
 * set before load from maps.block_bio_slots and block_request_slots.
 */
struct dc_blk_bio_way {
	__u64 bio; /* tag */
	struct dc_blk_origin o;
};

struct dc_blk_bio_set {
	struct dc_blk_bio_way way[2];
};

struct dc_blk_rq_way {
	__u64 rq; /* tag */
	struct dc_blk_inflight f;
} __attribute__((aligned(64)));

struct dc_blk_rq_set {
	struct dc_blk_rq_way way[2];
};

enum dc_blk_counter {
	DC_BLK_CNT_AGG_FULL = 0,  /* key did not fit: counted in blk_overflow */
	DC_BLK_CNT_NO_ISSUE = 1,  /* completion without its issue (in flight at start) */
	DC_BLK_CNT_RQ_FULL = 2,	  /* in-flight map full: request not timed */
	DC_BLK_CNT_NO_ORIGIN = 3, /* issue without a known bio origin: attributed to the issuer */
	/* a request issued whose completion the kernel never reported (its
	 * struct was reused, or the agent swept it after 30 s): not counted */
	DC_BLK_CNT_UNSEEN = 4,
	DC_BLK_CNT_FILTERED = 5, /* requests of processes (cgroups) left out by filter.* */
	/* requests whose set in the request table was taken: timed in the
	 * spare hash instead (not a loss; a sign request_slots is small) */
	DC_BLK_CNT_RQ_SPILLED = 6,
	DC_BLK_CNT_MAX = 7,
};

#endif

// SPDX-License-Identifier: GPL-2.0
/*
 * io_uring: every request timed from its submission to its completion and
 * counted, per window, under the process and cgroup that submitted it and
 * its opcode. A read that a ring completes later on an io-wq worker, or
 * that an SQPOLL thread submitted, is thereby the submitting process's,
 * as a read(2) would be.
 *
 * Submission is remembered by the request's address (struct io_kiocb *),
 * which the kernel passes to both tracepoints; requests completed inline
 * during io_uring_enter() pass both as well. Completions without a request
 * (req NULL: CQEs posted for a multishot request's intermediate results)
 * and zero-copy send notifications have no submission of their own and are
 * not counted.
 *
 * Mechanisms: tp_btf (the completion's CQE as a typed pointer, which
 * kernels after 6.8 pass), else the classic tracepoints (5.19 and later:
 * the first kernels whose completion event names the request).
 */
#include "dc_vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "datacrumbs/hist.h"
#include "datacrumbs/uring.h"
#include "common.bpf.h"
#include "filter.bpf.h"

/* io_uring UAPI CQE flags */
#define CQE_F_MORE  (1U << 1) /* more CQEs will follow for this request */
#define CQE_F_NOTIF (1U << 3) /* a zero-copy send's buffer-release notification */

/* always false: see probe-uring.c for why updates are atomic */
const volatile bool plain_updates = false;
const volatile __u32 agent_tgid = 0;

DC_WINDOW_MAP(agg_gen, struct dc_uring_key, struct dc_uring_val);

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, DC_URING_INFLIGHT_MAX);
	__type(key, __u64);
	__type(value, struct dc_uring_inflight);
} inflight SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct dc_uring_val);
} ur_overflow SEC(".maps");

DC_COUNTERS(ur_counters, DC_UR_CNT_MAX);

static const struct dc_uring_val zero_val;

static __always_inline void submit(void *req, __u8 opcode)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct dc_uring_inflight in = {};
	__u64 key = (__u64)req;

	/* an SQPOLL or io-wq thread is a thread of the ring owner's process:
	 * its tgid and cgroup are the submitter's */
	in.tgid = task->tgid;
	if (in.tgid == agent_tgid)
		return;
	/* not remembered: the in-flight LRU stays for the requests counted */
	if (dc_filtered(task)) {
		dc_count(&ur_counters, DC_UR_CNT_FILTERED);
		return;
	}
	in.ts = bpf_ktime_get_ns();
	in.cgroup_id = dc_task_cgroup_id(task);
	in.opcode = opcode;
	if (bpf_map_update_elem(&inflight, &key, &in, BPF_ANY))
		dc_count(&ur_counters, DC_UR_CNT_INFLIGHT_FULL);
}

static __always_inline void complete(void *req, __s32 res, __u32 cflags)
{
	struct dc_uring_key k = {};
	struct dc_uring_inflight *in;
	struct dc_uring_val *v;
	__u64 key = (__u64)req, now = bpf_ktime_get_ns(), lat;
	__u32 zero = 0;
	bool inserted;

	if (!req || (cflags & CQE_F_NOTIF))
		return;
	in = bpf_map_lookup_elem(&inflight, &key);
	if (!in) {
		/* the agent's own requests and filtered ones were never
		 * remembered; completions run in the submitter's process (its
		 * task work, its io-wq or SQPOLL threads), so it can tell */
		if ((__u32)(bpf_get_current_pid_tgid() >> 32) != agent_tgid &&
		    !dc_filtered(bpf_get_current_task_btf()))
			dc_count(&ur_counters, DC_UR_CNT_NO_SUBMIT);
		return;
	}
	lat = now - in->ts;
	k.cgroup_id = in->cgroup_id;
	k.tgid = in->tgid;
	k.opcode = in->opcode;
	/* a multishot request stays in flight: its next CQE is timed from this
	 * one, so time_ns sums to the request's life without overlap */
	if (cflags & CQE_F_MORE)
		in->ts = now;
	else
		bpf_map_delete_elem(&inflight, &key);

	v = agg_gen_value(&k, &zero_val, &inserted);
	if (!v) {
		dc_count(&ur_counters, DC_UR_CNT_AGG_FULL);
		v = bpf_map_lookup_elem(&ur_overflow, &zero);
		if (!v)
			return;
	}
	dc_add(&v->time_ns, lat);
	dc_add(&v->lat_hist[dc_hist_slot(lat, DC_LAT_SLOTS)], 1);
	if (res < 0)
		dc_add(&v->errors, 1);
	else if (k.opcode < 64 && (DC_URING_BYTES_OPS & (1ULL << k.opcode)))
		dc_add(&v->bytes, (__u64)res);
}

SEC("tp_btf/io_uring_submit_req")
int BPF_PROG(dc_ur_submit_btf, struct io_kiocb *req)
{
	dc_run();
	submit(req, req->opcode);
	return 0;
}

/* Up to 6.8 the third argument was the user_data, a scalar: the verifier
 * refuses the dereference and the classic tracepoint takes over. */
SEC("tp_btf/io_uring_complete")
int BPF_PROG(dc_ur_complete_btf, struct io_ring_ctx *ring, void *req, struct io_uring_cqe *cqe)
{
	dc_run();
	complete(req, cqe->res, cqe->flags);
	return 0;
}

SEC("tracepoint/io_uring/io_uring_submit_req")
int dc_ur_submit_tp(struct trace_event_raw_io_uring_submit_req *ctx)
{
	dc_run();
	submit(BPF_CORE_READ(ctx, req), BPF_CORE_READ(ctx, opcode));
	return 0;
}

/* the same event before its rename to io_uring_submit_req (6.3) */
SEC("tracepoint/io_uring/io_uring_submit_sqe")
int dc_ur_submit_sqe_tp(struct trace_event_raw_io_uring_submit_sqe *ctx)
{
	dc_run();
	submit(BPF_CORE_READ(ctx, req), BPF_CORE_READ(ctx, opcode));
	return 0;
}

SEC("tracepoint/io_uring/io_uring_complete")
int dc_ur_complete_tp(struct trace_event_raw_io_uring_complete *ctx)
{
	dc_run();
	complete(BPF_CORE_READ(ctx, req), BPF_CORE_READ(ctx, res), BPF_CORE_READ(ctx, cflags));
	return 0;
}

DC_SEC_LICENSE;

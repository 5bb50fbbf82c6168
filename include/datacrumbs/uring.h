/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Types shared by bpf/uring.bpf.c and the agent: io_uring requests timed from
 * submission to completion and aggregated per window by (process, cgroup,
 * opcode), so asynchronous I/O is attributed like the synchronous calls.
 */
#ifndef DATACRUMBS_URING_H
#define DATACRUMBS_URING_H

#ifndef __bpf__
#include <linux/types.h>
#endif

#include "datacrumbs/syscall.h" /* DC_LAT_SLOTS */

/*
 * Opcode numbers are io_uring's UAPI (include/uapi/linux/io_uring.h), fixed
 * once released; the BPF side cannot include that header next to its own
 * kernel types, so the few it tests are spelled here (agent/uring-ops.c
 * checks them against the header at compile time).
 */
#define DC_URING_OP_READV	 1
#define DC_URING_OP_WRITEV	 2
#define DC_URING_OP_READ_FIXED	 4
#define DC_URING_OP_WRITE_FIXED	 5
#define DC_URING_OP_READ	 22
#define DC_URING_OP_WRITE	 23
#define DC_URING_OP_READV_FIXED	 60 /* 6.15 */
#define DC_URING_OP_WRITEV_FIXED 61 /* 6.15 */

/* Opcodes whose result is a byte count of file data: the read/write family.
 * Sends and receives are network I/O and count without bytes. */
#define DC_URING_BYTES_OPS                                                      \
	((1ULL << DC_URING_OP_READV) | (1ULL << DC_URING_OP_WRITEV) |           \
	 (1ULL << DC_URING_OP_READ_FIXED) | (1ULL << DC_URING_OP_WRITE_FIXED) | \
	 (1ULL << DC_URING_OP_READ) | (1ULL << DC_URING_OP_WRITE) |             \
	 (1ULL << DC_URING_OP_READV_FIXED) | (1ULL << DC_URING_OP_WRITEV_FIXED))

/* The kernel keeps the opcode in a u8: 256 names cover every possible value. */
#define DC_URING_OP_MAX 256

/*
 * Requests remembered between submission and completion, node-wide (an LRU:
 * a request whose completion never comes, IOSQE_CQE_SKIP_SUCCESS or a CQ
 * overflow, is evicted by newer ones instead of filling the map). 16384
 * covers 16 rings of NVMe queue depth 1024 in flight at once; beyond, the
 * oldest are evicted and their completions counted as without submission.
 */
#define DC_URING_INFLIGHT_MAX 16384

struct dc_uring_key {
	__u64 cgroup_id;
	__u32 tgid;
	__u16 opcode;
	__u16 pad;
};

/* No count field: the number of completions is the sum of lat_hist. */
struct dc_uring_val {
	__u64 errors;  /* res < 0 */
	__u64 bytes;   /* res >= 0 of DC_URING_BYTES_OPS */
	__u64 time_ns; /* submission to completion, summed */
	__u32 lat_hist[DC_LAT_SLOTS];
} __attribute__((aligned(8)));

/* What submission leaves for completion, keyed by the request's address. */
struct dc_uring_inflight {
	__u64 ts; /* bpf_ktime_get_ns() at submission */
	__u64 cgroup_id;
	__u32 tgid; /* the submitter's; an SQPOLL thread belongs to its process */
	__u8 opcode;
	__u8 pad[3];
};

enum dc_uring_counter {
	DC_UR_CNT_AGG_FULL = 0,	     /* key did not fit: counted in ur_overflow */
	DC_UR_CNT_NO_SUBMIT = 1,     /* completion without its submission: not counted */
	DC_UR_CNT_INFLIGHT_FULL = 2, /* submission not remembered: its completion is lost */
	DC_UR_CNT_FILTERED = 3,	     /* submissions of processes left out by filter.* */
	DC_UR_CNT_MAX = 4,
};

#endif

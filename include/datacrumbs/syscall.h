/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Types shared by bpf/syscall.bpf.c and the agent: the per-window aggregation
 * key and value, the entry stash and the drop counters.
 *
 * Every struct here crosses the kernel/user boundary: fixed-width fields,
 * explicit padding, no pointers. DC_SYSCALL_ABI changes whenever a layout
 * does: the agent embeds its object (a skeleton), so the two always agree,
 * and the number dates a layout for a reader of the maps from outside.
 */
#ifndef DATACRUMBS_SYSCALL_H
#define DATACRUMBS_SYSCALL_H

#ifdef __bpf__
/* the BPF side gets __u64 and friends from its kernel type header */
#else
#include <linux/types.h>
#endif

#include "datacrumbs/ops.h"
#include "datacrumbs/file.h"
#include "datacrumbs/slotmap.h"

/* 2: dc_proc gained uid and exe; 3: DC_CNT_FILTERED; 4: dc_stash stack
 * fields; 5: dc_stash file hints; 6: dc_proc start_ns */
#define DC_SYSCALL_ABI 6

/*
 * Syscall numbers the BPF side can map to an operation. 512 covers every
 * x86_64 and arm64 number in use (x86_64 tops out near 470 in 6.x); a larger
 * number is not an I/O call we know and is ignored at the first compare.
 */
#define DC_NR_MAX 512

/*
 * Latency histogram: slot 0 holds 0 ns, slot i >= 1 holds [2^(i-1), 2^i) ns.
 * 40 slots reach 2^39 ns (about 9 minutes); anything slower lands in the
 * last slot. Size histogram: the same scheme in bytes; 34 slots reach
 * 2^33 (8 GiB), more than one call can move on Linux (MAX_RW_COUNT is just
 * under 2 GiB). Slots are 32 bits: one CPU cannot make 2^32 calls in a
 * window of at most DC_WINDOW_MAX_SEC, so they cannot wrap.
 */
#define DC_LAT_SLOTS	  40
#define DC_SIZE_SLOTS	  34
#define DC_WINDOW_MAX_SEC 300

struct dc_agg_key {
	__u64 cgroup_id;
	__u32 tgid;
	__u16 op; /* enum dc_op */
	__u16 pad;
};

/* No count field: the number of calls is the sum of lat_hist, which every
 * call lands in, so the hot path saves one update. */
struct dc_agg_val {
	__u64 errors;
	__u64 bytes;
	__u64 time_ns;
	__u32 lat_hist[DC_LAT_SLOTS];
	__u32 size_hist[DC_SIZE_SLOTS];
	/* sampled traces (bpf/trace.bpf.h): each call is exactly one of these
	 * when traces are on, so count = kept + sampled out + dropped */
	__u32 tr_kept, tr_out, tr_drop;
	__u32 pad;
} __attribute__((aligned(8)));

/* Slot hints per thread: the common loops mix a handful of ops. */
#define DC_STASH_HINTS	    8
#define DC_STASH_FILE_HINTS 4

/* What sys_enter leaves for sys_exit, one per thread. */
struct dc_stash {
	__u64 ts;   /* bpf_ktime_get_ns() at entry; 0 = consumed */
	__u64 size; /* the size argument for DC_SZ_ARG* ops */
	__u32 op;
	__u32 filtered;		/* the entry was left out by filter.*: its exit returns quietly */
	struct dc_file_stash f; /* the file layer's part (bpf/file.bpf.h) */
	__u32 tr_seen;		/* traces: this thread's 1-in-N generator (dc_draw) */
	__u32 stk_seen;		/* stacks: the same, its own */
	__s32 kstack;		/* stacks: kernel stack id at the first switch-out, or a mark */
	__u32 kseq;		/* stacks: generation kstack was captured in */
	__u32 stk_flags;	/* stacks: DC_STK_MARK (kept at exit), DC_STK_WATCH (capture) */
	__u32 restarting; /* the call in flight returned a restart code: kept for its restart */
	__u32 arg0;	  /* its first argument (an fd, mostly): a restart repeats it */
	__u32 pad3;
	/* the source of a copy (DC_FK_COPY, DC_FK_SENDFILE): read only then */
	struct dc_file_stash src;
	/* where this thread's (cgroup, process, op) keys live in the agg slot
	 * map, by op modulo DC_STASH_HINTS: the exit of a call whose hint holds
	 * skips the index lookup. All hints are for the cgroup hint_cg. */
	__u64 hint_cg;
	struct dc_slot_hint hints[DC_STASH_HINTS];
	/* the same for the file slot map, by (inode ^ device) modulo 4 */
	struct dc_file_hint file_hints[DC_STASH_FILE_HINTS];
};

/* Process identity captured in the kernel when a process first shows up in a
 * window, so the comm survives a process that exits before the drain. */
#define DC_COMM_LEN 16
/* An executable's base name (a dentry name) may be NAME_MAX (255) bytes; 64
 * holds the usual ones and keeps the map (maps.max_procs entries) small. */
#define DC_EXE_LEN 64
struct dc_proc {
	char comm[DC_COMM_LEN]; /* the thread-group leader's comm */
	char exe[DC_EXE_LEN];	/* base name of the executable, truncated; "" if none */
	__u32 uid;		/* the leader's real uid in the initial user namespace */
	__u32 seq;		/* the window it was noted in (bpf/syscall.bpf.c proc_note) */
	/* the leader's start_boottime (ns since boot): with the pid, one
	 * process, where the pid alone may name a later one */
	__u64 start_ns;
};

/*
 * Monotonic per-CPU counters (never reset; user space publishes deltas).
 * Each names a place where an event could have been lost or misattributed.
 */
enum dc_syscall_counter {
	DC_CNT_AGG_FULL =
	    0, /* key did not fit in the window map: counted in agg_overflow instead */
	DC_CNT_STASH_FAIL = 1, /* no room to remember the entry time: call not counted */
	DC_CNT_NO_ENTRY = 2,   /* exit seen without its entry (attached mid-call): not counted */
	DC_CNT_PROC_FAIL = 3,  /* could not record the process comm: record says "?" */
	DC_CNT_FILTERED = 4,   /* calls of processes left out by filter.*: not a loss */
	/* a call a signal interrupted with a restart code whose thread then
	 * made another call instead (EINTR reached it): not counted */
	DC_CNT_NOT_RESTARTED = 5,
	/* calls of 32-bit code (ia32, or int 0x80 from 64-bit code): their
	 * numbers are another table's, so they are counted, not attributed */
	DC_CNT_COMPAT = 6,
	DC_CNT_MAX = 7,
};

#endif

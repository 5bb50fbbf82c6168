/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Types shared by the function-level probe families (bpf/uprobe.bpf.c for
 * libraries, bpf/vfs.bpf.c for kernel functions) and the agent: calls
 * aggregated per window by (process, cgroup, function).
 */
#ifndef DATACRUMBS_FUNC_H
#define DATACRUMBS_FUNC_H

#ifndef __bpf__
#include <linux/types.h>
#endif

#include "datacrumbs/syscall.h" /* histogram sizes */

/* Nesting of probed library calls in one thread (H5Dwrite -> MPI_File_write
 * -> pwrite): deeper calls are counted in DC_FN_CNT_TOO_DEEP, not timed. */
#define DC_FN_DEPTH 8

struct dc_fn_key {
	__u64 cgroup_id;
	__u32 tgid;
	__u32 func; /* index into the agent's table of attached functions */
};

/* count = sum of lat_hist */
struct dc_fn_val {
	__u64 time_ns;
	__u64 bytes;  /* non-negative return values, for functions that return bytes */
	__u64 errors; /* negative return values, for those same functions */
	__u32 lat_hist[DC_LAT_SLOTS];
} __attribute__((aligned(8)));

/* Entry times with the function each belongs to: a return pops down to its
 * own entry, so an entry whose return was never seen (probes attached
 * mid-call, longjmp out of a library) cannot shift every later pairing. */
struct dc_fn_stack {
	__u64 ts[DC_FN_DEPTH];
	__u32 func[DC_FN_DEPTH];
	__u32 depth;
	__u32 pad;
};

enum dc_fn_counter {
	DC_FN_CNT_AGG_FULL = 0, /* key did not fit: counted in the agent record */
	DC_FN_CNT_TOO_DEEP = 1, /* nesting deeper than DC_FN_DEPTH: not timed */
	DC_FN_CNT_NO_ENTRY = 2, /* return without its entry (attached mid-call) */
	DC_FN_CNT_ORPHAN = 3,	/* entries whose return never came, dropped from the stack */
	DC_FN_CNT_FILTERED = 4, /* calls of processes left out by filter.* */
	DC_FN_CNT_MAX = 5,
};

/* The cookie of each attachment: function index, and whether its return
 * value is a byte count (read, write, pread, ...). */
#define DC_FN_COOKIE_BYTES (1ULL << 32)

#endif

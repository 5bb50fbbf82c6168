/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Types shared by bpf/uprobe.bpf.c and the agent: library calls (libc,
 * MPI-IO, HDF5, ...) aggregated per window by (process, cgroup, function).
 */
#ifndef DATACRUMBS_UPROBE_H
#define DATACRUMBS_UPROBE_H

#ifndef __bpf__
#include <linux/types.h>
#endif

#include "datacrumbs/syscall.h" /* histogram sizes */

/* Nesting of probed library calls in one thread (H5Dwrite -> MPI_File_write
 * -> pwrite): deeper calls are counted in DC_UP_CNT_TOO_DEEP, not timed. */
#define DC_UP_DEPTH 8

struct dc_up_key {
	__u64 cgroup_id;
	__u32 tgid;
	__u32 func; /* index into the agent's table of attached functions */
};

/* count = sum of lat_hist */
struct dc_up_val {
	__u64 time_ns;
	__u64 bytes;  /* non-negative return values, for functions that return bytes */
	__u64 errors; /* negative return values, for those same functions */
	__u32 lat_hist[DC_LAT_SLOTS];
} __attribute__((aligned(8)));

struct dc_up_stack {
	__u64 ts[DC_UP_DEPTH];
	__u32 depth;
	__u32 pad;
};

enum dc_up_counter {
	DC_UP_CNT_AGG_FULL = 0, /* key did not fit: counted in up_overflow */
	DC_UP_CNT_TOO_DEEP = 1, /* nesting deeper than DC_UP_DEPTH: not timed */
	DC_UP_CNT_NO_ENTRY = 2, /* return without its entry (attached mid-call) */
	DC_UP_CNT_MAX = 3,
};

/* The cookie of each attachment: function index, and whether its return
 * value is a byte count (read, write, pread, ...). */
#define DC_UP_COOKIE_BYTES (1ULL << 32)

#endif

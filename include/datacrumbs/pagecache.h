/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Types shared by bpf/pagecache.bpf.c and the agent: page-cache activity per
 * window by (process, cgroup), in pages (4 KiB on x86_64; large folios are
 * counted as the pages they hold).
 */
#ifndef DATACRUMBS_PAGECACHE_H
#define DATACRUMBS_PAGECACHE_H

#ifndef __bpf__
#include <linux/types.h>
#endif

/* tgid 0: kernel threads (kswapd evicting, writeback). */
struct dc_pc_key {
	__u64 cgroup_id;
	__u32 tgid;
	__u32 pad;
};

struct dc_pc_val {
	__u64 added_pages;   /* read into the cache: misses and readahead */
	__u64 dirtied_pages; /* first dirtied by a write */
	__u64 removed_pages; /* dropped from the cache (eviction, truncation) */
	__u64 events;
	/* I/O through mappings (docs/records.md): runs of the generic file
	 * fault handler (mm_filemap_fault) and of the fault-around
	 * (mm_filemap_map_pages); 0 where the kernel lacks these tracepoints
	 * (6.1 does). 32 bits: a fault costs a microsecond or more, so a
	 * window holds far fewer, and the value stays 40 bytes a key and CPU. */
	__u32 file_faults;
	__u32 fault_arounds;
};

enum dc_pc_counter {
	DC_PC_CNT_AGG_FULL = 0, /* key did not fit: counted in pc_overflow */
	DC_PC_CNT_FILTERED = 1, /* events of processes left out by filter.* */
	DC_PC_CNT_MAX = 2,
};

#endif

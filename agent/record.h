/* SPDX-License-Identifier: Apache-2.0 */
#ifndef DC_RECORD_H
#define DC_RECORD_H

#include <stdint.h>

#include "datacrumbs/pagecache.h"
#include "datacrumbs/syscall.h"
#include "datacrumbs/func.h"
#include "datacrumbs/uring.h"
#include "blkvec.h"
#include "featvec.h"
#include "jobid.h"
#include "filevec.h"
#include "json.h"
#include "traces.h"
#include "stacks.h"
#include "window.h"

/* Schema of every record this agent writes; docs/records.md. Bump on any
 * incompatible change (a field removed, renamed or re-meant). */
#define DC_RECORD_SCHEMA 1

enum dc_rec_type {
	DC_REC_FEATURES = 0,
	DC_REC_AGENT = 1,
	DC_REC_DEVICE = 2,
	DC_REC_FILE = 3,     /* one (process, file) in one window */
	DC_REC_FILENAME = 4, /* dictionary: fhash -> path */
	DC_REC_TRACE = 5,    /* a window's sampled trace events: one zstd frame of NDJSON */
	DC_REC_STACKS = 6,   /* one process's stack-attributed profile in one window */
	DC_REC_MAX,
};

const char *record_type_name(enum dc_rec_type t);

struct dc_record_ctx {
	const char *host;
	const char *run_id; /* random per agent start: (host, run, window) identifies a window */
	const char *boot_id;
	const struct dc_window *w;
};

struct dc_proc_ident {
	uint32_t pid;
	const char *comm;
	uint64_t cgroup_id;
	const char *cgroup; /* path below the cgroup2 root, "" if unresolved */
	bool uid_known;	    /* uid is left out of the record when the kernel did not say */
	uint32_t uid;
	const char *exe;	    /* NULL: "" */
	uint64_t start_ns;	    /* 0: unknown, left out of the record */
	const struct dc_jobid *job; /* parsed from cgroup; NULL: nothing found */
};

/* One probed library function's activity for one process in the window. */
struct dc_lib_stat {
	const char *feature; /* "<function>-<category>" */
	uint64_t count, time_ns, bytes, errors;
	const uint64_t *lat; /* [DC_LAT_SLOTS] */
};

/* The layers a features record can lack, named as in docs/records.md's
 * "lacks" (the agent record's probes[] names). */
enum dc_lacks_bit {
	DC_LACKS_FILES,
	DC_LACKS_BLOCK,
	DC_LACKS_PAGE_CACHE,
	DC_LACKS_IO_URING,
	DC_LACKS_LIBRARIES,
	DC_LACKS_VFS,
	DC_LACKS_MAX,
};

const char *lacks_name(enum dc_lacks_bit l);

/* What the other layers saw of one process in the window; NULL members
 * for layers that are off. */
struct dc_layers {
	/* 1u << dc_lacks_bit: configured layers not running this window (the
	 * CPU budget's steps, a family that did not start again, or one the
	 * kernel refused). Their members are missing, which a consumer must
	 * not read as no activity. */
	unsigned lacks;
	/* the window's events that found a map full and program runs the
	 * kernel skipped, node-wide (the agent record's losses.map_full and
	 * recursion_misses): whose counts they were is not known, so any
	 * process's record may be short of them */
	uint64_t lost_map_full, lost_recursion;
	const struct dc_blk_sum *blk; /* [DC_BLK_OP_MAX] */
	const struct dc_pc_val *pc;   /* page cache, NULL also when no activity */
	bool pc_on;
	uint64_t page_size;
	bool libs_on; /* a function-level family is on (libs may still be empty) */
	const struct dc_lib_stat *libs;
	size_t n_libs;
	bool uring_on;			 /* the io_uring layer is on (uring may still be empty) */
	const struct dc_lib_stat *uring; /* per opcode: feature is the opcode's name */
	size_t n_uring;
	bool files_on;
	const struct dc_file_sum *access; /* the process's files summed; NULL: none */
};

/* One feature-vector record (one JSON line, newline included). */
void record_features(struct dc_buf *b, const struct dc_record_ctx *ctx,
		     const struct dc_proc_ident *id, const struct dc_agg_entry *e, size_t n,
		     const struct dc_layers *lay);

/* One device record: e[0..n) are the window's entries of one device, sorted
 * by op (blk_sort_by_dev). */
void record_device(struct dc_buf *b, const struct dc_record_ctx *ctx, const char *name,
		   const struct dc_blk_entry *e, size_t n);

struct dc_probe_report {
	const char *name;
	const char *mechanism; /* "" when not attached */
	const char *detail;    /* why not, or what was tried */
};

struct dc_agent_stats {
	const char *version;
	uint64_t events;	       /* calls counted in this window, attributed or not */
	uint64_t records;	       /* feature records written for this window */
	uint64_t keys;		       /* (process, cgroup, op) keys drained */
	uint64_t counters[DC_CNT_MAX]; /* deltas of the kernel's loss counters */
	uint64_t recursion_misses;     /* syscall programs the kernel skipped */
	const struct dc_agg_entry *unattributed; /* per-op calls that overflowed the map */
	size_t n_unattributed;
	uint64_t flip_us, drain_us, encode_us;
	uint64_t cpu_user_us, cpu_sys_us; /* agent user-space CPU in this window */
	double cpu_share;		  /* (user + sys) / window wall time */
	uint64_t bpf_run_ns;		  /* every program's run time in the window */
	const char *bpf_stats;		  /* how run times are known (selfcost.h) */
	double bpf_share, total_share;	  /* fractions of one core */
	double node_share;		  /* total_share over the online CPUs */
	uint64_t rss_kib, rss_shared_kib;
	uint64_t max_keys;
	const char *map_layout;
	/* the syscall slot map (agent/slotmap.h) */
	uint64_t slots_in_use, slots_reclaimed, slots_reclaimed_exited;
	const struct dc_probe_report *probes;
	size_t n_probes;
	bool block; /* block layer on */
	uint64_t blk_counters[DC_BLK_CNT_MAX];
	uint64_t blk_recursion_misses;
	uint64_t blk_inflight_at_stop; /* final window only: issued, not completed */
	bool pagecache;
	uint64_t pc_counters[DC_PC_CNT_MAX];
	uint64_t pc_recursion_misses;
	struct dc_pc_val pc_kernel;	  /* kernel threads' activity (eviction, writeback) */
	struct dc_pc_val pc_unattributed; /* activity whose key did not fit */
	uint64_t pc_page_size;		  /* to turn their pages into bytes */
	bool libraries;
	uint64_t up_counters[DC_FN_CNT_MAX];
	bool vfs;
	uint64_t vfs_counters[DC_FN_CNT_MAX];
	/* catalogued functions run in interrupt context, no process's */
	const struct dc_lib_stat *vfs_interrupts;
	size_t n_vfs_interrupts;
	bool uring;
	uint64_t ur_counters[DC_UR_CNT_MAX];
	uint64_t ur_recursion_misses;
	struct dc_lib_stat ur_unattributed; /* sums only: feature and lat unused */
	bool traces;
	uint64_t tr_seen, tr_kept, tr_out, tr_drop; /* this window's calls, by outcome */
	struct traces_window tr_window;		    /* what the window's batches held */
	bool files;
	uint64_t file_counters[DC_FILE_CNT_MAX];
	uint64_t file_names, file_names_not_kept;
	uint64_t file_max_keys, file_slots_in_use, file_slots_reclaimed,
	    file_slots_reclaimed_exited;
	const struct dc_file_sum *file_unattributed;
	const struct dc_blk_entry *blk_unattributed; /* [DC_BLK_OP_MAX] */
	const struct stacks_drain *stacks;	     /* NULL: stack profiles off */
	/* writes the members of the "sinks" object: each sink reports itself */
	void (*sinks)(struct dc_json *j, void *opaque);
	void *sinks_opaque;
	/* writes the self-measurement: layers, programs, maps, losses, budget */
	void (*self)(struct dc_json *j, void *opaque);
	void *self_opaque;
};

/* One (process, file) record; fhash is the 16-digit hex hash, "" if the
 * file's name never arrived (its dev and ino still identify it). */
void record_file(struct dc_buf *b, const struct dc_record_ctx *ctx, const struct dc_proc_ident *id,
		 const struct dc_file_entry *e, const char *fhash);
/* A dictionary record naming fhash. */
void record_filename(struct dc_buf *b, const struct dc_record_ctx *ctx, const char *fhash,
		     const char *path, bool truncated, uint32_t dev, uint64_t ino, uint32_t igen);

void record_agent(struct dc_buf *b, const struct dc_record_ctx *ctx,
		  const struct dc_agent_stats *s);

/* One stacks record: rows (and objs) of one process, from stacks_flip_and_drain. */
void record_stacks(struct dc_buf *b, const struct dc_record_ctx *ctx,
		   const struct dc_proc_ident *id, const struct stack_row *rows, size_t n,
		   const struct stack_object *objs, size_t n_objs);

#endif

/* SPDX-License-Identifier: Apache-2.0 */
#ifndef DC_CONFIG_H
#define DC_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define DC_CONFIG_DEFAULT_PATH "/etc/datacrumbs.conf"
#define DC_STR_MAX	       1024

/* A list of integers (CFG_INTLIST), each within its row's min and max. 64
 * is far more uids than an operator lists by hand; more is refused. */
#define DC_INTLIST_MAX 64
struct dc_intlist {
	int64_t v[DC_INTLIST_MAX];
	uint32_t n;
};

/* One library to probe with uprobes (probes.libraries). */
#define DC_MAX_LIBS 16
struct dc_lib_cfg {
	char path[512];
	char category[64];    /* the seeds' category: "libc", "mpiio", "hdf5" */
	char functions[4096]; /* fnmatch patterns, one per line */
	char bytes[1024];     /* functions whose return value is bytes (or -1 on error) */
};

struct dc_config {
	double interval;    /* seconds per window */
	bool align_windows; /* windows end on the interval's multiples, wall clock */
	char host[256];	    /* "" = gethostname() */
	char log_level[16];
	char output[DC_STR_MAX]; /* JSON-lines file; "-" = stdout */
	int64_t max_keys;	 /* (process, cgroup, op) keys per window */
	char map_layout[16];	 /* auto | percpu | shared */
	int64_t map_memory_mib;	 /* auto picks percpu while both windows fit in this */
	char map_updates[16];	 /* auto | atomic */
	int64_t max_procs;
	int64_t max_threads;
	char syscall_mechanism[16]; /* auto | tp_btf | raw_tp | tracepoint */
	char syscall_stash[16];	    /* auto | task_storage | hash */
	bool block_enable;
	char block_mechanism[16]; /* auto | tp_btf | raw_tp */
	int64_t block_max_keys;
	int64_t block_bio_slots;     /* rounded up to an even power of two */
	int64_t block_request_slots; /* the same */
	bool pagecache_enable;
	char pagecache_mechanism[16]; /* auto | tp_btf | tracepoint */
	bool pagecache_faults;
	int64_t pagecache_max_keys;
	bool uring_enable;
	char uring_mechanism[16]; /* auto | tp_btf | tracepoint */
	int64_t uring_max_keys;
	struct dc_lib_cfg libs[DC_MAX_LIBS];
	int n_libs;
	int64_t library_max_keys;
	int64_t library_max_functions;
	char library_mechanism[16]; /* auto | uprobe_multi | uprobe */
	bool vfs_enable;
	char vfs_mechanism[16]; /* auto | fentry | kprobe | tracepoint */
	char vfs_categories[256];
	int64_t vfs_max_keys;
	bool files_enable;
	char files_granularity[16]; /* process | file */
	char files_reads[16];	    /* auto | direct | probe */
	int64_t files_max_keys;
	int64_t files_max_positions;
	int64_t files_ring_kib;
	double budget_cpu, budget_period, budget_recover_below;
	bool self_bpf_stats;
	double self_bpf_stats_duty;
	double self_map_scan_sec;
	bool traces_enable;
	int64_t traces_ring_mib;
	int64_t traces_flush_ms;
	int64_t traces_batch_max_mib;
	int64_t traces_zstd_level;
	int64_t traces_one_in_n;
	double traces_slow_ms;
	double traces_rate; /* events per second per node; 0 = no bucket */
	int64_t traces_burst;
	double traces_cgroup_rate;
	int64_t traces_cgroup_burst;
	double traces_slice_ms;
	double traces_period_s;
	char traces_full_cgroups[4096]; /* cgroup2 paths, one per line */
	char traces_dir[DC_STR_MAX];	/* "" = no local trace files */
	int64_t traces_rotate_mib;
	int64_t traces_rotate_sec;
	int64_t traces_max_mib;
	bool stacks_enable; /* probes.stacks: stack-attributed profiles (agent/stacks.c) */
	double stacks_slow_ms;
	int64_t stacks_one_in_n;
	char stacks_full_cgroups[4096]; /* cgroup2 paths, one per line */
	int64_t stacks_max_stacks;
	int64_t stacks_max_keys;
	int64_t stacks_max_symbols_mib;
	bool exclude_self;
	char filter_include_cgroups[4096]; /* cgroup2 paths, one per line */
	char filter_exclude_cgroups[4096];
	struct dc_intlist filter_include_uids;
	struct dc_intlist filter_exclude_uids;
	char filter_include_comms[1024]; /* one per line, 15 bytes at most each */
	char filter_exclude_comms[1024];
	char kafka_brokers[DC_STR_MAX]; /* "" = no Kafka */
	char kafka_topic_features[256];
	char kafka_topic_agent[256];
	char kafka_topic_traces[256];
	char kafka_topic_meta[256];
	char kafka_topic_stacks[256];
	char kafka_key[16];	     /* host | host_cgroup */
	char kafka_properties[8192]; /* "name=value" lines */
	char kafka_secrets[1024];    /* path: root-only "name=value" lines */
	/* where kafka_properties' lines from kafka_secrets begin: their values
	 * never appear in a message */
	size_t kafka_secrets_at;
	double kafka_flush_timeout; /* seconds */
	double kafka_start_timeout; /* seconds */
	char spool_dir[DC_STR_MAX];
	int64_t spool_max_mib;
	bool spool_fsync;
};

enum dc_cfg_type { CFG_FLOAT, CFG_INT, CFG_STRING, CFG_BOOL, CFG_STRLIST, CFG_INTLIST };

/* One row per key: the single definition of the configuration. */
struct dc_cfg_item {
	const char *path; /* dotted libconfig path */
	enum dc_cfg_type type;
	size_t offset;
	size_t size;	     /* string buffer size */
	const char *def;     /* default, as text */
	double min, max;     /* numbers and list elements; string lists: element lengths */
	const char *choices; /* strings: "a|b|c", NULL = free text */
	const char *help;
};

const struct dc_cfg_item *config_table(size_t *n);
void config_defaults(struct dc_config *c);
/*
 * Parse and validate a libconfig file into c (defaults first). Strict: an
 * unknown key, a wrong type or an out-of-range value fails. On failure
 * returns -EINVAL and writes "file:line: message" into err.
 */
int config_load(struct dc_config *c, const char *path, char *err, size_t errlen);
int config_load_string(struct dc_config *c, const char *text, char *err, size_t errlen);
/* Check one value against its row (used for command-line overrides too). */
int config_set(struct dc_config *c, const char *path, const char *value, char *err, size_t errlen);
void config_print_help(FILE *f);

#endif

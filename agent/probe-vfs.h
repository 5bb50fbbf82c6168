/* SPDX-License-Identifier: Apache-2.0 */
#ifndef DC_PROBE_VFS_H
#define DC_PROBE_VFS_H

struct bpf_object;

#include <stdbool.h>
#include <stdint.h>

#include "fnagg.h"

struct dc_filter;
struct traces;

/* Plain options, not the config: the VM test links this file statically. */
struct probe_vfs_opts {
	const char *mechanism; /* auto | fentry | kprobe | tracepoint */
	const char
	    *categories; /* "vfs,ext4,..." (commas, spaces or newlines); NULL: the default set */
	unsigned max_keys;
	bool percpu;
	/* plain adds (only with percpu): the kernel never preempts a BPF
	 * program (preempt.h) and maps.updates is not "atomic" */
	bool plain_updates;
	uint32_t exclude_tgid;		/* 0: trace every process, the caller included */
	const struct dc_filter *filter; /* filter.*; NULL: none */
	struct traces *traces;		/* the ring for its calls' events; NULL: none */
	int clock_fd; /* the windows' clock (winmap_prepare()); -1: its own (0 is an fd) */
};

struct probe_vfs;

/* fentry, else kprobe, else tracepoints, else -errno with every refusal in
 * detail. An unknown category or mechanism: -EINVAL, said in detail. */
int probe_vfs_new(const struct probe_vfs_opts *o, struct probe_vfs **ret, char *detail,
		  size_t detail_len);
struct probe_vfs *probe_vfs_free(struct probe_vfs *p);
const char *probe_vfs_mechanism(const struct probe_vfs *p);
const char *probe_vfs_detail(const struct probe_vfs *p);
/* "vfs_read" for DC_VFS_vfs_read; NULL past the table. */
const char *probe_vfs_func_name(uint32_t func);
/* "vfs_read-vfs", "ext4_sync_file-ext4": the seeds' column name. */
const char *probe_vfs_feature(uint32_t func);
int probe_vfs_flip_and_drain(struct probe_vfs *p, struct dc_fn_drain *res);
/* Its window map, for the close's flip of every layer at once (manager.c). */
struct winmap *probe_vfs_winmap(struct probe_vfs *p);

/* selected[DC_VFS_MAX]: the catalogued functions of the named categories. */
int probe_vfs_select(const char *categories, bool *selected, char *err, size_t errlen);

/* The family's BPF object: its programs' run times and its maps' fill. */
struct bpf_object *probe_vfs_object(const struct probe_vfs *p);

#endif

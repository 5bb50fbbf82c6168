/* SPDX-License-Identifier: Apache-2.0 */
#ifndef DC_PROBE_VFS_H
#define DC_PROBE_VFS_H

#include <stdbool.h>
#include <stdint.h>

#include "fnagg.h"

/* Plain options, not the config: the VM test links this file statically. */
struct probe_vfs_opts {
	const char *mechanism; /* auto | fentry | kprobe */
	unsigned max_keys;
	bool percpu;
	uint32_t exclude_tgid; /* 0: trace every process, the caller included */
};

struct probe_vfs;

/* fentry, else kprobe, else -errno with every refusal in detail. */
int probe_vfs_new(const struct probe_vfs_opts *o, struct probe_vfs **ret, char *detail,
		  size_t detail_len);
struct probe_vfs *probe_vfs_free(struct probe_vfs *p);
const char *probe_vfs_mechanism(const struct probe_vfs *p);
const char *probe_vfs_detail(const struct probe_vfs *p);
/* "vfs_read" for DC_VFS_vfs_read; NULL past the table. */
const char *probe_vfs_func_name(uint32_t func);
/* "vfs_read-vfs", the seeds' column name. */
const char *probe_vfs_feature(uint32_t func);
int probe_vfs_flip_and_drain(struct probe_vfs *p, struct dc_fn_drain *res);

#endif

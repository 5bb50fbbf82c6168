/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The VFS functions bpf/vfs.bpf.c times, in the seeds' "vfs" category. An
 * X-macro so that the function index (BPF key), its name and whether its
 * return value is a byte count cannot drift apart. Append only.
 */
#ifndef DATACRUMBS_VFS_H
#define DATACRUMBS_VFS_H

#define DC_VFS_FUNCS(X)       \
	X(vfs_read, 1)        \
	X(vfs_write, 1)       \
	X(vfs_readv, 1)       \
	X(vfs_writev, 1)      \
	X(vfs_iter_read, 1)   \
	X(vfs_iter_write, 1)  \
	X(vfs_open, 0)        \
	X(vfs_fsync_range, 0) \
	X(vfs_getattr, 0)     \
	X(vfs_unlink, 0)      \
	X(vfs_rename, 0)      \
	X(vfs_mkdir, 0)       \
	X(vfs_create, 0)      \
	X(vfs_fallocate, 0)   \
	X(vfs_truncate, 0)

enum dc_vfs_func {
#define DC_VFS_ENUM(name, bytes) DC_VFS_##name,
	DC_VFS_FUNCS(DC_VFS_ENUM)
#undef DC_VFS_ENUM
	    DC_VFS_MAX,
};

#endif

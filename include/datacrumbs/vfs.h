/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The kernel functions bpf/vfs.bpf.c can time: the VFS entry points and the
 * file-system families, each with the seeds' category (the "<function>-
 * <category>" feature names). An X-macro so that the function index (BPF
 * key), its name, category and whether its return value is a byte count
 * cannot drift apart.
 *
 * Entry points only, not the seeds' every helper: these run once or a few
 * times per system call, so timing them all costs a small multiple of the
 * syscall layer, where the inner helpers (per page, per block) would not.
 * The extent-status cache lookup was here and measured 132 µs of BPF time
 * per MiB of buffered ext4 writes (two timed pairs per page,
 * bench/layers_bench.py): it is left out. Indices are internal to the
 * agent (records carry names), so the list may change.
 */
#ifndef DATACRUMBS_VFS_H
#define DATACRUMBS_VFS_H

#define DC_VFS_FUNCS(X)                                         \
	X(vfs_read, vfs, 1)                                     \
	X(vfs_write, vfs, 1)                                    \
	X(vfs_readv, vfs, 1)                                    \
	X(vfs_writev, vfs, 1)                                   \
	X(vfs_iter_read, vfs, 1)                                \
	X(vfs_iter_write, vfs, 1)                               \
	X(vfs_open, vfs, 0)                                     \
	X(vfs_fsync_range, vfs, 0)                              \
	X(vfs_getattr, vfs, 0)                                  \
	X(vfs_unlink, vfs, 0)                                   \
	X(vfs_rename, vfs, 0)                                   \
	X(vfs_mkdir, vfs, 0)                                    \
	X(vfs_create, vfs, 0)                                   \
	X(vfs_fallocate, vfs, 0)                                \
	X(vfs_truncate, vfs, 0)                                 \
	X(ext4_file_read_iter, ext4, 1)                         \
	X(ext4_file_write_iter, ext4, 1)                        \
	X(ext4_buffered_write_iter, ext4, 1)                    \
	X(ext4_dio_write_iter, ext4, 1)                         \
	X(ext4_da_write_begin, ext4, 0)                         \
	X(ext4_da_write_end, ext4, 1)                           \
	X(ext4_write_begin, ext4, 0)                            \
	X(ext4_write_end, ext4, 1)                              \
	X(ext4_map_blocks, ext4, 0)                             \
	X(ext4_ext_map_blocks, ext4, 0)                         \
	X(ext4_ind_map_blocks, ext4, 0)                         \
	X(ext4_sync_file, ext4, 0)                              \
	X(ext4_writepages, ext4, 0)                             \
	X(ext4_file_open, ext4, 0)                              \
	X(ext4_lookup, ext4, 0)                                 \
	X(ext4_create, ext4, 0)                                 \
	X(ext4_unlink, ext4, 0)                                 \
	X(ext4_setattr, ext4, 0)                                \
	X(ext4_truncate, ext4, 0)                               \
	X(ext4_fallocate, ext4, 0)                              \
	X(ext4_mb_new_blocks, ext4, 0)                          \
	X(__ext4_journal_start_sb, ext4, 0)                     \
	X(__ext4_journal_stop, ext4, 0)                         \
	X(xfs_file_read_iter, xfs, 1)                           \
	X(xfs_file_write_iter, xfs, 1)                          \
	X(xfs_file_buffered_read, xfs, 1)                       \
	X(xfs_file_buffered_write, xfs, 1)                      \
	X(xfs_file_dio_read, xfs, 1)                            \
	X(xfs_file_dio_write, xfs, 1)                           \
	X(xfs_file_fsync, xfs, 0)                               \
	X(xfs_file_open, xfs, 0)                                \
	X(xfs_lookup, xfs, 0)                                   \
	X(xfs_create, xfs, 0)                                   \
	X(xfs_bmapi_write, xfs, 0)                              \
	X(xfs_itruncate_extents_flags, xfs, 0)                  \
	X(nfs_file_read, nfs, 1)                                \
	X(nfs_file_write, nfs, 1)                               \
	X(nfs_file_fsync, nfs, 0)                               \
	X(nfs_file_open, nfs, 0)                                \
	X(nfs_lookup, nfs, 0)                                   \
	X(nfs_getattr, nfs, 0)                                  \
	X(nfs_writepages, nfs, 0)                               \
	X(nfs_readahead, nfs, 0)                                \
	X(fuse_file_read_iter, fuse, 1)                         \
	X(fuse_file_write_iter, fuse, 1)                        \
	X(fuse_fsync, fuse, 0)                                  \
	X(fuse_open, fuse, 0)                                   \
	X(fuse_lookup, fuse, 0)                                 \
	X(fuse_simple_request, fuse, 0)                         \
	X(iomap_dio_rw, iomap, 1)                               \
	X(iomap_file_buffered_write, iomap, 1)                  \
	X(iomap_writepages, iomap, 0)                           \
	X(iomap_readahead, iomap, 0)                            \
	X(filemap_read, file_cache, 1)                          \
	X(filemap_get_pages, file_cache, 0)                     \
	X(generic_perform_write, page_cache, 1)                 \
	X(filemap_add_folio, page_cache, 0)                     \
	X(__filemap_get_folio, page_cache, 0)                   \
	X(filemap_write_and_wait_range, page_cache, 0)          \
	X(balance_dirty_pages_ratelimited_flags, page_cache, 0) \
	X(page_cache_sync_ra, page_cache, 0)                    \
	X(page_cache_async_ra, page_cache, 0)                   \
	X(writeback_single_inode, page_cache, 0)                \
	X(submit_bio, bio, 0)                                   \
	X(submit_bio_noacct, bio, 0)                            \
	X(blk_mq_submit_bio, bio, 0)                            \
	X(bio_endio, bio, 0)

enum dc_vfs_func {
#define DC_VFS_ENUM(name, cat, bytes) DC_VFS_##name,
	DC_VFS_FUNCS(DC_VFS_ENUM)
#undef DC_VFS_ENUM
	    DC_VFS_MAX,
};

/* The catalogued functions that may run in interrupt context, as
 * completions do: timed per interrupt level and charged to no process
 * (bpf/func.bpf.h). The others run in task context only. */
#define DC_VFS_MAY_IRQ(func) ((func) == DC_VFS_bio_endio)

/*
 * Tracepoints that cover a catalogued function where the kernel allows
 * neither fentry nor kprobes. A pair times the function (entry and exit
 * events in the same thread); a single event (no exit) only counts it, with
 * its time 0. DC_VFS_TP(function, entry "group/event", exit "group/event" or "")
 */
#define DC_VFS_TPS(X)                                                                             \
	X(ext4_sync_file, "ext4/ext4_sync_file_enter", "ext4/ext4_sync_file_exit")                \
	X(ext4_ext_map_blocks, "ext4/ext4_ext_map_blocks_enter", "ext4/ext4_ext_map_blocks_exit") \
	X(ext4_ind_map_blocks, "ext4/ext4_ind_map_blocks_enter", "ext4/ext4_ind_map_blocks_exit") \
	X(ext4_fallocate, "ext4/ext4_fallocate_enter", "ext4/ext4_fallocate_exit")                \
	X(ext4_truncate, "ext4/ext4_truncate_enter", "ext4/ext4_truncate_exit")                   \
	X(ext4_unlink, "ext4/ext4_unlink_enter", "ext4/ext4_unlink_exit")                         \
	X(ext4_da_write_begin, "ext4/ext4_da_write_begin", "")                                    \
	X(ext4_da_write_end, "ext4/ext4_da_write_end", "")                                        \
	X(ext4_write_begin, "ext4/ext4_write_begin", "")                                          \
	X(ext4_write_end, "ext4/ext4_write_end", "")                                              \
	X(ext4_writepages, "ext4/ext4_writepages", "")                                            \
	X(xfs_file_buffered_read, "xfs/xfs_file_buffered_read", "")                               \
	X(xfs_file_buffered_write, "xfs/xfs_file_buffered_write", "")                             \
	X(xfs_file_dio_read, "xfs/xfs_file_direct_read", "")                                      \
	X(xfs_file_dio_write, "xfs/xfs_file_direct_write", "")                                    \
	X(xfs_file_fsync, "xfs/xfs_file_fsync", "")                                               \
	X(xfs_itruncate_extents_flags, "xfs/xfs_itruncate_extents_start",                         \
	  "xfs/xfs_itruncate_extents_end")                                                        \
	X(fuse_simple_request, "fuse/fuse_request_send", "")                                      \
	X(iomap_dio_rw, "iomap/iomap_dio_rw_begin", "")                                           \
	X(iomap_readahead, "iomap/iomap_readahead", "")                                           \
	X(filemap_get_pages, "filemap/mm_filemap_get_pages", "")                                  \
	X(filemap_add_folio, "filemap/mm_filemap_add_to_page_cache", "")                          \
	X(page_cache_sync_ra, "readahead/page_cache_sync_ra", "")                                 \
	X(page_cache_async_ra, "readahead/page_cache_async_ra", "")                               \
	X(writeback_single_inode, "writeback/writeback_single_inode_start",                       \
	  "writeback/writeback_single_inode")

/* Categories probed when the configuration names none: the file systems'
 * entry points, not the per-page and per-bio paths. */
#define DC_VFS_DEFAULT_CATEGORIES "vfs,ext4,xfs,nfs,fuse"

#endif

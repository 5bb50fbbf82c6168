/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Types shared by bpf/file.bpf.c and the agent: file I/O per window by
 * (cgroup, process, file), with Darshan's access-pattern counters, and the
 * path events that name the files.
 *
 * A file is identified in the kernel by its inode (device, inode number,
 * generation), read from the process's own fd table at the call: whatever dup, dup2,
 * dup3, F_DUPFD, fork or exec did to the descriptor, the kernel's table is
 * what the call used, so no shadow fd table can go stale. The path is
 * resolved from the file's dentry and mount (not the string the process
 * typed) and hashed in user space (agent/filepath.h).
 */
#ifndef DATACRUMBS_FILE_H
#define DATACRUMBS_FILE_H

#ifndef __bpf__
#include <linux/types.h>
#endif

/* 2: the slot map's per-slot state (dc_file_aux) and file hints; 3: the
 * inode's generation in every file identity */
#define DC_FILE_ABI 3

/* What sys_enter / sys_exit do for a syscall number: a table set before load. */
enum dc_file_kind {
	DC_FK_NONE = 0,
	DC_FK_READ = 1,	  /* fd = arg0, offset = the file position */
	DC_FK_WRITE = 2,  /* same, writing */
	DC_FK_PREAD = 3,  /* fd = arg0, offset = arg3 */
	DC_FK_PWRITE = 4, /* same, writing */
	DC_FK_PREAD2 = 5, /* preadv2: offset arg3, -1 = the file position */
	DC_FK_PWRITE2 = 6,
	DC_FK_META = 7, /* fd = arg0: close, fstat, lseek, ftruncate, fallocate, ... */
	DC_FK_SYNC = 8, /* fd = arg0: fsync, fdatasync, sync_file_range */
	DC_FK_OPEN = 9, /* the file is the returned fd: open, openat, openat2, creat */
	/* newfstatat(fd, "", buf, AT_EMPTY_PATH), which glibc's fstat() is since
	 * 2.33: DC_FK_META on fd = arg0; any other path names another file */
	DC_FK_META_AT = 10,
	/* data moved in the kernel between two descriptors: the destination
	 * is charged a write, the source (struct dc_stash src) a read.
	 * copy_file_range and splice: in = arg0, its offset pointer arg1, out
	 * = arg2, its offset pointer arg3 (NULL: the position; a pipe side of
	 * a splice is no file followed) */
	DC_FK_COPY = 11,
	DC_FK_SENDFILE = 12, /* out = arg0, in = arg1, its offset pointer arg2 */
	DC_FK_MAX = 13,
};

/* syscall numbers the table covers; like DC_NR_MAX of the syscall layer */
#define DC_FILE_NR_MAX 512

/* Darshan's ten access-size buckets: upper bounds (inclusive) 100, 1K, 10K,
 * 100K, 1M, 4M, 10M, 100M, 1G, and the rest. */
#define DC_DARSHAN_BUCKETS 10

/* igen: the inode's i_generation. ext4 (with its journal) and XFS give a
 * freed inode number to the next file created, within the same second: a
 * loop writing and deleting temporary files reuses one number, and without
 * the generation every such file of a window was one key, named by the
 * first. */
struct dc_file_key {
	__u64 cgroup_id;
	__u64 ino;
	__u32 tgid;
	__u32 dev; /* the kernel's dev_t: major << 20 | minor */
	__u32 igen;
	__u32 pad;
};

struct dc_file_val {
	__u64 read_ops, write_ops;
	__u64 read_bytes, write_bytes;
	__u64 read_time_ns, write_time_ns;
	__u64 meta_ops, meta_time_ns; /* open, close, stat, seek, truncate, ... */
	__u64 sync_ops, sync_time_ns;
	__u64 opens;
	__u64 errors;
	__u64 seq_reads, seq_writes;	   /* offset at or past the previous end */
	__u64 consec_reads, consec_writes; /* offset exactly at the previous end */
	__u64 rw_switches;		   /* a read after a write or the reverse */
	__u64 file_unaligned;		   /* offset not a multiple of the fs block */
	__u64 mem_unaligned;		   /* buffer address not 8-byte aligned */
	__u64 max_read_end, max_write_end; /* highest offset + size seen */
	__u32 read_size[DC_DARSHAN_BUCKETS];
	__u32 write_size[DC_DARSHAN_BUCKETS];
} __attribute__((aligned(8)));

/* The previous access of a process to a file, across windows: in the key's
 * index entry while it has a slot, in an LRU while it has none. start tells
 * the process from a later one given the same pid, which would otherwise
 * find the first's last offsets and take its first access for sequential. */
struct dc_file_pos_key {
	__u64 ino;
	__u32 tgid;
	__u32 dev;
	__u32 start; /* dc_proc_start(): the process's start time, folded */
	__u32 igen;
};

struct dc_file_pos {
	__u64 read_end, write_end; /* 0 with the have_ flag clear: none yet */
	__u8 last_dir;		   /* 0 none, 1 read, 2 write */
	__u8 have_read, have_write;
	__u8 pad[5];
};

/* What a (process, file) key needs across windows, kept per slot of the
 * file slot map (file_aux, an array: reached from a slot hint with no hash
 * lookup): the window it last sent its path in (+1, 0 never), and where its
 * previous read and write ended. Parked in the position LRU when the agent
 * takes the slot back, and seeded from there when the key returns. */
struct dc_file_aux {
	__u32 path_seq;
	__u32 start; /* the key's process's dc_proc_start(), for its parking */
	struct dc_file_pos pos;
};

/* A thread's memory of where one of its files lives in the file slot map
 * (struct dc_slot_hint, with the file's identity as the tag). */
struct dc_file_hint {
	__u64 ino;
	__u32 dev;
	__u32 igen;
	__u32 gen; /* the slot map's, not the inode's */
	__u32 slot;
	__u32 used;
	__u32 pad;
};

/* The file part of what sys_enter leaves for sys_exit (struct dc_stash). */
struct dc_file_stash {
	__u64 ino;
	__u64 offset;
	__u64 buf;  /* user buffer address, for memory alignment */
	__u64 file; /* struct file *, to name the file at exit */
	__u32 dev;
	__u8 kind; /* enum dc_file_kind */
	__u8 blkbits;
	__u8 has_buf;
	__u8 at_end; /* an O_APPEND write: offset is the end of file at entry */
	__s32 fd;    /* for traces; the returned one for the open family */
	__u32 igen;
};

/*
 * Path event: sent when a (process, file) key first appears in a window, so
 * every window's files are named by events that precede its drain. Path
 * components leaf first, each NUL-terminated; user space reverses them.
 */
#define DC_PATH_MAX	 4096
#define DC_PATH_NAME_MAX 256 /* NAME_MAX + NUL */
#define DC_PATH_DEPTH	 64
#define DC_PATH_BUF	 (DC_PATH_MAX + DC_PATH_NAME_MAX)

enum dc_path_flags {
	DC_PATH_TRUNCATED = 1, /* deeper or longer than the limits: the leaf part only */
};

struct dc_path_ev {
	__u64 ino;
	__u32 dev;
	__u32 flags;
	__u32 len; /* bytes used in buf */
	__u32 igen;
	char buf[DC_PATH_BUF];
};

enum dc_file_counter {
	DC_FILE_CNT_AGG_FULL = 0,  /* (process, file) key did not fit: in file_overflow */
	DC_FILE_CNT_PATH_LOST = 1, /* path event lost (ring full): file without a name */
	DC_FILE_CNT_MAX = 2,
};

#endif

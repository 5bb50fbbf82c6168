/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The kernel types datacrumbs' BPF programs touch, written by hand.
 *
 * Why not a vendored or generated vmlinux.h: a dump of one kernel's BTF is
 * 3 MB that nobody reviews and that changes with every kernel; generating it
 * at build time makes the build depend on the build machine's kernel. CO-RE
 * only needs the fields we read, by name: preserve_access_index makes libbpf
 * relocate every access against the running kernel's BTF at load time, so
 * these partial definitions work on any kernel that has the fields, and a
 * kernel that lacks one fails loudly at load, naming it. meson option
 * -Dvmlinux_h=generated swaps in a full dump for development.
 *
 * Rule for additions: only fields a program reads; the layout here is not
 * the kernel's and must never be used for sizeof or pointer arithmetic.
 */
#ifndef DC_VMLINUX_H
#define DC_VMLINUX_H
/* tells bpf_tracing.h to use the kernel's pt_regs field names (di, si, ...) */
#define __VMLINUX_H__ 1

#include <linux/types.h>
#include <linux/bpf.h>

typedef __u8 u8;
typedef __u16 u16;
typedef __u32 u32;
typedef __u64 u64;
typedef __s32 s32;
typedef __s64 s64;
typedef _Bool bool;
#define true 1
#define false 0

#pragma clang attribute push(__attribute__((preserve_access_index)), apply_to = record)

#if defined(__TARGET_ARCH_x86)
struct pt_regs {
	unsigned long r15, r14, r13, r12, bp, bx, r11, r10, r9, r8;
	unsigned long ax, cx, dx, si, di, orig_ax, ip, cs, flags, sp, ss;
};
#define DC_REGS_NR_FIELD orig_ax
#elif defined(__TARGET_ARCH_arm64)
struct user_pt_regs {
	__u64 regs[31];
	__u64 sp, pc, pstate;
};
struct pt_regs {
	union {
		struct user_pt_regs user_regs;
		struct {
			u64 regs[31];
			u64 sp, pc, pstate;
		};
	};
	u64 orig_x0;
	s32 syscallno;
};
#define DC_REGS_NR_FIELD syscallno
#else
#error "datacrumbs: add this architecture's pt_regs to bpf/vmlinux/dc_vmlinux.h"
#endif

struct file;
struct mm_struct {
	struct file *exe_file; /* what exec() ran; prctl(PR_SET_MM_EXE_FILE) may swap it */
	int map_count;	       /* mappings: changes with mmap, munmap, exec */
};

typedef struct {
	unsigned int val;
} kuid_t;
struct cred {
	kuid_t uid;
};

typedef struct {
	int counter;
} atomic_t;
struct signal_struct {
	atomic_t live; /* threads not yet exited: 0 in the last one's do_exit() */
};

#if defined(__TARGET_ARCH_x86)
struct thread_info {
	u32 status; /* TS_COMPAT: the system call in progress is a 32-bit one */
};
#else
struct thread_info {
	unsigned long flags;
	u64 preempt_count; /* arm64: the count in its low half (little-endian) */
};
#endif
struct task_struct {
	struct thread_info thread_info; /* CONFIG_THREAD_INFO_IN_TASK */
	int pid;
	int tgid;
	struct mm_struct *mm; /* NULL for kernel threads */
	struct task_struct *group_leader;
	u64 start_time;	    /* CLOCK_MONOTONIC ns at fork: (pid, start_time) names a process */
	u64 start_boottime; /* CLOCK_BOOTTIME ns at fork: /proc/PID/stat's starttime */
	const struct cred *real_cred;
	char comm[16];
	struct files_struct *files;
	struct css_set *cgroups;
	struct signal_struct *signal;
};

/* block layer */
struct kernfs_node {
	u64 id;
};
struct cgroup_root {
	int hierarchy_id; /* 0: the cgroup2 (default) hierarchy */
};
struct cgroup {
	struct kernfs_node *kn;
	struct cgroup_root *root;
};
struct css_set {
	struct cgroup *dfl_cgrp; /* the task's cgroup2 cgroup (the root one without cgroup2) */
};
struct cgroup_subsys_state {
	struct cgroup *cgroup;
};
struct blkcg {
	struct cgroup_subsys_state css;
};
struct blkcg_gq {
	struct blkcg *blkcg;
};
struct bio {
	struct blkcg_gq *bi_blkg; /* absent without CONFIG_BLK_CGROUP */
};
struct gendisk {
	int major;
	int first_minor;
};
struct request_queue {
	struct gendisk *disk;
};
struct request {
	struct request_queue *q;
	unsigned int cmd_flags;
	unsigned int __data_len;
	u64 __sector; /* sector_t */
	struct bio *bio;
	u64 start_time_ns;
};

/* page cache: large-folio fields exist only on some kernels (checked with
 * bpf_core_field_exists before use) */
struct folio {
	unsigned long flags;
	unsigned long _flags_1;
	unsigned int _nr_pages;
};
enum pageflags {
	PG_head = 6, /* relocated by name: the value here is only a default */
};
struct trace_event_raw_mm_filemap_op_page_cache {
	unsigned long pfn;
	unsigned long i_ino;
	unsigned long index;
	unsigned int s_dev;
	unsigned char order;
};

/* io_uring: the request, its CQE (tp_btf) and the tracepoint records */
struct io_ring_ctx;
struct io_kiocb {
	u8 opcode;
};
struct io_uring_cqe {
	u64 user_data;
	s32 res;
	u32 flags;
};
struct trace_event_raw_io_uring_submit_req {
	void *req;
	u8 opcode;
};
struct trace_event_raw_io_uring_submit_sqe {
	void *req;
	u8 opcode;
};
struct trace_event_raw_io_uring_complete {
	void *req;
	int res;
	unsigned int cflags;
};

/* files: the fd table, the file, its inode and the dentry/mount chain that
 * names it. struct mount is private to fs/ but in BTF; CO-RE finds f_path
 * inside the anonymous union newer kernels wrap it in. */
struct super_block {
	u32 s_dev;
};
struct inode {
	unsigned short i_mode;
	unsigned char i_blkbits;
	unsigned long i_ino;
	struct super_block *i_sb;
	long long i_size;
	unsigned int i_generation;
};
struct qstr {
	const unsigned char *name;
};
struct dentry {
	struct dentry *d_parent;
	struct qstr d_name;
};
struct vfsmount {
	struct dentry *mnt_root;
};
struct mount {
	struct mount *mnt_parent;
	struct dentry *mnt_mountpoint;
	struct vfsmount mnt;
};
struct path {
	struct vfsmount *mnt;
	struct dentry *dentry;
};
struct file {
	struct path f_path;
	struct inode *f_inode;
	unsigned int f_flags;
	long long f_pos;
};
struct fdtable {
	unsigned int max_fds;
	struct file **fd;
};
struct files_struct {
	struct fdtable *fdt;
};
/* only as the type of a bare kernel pointer, read as its first member
 * (bpf/file.bpf.h fd_file) */
struct list_head {
	struct list_head *next;
};

#pragma clang attribute pop

/* Direct read, for BTF-typed (tp_btf) pointers; raw_tp uses BPF_CORE_READ. */
#define DC_REGS_SYSCALL_NR(r) ((r)->DC_REGS_NR_FIELD)

/* Classic tracepoint records of raw_syscalls (stable layout, see
 * /sys/kernel/tracing/events/raw_syscalls/sys_enter/format). */
struct trace_event_raw_sys_enter {
	__u64 common; /* type, flags, preempt_count, pid */
	long id;
	unsigned long args[6];
};

struct trace_event_raw_sys_exit {
	__u64 common;
	long id;
	long ret;
};

#endif

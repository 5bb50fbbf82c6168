/* SPDX-License-Identifier: GPL-2.0 */
/*
 * File layer, compiled into the system-call programs (bpf/syscall.bpf.c):
 * the calls that name a file by descriptor, aggregated per window by
 * (cgroup, process, file), with Darshan's access-pattern counters, and a
 * path event the first time each (process, file) key shows up in a window.
 *
 * In the syscall programs, not beside them: a second program pair on the
 * same hooks pays its dispatch, its entry stash, its clock and cgroup reads
 * again on every call, which measured more than the file logic itself. Off
 * (files_on false), the verifier drops all of it.
 *
 * The file comes from the calling process's fd table at sys_enter (at
 * sys_exit for the open family, whose result is the fd): the kernel's own
 * table is shared by the threads of a process and already reflects dup,
 * dup2, dup3, F_DUPFD, close_range and exec, so nothing here shadows it.
 * Only regular files and block devices are kept; sockets and pipes stay in
 * the system-call layer's counts.
 */
#ifndef DC_FILE_BPF_H
#define DC_FILE_BPF_H

#include "datacrumbs/file.h"
#include "slotmap.bpf.h"

#define S_IFMT	0170000
#define S_IFREG 0100000
#define S_IFBLK 0060000

/* nr_kind bits above the kind: arg1 is the user buffer (not an iovec) */
#define DC_FK_KIND_MASK 0x0f
#define DC_FK_HAS_BUF	0x10

const volatile bool files_on = false;
const volatile __u8 nr_kind[DC_FILE_NR_MAX] = {};

/* Calls whose (process, file) key found no room: totals only. Monotonic. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct dc_file_val);
} file_overflow SEC(".maps");

DC_COUNTERS(file_counters, DC_FILE_CNT_MAX);

/* Where the previous read and write of a process on a file ended, for keys
 * the agent took the slot of (idle two windows): so that a sequential scan
 * stays sequential across any pause. A key with a slot keeps its position
 * in its slot's file_aux entry (no lookup of its own per call). */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536); /* sized from config before load */
	__type(key, struct dc_file_pos_key);
	__type(value, struct dc_file_pos);
} file_pos SEC(".maps");

/* Per slot of the file slot map, for as long as a key holds the slot
 * (struct dc_file_aux); sized like the slot map before load. Mapped into
 * the agent, which reads a key's positions there as it gives the slot back
 * (thousands a second on a node opening many files). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct dc_file_aux);
} file_aux SEC(".maps");

/* A task's process's start time (its leader's, ns since boot) folded to
 * 32 bits: with the pid, a process no later one is taken for (two with one
 * pid whose start times agree in these bits: 1 in 2^32). */
static __always_inline __u32 dc_task_start(struct task_struct *t)
{
	__u64 s = t->group_leader->start_time;

	return (__u32)(s ^ (s >> 32));
}

/* The same for the current process: a key's process is the current one,
 * keys being made and found by their process's own calls. */
static __always_inline __u32 dc_proc_start(void)
{
	return dc_task_start(bpf_get_current_task_btf());
}

/* A new key's slot starts from the key's parked positions, if any: the
 * slot is not published yet, so nothing else writes its state. Runs once
 * per key and slot, not per call. */
static __always_inline void file_seed(const struct dc_file_key *k, __u32 *slot)
{
	struct dc_file_pos_key pk = {
	    .ino = k->ino, .tgid = k->tgid, .dev = k->dev, .igen = k->igen};
	struct dc_file_aux *aux = bpf_map_lookup_elem(&file_aux, slot);
	struct dc_file_pos *pos;

	if (!aux)
		return;
	pk.start = dc_proc_start();
	aux->start = pk.start;
	aux->path_seq = 0;
	pos = bpf_map_lookup_elem(&file_pos, &pk);
	if (pos)
		aux->pos = *pos;
	else
		__builtin_memset(&aux->pos, 0, sizeof(aux->pos));
}

/* The per-window values, by (cgroup, process, file): bpf/slotmap.bpf.h. */
DC_SLOT_MAP_IDX(file, struct dc_file_key, struct dc_file_val, __u32, file_seed);

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 20); /* sized from config before load */
} paths SEC(".maps");

/* A path is built here and copied to the ring at its real length: a
 * reservation would have to be the full 4 KiB for every event. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct dc_path_ev);
} path_scratch SEC(".maps");

#define file_count(which) dc_count(&file_counters, (which))

static __always_inline __u32 kind_of(long nr)
{
	if ((unsigned long)nr >= DC_FILE_NR_MAX)
		return 0;
	return nr_kind[nr];
}

/*
 * Reading the file and its inode. The helper bpf_probe_read_kernel() costs
 * a call, a range check and a fault-guarded copy each time; measured here,
 * the four reads of a call's file were most of the file layer's cost at
 * entry. bpf_rdonly_cast() (kfunc, 6.2+: commit a35b9af4ec2c "bpf: Add a
 * kfunc for generic type cast") types a pointer for the verifier, which
 * then lets the program follow it with plain loads that the JIT guards
 * against faults (a bad pointer reads as zero). Weak: the object loads on
 * kernels without it, where the agent loads the probe-read programs, since
 * a verifier refuses a program naming a kfunc it lacks even in dead code
 * (agent/probe-syscall.c picks, and reports which).
 */
extern void *bpf_rdonly_cast(void *obj, __u32 btf_id) __ksym __weak;

/* task is the BTF-typed current task: the walk to the fd array is direct
 * loads (the verifier makes them fault-safe), not a helper call per field */
static __always_inline struct file *fd_file(struct task_struct *task, __u64 fd, bool direct)
{
	struct files_struct *files = task->files;
	struct file **fds, *f = NULL;
	struct fdtable *fdt;

	if (!files)
		return NULL;
	fdt = files->fdt;
	if (!fdt || fd >= fdt->max_fds)
		return NULL;
	fds = fdt->fd;
	if (direct) {
		/* the array's element is a bare pointer, which no cast can
		 * type: read it as the first member of a struct list_head, a
		 * layout no kernel will change */
		struct list_head *slot =
		    bpf_rdonly_cast(&fds[fd], bpf_core_type_id_kernel(struct list_head));

		return bpf_rdonly_cast(slot->next, bpf_core_type_id_kernel(struct file));
	}
	if (bpf_probe_read_kernel(&f, sizeof(f), &fds[fd]))
		return NULL;
	return f;
}

/*
 * The fields read on every call are a few bytes each near the start of
 * struct file and struct inode: one probe read of that span per struct
 * costs about what one field does, where a read per field costs six. The
 * span is computed from the relocated field offsets, so it is exact on any
 * kernel; a layout that puts a field beyond DC_CHUNK reads fields one by one.
 */
#define DC_CHUNK 256

struct chunk {
	__u8 b[DC_CHUNK];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct chunk);
} chunk_scratch SEC(".maps");

#define FIELD_END(type, field, size) (bpf_core_field_offset(type, field) + (size))
#define CHUNK_GET(c, type, field, out) \
	__builtin_memcpy(&(out), &(c)->b[bpf_core_field_offset(type, field)], sizeof(out))

static __always_inline __u32 max_u32(__u32 a, __u32 b)
{
	return a > b ? a : b;
}

/* O_APPEND (the same value on every architecture but alpha, mips, parisc
 * and sparc, which this agent does not build for) */
#define DC_O_APPEND 02000
/* pwritev2's flags: RWF_APPEND (4.16) appends through any descriptor,
 * RWF_NOAPPEND (6.9) writes at the offset through an O_APPEND one */
#define DC_RWF_APPEND	0x10
#define DC_RWF_NOAPPEND 0x20

/* Whether a write lands at the end of file whatever its offset or the
 * position say: the descriptor's O_APPEND, as pwritev2's flags (rwf, 0 for
 * the other calls) override it; RWF_NOAPPEND last, as the kernel applies
 * it (kiocb_set_rw_flags). */
static __always_inline bool appends(__u32 f_flags, __u64 rwf)
{
	if (rwf & DC_RWF_NOAPPEND)
		return false;
	return (f_flags & DC_O_APPEND) || (rwf & DC_RWF_APPEND);
}

/* A regular file or block device: its identity and, for want_pos, its
 * position; for a write (wr) to a regular file that appends (above), where
 * the kernel writes whatever the position or offset argument say: the end
 * of file, st->at_end set. A block device ignores O_APPEND (and its /dev
 * node's i_size is 0). Anything else: false. */
static __always_inline bool file_ident(struct file *f, struct dc_file_stash *st, bool want_pos,
				       bool wr, __u64 rwf, bool direct)
{
	__u32 zero = 0, fend, iend, gend, flags;
	struct super_block *sb;
	unsigned short mode;
	struct inode *in;
	struct chunk *c;
	__s64 size;

	st->at_end = 0;
	if (direct) {
		/* f came from fd_file(direct): typed, read in place */
		in = f->f_inode;
		if (!in)
			return false;
		mode = in->i_mode & S_IFMT;
		if (mode != S_IFREG && mode != S_IFBLK)
			return false;
		st->ino = in->i_ino;
		st->igen = in->i_generation;
		st->dev = in->i_sb->s_dev;
		st->blkbits = in->i_blkbits;
		if (wr && mode == S_IFREG && appends(f->f_flags, rwf)) {
			st->offset = in->i_size;
			st->at_end = 1;
		} else if (want_pos)
			st->offset = f->f_pos;
		return true;
	}
	c = bpf_map_lookup_elem(&chunk_scratch, &zero);
	if (!c)
		return false;
	fend =
	    max_u32(max_u32(FIELD_END(struct file, f_inode, 8), FIELD_END(struct file, f_pos, 8)),
		    FIELD_END(struct file, f_flags, 4));
	iend = max_u32(
	    max_u32(
		max_u32(FIELD_END(struct inode, i_mode, 2), FIELD_END(struct inode, i_sb, 8)),
		max_u32(FIELD_END(struct inode, i_ino, 8), FIELD_END(struct inode, i_blkbits, 1))),
	    FIELD_END(struct inode, i_size, 8));
	gend = FIELD_END(struct inode, i_generation, 4);
	if (gend <= DC_CHUNK)
		iend = max_u32(iend, gend);
	if (fend > DC_CHUNK || iend > DC_CHUNK) {
		in = BPF_CORE_READ(f, f_inode);
		if (!in)
			return false;
		mode = BPF_CORE_READ(in, i_mode) & S_IFMT;
		if (mode != S_IFREG && mode != S_IFBLK)
			return false;
		st->ino = BPF_CORE_READ(in, i_ino);
		st->igen = BPF_CORE_READ(in, i_generation);
		st->dev = BPF_CORE_READ(in, i_sb, s_dev);
		st->blkbits = BPF_CORE_READ(in, i_blkbits);
		if (wr && mode == S_IFREG && appends(BPF_CORE_READ(f, f_flags), rwf)) {
			st->offset = BPF_CORE_READ(in, i_size);
			st->at_end = 1;
		} else if (want_pos)
			st->offset = BPF_CORE_READ(f, f_pos);
		return true;
	}
	if (bpf_probe_read_kernel(c, fend, f))
		return false;
	CHUNK_GET(c, struct file, f_inode, in);
	CHUNK_GET(c, struct file, f_flags, flags);
	if (want_pos)
		CHUNK_GET(c, struct file, f_pos, st->offset);
	if (!in || bpf_probe_read_kernel(c, iend, in))
		return false;
	CHUNK_GET(c, struct inode, i_mode, mode);
	mode &= S_IFMT;
	if (mode != S_IFREG && mode != S_IFBLK)
		return false;
	CHUNK_GET(c, struct inode, i_ino, st->ino);
	CHUNK_GET(c, struct inode, i_blkbits, st->blkbits);
	CHUNK_GET(c, struct inode, i_sb, sb);
	/* 6.1 keeps the generation near the end of struct inode (6.18: at
	 * 124): a read of its own there rather than one per field */
	if (gend <= iend)
		CHUNK_GET(c, struct inode, i_generation, st->igen);
	else
		st->igen = BPF_CORE_READ(in, i_generation);
	if (wr && mode == S_IFREG && appends(flags, rwf)) {
		CHUNK_GET(c, struct inode, i_size, size);
		st->offset = size;
		st->at_end = 1;
	}
	st->dev = BPF_CORE_READ(sb, s_dev);
	return true;
}

struct walk {
	struct dentry *d, *mroot;
	struct mount *mnt;
	__u32 off, flags;
};

/* The walk's state, where each step (a global function, below) finds it:
 * such a function takes no pointer to the caller's stack before 6.8. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct walk);
} walk_scratch SEC(".maps");

/*
 * One step up the tree; non-zero ends the walk. A global function, which
 * the verifier checks once, on its own: the walk's loop then costs it a
 * call per step. Inlined (or as a static function) the step was checked
 * again in every iteration, beyond 6.1's 1M-instruction budget at this
 * depth; bpf_loop() did the same as this but needs 5.17, and was the one
 * helper that kept the system-call family off 5.15 LTS.
 */
__noinline int dc_walk_step(void)
{
	struct dentry *d, *parent;
	const unsigned char *name;
	struct dc_path_ev *ev;
	__u32 zero = 0, off;
	struct mount *mnt;
	struct walk *w;
	long n;

	w = bpf_map_lookup_elem(&walk_scratch, &zero);
	if (!w)
		return 1;
	/* locals: BPF_CORE_READ on w->x would relocate struct walk itself */
	d = w->d;
	mnt = w->mnt;
	off = w->off;
	if (d == w->mroot) {
		struct mount *up = BPF_CORE_READ(mnt, mnt_parent);

		if (up == mnt || !up) {
			w->flags = 0;
			return 1;
		}
		w->d = BPF_CORE_READ(mnt, mnt_mountpoint);
		w->mnt = up;
		w->mroot = BPF_CORE_READ(up, mnt.mnt_root);
		return 0;
	}
	parent = BPF_CORE_READ(d, d_parent);
	if (!parent || parent == d) {
		/* a file system root that is no mount's root: detached */
		w->flags = 0;
		return 1;
	}
	ev = bpf_map_lookup_elem(&path_scratch, &zero);
	if (!ev || off >= DC_PATH_MAX)
		return 1;
	name = BPF_CORE_READ(d, d_name.name);
	/* Keeps the mask, which clang drops as implied by the check above; the
	 * access then relies on the check reaching a copy of off refilled from
	 * the stack, which verifiers before 6.9 (26b560765e67 "bpf: Assign ID
	 * to scalars on spill") do not do: 6.1 refused the walk so when it was
	 * inlined into the programs. */
	barrier_var(off);
	n = bpf_probe_read_kernel_str(&ev->buf[off & (DC_PATH_MAX - 1)], DC_PATH_NAME_MAX, name);
	if (n <= 0)
		return 1;
	w->off = (off + (__u32)n) & (2 * DC_PATH_MAX - 1);
	w->d = parent;
	return 0;
}

/*
 * Name the file: dentry names up to the mount's root, then the mountpoint in
 * the parent mount, and so on up to the root of the mount tree the file
 * lives in (the process's mount namespace). Leaf first; user space reverses.
 * Probe reads only: a file closed by another thread meanwhile gives a stale
 * name at worst, never a fault.
 */
/*
 * A global function, so that the verifier checks it once: inlined, it was
 * checked again for every state of the exit program that reached it, 35,000
 * of the 80,000 instructions the verifier walked there (6.18), most of the
 * agent's start-up time. Its arguments are numbers: a global function takes
 * no typed pointer before 6.8's __arg_trusted.
 */
__noinline int dc_send_path(__u64 file, __u32 dev, __u64 ino, __u32 igen)
{
	struct file *f = (struct file *)file;
	struct dc_path_ev *ev;
	struct vfsmount *vm;
	__u32 zero = 0, off;
	struct walk *w;

	ev = bpf_map_lookup_elem(&path_scratch, &zero);
	w = bpf_map_lookup_elem(&walk_scratch, &zero);
	if (!ev || !w)
		return 0;
	w->flags = DC_PATH_TRUNCATED;
	w->off = 0;
	w->d = BPF_CORE_READ(f, f_path.dentry);
	vm = BPF_CORE_READ(f, f_path.mnt);
	w->mnt = (void *)vm - bpf_core_field_offset(struct mount, mnt);
	w->mroot = BPF_CORE_READ(vm, mnt_root);
	for (int i = 0; i < DC_PATH_DEPTH; i++)
		if (dc_walk_step())
			break;
	off = w->off;
	ev->ino = ino;
	ev->dev = dev;
	ev->igen = igen;
	ev->flags = w->flags;
	if (off > DC_PATH_BUF)
		off = DC_PATH_BUF;
	ev->len = off;
	/* the agent reads the names at each close and before each read of
	 * the trace ring; a node starting processes sends thousands a second,
	 * and a wake-up each cost the agent more than reading them */
	if (bpf_ringbuf_output(&paths, ev, offsetof(struct dc_path_ev, buf) + off,
			       dc_ring_wakeup(&paths)))
		file_count(DC_FILE_CNT_PATH_LOST);
	return 0;
}

/* Darshan's bucket bounds, inclusive */
static __always_inline __u32 darshan_bucket(__u64 sz)
{
	if (sz <= 100)
		return 0;
	if (sz <= 1024)
		return 1;
	if (sz <= 10240)
		return 2;
	if (sz <= 102400)
		return 3;
	if (sz <= 1048576)
		return 4;
	if (sz <= 4194304)
		return 5;
	if (sz <= 10485760)
		return 6;
	if (sz <= 104857600)
		return 7;
	if (sz <= 1073741824)
		return 8;
	return 9;
}

/* No atomic max in BPF: compare-and-swap until the stored value is at least
 * v (a few rounds at most under contention); plain where nothing interleaves. */
static __always_inline void dc_max(__u64 *p, __u64 v)
{
	__u64 old = *p;

	if (plain_updates) {
		if (old < v)
			*p = v;
		return;
	}
	for (int i = 0; i < 8 && old < v; i++) {
		__u64 seen = __sync_val_compare_and_swap(p, old, v);

		if (seen == old)
			break;
		old = seen;
	}
}

/*
 * One side of a copy between two descriptors (DC_FK_COPY,
 * DC_FK_SENDFILE): the file of fd at the offset *offp, or at its position
 * (offp 0); false if it is no file followed (a splice's pipe). Never an
 * append: the kernel refuses these calls on an O_APPEND destination.
 */
static __always_inline bool copy_side(struct dc_file_stash *fs, struct task_struct *task, __u64 fd,
				      __u64 offp, bool direct)
{
	struct file *f = fd_file(task, fd, direct);

	if (!f || !file_ident(f, fs, !offp, false, 0, direct))
		return false;
	fs->file = (__u64)f;
	fs->has_buf = 0;
	fs->fd = (__s32)fd;
	/* the offset the kernel starts at; unreadable (not paged in): 0 */
	if (offp && bpf_probe_read_user(&fs->offset, sizeof(fs->offset), (const void *)offp))
		fs->offset = 0;
	return true;
}

/* Subprograms, each inlining the file reads once: inlined twice into the
 * entry program, they took it past the 512-byte stack. Two, so that a
 * program reading by probe never names the kfunc of direct reads. */
static __noinline bool copy_side_dr(struct dc_file_stash *fs, struct task_struct *task, __u64 fd,
				    __u64 offp)
{
	return copy_side(fs, task, fd, offp, true);
}

static __noinline bool copy_side_pr(struct dc_file_stash *fs, struct task_struct *task, __u64 fd,
				    __u64 offp)
{
	return copy_side(fs, task, fd, offp, false);
}

/* A copy: the destination in st (charged a write at exit), the source in
 * src (a read); the call is followed while either is a file followed. */
static __always_inline void file_enter_copy(struct dc_file_stash *st, struct dc_file_stash *src,
					    struct task_struct *task, __u32 kind, __u64 a0,
					    __u64 a1, __u64 a2, __u64 a3, bool direct)
{
	bool cfr = kind == DC_FK_COPY;
	__u64 in = cfr ? a0 : a1, in_off = cfr ? a1 : a2;
	__u64 out = cfr ? a2 : a0, out_off = cfr ? a3 : 0;
	bool ok;

	ok = direct ? copy_side_dr(src, task, in, in_off) : copy_side_pr(src, task, in, in_off);
	src->kind = ok ? DC_FK_PREAD : DC_FK_NONE;
	ok = direct ? copy_side_dr(st, task, out, out_off) : copy_side_pr(st, task, out, out_off);
	/* no destination file: the exit charges the source alone, and the
	 * call's trace names no file */
	if (!ok) {
		st->ino = 0;
		if (src->kind == DC_FK_NONE)
			st->kind = DC_FK_NONE;
	}
}

/* sys_enter: what the exit needs, in the call's stash. a2x: the third
 * argument for a copy, the sixth (pwritev2's flags) for DC_FK_PWRITE2. */
static __always_inline void file_enter(struct dc_file_stash *st, struct dc_file_stash *src,
				       struct task_struct *task, long nr, __u64 a0, __u64 a1,
				       __u64 a3, __u64 a2x, bool direct)
{
	__u32 raw = kind_of(nr), kind = raw & DC_FK_KIND_MASK;
	struct file *f;
	__u64 rwf = 0;
	bool want_pos;

	/* AT_EMPTY_PATH (0x1000): the descriptor's own file if the path is
	 * "", which the exit checks (the string may not be paged in yet here:
	 * the kernel reads it during the call) */
	if (kind == DC_FK_META_AT && !(a3 & 0x1000))
		kind = DC_FK_NONE;
	st->kind = kind;
	st->fd = kind == DC_FK_NONE || kind == DC_FK_OPEN ? -1 : (__s32)a0;
	if (kind == DC_FK_NONE || kind == DC_FK_OPEN)
		return;
	if (kind == DC_FK_COPY || kind == DC_FK_SENDFILE) {
		file_enter_copy(st, src, task, kind, a0, a1, a2x, a3, direct);
		return;
	}
	if (kind == DC_FK_PWRITE2)
		rwf = a2x;
	want_pos = kind == DC_FK_READ || kind == DC_FK_WRITE ||
		   ((kind == DC_FK_PREAD2 || kind == DC_FK_PWRITE2) && (__s64)a3 == -1);
	f = fd_file(task, a0, direct);
	if (!f || !file_ident(f, st, want_pos,
			      kind == DC_FK_WRITE || kind == DC_FK_PWRITE || kind == DC_FK_PWRITE2,
			      rwf, direct)) {
		st->kind = DC_FK_NONE; /* not a file we follow */
		return;
	}
	st->file = (__u64)f;
	st->has_buf = !!(raw & DC_FK_HAS_BUF);
	st->buf = a1;
	if (!want_pos && !st->at_end)
		st->offset = a3;
}

static __always_inline void pattern(struct dc_file_val *v, struct dc_file_pos *pos, bool rd,
				    __u64 off, __u64 sz)
{
	__u64 end = off + sz;
	__u8 dir = rd ? 1 : 2;

	if (!pos)
		return;
	if (rd) {
		if (pos->have_read) {
			if (off == pos->read_end)
				dc_add(&v->consec_reads, 1);
			if (off >= pos->read_end)
				dc_add(&v->seq_reads, 1);
		}
		pos->read_end = end;
		pos->have_read = 1;
	} else {
		if (pos->have_write) {
			if (off == pos->write_end)
				dc_add(&v->consec_writes, 1);
			if (off >= pos->write_end)
				dc_add(&v->seq_writes, 1);
		}
		pos->write_end = end;
		pos->have_write = 1;
	}
	if (pos->last_dir && pos->last_dir != dir)
		dc_add(&v->rw_switches, 1);
	pos->last_dir = dir;
}

/*
 * The key's value in the window being filled and its per-slot state, both
 * NULL when no slot is left. With the thread's file hints (task storage),
 * a hint for this file under the map's current gen gives the slot without
 * the index lookup (bpf/slotmap.bpf.h, name_value_hint, for the ordering).
 */
static __always_inline struct dc_file_val *file_value_aux(const struct dc_file_key *key,
							  struct task_struct *task,
							  struct dc_file_hint *hints,
							  struct dc_file_aux **auxp, __u32 *seqp)
{
	__u32 zero = 0, gen, s, start;
	struct dc_slot_state *st = bpf_map_lookup_elem(&file_state, &zero);
	struct dc_file_hint *h = NULL;
	struct dc_file_aux *aux;
	struct dc_file_val *v;
	bool found = false;
	__u32 *ix;

	if (!st)
		return NULL;
	gen = *(volatile __u32 *)&st->gen;
	if (hints)
		h = &hints[(key->ino ^ key->dev) & (DC_STASH_FILE_HINTS - 1)];
	if (h && h->used && h->gen == gen && h->ino == key->ino && h->dev == key->dev &&
	    h->igen == key->igen) {
		s = h->slot;
	} else {
		found = true;
		ix = file_find(st, key);
		if (!ix)
			return NULL;
		s = *ix;
		if (h) {
			h->ino = key->ino;
			h->dev = key->dev;
			h->igen = key->igen;
			h->gen = gen;
			h->slot = s;
			h->used = 1;
		}
	}
	*seqp = *(volatile __u32 *)&st->seq;
	v = file_at(s, *seqp);
	if (!v)
		return NULL;
	aux = bpf_map_lookup_elem(&file_aux, &s);
	if (!aux)
		return NULL;
	/* A key found in the index (not through a hint, which a thread takes
	 * from its own process's finds) may be an exited process's that the
	 * agent has not taken back yet, its pid given to a new one: that one
	 * starts from no position. A key made just now was seeded with this
	 * start. */
	if (found && aux->start != (start = dc_task_start(task))) {
		__builtin_memset(&aux->pos, 0, sizeof(aux->pos));
		aux->path_seq = 0;
		/* the start last: the agent parks a slot's positions under
		 * the start it reads first (agent/probe-file.c) */
		barrier();
		*(volatile __u32 *)&aux->start = start;
	}
	*auxp = aux;
	return v;
}

/* sys_exit: fs is the stash sys_enter filled (a copy: the stash is reused);
 * hints: the thread's file hints, NULL where the stash does not persist. */
static __always_inline void file_exit(struct dc_file_stash *fs, struct task_struct *task, long ret,
				      __u64 lat, __u64 cgroup_id, bool direct,
				      struct dc_file_hint *hints)
{
	struct dc_file_key key = {};
	struct dc_file_aux *aux = NULL;
	struct dc_file_val *v;
	__u32 kind = fs->kind, zero = 0, seq;
	__u64 offset = fs->offset;
	struct file *f;
	__u8 blkbits;
	bool rd;

	if (kind == DC_FK_META_AT) {
		char c = 1;

		/* "" (or NULL, which 6.11 accepts with AT_EMPTY_PATH): the
		 * descriptor's file; a path beside it is another file's call,
		 * for the traces too */
		if (fs->buf && (bpf_probe_read_user(&c, 1, (const void *)fs->buf) || c)) {
			fs->kind = DC_FK_NONE;
			return;
		}
		kind = DC_FK_META;
	}
	if (kind == DC_FK_OPEN) {
		/* the stash still holds the thread's previous file: an open
		 * that names none (failed, or not a file followed) must not
		 * hand it to its trace */
		fs->ino = 0;
		if (ret < 0)
			return; /* no file to charge: the syscall layer has the error */
		f = fd_file(task, (__u64)ret, direct);
		if (!f || !file_ident(f, fs, false, false, 0, direct))
			return;
		key.dev = fs->dev;
		key.ino = fs->ino;
		key.igen = fs->igen;
		blkbits = fs->blkbits;
	} else {
		f = (struct file *)fs->file;
		key.dev = fs->dev;
		key.ino = fs->ino;
		key.igen = fs->igen;
		blkbits = fs->blkbits;
	}
	key.cgroup_id = cgroup_id;
	key.tgid = task->tgid;
	v = file_value_aux(&key, task, hints, &aux, &seq);
	/* the key's first call in this window: two CPUs racing here both
	 * send, and the agent keeps one name */
	if (v && aux->path_seq != seq + 1) {
		__u64 fv = 0;

		aux->path_seq = seq + 1;
		/* the file as a number: f is a typed pointer after fd_file() */
		bpf_probe_read_kernel(&fv, sizeof(fv), &f);
		dc_send_path(fv, key.dev, key.ino, key.igen);
	}
	if (!v) {
		file_count(DC_FILE_CNT_AGG_FULL);
		v = bpf_map_lookup_elem(&file_overflow, &zero);
		if (!v)
			return;
	}
	if (ret < 0 && ret >= -4095)
		dc_add(&v->errors, 1);

	switch (kind) {
	case DC_FK_OPEN:
		dc_add(&v->opens, 1);
		dc_add(&v->meta_ops, 1);
		dc_add(&v->meta_time_ns, lat);
		return;
	case DC_FK_META:
		dc_add(&v->meta_ops, 1);
		dc_add(&v->meta_time_ns, lat);
		return;
	case DC_FK_SYNC:
		dc_add(&v->sync_ops, 1);
		dc_add(&v->sync_time_ns, lat);
		return;
	}

	rd = kind == DC_FK_READ || kind == DC_FK_PREAD || kind == DC_FK_PREAD2;
	if (rd) {
		dc_add(&v->read_ops, 1);
		dc_add(&v->read_time_ns, lat);
	} else {
		dc_add(&v->write_ops, 1);
		dc_add(&v->write_time_ns, lat);
	}
	if (ret < 0)
		return;

	{
		__u64 sz = (__u64)ret;

		/* without a slot (overflow totals), no previous offsets */
		if (aux)
			pattern(v, &aux->pos, rd, offset, sz);
		if (rd) {
			dc_add(&v->read_bytes, sz);
			dc_add(&v->read_size[darshan_bucket(sz)], 1);
			dc_max(&v->max_read_end, offset + sz);
		} else {
			dc_add(&v->write_bytes, sz);
			dc_add(&v->write_size[darshan_bucket(sz)], 1);
			dc_max(&v->max_write_end, offset + sz);
		}
		if (blkbits < 32 && (offset & ((1ULL << blkbits) - 1)))
			dc_add(&v->file_unaligned, 1);
		if (fs->has_buf && (fs->buf & 7))
			dc_add(&v->mem_unaligned, 1);
	}
}

#endif

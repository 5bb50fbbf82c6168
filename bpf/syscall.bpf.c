// SPDX-License-Identifier: GPL-2.0
/*
 * System-call layer: every file I/O call of every process, aggregated per
 * window in the kernel by (cgroup, process, operation).
 *
 * Attach: one program on sys_enter and one on sys_exit, filtering the
 * syscall number through a table, instead of one program per syscall
 * tracepoint. Each variant below is the same logic on a different mechanism;
 * the agent loads the cheapest one the kernel accepts (tp_btf, then raw_tp,
 * then the raw_syscalls tracepoint) and reports which.
 *
 * Windows: values live in a slot map (bpf/slotmap.bpf.h). To close a window
 * the agent flips the half being filled and then updates a map-of-maps,
 * which waits for every running BPF program to finish
 * (maybe_wait_bpf_programs() -> synchronize_rcu()); once it returns no
 * program still writes the old half, and the agent reads it with nothing
 * in flight: no increment lost, none counted twice.
 */
#include "dc_vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "datacrumbs/syscall.h"
#include "datacrumbs/hist.h"
#include "common.bpf.h"
#include "filter.bpf.h"
#include "file.bpf.h"
#include "trace.bpf.h"
#include "stacks.bpf.h"
#include "slotmap.bpf.h"

/* the user stack pointer, for the caller fix-up (x86_64 only: stacks.bpf.h) */
#if defined(__TARGET_ARCH_x86)
#define DC_REGS_SP(r)	   (stacks_on ? (r)->sp : 0)
#define DC_CORE_REGS_SP(r) (stacks_on ? BPF_CORE_READ(r, sp) : 0)
#else
#define DC_REGS_SP(r)	   0
#define DC_CORE_REGS_SP(r) 0
#endif

/* A syscall's sixth argument (pwritev2's flags): libbpf 1.1 has no
 * PT_REGS_PARM6_SYSCALL */
#if defined(__TARGET_ARCH_x86)
#define DC_REGS_ARG6(r)	     ((r)->r9)
#define DC_CORE_REGS_ARG6(r) BPF_CORE_READ(r, r9)
#else
#define DC_REGS_ARG6(r)	     ((r)->regs[5])
#define DC_CORE_REGS_ARG6(r) BPF_CORE_READ(r, regs[5])
#endif

/* Set before load by the agent; frozen afterwards. */
const volatile __u32 agent_tgid = 0;
const volatile bool use_task_storage = true;
const volatile bool cpu_stash = false;
const volatile bool plain_updates = false;
const volatile __u8 nr_to_op[DC_NR_MAX] = {};
/* 64 entries, DC_OP_MAX used: size_src() masks its index with 63 */
const volatile __u8 op_size_src[64] = {};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct dc_stash);
} stash_task SEC(".maps");

/* Fallback for kernels without task storage for tracing programs (< 5.11). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536); /* sized from config before load */
	__type(key, __u32);
	__type(value, struct dc_stash);
} stash_tid SEC(".maps");

/*
 * The running thread's stash, cached on its CPU (entry_stash "cpu"): a call
 * that does not block then touches no task storage, where each look-up is a
 * helper call at entry and another at exit (25 to 40 ns a call together,
 * docs/benchmarks.md). While the thread runs there the cache holds its call
 * in flight and sampling counters; the switch program writes them back
 * whenever the thread leaves the CPU, the only way another thread can reach
 * this CPU's copy or this thread another CPU, since the programs are never
 * preempted where the agent enables this (the plain_updates condition: none
 * or voluntary). A call that blocks thus finds its entry in task storage
 * when it returns, on whatever CPU.
 */
struct dc_cpu_stash {
	__u32 owner;	  /* the thread whose stash this is; 0: none */
	__u32 hint_tgid;  /* the process s's slot hints are for ... */
	__u32 hint_start; /* ... by pid and start (a pid can be reused) */
	__u32 pad;
	struct dc_stash s;
};

/* What moves between the cache and task storage: the call in flight and the
 * thread's sampling counters. The slot hints stay on the CPU: they name a
 * process's keys, not a thread's, so they hold for any thread of the
 * process that comes next, and are dropped for another process. */
#define DC_STASH_MOVED offsetof(struct dc_stash, hint_cg)

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct dc_cpu_stash);
} stash_cpu SEC(".maps");

DC_SLOT_MAP(agg, struct dc_agg_key, struct dc_agg_val);

/* Calls whose key found no room in the window map: still counted, by op, so
 * that totals stay exact when attribution is lost. Monotonic. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, DC_OP_MAX);
	__type(key, __u32);
	__type(value, struct dc_agg_val);
} agg_overflow SEC(".maps");

DC_COUNTERS(counters, DC_CNT_MAX);

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384); /* sized from config before load */
	__type(key, __u32);
	__type(value, struct dc_proc);
} procs SEC(".maps");

#define count(which) dc_count(&counters, (which))

/* The thread's stash through this CPU's cache: taken over from task storage
 * on the thread's first call since it came to this CPU. The in-flight part
 * left in task storage is cleared as it is taken, so a write-back that fails
 * later cannot leave an entry to be consumed twice. */
static __always_inline struct dc_stash *stash_cpu_get(struct task_struct *task, bool create)
{
	struct dc_cpu_stash *c;
	struct dc_stash *ts;
	__u32 zero = 0, start;

	c = bpf_map_lookup_elem(&stash_cpu, &zero);
	if (!c)
		return NULL;
	if (c->owner == task->pid && c->owner)
		return &c->s;
	ts =
	    bpf_task_storage_get(&stash_task, task, 0, create ? BPF_LOCAL_STORAGE_GET_F_CREATE : 0);
	if (!ts)
		return NULL;
	__builtin_memcpy(&c->s, ts, DC_STASH_MOVED);
	ts->ts = 0;
	ts->filtered = 0;
	c->owner = task->pid;
	/* Hints of the same pid are another process's if it started at
	 * another time. Read only then: two processes alternating on a CPU
	 * (a pipe's ping-pong) take the stash over at every call, and the
	 * start (the leader's task) is two loads a cache miss each. 0: not
	 * read, so not known to be this process's. */
	if (c->hint_tgid != task->tgid) {
		start = 0;
	} else {
		start = dc_task_start(task);
		if (c->hint_start == start && start)
			return &c->s;
	}
	/* no cgroup has this id: the exit clears the hints */
	c->s.hint_cg = ~0ULL;
	c->hint_tgid = task->tgid;
	c->hint_start = start;
	return &c->s;
}

/* The switch-out of the task owning this CPU's cache: written back (the
 * entry exists, made when the cache took it over: nothing is allocated
 * here, under the run-queue lock). Returns the stash for the stack profile. */
static __always_inline struct dc_stash *stash_cpu_flush(struct task_struct *prev)
{
	struct dc_cpu_stash *c;
	struct dc_stash *ts;
	__u32 zero = 0;

	c = bpf_map_lookup_elem(&stash_cpu, &zero);
	if (!c || !c->owner)
		return NULL;
	if (c->owner != prev->pid) {
		/* the owner left without this program (attached after it) */
		c->owner = 0;
		return NULL;
	}
	c->owner = 0;
	ts = bpf_task_storage_get(&stash_task, prev, 0, 0);
	if (!ts)
		return NULL; /* the call in flight, if any, exits as without entry */
	__builtin_memcpy(ts, &c->s, DC_STASH_MOVED);
	return ts;
}

static const struct dc_stash zero_stash;

/* A copy's source at exit: here, not on the exit's stack, which with the
 * file-name walk's two frames is at the 512 bytes the verifier allows. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct dc_file_stash);
} copy_src SEC(".maps");

static __always_inline struct dc_stash *stash_get(struct task_struct *task, __u32 tid, bool create)
{
	if (cpu_stash)
		return stash_cpu_get(task, create);
	if (use_task_storage)
		return bpf_task_storage_get(&stash_task, task, 0,
					    create ? BPF_LOCAL_STORAGE_GET_F_CREATE : 0);
	/* from .rodata, not the stack: the stash is most of the 512 bytes.
	 * NOEXIST: an entry left by an interrupted call (restarting, its
	 * first entry's time) is the restart's to find; stash_open() sets
	 * every field a call uses */
	if (create)
		bpf_map_update_elem(&stash_tid, &tid, &zero_stash, BPF_NOEXIST);
	return bpf_map_lookup_elem(&stash_tid, &tid);
}

enum { STASH_NONE, STASH_TAKEN, STASH_FILTERED };

/* Consumes the entry this thread left for op (the file part into *fs);
 * *keep: the stash itself where it outlives the call (task storage), for
 * its slot hints. restart: the call returned to be run again (on_exit), and
 * a hash entry stays for the restart, as task storage does. */
static __always_inline int stash_take(struct task_struct *task, __u32 tid, __u32 op, __u64 *ts,
				      __u64 *size, struct dc_file_stash *fs,
				      struct dc_file_stash **fsrc, __u32 *tr_seq,
				      struct stk_call *sc, struct dc_stash **keep, bool restart)
{
	struct dc_stash *st = stash_get(task, tid, false);

	if (!st || st->op != op)
		return STASH_NONE;
	if (use_task_storage)
		*keep = st;
	if (st->filtered) {
		if (use_task_storage)
			st->filtered = 0;
		else
			bpf_map_delete_elem(&stash_tid, &tid);
		return STASH_FILTERED;
	}
	if (!st->ts)
		return STASH_NONE;
	*ts = st->ts;
	*size = st->size;
	if (files_on) {
		*fs = st->f;
		if (fs->kind == DC_FK_COPY || fs->kind == DC_FK_SENDFILE) {
			__u32 zero = 0;

			*fsrc = bpf_map_lookup_elem(&copy_src, &zero);
			if (*fsrc)
				**fsrc = st->src;
		}
	}
	if (traces_on)
		*tr_seq = use_task_storage ? dc_draw(&st->tr_seen) : trace_cpu_seq();
	if (stacks_on) {
		sc->flags = st->stk_flags;
		sc->kstack = st->kstack;
		sc->kseq = st->kseq;
	}
	if (use_task_storage)
		st->ts = 0;
	else if (restart)
		/* kept with its time: a hash entry deleted here made the
		 * restart a second call, and this exit an error */
		st->restarting = 1;
	else
		bpf_map_delete_elem(&stash_tid, &tid);
	return STASH_TAKEN;
}

static __always_inline __u32 lookup_op(long nr)
{
	if ((unsigned long)nr >= DC_NR_MAX)
		return 0;
	return nr_to_op[nr];
}

static __always_inline __u32 size_src(__u32 op)
{
	if (op >= DC_OP_MAX)
		return DC_SZ_NONE;
	/* the mask too: 6.1's verifier loses the check above when op is
	 * spilled around a helper call and read back (raw_tp's probe reads),
	 * and then refuses the load. The empty asm keeps clang, which knows
	 * the check, from dropping the mask as a no-op. */
	_Static_assert(DC_OP_MAX <= 64, "op fits 6 bits");
	asm volatile("" : "+r"(op));
	return op_size_src[op & 63];
}

/* The agent's own calls are stashed too and dropped at exit, which needs the
 * tgid anyway: one helper call fewer on every entry. The caller fills the
 * file part, then stamps the time (stash_stamp) last, so the latency is the
 * call's, not the probe's. */
static __always_inline struct dc_stash *stash_open(struct task_struct *task, __u32 op, __u64 size,
						   __u64 arg0, bool *resumed)
{
	struct dc_stash *st;

	st = stash_get(task, use_task_storage ? 0 : (__u32)bpf_get_current_pid_tgid(), true);
	if (!st) {
		count(DC_CNT_STASH_FAIL);
		return NULL;
	}
	/* the restart of a call a signal interrupted: one call, timed from
	 * its first entry; another call instead means the interrupted one
	 * returned EINTR, seen by nobody here */
	*resumed = false;
	if (st->restarting) {
		/* the same call on the same first argument (a signal handler's
		 * write to stderr is not the restart of a blocked pipe write) */
		st->restarting = 0;
		if (st->op == op && st->ts && st->arg0 == (__u32)arg0)
			*resumed = true;
		else
			count(DC_CNT_NOT_RESTARTED);
	}
	st->op = op;
	st->size = size;
	st->arg0 = (__u32)arg0;
	st->filtered = 0;
	/* a restart keeps the first entry's sampling decision */
	if (stacks_on && !*resumed)
		stacks_enter(st, use_task_storage);
	return st;
}

/* A call left out (a filtered process's, a 32-bit one): only a mark for
 * its exit, which then returns without taking it for a call in flight at
 * attach (exit_without_entry). No time, no arguments, no file. */
static __always_inline void stash_skip(struct task_struct *task, __u32 op)
{
	struct dc_stash *st;

	st = stash_get(task, use_task_storage ? 0 : (__u32)bpf_get_current_pid_tgid(), true);
	if (!st)
		return;
	st->op = op;
	st->ts = 0;
	st->filtered = 1;
	st->restarting = 0;
}

/* A call of a process the filters leave out: counted as such. */
static __always_inline void stash_filtered(struct task_struct *task, __u32 op)
{
	count(DC_CNT_FILTERED);
	stash_skip(task, op);
}

/*
 * A system call of 32-bit code: an ia32 process's, or int 0x80 from a
 * 64-bit one. Its number is the ia32 table's, where 4 is write and 5 open
 * (stat and fstat in the 64-bit table these programs map), so it is
 * counted apart and not attributed. x86 only: arm64's AArch32 tasks are
 * not told apart (not tested here).
 */
static __always_inline bool compat_call(struct task_struct *task)
{
#if defined(__TARGET_ARCH_x86)
	if (bpf_core_field_exists(task->thread_info.status))
		return task->thread_info.status & 0x0002; /* TS_COMPAT */
#endif
	return false;
}

static __always_inline void compat_skip(struct task_struct *task, __u32 op)
{
	count(DC_CNT_COMPAT);
	if (op)
		stash_skip(task, op);
}

static __always_inline void stash_stamp(struct dc_stash *st)
{
	st->ts = bpf_ktime_get_ns();
}

static __always_inline bool comm_eq(const char *a, const char *b)
{
	const __u32 *x = (const __u32 *)a, *y = (const __u32 *)b;

	return x[0] == y[0] && x[1] == y[1] && x[2] == y[2] && x[3] == y[3];
}

/* Once per process and window, not per key: its first call of each op in
 * a window comes here, and the note (the executable's name, the LRU update) costs
 * more than the call's own aggregation. Again after an exec, which renames
 * the process: a shell that forks and execs `cat` is `cat` in its record. */
static __always_inline void proc_note(__u32 tgid)
{
	struct task_struct *t = (void *)bpf_get_current_task();
	struct dc_proc p = {}, *old;
	const unsigned char *exe;
	struct dc_slot_state *st;
	__u32 zero = 0;

	BPF_CORE_READ_STR_INTO(&p.comm, t, group_leader, comm);
	/* a pid reused within the window under the same name is another
	 * process all the same, where this sees it (its first call of an op
	 * on a CPU in the window) */
	p.start_ns = BPF_CORE_READ(t, group_leader, start_boottime);
	st = bpf_map_lookup_elem(&agg_state, &zero);
	if (!st)
		return;
	p.seq = *(volatile __u32 *)&st->seq;
	old = bpf_map_lookup_elem(&procs, &tgid);
	if (old && old->seq == p.seq && comm_eq(old->comm, p.comm) && old->start_ns == p.start_ns)
		return;
	/* real_cred, not cred: cred is what the leader acts as right now,
	 * which override_creds() swaps inside some calls (access(), NFS) */
	p.uid = BPF_CORE_READ(t, group_leader, real_cred, uid.val);
	/* threads share the mm; the leader's is gone once it exits first */
	exe = BPF_CORE_READ(t, mm, exe_file, f_path.dentry, d_name.name);
	if (exe)
		bpf_probe_read_kernel_str(p.exe, sizeof(p.exe), exe);
	if (bpf_map_update_elem(&procs, &tgid, &p, BPF_ANY))
		count(DC_CNT_PROC_FAIL);
}

static __always_inline void on_exit(void *ctx, long nr, long ret, __u64 sp, bool direct)
{
	__u32 op = lookup_op(nr), src, tgid;
	struct dc_agg_key key = {};
	struct task_struct *task;
	struct dc_file_stash fs = {}; /* clang spills undefined registers otherwise */
	struct dc_file_stash *fsrc = NULL;
	struct stk_call sc = {};
	__u32 tr_seq = 0;
	struct dc_agg_val *v;
	struct dc_stash *hs = NULL;
	__u64 ts, size, lat, bytes = 0;
	bool sized = false, restart;

	if (!op)
		return;
	/* one helper for the task, its ids read from it directly */
	task = bpf_get_current_task_btf();
	tgid = task->tgid;
	if (tgid == agent_tgid)
		return;
	/* ERESTARTSYS, ERESTARTNOINTR, ERESTARTNOHAND: below */
	restart = ret <= -512 && ret >= -514;
	switch (stash_take(task, use_task_storage ? 0 : task->pid, op, &ts, &size, &fs, &fsrc,
			   &tr_seq, &sc, &hs, restart)) {
	case STASH_FILTERED:
		return;
	case STASH_NONE:
		count(DC_CNT_NO_ENTRY);
		return;
	}
	/* ERESTARTSYS, ERESTARTNOINTR, ERESTARTNOHAND: the exit fires before
	 * the signal is handled, and the kernel runs the call again after it
	 * (no handler, or SA_RESTART; a stop and continue, a cgroup freeze).
	 * Counted then, once, not here as a call and an error. */
	if (restart) {
		/* the hash entry was kept so by stash_take() */
		if (hs) {
			hs->ts = ts;
			hs->restarting = 1;
		}
		/* its 1-in-N draw is the completed call's: this exit's is not
		 * used, and draws are independent */
		return;
	}
	lat = bpf_ktime_get_ns() - ts;
	key.cgroup_id = dc_task_cgroup_id(task);
	/* a thread's keys differ only by op (and file) while its cgroup stays */
	if (hs && hs->hint_cg != key.cgroup_id) {
		__builtin_memset(hs->hints, 0, sizeof(hs->hints));
		__builtin_memset(hs->file_hints, 0, sizeof(hs->file_hints));
		hs->hint_cg = key.cgroup_id;
	}
	if (files_on && fs.kind) {
		struct dc_file_hint *fh = hs ? hs->file_hints : NULL;

		/* a copy: its source a read, its destination a write, the
		 * call's time and bytes on each */
		if (fs.kind == DC_FK_COPY || fs.kind == DC_FK_SENDFILE) {
			if (fsrc && fsrc->kind)
				file_exit(fsrc, task, ret, lat, key.cgroup_id, direct, fh);
			fs.kind = fs.ino ? DC_FK_PWRITE : DC_FK_NONE;
		}
		if (fs.kind)
			file_exit(&fs, task, ret, lat, key.cgroup_id, direct, fh);
	}

	src = size_src(op);
	if (ret >= 0 && src != DC_SZ_NONE) {
		bytes = src == DC_SZ_RET ? (__u64)ret : size;
		sized = true;
	}

	key.tgid = tgid;
	key.op = op;
	if (hs)
		v = agg_value_hint(&key, op, &hs->hints[op & (DC_STASH_HINTS - 1)]);
	else
		v = agg_value(&key);
	/* the first call of this process and op in this window (on this CPU):
	 * refresh what the records say about the process */
	if (v && !v->time_ns && !v->lat_hist[0])
		proc_note(tgid);
	if (!v) {
		count(DC_CNT_AGG_FULL);
		v = bpf_map_lookup_elem(&agg_overflow, &op);
		if (!v)
			return;
	}
	dc_add(&v->time_ns, lat);
	dc_add(&v->lat_hist[dc_hist_slot(lat, DC_LAT_SLOTS)], 1);
	if (ret < 0 && ret >= -4095)
		dc_add(&v->errors, 1);
	if (sized) {
		dc_add(&v->bytes, bytes);
		dc_add(&v->size_hist[dc_hist_slot(bytes, DC_SIZE_SLOTS)], 1);
	}
	if (stacks_on) {
		sc.sp = sp;
		stacks_exit(ctx, &sc, key.cgroup_id, tgid, op, lat, bytes);
	}
	if (traces_on) {
		enum trace_outcome o;

		if (fs.kind == DC_FK_OPEN)
			fs.fd = ret >= 0 ? (__s32)ret : -1;
		o = trace_call(DC_LAYER_SYSCALL, op, ts, lat, tgid, task->pid, key.cgroup_id, &fs,
			       sized ? bytes : size, ret, tr_seq);
		if (o == TR_KEPT)
			dc_add(&v->tr_kept, 1);
		else if (o == TR_DROP)
			dc_add(&v->tr_drop, 1);
		else
			dc_add(&v->tr_out, 1);
	}
}

/* The size argument is read through the saved registers only for the few
 * ops that need it (mmap, fallocate, ...); the data calls take the return value. */
static __always_inline __u64 regs_size_arg(struct pt_regs *regs, __u32 src)
{
	switch (src) {
	case DC_SZ_ARG1:
		return PT_REGS_PARM2_CORE_SYSCALL(regs);
	case DC_SZ_ARG2:
		return PT_REGS_PARM3_CORE_SYSCALL(regs);
	case DC_SZ_ARG3:
		return PT_REGS_PARM4_CORE_SYSCALL(regs);
	}
	return 0;
}

/* The file part of an entry; args read only for the calls it follows.
 * tp_btf hands a BTF-typed regs: plain loads, no helper per argument. */
#define FILE_ENTER(st, task, nr, get, direct)                                                  \
	do {                                                                                   \
		__u32 k_;                                                                      \
                                                                                               \
		if (!files_on)                                                                 \
			break;                                                                 \
		k_ = kind_of(nr) & DC_FK_KIND_MASK;                                            \
		if (k_)                                                                        \
			file_enter(&(st)->f, &(st)->src, (task), (nr), get(1), get(2), get(4), \
				   k_ == DC_FK_PWRITE2			      ? get(6)         \
				   : k_ == DC_FK_COPY || k_ == DC_FK_SENDFILE ? get(3)         \
									      : 0,             \
				   (direct));                                                  \
		else                                                                           \
			(st)->f.kind = DC_FK_NONE;                                             \
	} while (0)

#define BTF_ARG(i)  BTF_ARG_##i
#define CORE_ARG(i) CORE_ARG_##i
#define BTF_ARG_1   PT_REGS_PARM1_SYSCALL(regs)
#define BTF_ARG_2   PT_REGS_PARM2_SYSCALL(regs)
#define BTF_ARG_3   PT_REGS_PARM3_SYSCALL(regs)
#define BTF_ARG_4   PT_REGS_PARM4_SYSCALL(regs)
#define BTF_ARG_6   DC_REGS_ARG6(regs)
#define CORE_ARG_1  PT_REGS_PARM1_CORE_SYSCALL(regs)
#define CORE_ARG_2  PT_REGS_PARM2_CORE_SYSCALL(regs)
#define CORE_ARG_3  PT_REGS_PARM3_CORE_SYSCALL(regs)
#define CORE_ARG_4  PT_REGS_PARM4_CORE_SYSCALL(regs)
#define CORE_ARG_6  DC_CORE_REGS_ARG6(regs)

/* sys_enter on tp_btf and raw_tp: the same program but for how the
 * arguments are read (plain loads of the BTF-typed regs, or CO-RE reads) */
#define DC_ENTER_PROG(sec, name, ARG, DIRECT)                                                   \
	SEC(sec)                                                                                \
	int BPF_PROG(name, struct pt_regs *regs, long nr)                                       \
	{                                                                                       \
		struct task_struct *task = bpf_get_current_task_btf();                          \
		__u32 op = lookup_op(nr);                                                       \
		struct dc_stash *st;                                                            \
		bool resumed;                                                                   \
                                                                                                \
		dc_run();                                                                       \
		if (compat_call(task)) {                                                        \
			compat_skip(task, op);                                                  \
			return 0;                                                               \
		}                                                                               \
		if (!op)                                                                        \
			return 0;                                                               \
		if (dc_filtered(task)) {                                                        \
			stash_filtered(task, op);                                               \
			return 0;                                                               \
		}                                                                               \
		st = stash_open(task, op, regs_size_arg(regs, size_src(op)), ARG(1), &resumed); \
		if (!st)                                                                        \
			return 0;                                                               \
		FILE_ENTER(st, task, nr, ARG, DIRECT);                                          \
		if (!resumed)                                                                   \
			stash_stamp(st);                                                        \
		return 0;                                                                       \
	}

DC_ENTER_PROG("tp_btf/sys_enter", dc_enter_btf, BTF_ARG, false)
DC_ENTER_PROG("raw_tp/sys_enter", dc_enter_raw, CORE_ARG, false)
/* the same with the file read in place (bpf_rdonly_cast, file.bpf.h) */
DC_ENTER_PROG("tp_btf/sys_enter", dc_enter_btf_dr, BTF_ARG, true)

SEC("tp_btf/sys_exit")
int BPF_PROG(dc_exit_btf, struct pt_regs *regs, long ret)
{
	dc_run();
	on_exit(ctx, DC_REGS_SYSCALL_NR(regs), ret, DC_REGS_SP(regs), false);
	return 0;
}

SEC("tp_btf/sys_exit")
int BPF_PROG(dc_exit_btf_dr, struct pt_regs *regs, long ret)
{
	dc_run();
	on_exit(ctx, DC_REGS_SYSCALL_NR(regs), ret, DC_REGS_SP(regs), true);
	return 0;
}

SEC("raw_tp/sys_exit")
int BPF_PROG(dc_exit_raw, struct pt_regs *regs, long ret)
{
	dc_run();
	on_exit(ctx, BPF_CORE_READ(regs, DC_REGS_NR_FIELD), ret, DC_CORE_REGS_SP(regs), false);
	return 0;
}

SEC("tracepoint/raw_syscalls/sys_enter")
int dc_enter_tp(struct trace_event_raw_sys_enter *ctx)
{
	__u32 op = lookup_op(ctx->id), src;
	/* fixed-offset loads: a switch over ctx->args[i] lets clang fold
	 * the offset into the pointer, which the verifier refuses for ctx */
	__u64 a0 = ctx->args[0], a1 = ctx->args[1], a2 = ctx->args[2], a3 = ctx->args[3];
	struct task_struct *task = bpf_get_current_task_btf();
	struct dc_stash *st;
	bool resumed;

	dc_run();
	if (compat_call(task)) {
		compat_skip(task, op);
		return 0;
	}
	if (!op)
		return 0;
	if (dc_filtered(task)) {
		stash_filtered(task, op);
		return 0;
	}
	src = size_src(op);
	st = stash_open(task, op,
			src == DC_SZ_ARG1   ? a1
			: src == DC_SZ_ARG2 ? a2
			: src == DC_SZ_ARG3 ? a3
					    : 0,
			a0, &resumed);
	if (!st)
		return 0;
	if (files_on) {
		__u32 k = kind_of(ctx->id) & DC_FK_KIND_MASK;

		if (k)
			file_enter(&st->f, &st->src, task, ctx->id, a0, a1, a3,
				   k == DC_FK_PWRITE2			    ? ctx->args[5]
				   : k == DC_FK_COPY || k == DC_FK_SENDFILE ? a2
									    : 0,
				   false);
		else
			st->f.kind = DC_FK_NONE;
	}
	if (!resumed)
		stash_stamp(st);
	return 0;
}

SEC("tracepoint/raw_syscalls/sys_exit")
int dc_exit_tp(struct trace_event_raw_sys_exit *ctx)
{
	dc_run();
	/* no user registers here: a frameless leaf's caller stays unknown */
	on_exit(ctx, ctx->id, ctx->ret, 0, false);
	return 0;
}

/*
 * Context switches, loaded with probes.stacks.enable and with the per-CPU
 * stash (write-back above): the switching-out
 * task is current, so its stash is found as at exit and its kernel stack is
 * the one bpf_get_stackid() walks. Preemptions are skipped: the call did
 * not wait there. The classic tracepoint's prev_state changed type across
 * kernels, so that fallback takes every switch-out of a watched call.
 */
static __always_inline void on_switch(void *ctx, bool preempt)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct dc_stash *st;

	if (!cpu_stash) {
		if (!preempt)
			stacks_switch(ctx,
				      stash_get(task, use_task_storage ? 0 : task->pid, false));
		return;
	}
	/* every switch-out, preemptions too: the cache must follow the thread */
	st = stash_cpu_flush(task);
	if (!stacks_on || preempt)
		return;
	/* a thread that made no call here since it came: its stash, if a call
	 * of it is in flight, is the one in task storage */
	if (!st)
		st = bpf_task_storage_get(&stash_task, task, 0, 0);
	stacks_switch(ctx, st);
}

/*
 * A process's last thread exits: its record must name it. A process that
 * made no system call (a fork that only faults on a mapping it inherited)
 * leaves the record of its pid to the process before it, which the agent
 * corrects from /proc while it lives; gone before its last window closes,
 * its faults there were the earlier process's. Only where a record of the
 * pid exists: a process never seen leaves none to mislead.
 */
static __always_inline void on_proc_exit(void)
{
	struct task_struct *t = (void *)bpf_get_current_task();
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	struct dc_slot_state *st;
	struct dc_proc *old;
	/* compared whole: the string read stops at its NUL */
	char comm[DC_COMM_LEN] = {};
	__u32 zero = 0;

	/* every thread's exit: a hash entry a call left restarting (the
	 * thread killed while blocked) has no restart to come, and task
	 * storage would have gone with the task; kept, it held a slot of
	 * maps.max_threads for good and a later thread of its id took it for
	 * a restart */
	if (!use_task_storage) {
		__u32 tid = (__u32)bpf_get_current_pid_tgid();

		bpf_map_delete_elem(&stash_tid, &tid);
	}
	if (BPF_CORE_READ(t, signal, live.counter))
		return;
	old = bpf_map_lookup_elem(&procs, &tgid);
	st = bpf_map_lookup_elem(&agg_state, &zero);
	/* noted in this window: by this process's own calls, or by the
	 * earlier one's whose calls this window's records still hold (a pid
	 * reused within a window is the documented merge) */
	if (!old || !st || old->seq == *(volatile __u32 *)&st->seq)
		return;
	BPF_CORE_READ_STR_INTO(&comm, t, group_leader, comm);
	/* its own record: kept, with the executable's name (before 6.16 its
	 * mm is gone at this tracepoint) */
	if (old->start_ns == BPF_CORE_READ(t, group_leader, start_boottime) &&
	    comm_eq(old->comm, comm))
		return;
	proc_note(tgid);
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(dc_pexit_btf)
{
	dc_run();
	on_proc_exit();
	return 0;
}

SEC("raw_tp/sched_process_exit")
int BPF_PROG(dc_pexit_raw)
{
	dc_run();
	on_proc_exit();
	return 0;
}

SEC("tracepoint/sched/sched_process_exit")
int dc_pexit_tp(void *ctx)
{
	dc_run();
	on_proc_exit();
	return 0;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(dc_switch_btf, bool preempt)
{
	dc_run();
	on_switch(ctx, preempt);
	return 0;
}

SEC("raw_tp/sched_switch")
int BPF_PROG(dc_switch_raw, bool preempt)
{
	dc_run();
	on_switch(ctx, preempt);
	return 0;
}

SEC("tracepoint/sched/sched_switch")
int dc_switch_tp(void *ctx)
{
	dc_run();
	on_switch(ctx, false);
	return 0;
}

DC_SEC_LICENSE;

// SPDX-License-Identifier: Apache-2.0
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <time.h>
#include <unistd.h>

#include "counters.h"
#include "drain.h"
#include "filter.h"
#include "fs-util.h"
#include "kbtf.h"
#include "log.h"
#include "mechanism.h"
#include "macro.h"
#include "ops.h"
#include "preempt.h"
#include "probe-file.h"
#include "procstat.h"
#include "traces.h"
#include "stacks.h"
#include "probe-syscall.h"
#include "progstats.h"
#include "syscall.skel.h"
#include "slotmap.h"

enum mech { MECH_TP_BTF, MECH_RAW_TP, MECH_TRACEPOINT, MECH_MAX };
static const char *const mech_names[MECH_MAX] = {"tp_btf", "raw_tp", "tracepoint"};

/* Where a call's entry waits for its exit (bpf/syscall.bpf.c) */
enum stash { STASH_HASH, STASH_TASK, STASH_CPU };
static const char *const stash_names[] = {
    [STASH_HASH] = "in a per-thread hash",
    [STASH_TASK] = "in task storage",
    [STASH_CPU] = "per CPU, written back to task storage at switch-out",
};

struct probe_syscall {
	struct syscall_bpf *skel;
	enum mech mech;
	struct probe_file *files; /* NULL: file layer off (configured, or refused) */
	struct traces *traces;	  /* the manager's; NULL: off here (configured, or refused) */
	int clock_fd;		  /* the windows' clock: agg's state (-1: its own) */
	struct stacks *stacks;	  /* NULL: stack profiles off (configured, or refused) */
	struct dc_filter *filter;
	bool files_percpu;
	char files_detail[512];
	bool percpu;
	bool plain_updates;
	enum stash stash;
	char stash_why[160]; /* why not the per-CPU stash, where auto fell back */
	enum dc_preempt preempt;
	const char *preempt_why;
	int ncpus;
	int cpu_ids; /* one more than the highest possible CPU id */
	uint64_t max_keys;
	struct slotmap agg;
	char detail[512];
	struct dc_agg_entry *entries;
	size_t cap;
	size_t n;
	struct dc_agg_sum overflow_prev[DC_OP_MAX];
	bool overflow_recent; /* the last window counted calls into the overflow */
	uint64_t windows;
	uint64_t counters_prev[DC_CNT_MAX];
	uint64_t misses_prev;
};

static uint64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * USEC_PER_SEC + (uint64_t)ts.tv_nsec / 1000;
}

static void probe_close_maps(struct probe_syscall *p)
{
	slotmap_close(&p->agg);
	if (p->files)
		probe_file_reset(p->files);
	if (p->stacks)
		stacks_reset(p->stacks);
}

struct probe_syscall *probe_syscall_free(struct probe_syscall *p)
{
	if (!p)
		return NULL;
	if (p->skel)
		mech_detach_skeleton(p->skel->skeleton);
	syscall_bpf__destroy(p->skel);
	probe_close_maps(p);
	p->files = probe_file_free(p->files);
	p->stacks = stacks_free(p->stacks);
	p->filter = filter_free(p->filter);
	free(p->entries);
	free(p);
	return NULL;
}

DEFINE_TRIVIAL_CLEANUP_FUNC(struct probe_syscall *, probe_syscall_free);

static int choose_layout(const struct dc_config *cfg, int ncpus, bool *percpu)
{
	/* both windows' maps, preallocated: keys x value x CPUs (+ per-element overhead) */
	uint64_t per_cpu_bytes = 2 * (uint64_t)cfg->max_keys *
				 ((sizeof(struct dc_agg_val) + 7) / 8 * 8) * (uint64_t)ncpus;

	if (!strcmp(cfg->map_layout, "percpu"))
		*percpu = true;
	else if (!strcmp(cfg->map_layout, "shared"))
		*percpu = false;
	else
		*percpu = per_cpu_bytes <= (uint64_t)cfg->map_memory_mib << 20;
	return 0;
}

static uint32_t agg_owner(const void *key)
{
	return ((const struct dc_agg_key *)key)->tgid;
}

/* Open, configure and load the skeleton with one mechanism's programs. */
static int try_mechanism(struct probe_syscall *p, const struct dc_config *cfg, enum mech m,
			 enum stash stash, bool direct)
{
	struct bpf_program *enter[MECH_MAX], *exit_[MECH_MAX], *pexit[MECH_MAX], *sw[MECH_MAX];
	bool task_storage = stash != STASH_HASH;
	struct syscall_bpf *skel;
	int r;

	skel = syscall_bpf__open();
	if (!skel)
		return -errno;
	mech_release_image(skel->skeleton->data, skel->skeleton->data_sz);
	p->skel = skel;

	skel->rodata->agent_tgid = cfg->exclude_self ? (__u32)getpid() : 0;
	skel->rodata->use_task_storage = task_storage;
	skel->rodata->cpu_stash = stash == STASH_CPU;
	skel->rodata->plain_updates = p->plain_updates;
	ops_fill_nr_table((uint8_t *)skel->rodata->nr_to_op, DC_NR_MAX);
	for (unsigned op = 0; op < DC_OP_MAX; op++)
		skel->rodata->op_size_src[op] = (__u8)ops_get(op)->size_src;

	/* the direct-read pair is tp_btf's other face: one of the two loads */
	enter[MECH_TP_BTF] = direct ? skel->progs.dc_enter_btf_dr : skel->progs.dc_enter_btf;
	exit_[MECH_TP_BTF] = direct ? skel->progs.dc_exit_btf_dr : skel->progs.dc_exit_btf;
	bpf_program__set_autoload(direct ? skel->progs.dc_enter_btf : skel->progs.dc_enter_btf_dr,
				  false);
	bpf_program__set_autoload(direct ? skel->progs.dc_exit_btf : skel->progs.dc_exit_btf_dr,
				  false);
	enter[MECH_RAW_TP] = skel->progs.dc_enter_raw;
	exit_[MECH_RAW_TP] = skel->progs.dc_exit_raw;
	enter[MECH_TRACEPOINT] = skel->progs.dc_enter_tp;
	exit_[MECH_TRACEPOINT] = skel->progs.dc_exit_tp;
	/* the process record renewed at a process's exit (on_proc_exit) */
	pexit[MECH_TP_BTF] = skel->progs.dc_pexit_btf;
	pexit[MECH_RAW_TP] = skel->progs.dc_pexit_raw;
	pexit[MECH_TRACEPOINT] = skel->progs.dc_pexit_tp;
	for (int i = 0; i < MECH_MAX; i++) {
		bpf_program__set_autoload(enter[i], i == (int)m);
		bpf_program__set_autoload(exit_[i], i == (int)m);
		bpf_program__set_autoload(pexit[i], i == (int)m);
	}

	/* the stash the programs do not use is never created (libbpf poisons
	 * the dead references; the verifier prunes them on the rodata flag) */
	bpf_map__set_autocreate(skel->maps.stash_task, task_storage);
	bpf_map__set_autocreate(skel->maps.stash_tid, !task_storage);
	bpf_map__set_autocreate(skel->maps.stash_cpu, stash == STASH_CPU);
	bpf_map__set_max_entries(skel->maps.stash_tid, (__u32)cfg->max_threads);
	bpf_map__set_max_entries(skel->maps.procs, (__u32)cfg->max_procs);
	r = filter_prepare(p->filter, skel->obj);
	if (r)
		return r;

	skel->rodata->agg_max = (__u32)p->max_keys;
	skel->rodata->agg_regions = p->percpu ? (__u32)p->cpu_ids : 1;
	r = slotmap_prepare(&p->agg, skel->obj, "agg", sizeof(struct dc_agg_key),
			    sizeof(struct dc_agg_val), (unsigned)p->max_keys,
			    skel->rodata->agg_regions, agg_val_touched);
	if (!r && p->clock_fd >= 0)
		r = slotmap_share_state(&p->agg, p->clock_fd);
	if (r)
		return r;
	p->agg.owner = agg_owner;
	skel->rodata->agg_half = p->agg.half;
	if (p->files)
		r = probe_file_prepare(p->files, skel, p->files_percpu, p->plain_updates, direct);
	else
		probe_file_disable(skel);
	if (r)
		return r;
	if (p->traces) {
		r = traces_prepare(p->traces, skel);
		if (r < 0)
			return r;
		if (!r)
			p->traces = NULL; /* the ring could not be made */
		r = 0;
	} else
		traces_disable(skel);
	if (p->stacks)
		r = stacks_prepare(p->stacks, skel, (int)m);
	else
		stacks_disable(skel);
	if (r)
		return r;
	sw[MECH_TP_BTF] = skel->progs.dc_switch_btf;
	sw[MECH_RAW_TP] = skel->progs.dc_switch_raw;
	sw[MECH_TRACEPOINT] = skel->progs.dc_switch_tp;
	if (stash == STASH_CPU)
		bpf_program__set_autoload(sw[m], true);
	mech_verifier_log_begin(skel->obj);
	r = syscall_bpf__load(skel);
	mech_verifier_log_end();
	if (r)
		return r;
	r = slotmap_install(&p->agg);
	if (!r && p->files)
		r = probe_file_install(p->files, skel);
	if (!r && p->stacks)
		r = stacks_install(p->stacks);
	if (!r)
		r = filter_install(p->filter, skel->obj);
	if (r)
		return r;

	/* The switch program first: a thread that entered a call with the
	 * per-CPU stash must have its write-back when it leaves the CPU.
	 * The skeleton's attach skips a program whose link is set. */
	if (bpf_program__autoload(sw[m])) {
		struct bpf_link **l = m == MECH_TP_BTF	 ? &skel->links.dc_switch_btf
				      : m == MECH_RAW_TP ? &skel->links.dc_switch_raw
							 : &skel->links.dc_switch_tp;

		*l = bpf_program__attach(sw[m]);
		if (!*l)
			return -errno;
	}
	return syscall_bpf__attach(skel);
}

static void reset_attempt(struct probe_syscall *p)
{
	syscall_bpf__destroy(p->skel);
	p->skel = NULL;
	probe_close_maps(p);
}

struct attempt {
	struct probe_syscall *p;
	const struct dc_config *cfg;
};

/*
 * tp_btf with the file layer: first with the file read in place, which
 * needs bpf_rdonly_cast (6.2+); a kernel without it refuses the programs
 * at load, and the probe-read pair is tried next on the same mechanism.
 * Where the kernel's BTF does not name the kfunc at all, the refused load
 * is not tried: it was a third of the layer's attach time on Debian 12's
 * 6.1 (bench/run-vm-attach-bench.sh), and the check costs 1 to 3 ms. The
 * other mechanisms' program types may not call kfuncs on every kernel that
 * has them: they always copy.
 */
static int attempt_stash(struct attempt *a, int m, enum stash stash)
{
	const char *reads = a->cfg->files_reads;
	int r = m == MECH_TRACEPOINT ? tracefs_ensure() : 0;

	if (r)
		return r;
	if (m == MECH_TP_BTF && a->p->files && strcmp(reads, "probe")) {
		char why[160];

		if (!strcmp(reads, "auto") && kernel_btf_has_string("bpf_rdonly_cast") == 0) {
			snprintf(
			    why, sizeof(why),
			    "direct loads not tried: the kernel has no bpf_rdonly_cast (6.2+)");
		} else {
			r = try_mechanism(a->p, a->cfg, (enum mech)m, stash, true);
			if (!r || !strcmp(reads, "direct"))
				return r;
			reset_attempt(a->p);
			snprintf(why, sizeof(why), "direct loads refused: %s", strerror(-r));
		}
		log_info("File layer: %s; reading with bpf_probe_read_kernel", why);
		r = try_mechanism(a->p, a->cfg, (enum mech)m, stash, false);
		if (!r)
			probe_file_note(a->p->files, why);
		return r;
	}
	if (!strcmp(reads, "direct") && a->p->files)
		return -EOPNOTSUPP; /* only tp_btf reads in place */
	return try_mechanism(a->p, a->cfg, (enum mech)m, stash, false);
}

/* The per-CPU stash needs the switch program beside the pair; where the
 * kernel refuses it, auto keeps the pair with the stash in task storage. */
static int attempt(void *ctx, int m)
{
	struct attempt *a = ctx;
	struct probe_syscall *p = a->p;
	int r = attempt_stash(a, m, p->stash);

	if (!r || p->stash != STASH_CPU || strcmp(a->cfg->syscall_stash, "auto"))
		return r;
	reset_attempt(p);
	snprintf(p->stash_why, sizeof(p->stash_why), "per-CPU stash refused with %s: %s",
		 mech_names[m], strerror(-r));
	log_info("syscall probes: %s; keeping the entry stash in task storage", p->stash_why);
	r = attempt_stash(a, m, STASH_TASK);
	if (!r)
		p->stash = STASH_TASK;
	else
		p->stash_why[0] = 0;
	return r;
}

static void undo(void *ctx)
{
	reset_attempt(((struct attempt *)ctx)->p);
}

int probe_syscall_new(const struct dc_config *cfg, struct traces *traces, int clock_fd,
		      struct probe_syscall **ret)
{
	_cleanup_(probe_syscall_freep) struct probe_syscall *p = NULL;
	bool task_storage;
	enum mech first = MECH_TP_BTF, last = MECH_TRACEPOINT;
	size_t off = 0;
	int r = -ENOENT;

	if (access("/sys/kernel/btf/vmlinux", R_OK) < 0)
		return log_error_errno(
		    -errno, "This kernel exposes no BTF (/sys/kernel/btf/vmlinux: %m); "
			    "datacrumbs needs CONFIG_DEBUG_INFO_BTF=y to relocate its probes");

	p = calloc(1, sizeof(*p));
	if (!p)
		return log_error_errno(-ENOMEM, "Out of memory");
	p->agg.barrier_inner_fd = -1;
	p->ncpus = libbpf_num_possible_cpus();
	if (p->ncpus <= 0)
		return log_error_errno(p->ncpus, "Cannot count possible CPUs: %m");
	/* per-CPU regions are indexed by CPU id: past the count where the
	 * possible mask has holes */
	p->cpu_ids = possible_cpu_ids(p->ncpus);
	{
		char err[512];

		r = filter_new(cfg, NULL, &p->filter, err, sizeof(err));
		if (r < 0)
			return log_error_errno(r, "Cannot set up the filters: %s", err);
	}
	p->max_keys = (uint64_t)cfg->max_keys;
	choose_layout(cfg, p->cpu_ids, &p->percpu);
	p->preempt = preempt_detect(&p->preempt_why);
	p->plain_updates = p->percpu && preempt_allows_plain_updates(p->preempt) &&
			   strcmp(cfg->map_updates, "atomic") != 0;
	if (cfg->files_enable) {
		r = probe_file_new(cfg, &p->files);
		if (r < 0)
			return log_error_errno(r, "Cannot set up the file layer: %m");
		/* one plain_updates flag serves both layers' maps: per-CPU file
		 * maps too big for the budget make both layers atomic */
		p->files_percpu = p->percpu && probe_file_fits_percpu(p->files);
		if (p->percpu && !p->files_percpu)
			p->plain_updates = false;
	} else
		snprintf(p->files_detail, sizeof(p->files_detail), "probes.files.enable is false");
	p->traces = traces;
	p->clock_fd = clock_fd;
	if (cfg->stacks_enable) {
		char err[512] = "";

		r = stacks_new(cfg, &p->stacks, err, sizeof(err));
		if (r < 0)
			return log_error_errno(r, "Cannot set up stack profiles: %s", err);
		if (err[0])
			log_warning("Stack profiles: %s; kernel frames will be unnamed", err);
	}

	r = libbpf_probe_bpf_map_type(BPF_MAP_TYPE_TASK_STORAGE, NULL);
	if (r == -EPERM || r == -EACCES)
		return log_error_errno(r, "Not allowed to use BPF (%m): run datacrumbs as root, or "
					  "with CAP_BPF, CAP_PERFMON and CAP_SYS_RESOURCE");
	task_storage = r == 1;
	/* the map type came with 5.11 for BPF LSM; tracing programs may use
	 * it from 5.13 (a10787e6d58c "bpf: Enable task local storage for
	 * tracing programs"): a raw tracepoint program asks for them */
	if (task_storage)
		task_storage = libbpf_probe_bpf_helper(BPF_PROG_TYPE_RAW_TRACEPOINT,
						       BPF_FUNC_task_storage_get, NULL) == 1;
	if (!strcmp(cfg->syscall_stash, "hash"))
		p->stash = STASH_HASH;
	else if (!task_storage && strcmp(cfg->syscall_stash, "auto"))
		return log_error_errno(
		    -EOPNOTSUPP,
		    "probes.syscall.entry_stash is \"%s\" but "
		    "this kernel has no BPF task storage for tracing programs (5.13+); use "
		    "\"auto\" or \"hash\"",
		    cfg->syscall_stash);
	else if (!task_storage) {
		p->stash = STASH_HASH;
		snprintf(p->stash_why, sizeof(p->stash_why),
			 "no task storage for tracing programs (5.13+)");
	} else if (!strcmp(cfg->syscall_stash, "task_storage"))
		p->stash = STASH_TASK;
	else if (!preempt_allows_plain_updates(p->preempt) || !strcmp(cfg->map_updates, "atomic")) {
		/* a program preempted halfway would write a cache another
		 * thread owns by then: the same condition as plain updates */
		if (!strcmp(cfg->syscall_stash, "cpu"))
			return log_error_errno(
			    -EOPNOTSUPP,
			    "probes.syscall.entry_stash is \"cpu\", which needs BPF programs "
			    "that are never preempted, but %s%s; use \"auto\" or \"task_storage\"",
			    strcmp(cfg->map_updates, "atomic")
				? "the preemption model here is "
				: "maps.updates is \"atomic\" (for kernels whose ",
			    strcmp(cfg->map_updates, "atomic")
				? preempt_name(p->preempt)
				: "preemption is switched at run time)");
		p->stash = STASH_TASK;
		if (!strcmp(cfg->map_updates, "atomic"))
			snprintf(p->stash_why, sizeof(p->stash_why),
				 "not per CPU: maps.updates is atomic");
		else
			snprintf(p->stash_why, sizeof(p->stash_why), "not per CPU: preemption %s",
				 preempt_name(p->preempt));
	} else
		p->stash = STASH_CPU;

	if (strcmp(cfg->syscall_mechanism, "auto"))
		first = last = (enum mech)mech_find(mech_names, MECH_MAX, cfg->syscall_mechanism);
	{
		struct attempt a = {p, cfg};

		r = mech_choose("syscall", mech_names, first, last, attempt, undo, &a, p->detail,
				sizeof(p->detail), &off);
		if (r < 0 && (p->files || p->traces || p->stacks)) {
			/* the file and trace code is what a kernel is likeliest to
			 * refuse (fd table and path walks, ring queries): keep the
			 * syscall layer */
			snprintf(p->files_detail, sizeof(p->files_detail),
				 "refused with the syscall programs: %.400s", p->detail);
			log_warning("File layer and traces refused by this kernel (%s); retrying "
				    "the syscall probes without them",
				    p->detail);
			p->files = probe_file_free(p->files);
			/* the other layers' events still go to the ring */
			p->traces = NULL;
			p->stacks = stacks_free(p->stacks);
			off = 0;
			p->detail[0] = 0;
			r = mech_choose("syscall", mech_names, first, last, attempt, undo, &a,
					p->detail, sizeof(p->detail), &off);
		}
	}
	if (r == -EPERM || r == -EACCES)
		return log_error_errno(
		    r,
		    "Not allowed to load BPF programs (%s): run datacrumbs "
		    "as root, or with CAP_BPF, CAP_PERFMON and CAP_SYS_RESOURCE (and "
		    "CAP_SYS_ADMIN to mount tracefs)",
		    p->detail);
	if (r < 0)
		return log_error_errno(r, "No mechanism could attach the system-call probes (%s)",
				       p->detail);
	p->mech = (enum mech)r;
	if (p->files) {
		r = probe_file_start(p->files, p->skel);
		if (r < 0)
			return log_error_errno(r, "Cannot read the file-name ring: %m");
	}
	snprintf(p->detail + off, sizeof(p->detail) - off,
		 "%sentry stash %s%s%s%s; %s updates (preemption %s, from %s)", off ? "; " : "",
		 stash_names[p->stash], p->stash_why[0] ? " (" : "", p->stash_why,
		 p->stash_why[0] ? ")" : "", p->plain_updates ? "plain" : "atomic",
		 preempt_name(p->preempt), p->preempt_why);
	log_info("syscall probes: entry stash %s, %s maps of %llu keys, %s updates (preemption %s "
		 "from %s)",
		 stash_names[p->stash], p->percpu ? "per-CPU" : "shared",
		 (unsigned long long)p->max_keys, p->plain_updates ? "plain" : "atomic",
		 preempt_name(p->preempt), p->preempt_why);
	*ret = TAKE_PTR(p);
	return 0;
}

const char *probe_syscall_mechanism(const struct probe_syscall *p)
{
	return mech_names[p->mech];
}

const char *probe_syscall_detail(const struct probe_syscall *p)
{
	return p->detail;
}

const char *probe_syscall_layout(const struct probe_syscall *p)
{
	return p->percpu ? "percpu" : "shared";
}

bool probe_syscall_plain_updates(const struct probe_syscall *p)
{
	return p->plain_updates;
}

uint64_t probe_syscall_max_keys(const struct probe_syscall *p)
{
	return p->max_keys;
}

uint64_t probe_syscall_slots(const struct probe_syscall *p, uint64_t *reclaimed,
			     uint64_t *reclaimed_exited)
{
	*reclaimed = p->agg.reclaimed;
	*reclaimed_exited = p->agg.reclaimed_exited;
	return slotmap_used(&p->agg);
}

static int collect(const void *key, const void *const *values, unsigned n, void *ctx)
{
	struct probe_syscall *p = ctx;
	struct dc_agg_entry *e;

	/* every member is written by the fold; padding goes out nowhere */
	e = VEC_PUSH_RAW(p->entries, p->n, p->cap);
	if (!e)
		return -ENOMEM;
	agg_entry_fold_each(e, key, values, n);
	return 0;
}

/* Sum a per-CPU array element over CPUs. */
static int percpu_lookup(int fd, __u32 key, void *buf)
{
	return bpf_map_lookup_elem(fd, &key, buf) ? -errno : 0;
}

static void read_overflow(struct probe_syscall *p, struct dc_agg_entry out[DC_OP_MAX])
{
	_cleanup_free_ struct dc_agg_val *vals = calloc((size_t)p->ncpus, sizeof(*vals));
	int fd = bpf_map__fd(p->skel->maps.agg_overflow);

	for (__u32 op = 0; op < DC_OP_MAX; op++) {
		struct dc_agg_sum cur = {};

		out[op] = (struct dc_agg_entry){.op = (uint16_t)op};
		if (!vals || percpu_lookup(fd, op, vals))
			continue;
		for (int c = 0; c < p->ncpus; c++)
			agg_sum_add_val(&cur, &vals[c]);
		/* the kernel's 32-bit slots wrap; deltas of the 64-bit sums of
		 * wrapped slots would not, so fold slot deltas modulo 2^32 */
		agg_sum_delta(&out[op].v, &cur, &p->overflow_prev[op]);
		/* count is the 64-bit sum of those slots: taken again from the
		 * folded deltas, or one wrap makes it about 2^64 */
		out[op].v.count = 0;
		for (unsigned i = 0; i < DC_LAT_SLOTS; i++) {
			out[op].v.lat[i] &= 0xFFFFFFFFu;
			out[op].v.count += out[op].v.lat[i];
		}
		for (unsigned i = 0; i < DC_SIZE_SLOTS; i++)
			out[op].v.size[i] &= 0xFFFFFFFFu;
		out[op].v.tr_kept &= 0xFFFFFFFFu;
		out[op].v.tr_out &= 0xFFFFFFFFu;
		out[op].v.tr_drop &= 0xFFFFFFFFu;
		p->overflow_prev[op] = cur;
	}
}

struct slotmap *probe_syscall_slotmap(struct probe_syscall *p)
{
	return &p->agg;
}

int probe_syscall_flip_and_drain(struct probe_syscall *p, struct dc_drain_result *res)
{
	unsigned long long flip_us;
	uint64_t t0 = now_us();
	bool full;
	int r;

	p->n = 0;
	res->used_batch = false; /* read in place: no batch calls */
	r = slotmap_flip_and_drain(&p->agg, collect, p, &flip_us);
	if (r < 0)
		return r;
	r = percpu_counters_delta(p->skel->maps.counters, DC_CNT_MAX, p->ncpus, p->counters_prev,
				  res->counters);
	/* The overflow's sums move only while the map is full, and such a call
	 * counts DC_CNT_AGG_FULL before it adds to them: they are read (a
	 * look-up of every CPU's values for each of the ops, 59 x 336 bytes a
	 * CPU) in a window that counted one and in the next, for a call caught
	 * between its count and its sums by the last read; and every 64th, for
	 * one preempted there for longer (a preemptible kernel). */
	full = r < 0 || res->counters[DC_CNT_AGG_FULL] != 0;
	if (full || p->overflow_recent || p->windows++ % 64 == 0)
		read_overflow(p, res->overflow);
	else
		for (__u32 op = 0; op < DC_OP_MAX; op++)
			res->overflow[op] = (struct dc_agg_entry){.op = (uint16_t)op};
	p->overflow_recent = full;
	{
		uint64_t m = progs_recursion_misses(p->skel->obj);

		res->recursion_misses = m - p->misses_prev;
		p->misses_prev = m;
	}
	res->entries = p->entries;
	res->n = p->n;
	res->flip_us = flip_us;
	/* draining the map and reading the loss counters */
	res->drain_us = now_us() - t0 - flip_us;
	return 0;
}

int probe_syscall_proc(struct probe_syscall *p, uint32_t tgid, struct dc_proc_info *info)
{
	struct dc_proc proc;

	memset(info, 0, sizeof(*info));
	if (bpf_map_lookup_elem(bpf_map__fd(p->skel->maps.procs), &tgid, &proc))
		return -errno;
	/* the kernel's strings are NUL-terminated unless they filled the array */
	memcpy(info->comm, proc.comm, strnlen(proc.comm, sizeof(proc.comm)));
	memcpy(info->exe, proc.exe, strnlen(proc.exe, sizeof(proc.exe)));
	info->uid = proc.uid;
	info->start_ns = proc_start_floor(proc.start_ns, sysconf(_SC_CLK_TCK));
	info->known = true;
	return 0;
}

struct probe_file *probe_syscall_files(struct probe_syscall *p)
{
	return p->files;
}

const char *probe_syscall_files_detail(const struct probe_syscall *p)
{
	return p->files ? probe_file_detail(p->files) : p->files_detail;
}

struct traces *probe_syscall_traces(struct probe_syscall *p)
{
	return p->traces;
}

struct bpf_object *probe_syscall_object(const struct probe_syscall *p)
{
	return p->skel->obj;
}

struct stacks *probe_syscall_stacks(struct probe_syscall *p)
{
	return p->stacks;
}

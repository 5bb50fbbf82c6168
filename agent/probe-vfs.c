// SPDX-License-Identifier: Apache-2.0
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "datacrumbs/vfs.h"
#include "filter.h"
#include "kbtf.h"
#include "macro.h"
#include "mechanism.h"
#include "preempt.h"
#include "probe-vfs.h"
#include "traces.h"
#include "vfs.skel.h"

enum mech { MECH_FENTRY, MECH_KPROBE, MECH_RAW_TP, MECH_TRACEPOINT, MECH_MAX };
static const char *const mech_names[MECH_MAX] = {"fentry", "kprobe", "raw_tp", "tracepoint"};

/* Whether a mechanism attaches the tracepoint rows (tps[]), not funcs[]. */
static bool by_rows(enum mech m)
{
	return m == MECH_RAW_TP || m == MECH_TRACEPOINT;
}

/* set in every raw tracepoint's cookie; the programs read the low 32 bits */
#define DC_VFS_COOKIE_SET (1ULL << 40)

static const struct {
	const char *name, *category, *feature;
	bool bytes;
} funcs[DC_VFS_MAX] = {
#define DC_VFS_ROW(n, c, b) [DC_VFS_##n] = {#n, #c, #n "-" #c, b},
    DC_VFS_FUNCS(DC_VFS_ROW)
#undef DC_VFS_ROW
};

static const struct {
	enum dc_vfs_func func;
	const char *enter, *exit; /* "group/event"; exit "" for a single event */
} tps[] = {
#define DC_VFS_TP_ROW(f, e, x) {DC_VFS_##f, e, x},
    DC_VFS_TPS(DC_VFS_TP_ROW)
#undef DC_VFS_TP_ROW
};

/* every attachment is a pair at most: fentry+fexit, kprobe+kretprobe, or
 * two tracepoints */
#define MAX_LINKS (2 * (DC_VFS_MAX + ELEMENTSOF(tps)))

struct probe_vfs {
	struct vfs_bpf *skel;
	enum mech mech;
	struct fn_agg agg;
	bool selected[DC_VFS_MAX];
	struct bpf_link *links[MAX_LINKS];
	size_t n_links;
	int fds[MAX_LINKS]; /* raw tracepoints: libbpf 1.1 has no link with a cookie */
	size_t n_fds;
	/* the last try: it had programs of functions that may run in
	 * interrupts to load; the kernel refused its load */
	bool irq_progs, load_failed;
	char detail[1024];
	char refused[384]; /* functions present whose attachment the kernel refused */
	size_t refused_off;
};

const char *probe_vfs_func_name(uint32_t func)
{
	return func < DC_VFS_MAX ? funcs[func].name : NULL;
}

const char *probe_vfs_feature(uint32_t func)
{
	return func < DC_VFS_MAX ? funcs[func].feature : NULL;
}

int probe_vfs_select(const char *categories, bool *selected, char *err, size_t errlen)
{
	char buf[1024], *save = NULL;

	memset(selected, 0, DC_VFS_MAX * sizeof(*selected));
	snprintf(buf, sizeof(buf), "%s", categories ? categories : DC_VFS_DEFAULT_CATEGORIES);
	for (char *c = strtok_r(buf, ", \n", &save); c; c = strtok_r(NULL, ", \n", &save)) {
		bool known = false;

		for (unsigned i = 0; i < DC_VFS_MAX; i++)
			if (!strcmp(funcs[i].category, c)) {
				selected[i] = true;
				known = true;
			}
		if (!known) {
			size_t off =
			    (size_t)snprintf(err, errlen, "unknown category \"%s\" (known:", c);

			for (unsigned i = 0; i < DC_VFS_MAX; i++)
				if (i == 0 || strcmp(funcs[i].category, funcs[i - 1].category))
					off += (size_t)snprintf(err + off,
								off < errlen ? errlen - off : 0,
								" %s", funcs[i].category);
			snprintf(err + off, off < errlen ? errlen - off : 0, ")");
			return -EINVAL;
		}
	}
	return 0;
}

static void vfs_detach(struct probe_vfs *p)
{
	struct bpf_link **links[MAX_LINKS];

	for (size_t i = 0; i < p->n_links; i++)
		links[i] = &p->links[i];
	mech_detach(links, p->n_links);
	p->n_links = 0;
	for (size_t i = 0; i < p->n_fds; i++)
		close(p->fds[i]);
	p->n_fds = 0;
	if (p->skel)
		mech_detach_skeleton(p->skel->skeleton);
}

struct probe_vfs *probe_vfs_free(struct probe_vfs *p)
{
	if (!p)
		return NULL;
	vfs_detach(p);
	vfs_bpf__destroy(p->skel);
	fn_agg_close(&p->agg);
	free(p);
	return NULL;
}

DEFINE_TRIVIAL_CLEANUP_FUNC(struct probe_vfs *, probe_vfs_free);

/*
 * Which kernel functions are there to probe: the kernel's BTF and every
 * loaded module's (ext4, xfs, nfs, fuse are modules on distribution
 * kernels). A function absent from BTF was inlined away or is not built.
 * One pass over each BTF with a binary search of the catalogue per FUNC:
 * a lookup per function scans ~150k types each time, and that was a
 * visible part of the agent's start-up.
 */
struct kernel_btf {
	bool loaded;
	bool have[DC_VFS_MAX];
	__s32 probe_id; /* a catalogued function's BTF id in vmlinux, for the fentry probe */
	/* x86: the per-CPU variable holding the preempt count, as the kernel's
	 * BTF names it (pcpu_hot from 6.2 to 6.14, else __preempt_count), the
	 * programs' own order, or NULL */
	const char *preempt_var;
};

static int by_name(const void *a, const void *b)
{
	return strcmp(funcs[*(const unsigned *)a].name, funcs[*(const unsigned *)b].name);
}

static int name_in(const void *key, const void *elem)
{
	return strcmp(key, funcs[*(const unsigned *)elem].name);
}

static void kernel_btf_scan(struct kernel_btf *k, const struct btf *b, const unsigned *order,
			    bool vmlinux)
{
	__u32 n = btf__type_cnt(b);

	for (__u32 id = vmlinux ? 1 : btf__type_cnt(btf__base_btf(b)); id < n; id++) {
		const struct btf_type *t = btf__type_by_id(b, id);
		const unsigned *i;

		if (vmlinux && btf_is_var(t)) {
			const char *name = btf__name_by_offset(b, t->name_off);

			if (!strcmp(name, "pcpu_hot"))
				k->preempt_var = "pcpu_hot";
			else if (!strcmp(name, "__preempt_count") && !k->preempt_var)
				k->preempt_var = "__preempt_count";
		}
		if (!btf_is_func(t))
			continue;
		i = bsearch(btf__name_by_offset(b, t->name_off), order, DC_VFS_MAX, sizeof(*order),
			    name_in);
		if (!i)
			continue;
		k->have[*i] = true;
		if (vmlinux && !k->probe_id)
			k->probe_id = (__s32)id;
	}
}

static void kernel_btf_load(struct kernel_btf *k)
{
	unsigned order[DC_VFS_MAX];
	struct btf *vmlinux;
	DIR *d;
	struct dirent *e;

	if (k->loaded)
		return;
	k->loaded = true;
	for (unsigned i = 0; i < DC_VFS_MAX; i++)
		order[i] = i;
	qsort_safe(order, DC_VFS_MAX, sizeof(*order), by_name);
	vmlinux = btf__load_vmlinux_btf();
	if (!vmlinux)
		return;
	kernel_btf_scan(k, vmlinux, order, true);
	d = opendir("/sys/kernel/btf");
	while (d && (e = readdir(d))) {
		char path[512];
		struct btf *b;

		if (e->d_name[0] == '.' || !strcmp(e->d_name, "vmlinux"))
			continue;
		snprintf(path, sizeof(path), "/sys/kernel/btf/%s", e->d_name);
		b = btf__parse_split(path, vmlinux);
		if (b)
			kernel_btf_scan(k, b, order, false);
		btf__free(b);
	}
	if (d)
		closedir(d);
	btf__free(vmlinux);
}

/* A PREEMPT_RT kernel: /sys/kernel/realtime (1), or the build flavour in
 * uname -v as preempt_parse() reads it; the preemption mode debugfs shows
 * (full, lazy) does not say. */
static bool kernel_is_rt(void)
{
	char c = 0;
	const char *why;
	struct utsname u;
	FILE *f = fopen("/sys/kernel/realtime", "re");

	if (f) {
		c = (char)fgetc(f);
		fclose(f);
		if (c == '1')
			return true;
	}
	return !uname(&u) && preempt_parse(NULL, u.version, NULL, NULL, &why) == DC_PREEMPT_RT;
}

/*
 * Why the programs of a function that may run in interrupts
 * (DC_VFS_MAY_IRQ) cannot tell interrupt context from task context on
 * this kernel, or NULL when they can. They read the preempt count: on x86
 * a per-CPU variable, which the verifier places through /proc/kallsyms
 * (data symbols are there only with CONFIG_KALLSYMS_ALL); arm64 keeps it
 * in the task. A PREEMPT_RT kernel serves softirqs in threads, where the
 * count does not show them. The answer holds for the kernel's life, so it
 * is worked out once (a kallsyms read is about 120,000 lines): a budget
 * step back or a reload that attaches the layer again does not repeat it.
 * A refusal these checks do not foresee is caught at load (try_mechanism_irq).
 */
static const char *irq_unknown(const struct kernel_btf *k)
{
	static const char *why;
	static int known;
	const char *w = NULL;
	bool lasting = true;

	if (__atomic_load_n(&known, __ATOMIC_ACQUIRE))
		return __atomic_load_n(&why, __ATOMIC_RELAXED);
	if (kernel_is_rt())
		w = "a PREEMPT_RT kernel serves softirqs in threads, where the preempt count "
		    "does not show them";
#if defined(__x86_64__)
	else if (!k->preempt_var)
		w = "the kernel's BTF names no preempt count (__preempt_count, pcpu_hot)";
	else {
		int r = kernel_has_symbol(k->preempt_var);

		if (r < 0) {
			w = "cannot read /proc/kallsyms";
			lasting = false; /* asked again at the next start */
		} else if (!r)
			w = "its preempt count is not in /proc/kallsyms (a kernel without "
			    "CONFIG_KALLSYMS_ALL), where the verifier finds it";
	}
#else
	(void)k;
#endif
	if (lasting) {
		/* two threads asking at once compute the same answer */
		__atomic_store_n(&why, w, __ATOMIC_RELAXED);
		__atomic_store_n(&known, 1, __ATOMIC_RELEASE);
	}
	return w;
}

/*
 * Whether the kernel takes a mechanism at all, asked with a two-instruction
 * program instead of the family's object: each full attempt parses the
 * kernel's BTF and verifies every program (about 100 ms here), and a kernel
 * that refuses fentry (lockdown, EPERM) or lacks kprobes refuses the tiny
 * one the same way. The full attempt still decides; this only skips the
 * ones bound to fail.
 */
static int mech_probe(enum mech m, const struct kernel_btf *k)
{
	const struct bpf_insn ret0[] = {
	    {.code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0},
	    {.code = BPF_JMP | BPF_EXIT},
	};

	if (m == MECH_FENTRY) {
		LIBBPF_OPTS(bpf_prog_load_opts, po, .expected_attach_type = BPF_TRACE_FENTRY,
			    .attach_btf_id = (__u32)k->probe_id);
		_cleanup_close_ int prog = -1, link = -1;

		if (k->probe_id <= 0)
			return -ENOENT;
		prog = bpf_prog_load(BPF_PROG_TYPE_TRACING, "dc_probe", "GPL", ret0,
				     ELEMENTSOF(ret0), &po);
		if (prog < 0)
			return -errno;
		link = bpf_link_create(prog, 0, BPF_TRACE_FENTRY, NULL);
		return link < 0 ? -errno : 0;
	}
	if (m == MECH_KPROBE) {
		/* libbpf attaches through the kprobe PMU or tracefs' kprobe_events */
		if (access("/sys/bus/event_source/devices/kprobe/type", F_OK) &&
		    access("/sys/kernel/tracing/kprobe_events", F_OK) &&
		    access("/sys/kernel/debug/tracing/kprobe_events", F_OK))
			return -EOPNOTSUPP;
	}
	return 0;
}

static bool tracepoint_exists(const char *ev)
{
	char path[512];

	snprintf(path, sizeof(path), "/sys/kernel/tracing/events/%s", ev);
	if (access(path, F_OK) == 0)
		return true;
	snprintf(path, sizeof(path), "/sys/kernel/debug/tracing/events/%s", ev);
	return access(path, F_OK) == 0;
}

/* The fentry/fexit programs of function i, by name in the skeleton. */
static struct bpf_program *prog_of(struct vfs_bpf *skel, const char *prefix, unsigned i)
{
	char name[96];

	snprintf(name, sizeof(name), "%s%s", prefix, funcs[i].name);
	return bpf_object__find_program_by_name(skel->obj, name);
}

/* The probe's detail grows by a formatted piece; a detail too long for
 * its buffer is cut, and *off stays inside it. */
static __attribute__((format(printf, 4, 5))) void appendf(char *buf, size_t len, size_t *off,
							  const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	*off += (size_t)vsnprintf(buf + *off, *off < len ? len - *off : 0, fmt, ap);
	va_end(ap);
	if (*off >= len)
		*off = len - 1;
}

static void note(char *buf, size_t len, size_t *off, const char *what)
{
	appendf(buf, len, off, "%s%s", *off ? "," : "", what);
}

static struct bpf_link *attach_tp(struct bpf_program *prog, const char *ev, __u64 cookie)
{
	LIBBPF_OPTS(bpf_tracepoint_opts, to, .bpf_cookie = cookie);
	char group[128];
	const char *slash = strchr(ev, '/');

	if (!slash || (size_t)(slash - ev) >= sizeof(group)) {
		errno = EINVAL;
		return NULL;
	}
	snprintf(group, sizeof(group), "%.*s", (int)(slash - ev), ev);
	return bpf_program__attach_tracepoint_opts(prog, group, slash + 1, &to);
}

/*
 * A raw tracepoint's link with a cookie, the attribute as 6.10 reads it
 * (libbpf 1.1 has no such call). The cookie is never 0: an older kernel
 * then refuses the attribute (EINVAL) instead of dropping the cookie.
 */
static int attach_raw(struct bpf_program *prog, const char *ev, __u64 cookie)
{
	struct {
		__u64 name;
		__u32 prog_fd;
		__u32 pad;
		__u64 cookie;
	} attr = {.prog_fd = (__u32)bpf_program__fd(prog), .cookie = cookie | DC_VFS_COOKIE_SET};
	const char *slash = strchr(ev, '/');
	int fd;

	attr.name = (__u64)(uintptr_t)(slash ? slash + 1 : ev);
	fd = (int)syscall(__NR_bpf, BPF_RAW_TRACEPOINT_OPEN, &attr, sizeof(attr));
	return fd < 0 ? -errno : fd;
}

/* A raw tracepoint row: exit before entry, as attach_one(). */
static int attach_raw_row(struct probe_vfs *p, unsigned i)
{
	struct vfs_bpf *skel = p->skel;
	__u64 cookie = tps[i].func;
	int fd;

	if (!tps[i].exit[0]) {
		fd = attach_raw(skel->progs.dc_vfs_raw_event, tps[i].enter, cookie);
		if (fd >= 0)
			p->fds[p->n_fds++] = fd;
		return fd < 0 ? fd : 0;
	}
	fd = attach_raw(skel->progs.dc_vfs_raw_exit, tps[i].exit, cookie);
	if (fd < 0)
		return fd;
	p->fds[p->n_fds++] = fd;
	fd = attach_raw(skel->progs.dc_vfs_raw_enter, tps[i].enter, cookie);
	if (fd < 0) {
		close(p->fds[--p->n_fds]);
		return fd;
	}
	p->fds[p->n_fds++] = fd;
	return 0;
}

/* Attach one function (fentry, kprobe) or one tracepoint row (tracepoint):
 * exit first, so that no entry is ever seen without its exit in place (it
 * would be an orphan on the thread's stack). */
static int attach_one(struct probe_vfs *p, enum mech m, unsigned i, struct bpf_link *l[2])
{
	struct vfs_bpf *skel = p->skel;

	l[0] = l[1] = NULL;
	if (m == MECH_FENTRY) {
		l[1] = bpf_program__attach(prog_of(skel, "dc_fexit_", i));
		l[0] = l[1] ? bpf_program__attach(prog_of(skel, "dc_fentry_", i)) : NULL;
	} else if (m == MECH_KPROBE) {
		LIBBPF_OPTS(bpf_kprobe_opts, ko,
			    .bpf_cookie = i | (funcs[i].bytes ? DC_FN_COOKIE_BYTES : 0));

		bool irq = DC_VFS_MAY_IRQ(i);

		ko.retprobe = true;
		l[1] = bpf_program__attach_kprobe_opts(irq ? skel->progs.dc_vfs_kretprobe_irq
							   : skel->progs.dc_vfs_kretprobe,
						       funcs[i].name, &ko);
		ko.retprobe = false;
		l[0] = l[1] ? bpf_program__attach_kprobe_opts(irq ? skel->progs.dc_vfs_kprobe_irq
								  : skel->progs.dc_vfs_kprobe,
							      funcs[i].name, &ko)
			    : NULL;
	} else {
		/* i indexes tps[] here */
		__u64 cookie = tps[i].func;

		if (tps[i].exit[0]) {
			l[1] = attach_tp(skel->progs.dc_vfs_tp_exit, tps[i].exit, cookie);
			l[0] = l[1] ? attach_tp(skel->progs.dc_vfs_tp_enter, tps[i].enter, cookie)
				    : NULL;
		} else {
			l[0] = attach_tp(skel->progs.dc_vfs_tp_event, tps[i].enter, cookie);
			return l[0] ? 0 : -errno;
		}
	}
	if (!l[0]) {
		int r = -errno;

		bpf_link__destroy(l[1]);
		l[1] = NULL;
		return r ? r : -EINVAL;
	}
	return 0;
}

/* irq_off: leave out the functions that may run in interrupts, for this
 * reason (NULL: only where irq_unknown() says). p->irq_progs: whether
 * their programs were to load. */
static int try_mechanism(struct probe_vfs *p, const struct probe_vfs_opts *o, enum mech m,
			 struct kernel_btf *k, const char *irq_off, unsigned *attached,
			 char *skipped, size_t sklen)
{
	struct vfs_bpf *skel;
	bool have[DC_VFS_MAX], no_irq[DC_VFS_MAX], irq_progs = false, irq_asked = false;
	const char *irq_why = irq_off;
	bool rows = by_rows(m);
	unsigned n = rows ? ELEMENTSOF(tps) : DC_VFS_MAX;
	size_t off = 0;
	int r;

	p->irq_progs = false;
	p->load_failed = false;
	/* tracepoints are found by name in tracefs: no BTF needed */
	if (!rows)
		kernel_btf_load(k);
	r = mech_probe(m, k);
	if (r < 0)
		return r;
	skel = vfs_bpf__open();
	if (!skel)
		return -errno;
	mech_release_image(skel->skeleton->data, skel->skeleton->data_sz);
	p->skel = skel;
	/* plain adds on the window values only where no program can
	 * interleave with another on a CPU's value: never preempted; a nested
	 * call's program runs after its caller's, never inside it; and where a
	 * run does land inside another's (fentry on bio_endio in an interrupt:
	 * kprobes and tracepoints skip such nesting, bpf_prog_active) it is
	 * another function's program, so another key. The loss counters,
	 * which every program shares, stay atomic (func.bpf.h). */
	skel->rodata->plain_updates = o->percpu && o->plain_updates;
	skel->rodata->agent_tgid = o->exclude_tgid;
	r = traces_share(o->traces, skel->obj);
	if (r < 0)
		return r;
	skel->rodata->traces_on = r > 0;
	*attached = 0;
	skipped[0] = 0;
	p->refused[0] = 0;
	p->refused_off = 0;
	for (unsigned i = 0; i < DC_VFS_MAX; i++) {
		/* a function this kernel lacks (or inlined away) is skipped, not fatal */
		have[i] = p->selected[i] && k->have[i];
		/* one that may run in interrupts, where they cannot be told
		 * apart: left out, its calls would go to whichever task they
		 * interrupted (noted at attach, below) */
		if (!rows && have[i] && DC_VFS_MAY_IRQ(i) && !irq_off && !irq_asked) {
			irq_why = irq_unknown(k); /* once per try: it may read kallsyms */
			irq_asked = true;
		}
		no_irq[i] = !rows && have[i] && DC_VFS_MAY_IRQ(i) && irq_why;
		if (no_irq[i])
			have[i] = false;
		irq_progs |= !rows && have[i] && DC_VFS_MAY_IRQ(i);
		bpf_program__set_autoload(prog_of(skel, "dc_fentry_", i),
					  m == MECH_FENTRY && have[i]);
		bpf_program__set_autoload(prog_of(skel, "dc_fexit_", i),
					  m == MECH_FENTRY && have[i]);
	}
	bpf_program__set_autoload(skel->progs.dc_vfs_kprobe, m == MECH_KPROBE);
	bpf_program__set_autoload(skel->progs.dc_vfs_kretprobe, m == MECH_KPROBE);
	p->irq_progs = irq_progs;
	bpf_program__set_autoload(skel->progs.dc_vfs_kprobe_irq, m == MECH_KPROBE && irq_progs);
	bpf_program__set_autoload(skel->progs.dc_vfs_kretprobe_irq, m == MECH_KPROBE && irq_progs);
	bpf_program__set_autoload(skel->progs.dc_vfs_tp_enter, m == MECH_TRACEPOINT);
	bpf_program__set_autoload(skel->progs.dc_vfs_tp_exit, m == MECH_TRACEPOINT);
	bpf_program__set_autoload(skel->progs.dc_vfs_tp_event, m == MECH_TRACEPOINT);
	bpf_program__set_autoload(skel->progs.dc_vfs_raw_enter, m == MECH_RAW_TP);
	bpf_program__set_autoload(skel->progs.dc_vfs_raw_exit, m == MECH_RAW_TP);
	bpf_program__set_autoload(skel->progs.dc_vfs_raw_event, m == MECH_RAW_TP);
	r = fn_agg_prepare(&p->agg, skel->maps.agg_gen, skel->maps.agg_gen_clock, o->clock_fd,
			   skel->maps.fn_counters, "dc_vfs", o->max_keys, o->percpu);
	if (!r)
		r = filter_prepare(o->filter, skel->obj);
	if (!r) {
		mech_verifier_log_begin(skel->obj);
		r = vfs_bpf__load(skel);
		mech_verifier_log_end();
		p->load_failed = r < 0;
	}
	if (!r)
		r = fn_agg_install(&p->agg);
	if (!r)
		r = filter_install(o->filter, skel->obj);
	if (r)
		return r;
	for (unsigned i = 0; i < n; i++) {
		struct bpf_link *l[2];
		const char *name;

		if (rows) {
			if (!p->selected[tps[i].func])
				continue;
			name = tps[i].enter;
			if (!tracepoint_exists(tps[i].enter) ||
			    (tps[i].exit[0] && !tracepoint_exists(tps[i].exit))) {
				note(skipped, sklen, &off, name);
				continue;
			}
		} else {
			if (!p->selected[i])
				continue;
			name = funcs[i].name;
			if (no_irq[i]) {
				char what[256];

				snprintf(what, sizeof(what), "%s (interrupt context not told: %s)",
					 name, irq_why);
				note(p->refused, sizeof(p->refused), &p->refused_off, what);
				continue;
			}
			if (!have[i]) {
				note(skipped, sklen, &off, name);
				continue;
			}
		}
		l[0] = l[1] = NULL;
		r = m == MECH_RAW_TP ? attach_raw_row(p, i) : attach_one(p, m, i, l);
		if (r < 0) {
			/* the first attachment tells whether the mechanism works at all */
			if (!*attached)
				return r;
			{
				char what[128];

				/* present, refused (fexit past six arguments on an old
				 * kernel, a trampoline limit): not absent */
				snprintf(what, sizeof(what), "%s (%s)", name, strerror(-r));
				note(p->refused, sizeof(p->refused), &p->refused_off, what);
			}
			continue;
		}
		if (l[0])
			p->links[p->n_links++] = l[0];
		if (l[1])
			p->links[p->n_links++] = l[1];
		(*attached)++;
	}
	return *attached ? 0 : -ENOENT;
}

/* try_mechanism(), and where the kernel refused the load with the programs
 * of functions that may run in interrupts, once more without them: they
 * may be what it refused (a way to place the preempt count irq_unknown()
 * did not foresee), and every other function would go with them. Where
 * that load works, the refusal is remembered for the agent's life. Where
 * it fails too, the first error is the one said. */
static int try_mechanism_irq(struct probe_vfs *p, const struct probe_vfs_opts *o, enum mech m,
			     struct kernel_btf *k, unsigned *attached, char *skipped, size_t sklen)
{
	static char refused[MECH_MAX][96];
	static int known[MECH_MAX];
	char why[96];
	int r, r2;

	if (__atomic_load_n(&known[m], __ATOMIC_ACQUIRE))
		return try_mechanism(p, o, m, k, refused[m], attached, skipped, sklen);
	r = try_mechanism(p, o, m, k, NULL, attached, skipped, sklen);
	if (r >= 0 || !p->irq_progs || !p->load_failed)
		return r;
	snprintf(why, sizeof(why), "with them the layer's load failed: %s", strerror(-r));
	vfs_detach(p);
	vfs_bpf__destroy(p->skel);
	p->skel = NULL;
	fn_agg_close(&p->agg);
	p->agg.win.inner_fd[0] = p->agg.win.inner_fd[1] = -1;
	r2 = try_mechanism(p, o, m, k, why, attached, skipped, sklen);
	if (r2 < 0)
		return r;
	/* a verifier's refusal (what it cannot place or check) lasts; a
	 * shortage of memory or the like is tried with them again next time.
	 * One start at a time loads the family: no race on the copy. */
	if (r == -EINVAL || r == -EACCES || r == -ENOENT) {
		snprintf(refused[m], sizeof(refused[m]), "%s", why);
		__atomic_store_n(&known[m], 1, __ATOMIC_RELEASE);
	}
	return r2;
}

int probe_vfs_new(const struct probe_vfs_opts *o, struct probe_vfs **ret, char *detail,
		  size_t detail_len)
{
	_cleanup_(probe_vfs_freep) struct probe_vfs *p = calloc(1, sizeof(*p));
	enum mech first = MECH_FENTRY, last = MECH_TRACEPOINT;
	struct kernel_btf k = {};
	char skipped[768];
	size_t off = 0;
	unsigned n = 0;
	int r = -ENOENT;

	if (!p)
		return -ENOMEM;
	r = probe_vfs_select(o->categories, p->selected, detail, detail_len);
	if (r < 0)
		return r;
	if (o->mechanism && strcmp(o->mechanism, "auto")) {
		for (first = MECH_FENTRY; first < MECH_MAX; first++)
			if (!strcmp(o->mechanism, mech_names[first]))
				break;
		if (first == MECH_MAX) {
			snprintf(detail, detail_len, "unknown mechanism \"%s\"", o->mechanism);
			return -EINVAL;
		}
		last = first;
	}
	for (enum mech m = first; m <= last; m++) {
		p->agg.win.inner_fd[0] = p->agg.win.inner_fd[1] = -1;
		r = try_mechanism_irq(p, o, m, &k, &n, skipped, sizeof(skipped));
		if (!r) {
			p->mech = m;
			appendf(p->detail, sizeof(p->detail), &off, "%s%u %s%s%s%s%s; %s updates",
				off ? "; " : "", n,
				by_rows(m) ? "tracepoint functions (pairs timed, single events "
					     "counted)"
					   : "functions",
				skipped[0] ? ", not in this kernel: " : "", skipped,
				p->refused[0] ? ", refused: " : "", p->refused,
				o->percpu && o->plain_updates ? "plain" : "atomic");
			snprintf(detail, detail_len, "%s", p->detail);
			*ret = TAKE_PTR(p);
			return 0;
		}
		appendf(p->detail, sizeof(p->detail), &off, "%s%s refused: %s", off ? "; " : "",
			mech_names[m], strerror(-r));
		vfs_detach(p);
		vfs_bpf__destroy(p->skel);
		p->skel = NULL;
		fn_agg_close(&p->agg);
	}
	snprintf(detail, detail_len, "%s", p->detail);
	return r;
}

const char *probe_vfs_mechanism(const struct probe_vfs *p)
{
	return mech_names[p->mech];
}

const char *probe_vfs_detail(const struct probe_vfs *p)
{
	return p->detail;
}

struct winmap *probe_vfs_winmap(struct probe_vfs *p)
{
	return &p->agg.win;
}

int probe_vfs_flip_and_drain(struct probe_vfs *p, struct dc_fn_drain *res)
{
	return fn_agg_drain(&p->agg, res);
}

struct bpf_object *probe_vfs_object(const struct probe_vfs *p)
{
	return p->skel->obj;
}

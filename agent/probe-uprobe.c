// SPDX-License-Identifier: Apache-2.0
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include "elfsyms.h"
#include "filter.h"
#include "log.h"
#include "macro.h"
#include "mechanism.h"
#include "probe-uprobe.h"
#include "uprobe.skel.h"
#include "fnagg.h"
#include "traces.h"

enum mech { MECH_UPROBE_MULTI, MECH_UPROBE, MECH_MAX };
static const char *const mech_names[MECH_MAX] = {"uprobe_multi", "uprobe"};

/* Debian 12's linux/bpf.h (6.1) and libbpf 1.1 predate multi-uprobe links
 * (kernel 6.6): the attach type, flag and BPF_LINK_CREATE attr layout are
 * the kernel's uapi, checked against this kernel's BTF (union bpf_attr,
 * link_create.uprobe_multi). */
#define DC_BPF_TRACE_UPROBE_MULTI    48
#define DC_BPF_F_UPROBE_MULTI_RETURN 1U
struct dc_uprobe_multi_attr {
	__u32 prog_fd;
	__u32 target_fd;
	__u32 attach_type;
	__u32 flags;
	__u64 path;
	__u64 offsets;
	__u64 ref_ctr_offsets;
	__u64 cookies;
	__u32 cnt;
	__u32 multi_flags;
	__u32 pid;
};

struct probe_uprobe {
	const struct dc_config *cfg; /* while attaching */
	struct traces *traces;	     /* the ring its calls' events go to, or NULL */
	int clock_fd;		     /* the windows' clock (winmap_prepare()) */
	bool plain_updates;
	struct uprobe_bpf *skel;
	struct dc_filter *filter;
	enum mech mech;
	/* uprobe: a perf-event link per function and direction;
	 * uprobe_multi: a link fd per binary and direction */
	struct bpf_link **links;
	size_t n_links;
	int *link_fds;
	size_t n_link_fds;
	struct dc_up_func *funcs;
	uint64_t *offsets; /* per function: file offset in its library */
	uint64_t *cookies; /* per function: its index | DC_FN_COOKIE_BYTES */
	int *lib;	   /* per function: its probes.libraries entry */
	size_t n_funcs;
	struct fn_agg agg;
	char *err; /* the last attempt's reason */
	size_t errlen;
	char detail[384];
};

static void unlink_all(struct probe_uprobe *p)
{
	for (size_t i = 0; i < p->n_links; i++) {
		/* releasing a perf-event uprobe waits out grace periods under the
		 * kernel's event_mutex, about 120 ms a link here (closing from
		 * 8 threads measured no faster: docs/benchmarks.md); keep systemd's
		 * stop timeout ahead of a long release, and its watchdog fed while
		 * links keep going: a budget step or a reload detaching a thousand
		 * functions on the event loop takes two minutes, four watchdog
		 * periods, and is no hang (one that never returns stops the pings) */
		if (i % 32 == 0)
			sd_notify(0, "WATCHDOG=1\nEXTEND_TIMEOUT_USEC=30000000");
		bpf_link__destroy(p->links[i]);
	}
	p->n_links = 0;
	for (size_t i = 0; i < p->n_link_fds; i++)
		close(p->link_fds[i]);
	p->n_link_fds = 0;
}

struct probe_uprobe *probe_uprobe_free(struct probe_uprobe *p)
{
	if (!p)
		return NULL;
	unlink_all(p);
	free(p->links);
	free(p->link_fds);
	uprobe_bpf__destroy(p->skel);
	fn_agg_close(&p->agg);
	p->filter = filter_free(p->filter);
	free(p->funcs);
	free(p->offsets);
	free(p->cookies);
	free(p->lib);
	free(p);
	return NULL;
}

DEFINE_TRIVIAL_CLEANUP_FUNC(struct probe_uprobe *, probe_uprobe_free);

static bool listed(const char *lines, const char *name)
{
	size_t l = strlen(name);

	for (const char *p = lines; *p;) {
		size_t n = strcspn(p, "\n");

		if (n == l && !strncmp(p, name, n))
			return true;
		p += n + (p[n] == '\n');
	}
	return false;
}

static int attach_one(struct probe_uprobe *p, size_t i)
{
	const char *path = p->cfg->libs[p->lib[i]].path;
	LIBBPF_OPTS(bpf_uprobe_opts, o, .bpf_cookie = p->cookies[i]);
	struct bpf_link *l[2];

	/* return probe first: an entry without its return probe in place
	 * would be an orphan on the thread's stack */
	o.retprobe = true;
	l[1] = bpf_program__attach_uprobe_opts(p->skel->progs.dc_up_return, -1, path, p->offsets[i],
					       &o);
	if (!l[1])
		return -errno;
	o.retprobe = false;
	l[0] = bpf_program__attach_uprobe_opts(p->skel->progs.dc_up_entry, -1, path, p->offsets[i],
					       &o);
	if (!l[0]) {
		int r = -errno;

		bpf_link__destroy(l[1]);
		return r;
	}
	p->links[p->n_links++] = l[0];
	p->links[p->n_links++] = l[1];
	return 0;
}

static int link_multi(struct bpf_program *prog, const char *path, const uint64_t *offsets,
		      const uint64_t *cookies, size_t n, bool ret)
{
	struct dc_uprobe_multi_attr a = {
	    .prog_fd = (__u32)bpf_program__fd(prog),
	    .attach_type = DC_BPF_TRACE_UPROBE_MULTI,
	    .path = (__u64)(uintptr_t)path,
	    .offsets = (__u64)(uintptr_t)offsets,
	    .cookies = (__u64)(uintptr_t)cookies,
	    .cnt = (__u32)n,
	    .multi_flags = ret ? DC_BPF_F_UPROBE_MULTI_RETURN : 0,
	};
	long fd = syscall(__NR_bpf, BPF_LINK_CREATE, &a, sizeof(a));

	return fd < 0 ? -errno : (int)fd;
}

/* Two links per binary (return, then entry) carrying all of its functions:
 * the kernel registers them in one call and, at close, waits for one grace
 * period per link instead of one per function. Entries of probes.libraries
 * naming the same binary share its links. */
static int attach_multi(struct probe_uprobe *p)
{
	_cleanup_free_ uint64_t *offs = malloc(p->n_funcs * sizeof(*offs));
	_cleanup_free_ uint64_t *cks = malloc(p->n_funcs * sizeof(*cks));
	_cleanup_free_ bool *done = calloc(p->n_funcs, sizeof(*done));

	if (!offs || !cks || !done)
		return -ENOMEM;
	for (size_t i = 0; i < p->n_funcs; i++) {
		const char *path = p->cfg->libs[p->lib[i]].path;
		size_t n = 0;
		int fd;

		if (done[i])
			continue;
		for (size_t j = i; j < p->n_funcs; j++)
			if (!done[j] && !strcmp(p->cfg->libs[p->lib[j]].path, path)) {
				offs[n] = p->offsets[j];
				cks[n++] = p->cookies[j];
				done[j] = true;
			}
		for (int ret = 1; ret >= 0; ret--) {
			fd = link_multi(ret ? p->skel->progs.dc_up_return
					    : p->skel->progs.dc_up_entry,
					path, offs, cks, n, ret);
			if (fd < 0) {
				snprintf(p->err, p->errlen,
					 "%s: cannot attach to its %zu functions: %s", path, n,
					 strerror(-fd));
				return fd;
			}
			p->link_fds[p->n_link_fds++] = fd;
		}
	}
	return 0;
}

static int try_mechanism(struct probe_uprobe *p, enum mech m)
{
	const struct dc_config *cfg = p->cfg;
	int r;

	p->skel = uprobe_bpf__open();
	if (!p->skel)
		return -errno;
	mech_release_image(p->skel->skeleton->data, p->skel->skeleton->data_sz);
	/* plain adds where the kernel never preempts a program and each CPU
	 * has its own values: a thread's uprobe program then runs to its end
	 * before another's on that CPU, and none runs in interrupt context */
	p->skel->rodata->plain_updates = p->plain_updates;
	p->skel->rodata->agent_tgid = cfg->exclude_self ? (__u32)getpid() : 0;
	r = traces_share(p->traces, p->skel->obj);
	if (r < 0) {
		snprintf(p->err, p->errlen, "cannot share the trace ring: %s", strerror(-r));
		return r;
	}
	p->skel->rodata->traces_on = r > 0;
	if (m == MECH_UPROBE_MULTI) {
		/* a multi-uprobe link takes only programs loaded for it, and
		 * such programs cannot be perf-event uprobes: one load per
		 * mechanism */
		bpf_program__set_expected_attach_type(
		    p->skel->progs.dc_up_entry, (enum bpf_attach_type)DC_BPF_TRACE_UPROBE_MULTI);
		bpf_program__set_expected_attach_type(
		    p->skel->progs.dc_up_return, (enum bpf_attach_type)DC_BPF_TRACE_UPROBE_MULTI);
	}
	r = fn_agg_prepare(&p->agg, p->skel->maps.agg_gen, p->skel->maps.agg_gen_clock, p->clock_fd,
			   p->skel->maps.fn_counters, "dc_up", (unsigned)cfg->library_max_keys,
			   strcmp(cfg->map_layout, "shared") != 0);
	if (!r)
		r = filter_prepare(p->filter, p->skel->obj);
	if (!r)
		r = uprobe_bpf__load(p->skel);
	if (!r)
		r = fn_agg_install(&p->agg);
	if (!r)
		r = filter_install(p->filter, p->skel->obj);
	if (r) {
		snprintf(p->err, p->errlen, "cannot load the uprobe programs: %s", strerror(-r));
		return r;
	}
	if (m == MECH_UPROBE_MULTI)
		return attach_multi(p);
	for (size_t i = 0; i < p->n_funcs; i++) {
		r = attach_one(p, i);
		if (r) {
			snprintf(p->err, p->errlen, "%s: cannot attach to %s: %s",
				 cfg->libs[p->lib[i]].path, p->funcs[i].name, strerror(-r));
			return r;
		}
	}
	return 0;
}

static int attempt(void *ctx, int m)
{
	return try_mechanism(ctx, (enum mech)m);
}

static void undo(void *ctx)
{
	struct probe_uprobe *p = ctx;

	unlink_all(p);
	uprobe_bpf__destroy(p->skel);
	p->skel = NULL;
	fn_agg_close(&p->agg);
}

static int by_feature(const void *a, const void *b, void *ctx)
{
	const struct probe_uprobe *p = ctx;
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	int c = strcmp(p->funcs[x].feature, p->funcs[y].feature);

	return c ? c : (x > y) - (x < y);
}

/* Functions whose features have one name (a symbol versioned twice, as
 * fmemopen in libc; two libraries of one category defining the same name)
 * count under the first one's index: one key in the kernel's map, so one
 * member of the record's "functions" object, never two of the same name. */
static void share_features(struct probe_uprobe *p)
{
	_cleanup_free_ uint32_t *idx = malloc(p->n_funcs * sizeof(*idx));

	if (!idx)
		return; /* duplicates then show twice: nothing is lost */
	for (uint32_t i = 0; i < p->n_funcs; i++)
		idx[i] = i;
	qsort_r(idx, p->n_funcs, sizeof(*idx), by_feature, p);
	for (size_t i = 1; i < p->n_funcs; i++)
		if (!strcmp(p->funcs[idx[i]].feature, p->funcs[idx[i - 1]].feature))
			p->cookies[idx[i]] = (p->cookies[idx[i]] & ~0xffffffffULL) |
					     (p->cookies[idx[i - 1]] & 0xffffffffULL);
}

struct at {
	uint32_t i;   /* the function */
	int file;     /* the first probes.libraries entry of its path */
	uint64_t off; /* its offset there */
};

static int by_address(const void *a, const void *b)
{
	const struct at *x = a, *y = b;

	if (x->file != y->file)
		return x->file < y->file ? -1 : 1;
	if (x->off != y->off)
		return x->off < y->off ? -1 : 1;
	return (x->i > y->i) - (x->i < y->i);
}

/* One probe per address: two probes.libraries entries of one path whose
 * patterns overlap would otherwise count each call of a function they both
 * select twice. The first entry's selection (its category, its bytes
 * list) is kept. */
static void drop_repeats(struct probe_uprobe *p)
{
	_cleanup_free_ struct at *a = malloc(p->n_funcs * sizeof(*a));
	_cleanup_free_ bool *drop = calloc(p->n_funcs, sizeof(*drop));
	size_t w = 0;

	if (!a || !drop)
		return; /* repeats then count twice: nothing is lost */
	for (uint32_t i = 0; i < p->n_funcs; i++) {
		int f = p->lib[i];

		for (int j = 0; j < p->lib[i]; j++)
			if (!strcmp(p->cfg->libs[j].path, p->cfg->libs[p->lib[i]].path)) {
				f = j;
				break;
			}
		a[i] = (struct at){i, f, p->offsets[i]};
	}
	qsort_safe(a, p->n_funcs, sizeof(*a), by_address);
	for (size_t k = 1; k < p->n_funcs; k++)
		if (a[k].file == a[k - 1].file && a[k].off == a[k - 1].off)
			drop[a[k].i] = true;
	for (size_t i = 0; i < p->n_funcs; i++) {
		if (drop[i])
			continue;
		p->funcs[w] = p->funcs[i];
		p->offsets[w] = p->offsets[i];
		p->cookies[w] = (p->cookies[i] & ~0xffffffffULL) | w;
		p->lib[w] = p->lib[i];
		w++;
	}
	if (w < p->n_funcs)
		log_notice("probes.libraries: %zu functions selected by more than one entry of "
			   "the same library, probed once (the first entry's category)",
			   p->n_funcs - w);
	p->n_funcs = w;
}

/* The functions library li's patterns select (at least one), or -errno
 * and why in err. */
static int lib_funcs(const struct dc_config *cfg, int li, struct elf_func **fs, char *err,
		     size_t errlen)
{
	const struct dc_lib_cfg *lib = &cfg->libs[li];
	int n = elf_find_funcs(lib->path, lib->functions, fs, err, errlen);

	if (n == 0) {
		snprintf(err, errlen,
			 "%s: no function matches the patterns of probes.libraries[%d]", lib->path,
			 li);
		return -ENOENT;
	}
	return n;
}

static int too_many(size_t max, char *err, size_t errlen)
{
	snprintf(err, errlen,
		 "the library patterns select more than %zu functions (maps.library_max_functions)",
		 max);
	return -E2BIG;
}

int probe_uprobe_check(const struct dc_config *cfg, char *err, size_t errlen)
{
	size_t total = 0;

	for (int li = 0; li < cfg->n_libs; li++) {
		_cleanup_free_ struct elf_func *fs = NULL;
		int n = lib_funcs(cfg, li, &fs, err, errlen);

		if (n < 0)
			return n;
		total += (size_t)n;
	}
	return total > (size_t)cfg->library_max_functions
		   ? too_many((size_t)cfg->library_max_functions, err, errlen)
		   : 0;
}

/* Every function the patterns select, with its offset and cookie. */
static int find_funcs(struct probe_uprobe *p, size_t max, char *err, size_t errlen)
{
	const struct dc_config *cfg = p->cfg;

	for (int li = 0; li < cfg->n_libs; li++) {
		const struct dc_lib_cfg *lib = &cfg->libs[li];
		_cleanup_free_ struct elf_func *fs = NULL;
		int n = lib_funcs(cfg, li, &fs, err, errlen);

		if (n < 0)
			return n;
		for (int i = 0; i < n; i++) {
			struct dc_up_func *f = &p->funcs[p->n_funcs];

			if (p->n_funcs == max)
				return too_many(max, err, errlen);
			snprintf(f->name, sizeof(f->name), "%s", fs[i].name);
			snprintf(f->category, sizeof(f->category), "%s", lib->category);
			snprintf(f->feature, sizeof(f->feature), "%s-%s", fs[i].name,
				 lib->category);
			p->offsets[p->n_funcs] = fs[i].offset;
			p->cookies[p->n_funcs] = p->n_funcs;
			if (listed(lib->bytes, fs[i].name))
				p->cookies[p->n_funcs] |= DC_FN_COOKIE_BYTES;
			p->lib[p->n_funcs] = li;
			p->n_funcs++;
		}
	}
	drop_repeats(p);
	share_features(p);
	return 0;
}

int probe_uprobe_new(const struct dc_config *cfg, struct traces *traces, int clock_fd,
		     bool plain_ok, struct probe_uprobe **ret, char *err, size_t errlen)
{
	_cleanup_(probe_uprobe_freep) struct probe_uprobe *p = calloc(1, sizeof(*p));
	size_t max = (size_t)cfg->library_max_functions, off = 0;
	enum mech first = MECH_UPROBE_MULTI, last = MECH_UPROBE;
	int r;

	if (!p)
		return -ENOMEM;
	p->cfg = cfg;
	p->traces = traces;
	p->clock_fd = clock_fd;
	p->plain_updates = plain_ok && strcmp(cfg->map_layout, "shared") != 0;
	p->err = err;
	p->errlen = errlen;
	p->agg.win.inner_fd[0] = p->agg.win.inner_fd[1] = -1;
	p->funcs = calloc(max, sizeof(*p->funcs));
	p->offsets = calloc(max, sizeof(*p->offsets));
	p->cookies = calloc(max, sizeof(*p->cookies));
	p->lib = calloc(max, sizeof(*p->lib));
	p->links = calloc(2 * max, sizeof(*p->links));
	p->link_fds = calloc(2 * (size_t)cfg->n_libs, sizeof(*p->link_fds));
	if (!p->funcs || !p->offsets || !p->cookies || !p->lib || !p->links || !p->link_fds)
		return -ENOMEM;
	r = filter_new(cfg, NULL, &p->filter, err, errlen);
	if (r < 0)
		return r;
	r = find_funcs(p, max, err, errlen);
	if (r < 0)
		return r;
	if (strcmp(cfg->library_mechanism, "auto"))
		first = last = (enum mech)mech_find(mech_names, MECH_MAX, cfg->library_mechanism);
	r = mech_choose("library", mech_names, first, last, attempt, undo, p, p->detail,
			sizeof(p->detail), &off);
	if (r < 0)
		return r;
	p->mech = (enum mech)r;
	snprintf(p->detail + off, sizeof(p->detail) - off,
		 "%s%zu functions in %d libraries; %s updates", off ? "; " : "", p->n_funcs,
		 cfg->n_libs, p->plain_updates ? "plain" : "atomic");
	log_info("uprobes attached to %zu library functions (%s)", p->n_funcs, mech_names[p->mech]);
	/* both the caller's: used while attaching only */
	p->err = NULL;
	p->cfg = NULL;
	*ret = TAKE_PTR(p);
	return 0;
}

const char *probe_uprobe_mechanism(const struct probe_uprobe *p)
{
	return mech_names[p->mech];
}

const char *probe_uprobe_detail(const struct probe_uprobe *p)
{
	return p->detail;
}

const struct dc_up_func *probe_uprobe_func(const struct probe_uprobe *p, uint32_t i)
{
	return i < p->n_funcs ? &p->funcs[i] : NULL;
}

struct winmap *probe_uprobe_winmap(struct probe_uprobe *p)
{
	return &p->agg.win;
}

int probe_uprobe_flip_and_drain(struct probe_uprobe *p, struct dc_fn_drain *res)
{
	return fn_agg_drain(&p->agg, res);
}

struct bpf_object *probe_uprobe_object(const struct probe_uprobe *p)
{
	return p->skel->obj;
}

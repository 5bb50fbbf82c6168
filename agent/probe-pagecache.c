// SPDX-License-Identifier: Apache-2.0
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "counters.h"
#include "filter.h"
#include "fs-util.h"
#include "kbtf.h"
#include "log.h"
#include "mechanism.h"
#include "macro.h"
#include "pagecache.skel.h"
#include "probe-pagecache.h"
#include "progstats.h"
#include "winmap.h"

enum mech { MECH_TP_BTF, MECH_TRACEPOINT, MECH_MAX };
static const char *const mech_names[MECH_MAX] = {"tp_btf", "tracepoint"};

struct probe_pagecache {
	struct pagecache_bpf *skel;
	enum mech mech;
	int ncpus;
	struct winmap agg;
	int clock_fd; /* the windows' clock (winmap_prepare()) */
	struct dc_filter *filter;
	char detail[256];
	struct dc_pc_entry *entries;
	size_t n, cap;
	struct dc_pc_val overflow_prev;
	uint64_t counters_prev[DC_PC_CNT_MAX];
	uint64_t misses_prev;
	bool faults;	/* the file-mapping fault programs loaded */
	int faults_err; /* why they were refused, or 0 */
};

struct probe_pagecache *probe_pagecache_free(struct probe_pagecache *p)
{
	if (!p)
		return NULL;
	if (p->skel)
		mech_detach_skeleton(p->skel->skeleton);
	pagecache_bpf__destroy(p->skel);
	winmap_close(&p->agg);
	p->filter = filter_free(p->filter);
	free(p->entries);
	free(p);
	return NULL;
}

DEFINE_TRIVIAL_CLEANUP_FUNC(struct probe_pagecache *, probe_pagecache_free);

/* Whether the kernel has the file-mapping fault tracepoints (6.1 has
 * neither): a program for one it lacks would fail the whole object's load. */
static bool has_fault_events(enum mech m)
{
	static const char *const events[] = {"mm_filemap_fault", "mm_filemap_map_pages"};
	/* their tp_btf targets: one read of the BTF's strings for both */
	static const char *const btf[] = {"btf_trace_mm_filemap_fault",
					  "btf_trace_mm_filemap_map_pages"};
	char path[256];

	if (m == MECH_TP_BTF)
		return kernel_btf_has_strings(btf, ELEMENTSOF(btf)) == 1;
	for (size_t i = 0; i < ELEMENTSOF(events); i++) {
		snprintf(path, sizeof(path), "%s/filemap/%s", tracefs_events_dir(), events[i]);
		if (access(path, F_OK))
			return false;
	}
	return true;
}

static int try_mechanism(struct probe_pagecache *p, const struct dc_config *cfg, enum mech m,
			 bool percpu, bool plain_updates, bool faults)
{
	struct pagecache_bpf *skel = pagecache_bpf__open();
	struct bpf_program *progs[MECH_MAX][3];
	int r;

	p->faults = false;
	if (!skel)
		return -errno;
	mech_release_image(skel->skeleton->data, skel->skeleton->data_sz);
	p->skel = skel;
	/* the tracepoint mechanism names its events through tracefs */
	if (m == MECH_TRACEPOINT && (r = tracefs_ensure()) < 0)
		return r;
	skel->rodata->plain_updates = plain_updates;
	skel->rodata->agent_tgid = cfg->exclude_self ? (__u32)getpid() : 0;
	progs[MECH_TP_BTF][0] = skel->progs.dc_pc_add_btf;
	progs[MECH_TP_BTF][1] = skel->progs.dc_pc_del_btf;
	progs[MECH_TP_BTF][2] = skel->progs.dc_pc_dirty_btf;
	progs[MECH_TRACEPOINT][0] = skel->progs.dc_pc_add_tp;
	progs[MECH_TRACEPOINT][1] = skel->progs.dc_pc_del_tp;
	progs[MECH_TRACEPOINT][2] = skel->progs.dc_pc_dirty_tp;
	for (int i = 0; i < MECH_MAX; i++)
		for (int j = 0; j < 3; j++)
			bpf_program__set_autoload(progs[i][j], i == (int)m);
	p->faults = faults && cfg->pagecache_faults && has_fault_events(m);
	bpf_program__set_autoload(skel->progs.dc_pc_fault_btf, p->faults && m == MECH_TP_BTF);
	bpf_program__set_autoload(skel->progs.dc_pc_around_btf, p->faults && m == MECH_TP_BTF);
	bpf_program__set_autoload(skel->progs.dc_pc_fault_tp, p->faults && m == MECH_TRACEPOINT);
	bpf_program__set_autoload(skel->progs.dc_pc_around_tp, p->faults && m == MECH_TRACEPOINT);
	r = winmap_prepare(&p->agg, skel->maps.agg_gen, skel->maps.agg_gen_clock, p->clock_fd,
			   "dc_pc", sizeof(struct dc_pc_key), sizeof(struct dc_pc_val),
			   (unsigned)cfg->pagecache_max_keys, percpu, p->ncpus);
	if (!r)
		r = filter_prepare(p->filter, skel->obj);
	if (!r) {
		mech_verifier_log_begin(skel->obj);
		r = pagecache_bpf__load(skel);
		mech_verifier_log_end();
	}
	if (!r)
		r = winmap_install(&p->agg);
	if (!r)
		r = filter_install(p->filter, skel->obj);
	if (!r)
		r = pagecache_bpf__attach(skel);
	return r;
}

struct attempt {
	struct probe_pagecache *p;
	const struct dc_config *cfg;
	bool percpu, plain_updates;
};

static void undo(void *ctx)
{
	struct probe_pagecache *p = ((struct attempt *)ctx)->p;

	pagecache_bpf__destroy(p->skel);
	p->skel = NULL;
	winmap_close(&p->agg);
}

/* The fault programs are an extra: a kernel that refuses them keeps the
 * family's own counts with this mechanism, without them. */
static int attempt(void *ctx, int m)
{
	struct attempt *a = ctx;
	int r = try_mechanism(a->p, a->cfg, (enum mech)m, a->percpu, a->plain_updates, true);

	if (r < 0 && a->p->faults) {
		int err = r;

		undo(ctx);
		r = try_mechanism(a->p, a->cfg, (enum mech)m, a->percpu, a->plain_updates, false);
		a->p->faults_err = r ? 0 : err;
		if (!r)
			log_warning("Page-cache probes (%s): the fault programs were refused (%s); "
				    "running without them",
				    mech_names[m], strerror(-err));
	}
	return r;
}

int probe_pagecache_new(const struct dc_config *cfg, int clock_fd, struct probe_pagecache **ret)
{
	/* atomic adds always: page-cache tracepoints are not confined to task
	 * context (see probe-block.c for what interleaving runs do to plain adds) */
	const bool plain_updates = false;
	_cleanup_(probe_pagecache_freep) struct probe_pagecache *p = calloc(1, sizeof(*p));
	bool percpu = strcmp(cfg->map_layout, "shared") != 0;
	enum mech first = MECH_TP_BTF, last = MECH_TRACEPOINT;
	char faults_refused[96];
	size_t off = 0;
	int r = -ENOENT;

	if (!p)
		return -ENOMEM;
	p->agg.inner_fd[0] = p->agg.inner_fd[1] = -1;
	p->clock_fd = clock_fd;
	p->ncpus = libbpf_num_possible_cpus();
	if (p->ncpus <= 0)
		return p->ncpus ? p->ncpus : -EINVAL;
	{
		char err[512];

		r = filter_new(cfg, NULL, &p->filter, err, sizeof(err));
		if (r < 0)
			return log_error_errno(r, "Cannot set up the page-cache filters: %s", err);
	}
	if (strcmp(cfg->pagecache_mechanism, "auto"))
		first = last = (enum mech)mech_find(mech_names, MECH_MAX, cfg->pagecache_mechanism);
	{
		struct attempt a = {p, cfg, percpu, percpu && plain_updates};

		r = mech_choose("page-cache", mech_names, first, last, attempt, undo, &a, p->detail,
				sizeof(p->detail), &off);
	}
	if (r < 0)
		return r;
	p->mech = (enum mech)r;
	if (p->faults_err)
		snprintf(faults_refused, sizeof(faults_refused), "file-mapping faults refused: %s",
			 strerror(-p->faults_err));
	snprintf(p->detail + off, sizeof(p->detail) - off, "%s%s updates; %s; %s", off ? "; " : "",
		 percpu && plain_updates ? "plain" : "atomic",
		 p->mech == MECH_TP_BTF
		     ? "large folios counted by their pages"
		     : "large folios by the tracepoint's order, dirtying one page per event",
		 p->faults_err ? faults_refused
		 : p->faults   ? "file-mapping faults counted"
		 : !cfg->pagecache_faults
		     ? "file-mapping faults off (probes.pagecache.faults)"
		     : "file-mapping faults not seen (no mm_filemap_fault tracepoints)");
	*ret = TAKE_PTR(p);
	return 0;
}

const char *probe_pagecache_mechanism(const struct probe_pagecache *p)
{
	return mech_names[p->mech];
}

const char *probe_pagecache_detail(const struct probe_pagecache *p)
{
	return p->detail;
}

void pc_val_add(struct dc_pc_val *s, const struct dc_pc_val *v)
{
	s->added_pages += v->added_pages;
	s->dirtied_pages += v->dirtied_pages;
	s->removed_pages += v->removed_pages;
	s->events += v->events;
	s->file_faults += v->file_faults;
	s->fault_arounds += v->fault_arounds;
}

static int collect(const void *key, const void *values, int ncpus, void *ctx)
{
	struct probe_pagecache *p = ctx;
	const struct dc_pc_key *k = key;
	struct dc_pc_entry *e;

	e = VEC_PUSH(p->entries, p->n, p->cap);
	if (!e)
		return -ENOMEM;
	e->cgroup_id = k->cgroup_id;
	e->tgid = k->tgid;
	for (int c = 0; c < ncpus; c++)
		pc_val_add(&e->v, (const struct dc_pc_val *)values + c);
	return 0;
}

struct winmap *probe_pagecache_winmap(struct probe_pagecache *p)
{
	return &p->agg;
}

int probe_pagecache_flip_and_drain(struct probe_pagecache *p, struct dc_pc_drain *res)
{
	_cleanup_free_ struct dc_pc_val *vals = calloc((size_t)p->ncpus, sizeof(*vals));
	struct dc_pc_val cur = {};
	unsigned long long flip_us;
	__u32 zero = 0;
	uint64_t m;
	bool batch;
	int r;

	if (!vals)
		return -ENOMEM;
	p->n = 0;
	r = winmap_flip_and_drain(&p->agg, collect, p, &batch, &flip_us);
	if (r < 0)
		return r;
	res->entries = p->entries;
	res->n = p->n;
	if (!bpf_map_lookup_elem(bpf_map__fd(p->skel->maps.pc_overflow), &zero, vals))
		for (int c = 0; c < p->ncpus; c++)
			pc_val_add(&cur, &vals[c]);
	res->overflow = (struct dc_pc_val){
	    .added_pages = cur.added_pages - p->overflow_prev.added_pages,
	    .dirtied_pages = cur.dirtied_pages - p->overflow_prev.dirtied_pages,
	    .removed_pages = cur.removed_pages - p->overflow_prev.removed_pages,
	    .events = cur.events - p->overflow_prev.events,
	    .file_faults = cur.file_faults - p->overflow_prev.file_faults,
	    .fault_arounds = cur.fault_arounds - p->overflow_prev.fault_arounds,
	};
	p->overflow_prev = cur;
	percpu_counters_delta(p->skel->maps.pc_counters, DC_PC_CNT_MAX, p->ncpus, p->counters_prev,
			      res->counters);
	m = progs_recursion_misses(p->skel->obj);
	res->recursion_misses = m - p->misses_prev;
	p->misses_prev = m;
	return 0;
}

const struct dc_pc_entry *pc_find(const struct dc_pc_drain *d, uint32_t tgid, uint64_t cgroup_id)
{
	for (size_t i = 0; i < d->n; i++)
		if (d->entries[i].tgid == tgid && d->entries[i].cgroup_id == cgroup_id)
			return &d->entries[i];
	return NULL;
}

struct bpf_object *probe_pagecache_object(const struct probe_pagecache *p)
{
	return p->skel->obj;
}

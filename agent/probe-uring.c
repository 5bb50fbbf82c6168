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
#include "log.h"
#include "mechanism.h"
#include "macro.h"
#include "probe-uring.h"
#include "progstats.h"
#include "uring.skel.h"
#include "winmap.h"

enum mech { MECH_TP_BTF, MECH_TRACEPOINT, MECH_MAX };
static const char *const mech_names[MECH_MAX] = {"tp_btf", "tracepoint"};

/* The overflow bucket's monotonic totals, summed over CPUs. Latency slots
 * are 32 bits in the kernel: kept modulo 2^32, so that a slot that wrapped
 * still gives the right delta. */
struct ur_totals {
	uint64_t errors, bytes, time_ns;
	uint32_t lat[DC_LAT_SLOTS];
};

struct probe_uring {
	struct uring_bpf *skel;
	enum mech mech;
	bool old_submit; /* the kernel names the submission event io_uring_submit_sqe */
	int ncpus;
	struct winmap agg;
	int clock_fd; /* the windows' clock (winmap_prepare()) */
	struct dc_filter *filter;
	char detail[256];
	struct dc_uring_entry *entries;
	size_t n, cap;
	struct ur_totals overflow_prev;
	uint64_t counters_prev[DC_UR_CNT_MAX];
	uint64_t misses_prev;
};

struct probe_uring *probe_uring_free(struct probe_uring *p)
{
	if (!p)
		return NULL;
	if (p->skel)
		mech_detach_skeleton(p->skel->skeleton);
	uring_bpf__destroy(p->skel);
	winmap_close(&p->agg);
	p->filter = filter_free(p->filter);
	free(p->entries);
	free(p);
	return NULL;
}

DEFINE_TRIVIAL_CLEANUP_FUNC(struct probe_uring *, probe_uring_free);

/* The submission tracepoint was renamed in 6.3; the classic mechanism
 * attaches by name, so it asks tracefs which one this kernel has. */
static bool has_old_submit_event(void)
{
	static const char *const roots[] = {"/sys/kernel/tracing", "/sys/kernel/debug/tracing"};
	char path[128];

	for (size_t i = 0; i < ELEMENTSOF(roots); i++) {
		snprintf(path, sizeof(path), "%s/events/io_uring/io_uring_submit_req", roots[i]);
		if (access(path, F_OK) == 0)
			return false;
		snprintf(path, sizeof(path), "%s/events/io_uring/io_uring_submit_sqe", roots[i]);
		if (access(path, F_OK) == 0)
			return true;
	}
	return false;
}

static int try_mechanism(struct probe_uring *p, const struct dc_config *cfg, enum mech m,
			 bool percpu)
{
	struct uring_bpf *skel = uring_bpf__open();
	int r;

	if (!skel)
		return -errno;
	mech_release_image(skel->skeleton->data, skel->skeleton->data_sz);
	p->skel = skel;
	/* the tracepoint mechanism names its events through tracefs */
	if (m == MECH_TRACEPOINT && (r = tracefs_ensure()) < 0)
		return r;
	skel->rodata->agent_tgid = cfg->exclude_self ? (__u32)getpid() : 0;
	p->old_submit = m == MECH_TRACEPOINT && has_old_submit_event();
	bpf_program__set_autoload(skel->progs.dc_ur_submit_btf, m == MECH_TP_BTF);
	bpf_program__set_autoload(skel->progs.dc_ur_complete_btf, m == MECH_TP_BTF);
	bpf_program__set_autoload(skel->progs.dc_ur_submit_tp,
				  m == MECH_TRACEPOINT && !p->old_submit);
	bpf_program__set_autoload(skel->progs.dc_ur_submit_sqe_tp,
				  m == MECH_TRACEPOINT && p->old_submit);
	bpf_program__set_autoload(skel->progs.dc_ur_complete_tp, m == MECH_TRACEPOINT);
	r = winmap_prepare(&p->agg, skel->maps.agg_gen, skel->maps.agg_gen_clock, p->clock_fd,
			   "dc_ur", sizeof(struct dc_uring_key), sizeof(struct dc_uring_val),
			   (unsigned)cfg->uring_max_keys, percpu, p->ncpus);
	if (!r)
		r = filter_prepare(p->filter, skel->obj);
	if (!r) {
		mech_verifier_log_begin(skel->obj);
		r = uring_bpf__load(skel);
		mech_verifier_log_end();
	}
	if (!r)
		r = winmap_install(&p->agg);
	if (!r)
		r = filter_install(p->filter, skel->obj);
	if (!r)
		r = uring_bpf__attach(skel);
	return r;
}

struct attempt {
	struct probe_uring *p;
	const struct dc_config *cfg;
	bool percpu;
};

static int attempt(void *ctx, int m)
{
	struct attempt *a = ctx;

	return try_mechanism(a->p, a->cfg, (enum mech)m, a->percpu);
}

static void undo(void *ctx)
{
	struct probe_uring *p = ((struct attempt *)ctx)->p;

	uring_bpf__destroy(p->skel);
	p->skel = NULL;
	winmap_close(&p->agg);
}

int probe_uring_new(const struct dc_config *cfg, int clock_fd, struct probe_uring **ret)
{
	/* atomic adds always: completions are posted by io-wq workers, task
	 * work and pollers, not only by the submitter, and which of them may
	 * interrupt another on one CPU is the ring's business; a request costs
	 * microseconds, the lock prefix nanoseconds */
	_cleanup_(probe_uring_freep) struct probe_uring *p = calloc(1, sizeof(*p));
	bool percpu = strcmp(cfg->map_layout, "shared") != 0;
	enum mech first = MECH_TP_BTF, last = MECH_TRACEPOINT;
	size_t off = 0;
	int r;

	if (!p)
		return -ENOMEM;
	p->agg.inner_fd[0] = p->agg.inner_fd[1] = -1;
	p->clock_fd = clock_fd;
	p->ncpus = libbpf_num_possible_cpus();
	if (p->ncpus < 0)
		return p->ncpus;
	{
		char err[512];

		r = filter_new(cfg, NULL, &p->filter, err, sizeof(err));
		if (r < 0)
			return log_error_errno(r, "Cannot set up the io_uring filters: %s", err);
	}
	if (strcmp(cfg->uring_mechanism, "auto"))
		first = last = (enum mech)mech_find(mech_names, MECH_MAX, cfg->uring_mechanism);
	{
		struct attempt a = {p, cfg, percpu};

		r = mech_choose("io_uring", mech_names, first, last, attempt, undo, &a, p->detail,
				sizeof(p->detail), &off);
	}
	if (r < 0)
		return r;
	p->mech = (enum mech)r;
	snprintf(p->detail + off, sizeof(p->detail) - off, "%satomic updates%s", off ? "; " : "",
		 p->old_submit ? "; submissions from io_uring_submit_sqe" : "");
	*ret = TAKE_PTR(p);
	return 0;
}

const char *probe_uring_mechanism(const struct probe_uring *p)
{
	return mech_names[p->mech];
}

const char *probe_uring_detail(const struct probe_uring *p)
{
	return p->detail;
}

static int collect(const void *key, const void *values, int ncpus, void *ctx)
{
	struct probe_uring *p = ctx;
	const struct dc_uring_key *k = key;
	struct dc_uring_entry *e;

	/* not zeroed twice: the literal below writes every member */
	e = VEC_PUSH_RAW(p->entries, p->n, p->cap);
	if (!e)
		return -ENOMEM;
	*e = (struct dc_uring_entry){
	    .cgroup_id = k->cgroup_id, .tgid = k->tgid, .opcode = k->opcode};
	for (int c = 0; c < ncpus; c++) {
		const struct dc_uring_val *v = (const struct dc_uring_val *)values + c;

		e->errors += v->errors;
		e->bytes += v->bytes;
		e->time_ns += v->time_ns;
		for (unsigned s = 0; s < DC_LAT_SLOTS; s++) {
			e->lat[s] += v->lat_hist[s];
			e->count += v->lat_hist[s];
		}
	}
	return 0;
}

static int entry_cmp(const void *a, const void *b)
{
	const struct dc_uring_entry *x = a, *y = b;

	if (x->tgid != y->tgid)
		return x->tgid < y->tgid ? -1 : 1;
	if (x->cgroup_id != y->cgroup_id)
		return x->cgroup_id < y->cgroup_id ? -1 : 1;
	return (int)x->opcode - (int)y->opcode;
}

/* This window's part of the overflow bucket (never reset in the kernel). */
static void overflow_delta(struct probe_uring *p, struct dc_uring_entry *out)
{
	_cleanup_free_ struct dc_uring_val *vals = calloc((size_t)p->ncpus, sizeof(*vals));
	struct ur_totals cur = {};
	__u32 zero = 0;

	*out = (struct dc_uring_entry){};
	if (!vals || bpf_map_lookup_elem(bpf_map__fd(p->skel->maps.ur_overflow), &zero, vals))
		return;
	for (int c = 0; c < p->ncpus; c++) {
		cur.errors += vals[c].errors;
		cur.bytes += vals[c].bytes;
		cur.time_ns += vals[c].time_ns;
		for (unsigned s = 0; s < DC_LAT_SLOTS; s++)
			cur.lat[s] += vals[c].lat_hist[s];
	}
	out->errors = cur.errors - p->overflow_prev.errors;
	out->bytes = cur.bytes - p->overflow_prev.bytes;
	out->time_ns = cur.time_ns - p->overflow_prev.time_ns;
	for (unsigned s = 0; s < DC_LAT_SLOTS; s++) {
		out->lat[s] = (uint32_t)(cur.lat[s] - p->overflow_prev.lat[s]);
		out->count += out->lat[s];
	}
	p->overflow_prev = cur;
}

struct winmap *probe_uring_winmap(struct probe_uring *p)
{
	return &p->agg;
}

int probe_uring_flip_and_drain(struct probe_uring *p, struct dc_uring_drain *res)
{
	unsigned long long flip_us;
	uint64_t m;
	bool batch;
	int r;

	p->n = 0;
	r = winmap_flip_and_drain(&p->agg, collect, p, &batch, &flip_us);
	if (r < 0)
		return r;
	qsort_safe(p->entries, p->n, sizeof(*p->entries), entry_cmp);
	res->entries = p->entries;
	res->n = p->n;
	overflow_delta(p, &res->overflow);
	percpu_counters_delta(p->skel->maps.ur_counters, DC_UR_CNT_MAX, p->ncpus, p->counters_prev,
			      res->counters);
	m = progs_recursion_misses(p->skel->obj);
	res->recursion_misses = m - p->misses_prev;
	p->misses_prev = m;
	return 0;
}

const struct dc_uring_entry *uring_find(const struct dc_uring_drain *d, uint32_t tgid,
					uint64_t cgroup_id, size_t *n)
{
	size_t lo = 0, hi = d->n, end;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct dc_uring_entry *e = &d->entries[mid];

		if (e->tgid < tgid || (e->tgid == tgid && e->cgroup_id < cgroup_id))
			lo = mid + 1;
		else
			hi = mid;
	}
	for (end = lo;
	     end < d->n && d->entries[end].tgid == tgid && d->entries[end].cgroup_id == cgroup_id;
	     end++)
		;
	*n = end - lo;
	return d->entries + lo;
}

struct bpf_object *probe_uring_object(const struct probe_uring *p)
{
	return p->skel->obj;
}

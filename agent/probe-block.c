// SPDX-License-Identifier: Apache-2.0
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "block.skel.h"
#include "cgroup.h"
#include "counters.h"
#include "filter.h"
#include "log.h"
#include "mechanism.h"
#include "macro.h"
#include "probe-block.h"
#include "traces.h"
#include "progstats.h"
#include "winmap.h"

/* the tables' sets are cache lines (include/datacrumbs/block.h) */
_Static_assert(sizeof(struct dc_blk_bio_set) == 64, "a bio set is one cache line");
_Static_assert(sizeof(struct dc_blk_rq_set) == 128, "a request set is two cache lines");

enum mech { MECH_TP_BTF, MECH_RAW_TP, MECH_MAX };
static const char *const mech_names[MECH_MAX] = {"tp_btf", "raw_tp"};

struct probe_block {
	struct block_bpf *skel;
	enum mech mech;
	int ncpus;
	bool percpu;
	struct winmap agg;
	int clock_fd; /* the windows' clock (winmap_prepare()) */
	struct dc_filter *filter;
	struct traces *traces; /* not owned; NULL when traces are off */
	char detail[384];
	struct dc_blk_entry *entries;
	size_t n, cap;
	struct dc_blk_rq_set *rq_mem; /* the request table, mapped for the sweep */
	size_t rq_len;
	uint32_t bio_sets, rq_sets;
	uint64_t swept_ns; /* when the request table was last swept */
	struct dc_blk_sum overflow_prev[DC_BLK_OP_MAX];
	uint64_t counters_prev[DC_BLK_CNT_MAX];
	uint64_t misses_prev;
};

static void unmap_requests(struct probe_block *p)
{
	if (p->rq_mem)
		munmap(p->rq_mem, p->rq_len);
	p->rq_mem = NULL;
}

struct probe_block *probe_block_free(struct probe_block *p)
{
	if (!p)
		return NULL;
	unmap_requests(p);
	if (p->skel)
		mech_detach_skeleton(p->skel->skeleton);
	block_bpf__destroy(p->skel);
	winmap_close(&p->agg);
	p->filter = filter_free(p->filter);
	free(p->entries);
	free(p);
	return NULL;
}

DEFINE_TRIVIAL_CLEANUP_FUNC(struct probe_block *, probe_block_free);

static int try_mechanism(struct probe_block *p, const struct dc_config *cfg, enum mech m,
			 bool plain_updates)
{
	struct bpf_program *progs[MECH_MAX][5];
	struct block_bpf *skel;
	int r;

	skel = block_bpf__open();
	if (!skel)
		return -errno;
	mech_release_image(skel->skeleton->data, skel->skeleton->data_sz);
	p->skel = skel;
	skel->rodata->plain_updates = plain_updates;
	skel->rodata->agent_tgid = cfg->exclude_self ? (__u32)getpid() : 0;
	skel->rodata->bio_set_mask = p->bio_sets - 1;
	skel->rodata->blkcg_where = (__u8)cgroup_io_where();
	skel->rodata->rq_set_mask = p->rq_sets - 1;
	r = traces_share(p->traces, skel->obj);
	if (r >= 0) {
		skel->rodata->traces_on = r > 0;
		r = bpf_map__set_max_entries(skel->maps.bio_sets, p->bio_sets);
	}
	if (!r)
		r = bpf_map__set_max_entries(skel->maps.rq_sets, p->rq_sets);
	if (r < 0)
		return r;
	progs[MECH_TP_BTF][0] = skel->progs.dc_bio_queue_btf;
	progs[MECH_TP_BTF][1] = skel->progs.dc_rq_issue_btf;
	progs[MECH_TP_BTF][2] = skel->progs.dc_rq_complete_btf;
	progs[MECH_TP_BTF][3] = skel->progs.dc_rq_requeue_btf;
	progs[MECH_RAW_TP][0] = skel->progs.dc_bio_queue_raw;
	progs[MECH_RAW_TP][1] = skel->progs.dc_rq_issue_raw;
	progs[MECH_RAW_TP][2] = skel->progs.dc_rq_complete_raw;
	progs[MECH_RAW_TP][3] = skel->progs.dc_rq_requeue_raw;
	progs[MECH_TP_BTF][4] = skel->progs.dc_bio_split_btf;
	progs[MECH_RAW_TP][4] = skel->progs.dc_bio_split_raw;
	for (int i = 0; i < MECH_MAX; i++)
		for (int j = 0; j < 5; j++)
			bpf_program__set_autoload(progs[i][j], i == (int)m);
	r = winmap_prepare(&p->agg, skel->maps.agg_gen, skel->maps.agg_gen_clock, p->clock_fd,
			   "dc_blk", sizeof(struct dc_blk_key), sizeof(struct dc_blk_val),
			   (unsigned)cfg->block_max_keys, p->percpu, p->ncpus);
	if (!r)
		r = filter_prepare(p->filter, skel->obj);
	if (r)
		return r;
	mech_verifier_log_begin(skel->obj);
	r = block_bpf__load(skel);
	mech_verifier_log_end();
	if (r)
		return r;
	r = winmap_install(&p->agg);
	if (!r)
		r = filter_install(p->filter, skel->obj);
	if (r)
		return r;
	p->rq_len = (size_t)p->rq_sets * sizeof(struct dc_blk_rq_set);
	p->rq_mem = mmap(NULL, p->rq_len, PROT_READ | PROT_WRITE, MAP_SHARED,
			 bpf_map__fd(skel->maps.rq_sets), 0);
	if (p->rq_mem == MAP_FAILED) {
		p->rq_mem = NULL;
		return -errno;
	}
	return block_bpf__attach(skel);
}

struct attempt {
	struct probe_block *p;
	const struct dc_config *cfg;
	bool plain_updates;
};

static int attempt(void *ctx, int m)
{
	struct attempt *a = ctx;

	return try_mechanism(a->p, a->cfg, (enum mech)m, a->plain_updates);
}

static void undo(void *ctx)
{
	struct probe_block *p = ((struct attempt *)ctx)->p;

	unmap_requests(p);
	block_bpf__destroy(p->skel);
	p->skel = NULL;
	winmap_close(&p->agg);
}

int probe_block_new(const struct dc_config *cfg, struct traces *traces, int clock_fd,
		    struct probe_block **ret)
{
	/* Never plain adds here, whatever the preemption model: completions run
	 * in interrupt context too, and an interrupt's run of the completion
	 * program can interleave with its task-context run on the same CPU and
	 * per-CPU value (seen here: one request in ~80 runs lost, no counter
	 * moved). Only the syscall programs, task context only, may use them. */
	const bool plain_updates = false;
	_cleanup_(probe_block_freep) struct probe_block *p = calloc(1, sizeof(*p));
	enum mech first = MECH_TP_BTF, last = MECH_RAW_TP;
	size_t off = 0;
	int r = -ENOENT;

	if (!p)
		return -ENOMEM;
	p->agg.inner_fd[0] = p->agg.inner_fd[1] = -1;
	p->ncpus = libbpf_num_possible_cpus();
	p->traces = traces;
	p->clock_fd = clock_fd;
	{
		char err[512];

		r = filter_new(cfg, NULL, &p->filter, err, sizeof(err));
		if (r < 0)
			return log_error_errno(r, "Cannot set up the block filters: %s", err);
	}
	/* slots come in sets of two */
	p->bio_sets = pow2_at_least((uint64_t)cfg->block_bio_slots) / 2;
	p->rq_sets = pow2_at_least((uint64_t)cfg->block_request_slots) / 2;
	/* the same layout rule as the syscall maps, for the smaller block map */
	p->percpu = strcmp(cfg->map_layout, "shared") != 0;
	if (strcmp(cfg->block_mechanism, "auto"))
		first = last = (enum mech)mech_find(mech_names, MECH_MAX, cfg->block_mechanism);
	{
		struct attempt a = {p, cfg, plain_updates};

		r = mech_choose("block", mech_names, first, last, attempt, undo, &a, p->detail,
				sizeof(p->detail), &off);
	}
	if (r < 0)
		return r;
	p->mech = (enum mech)r;
	snprintf(p->detail + off, sizeof(p->detail) - off, "%s%s updates", off ? "; " : "",
		 plain_updates ? "plain" : "atomic");
	*ret = TAKE_PTR(p);
	return 0;
}

const char *probe_block_mechanism(const struct probe_block *p)
{
	return mech_names[p->mech];
}

const char *probe_block_detail(const struct probe_block *p)
{
	return p->detail;
}

static int collect(const void *key, const void *values, int ncpus, void *ctx)
{
	struct probe_block *p = ctx;
	const struct dc_blk_key *k = key;
	struct dc_blk_entry *e;

	e = VEC_PUSH(p->entries, p->n, p->cap);
	if (!e)
		return -ENOMEM;
	e->cgroup_id = k->cgroup_id;
	e->dev = k->dev;
	e->tgid = k->tgid;
	e->op = k->op;
	for (int c = 0; c < ncpus; c++)
		blk_sum_add_val(&e->v,
				(const struct dc_blk_val *)((const char *)values +
							    (size_t)c * sizeof(struct dc_blk_val)));
	return 0;
}

/* Whether a request issued at issued (CLOCK_MONOTONIC ns) is max_age_ns old
 * at now: one issued after now was read (the sweep takes a while on a busy
 * device) is young, not 2^64 ns old. */
static bool old_enough(uint64_t now, uint64_t issued, uint64_t max_age_ns)
{
	return (int64_t)(now - issued) >= (int64_t)max_age_ns;
}

/* Requests issued longer ago than max_age_ns (all of them with 0) whose
 * completion never came: free their entries and return how many. The
 * kernel does not always report a completion (see on_issue() in
 * block.bpf.c); a device that really takes this long has bigger problems
 * than our count. An entry only claimed has no issue time yet (a way is
 * freed without one, by rq_release() and here, and on_issue() clears it
 * again after its claim), so it is not taken for a stale one. */
static uint64_t sweep_inflight(struct probe_block *p, uint64_t max_age_ns)
{
	int fd = bpf_map__fd(p->skel->maps.inflight);
	struct dc_blk_inflight f;
	__u64 key, next, now;
	struct timespec ts;
	uint64_t n = 0;
	bool more;

	clock_gettime(CLOCK_MONOTONIC, &ts); /* bpf_ktime_get_ns() is CLOCK_MONOTONIC */
	now = (__u64)ts.tv_sec * 1000000000ULL + (__u64)ts.tv_nsec;
	more = __atomic_load_n(&p->skel->bss->inflight_n, __ATOMIC_RELAXED) &&
	       !bpf_map_get_next_key(fd, NULL, &next);
	while (more) {
		key = next;
		more = !bpf_map_get_next_key(fd, &key, &next);
		if (bpf_map_lookup_elem(fd, &key, &f) || !f.issue_ns)
			continue;
		if (max_age_ns && !old_enough(now, f.issue_ns, max_age_ns))
			continue;
		if (!bpf_map_delete_elem(fd, &key)) {
			__atomic_fetch_sub(&p->skel->bss->inflight_n, 1, __ATOMIC_SEQ_CST);
			n++;
		}
	}
	/* the table holds stale entries only where the kernel lost a
	 * completion; a pass over it every 10 s keeps the count timely */
	if (max_age_ns && now - p->swept_ns < 10 * 1000000000ULL)
		return n;
	p->swept_ns = now;
	for (uint32_t i = 0; i < p->rq_sets && p->rq_mem; i++)
		for (int w = 0; w < 2; w++) {
			struct dc_blk_rq_way *way = &p->rq_mem[i].way[w];
			__u64 tag = __atomic_load_n(&way->rq, __ATOMIC_ACQUIRE);
			__u64 issued = __atomic_load_n(&way->f.issue_ns, __ATOMIC_RELAXED);

			if (!tag || !issued || (max_age_ns && !old_enough(now, issued, max_age_ns)))
				continue;
			/* the issue time first: if it is still the stale one, the
			 * way still holds the request seen (a new claim clears it
			 * before anything else), and a free way keeps none, as
			 * rq_release() leaves it; then the tag, which a completion
			 * that came meanwhile may have freed already */
			if (!__atomic_compare_exchange_n(&way->f.issue_ns, &issued, 0, false,
							 __ATOMIC_SEQ_CST, __ATOMIC_RELAXED))
				continue;
			if (__atomic_compare_exchange_n(&way->rq, &tag, 0, false, __ATOMIC_SEQ_CST,
							__ATOMIC_RELAXED))
				n++;
		}
	return n;
}

uint64_t probe_block_inflight_at_stop(struct probe_block *p)
{
	return sweep_inflight(p, 0);
}

struct winmap *probe_block_winmap(struct probe_block *p)
{
	return &p->agg;
}

int probe_block_flip_and_drain(struct probe_block *p, struct dc_blk_drain *res)
{
	_cleanup_free_ struct dc_blk_val *vals = calloc((size_t)p->ncpus, sizeof(*vals));
	unsigned long long flip_us;
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
	/* monotonic per-CPU arrays: publish this window's deltas */
	for (__u32 op = 0; op < DC_BLK_OP_MAX; op++) {
		struct dc_blk_sum cur = {};

		res->overflow[op] = (struct dc_blk_entry){.op = op};
		if (bpf_map_lookup_elem(bpf_map__fd(p->skel->maps.blk_overflow), &op, vals))
			continue;
		for (int c = 0; c < p->ncpus; c++)
			blk_sum_add_val(&cur, &vals[c]);
		/* the count is a sum of 32-bit per-CPU slots, which wrap: each
		 * slot's delta is folded modulo 2^32 before they are added */
		for (unsigned i = 0; i < DC_LAT_SLOTS; i++)
			res->overflow[op].v.count +=
			    (uint32_t)(cur.dlat[i] - p->overflow_prev[op].dlat[i]);
		res->overflow[op].v.bytes = cur.bytes - p->overflow_prev[op].bytes;
		p->overflow_prev[op] = cur;
	}
	percpu_counters_delta(p->skel->maps.blk_counters, DC_BLK_CNT_MAX, p->ncpus,
			      p->counters_prev, res->counters);
	res->counters[DC_BLK_CNT_UNSEEN] += sweep_inflight(p, 30 * 1000000000ULL);
	{
		uint64_t m = progs_recursion_misses(p->skel->obj);

		res->recursion_misses = m - p->misses_prev;
		p->misses_prev = m;
	}
	return 0;
}

struct bpf_object *probe_block_object(const struct probe_block *p)
{
	return p->skel->obj;
}

// SPDX-License-Identifier: Apache-2.0
#include <bpf/bpf.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "macro.h"
#include "selfcost.h"

#define NAME_MAX_LEN 64

/* A program's counters at the last read: they only grow while it lives.
 * The same for an object's own count of its programs' runs (dc_runs,
 * bpf/common.bpf.h), keyed apart from the program ids by RUNS_KEY. */
struct prog_prev {
	uint64_t id;
	uint64_t run_ns, runs;
};
#define RUNS_KEY(map_id) ((uint64_t)1 << 32 | (map_id))

struct prog_win {
	const char *layer;
	char name[NAME_MAX_LEN];
	uint64_t run_ns, runs;
};

struct layer_win {
	const char *name;
	unsigned programs;
	uint64_t runs, run_ns, user_ns;
	bool estimated; /* run_ns from earlier samples' time per run */
};

/* A layer's estimate (struct selfcost_est), of one load of its programs
 * (the id of their run counter) */
struct layer_est {
	char name[NAME_MAX_LEN];
	uint32_t runs_map;
	struct selfcost_est m;
};

struct map_win {
	const char *layer;
	char name[NAME_MAX_LEN];
	const char *type;
	uint32_t max_entries;
	int64_t entries; /* rings: bytes waiting to be read */
};

struct selfcost {
	int stats_fd;
	char stats_state[128];
	/* sampled statistics: on for duty of each window (on_since: when
	 * switched on, 0 when off); scale, window / time on, serves only an
	 * object without its own count of its runs */
	bool sampling;
	bool untimed; /* statistics off by configuration or refused: no run time */
	bool kept_on; /* sampling, but on for good while windows are too short */
	double duty, scale;
	uint64_t on_since_ns, on_ns;
	uint64_t scan_ns, last_scan_ns;
	bool scanned; /* this window walked the maps */
	uint64_t window_ns, bpf_ns;
	struct prog_prev *prev, *cur;
	size_t n_prev, n_cur, cap_prev, cap_cur;
	struct prog_win *progs;
	size_t n_progs, cap_progs;
	struct layer_win layers[16];
	size_t n_layers;
	struct layer_est est[16];
	size_t n_est;
	uint64_t now_ns; /* the last flip */
	struct map_win *maps, *rings;
	size_t n_maps, cap_maps, n_rings, cap_rings;
	long page;
	uint64_t *percpu; /* one dc_runs value per possible CPU */
	int ncpus;
};

static bool sysctl_stats_on(void)
{
	FILE *f = fopen("/proc/sys/kernel/bpf_stats_enabled", "re");
	int v = 0;

	if (!f)
		return false;
	if (fscanf(f, "%d", &v) != 1)
		v = 0;
	fclose(f);
	return v == 1;
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static void say_sampled(struct selfcost *s)
{
	snprintf(s->stats_state, sizeof(s->stats_state), "fd, on %g%% of each window",
		 s->duty * 100);
}

int selfcost_new(bool bpf_stats, double duty, double map_scan_sec, struct selfcost **ret)
{
	struct selfcost *s = calloc(1, sizeof(*s));

	if (!s)
		return -ENOMEM;
	s->page = sysconf(_SC_PAGESIZE);
	s->ncpus = libbpf_num_possible_cpus();
	if (s->ncpus <= 0) {
		int r = s->ncpus ? s->ncpus : -EINVAL;

		free(s);
		return r;
	}
	s->percpu = calloc((size_t)s->ncpus, sizeof(*s->percpu));
	if (!s->percpu) {
		free(s);
		return -ENOMEM;
	}
	s->scan_ns = map_scan_sec > 0 ? (uint64_t)(map_scan_sec * 1e9) : 0;
	s->stats_fd = -1;
	if (!bpf_stats) {
		s->untimed = true;
		snprintf(s->stats_state, sizeof(s->stats_state), "off: self.bpf_stats = false");
	} else {
		/* the kernel times every program while any such fd is open, and
		 * stops when the agent exits, whatever way it exits */
		s->stats_fd = bpf_enable_stats(BPF_STATS_RUN_TIME);
		s->scale = 1;
		if (s->stats_fd >= 0 && duty < 1) {
			s->sampling = true;
			s->duty = duty;
			s->on_since_ns = mono_ns(); /* until the manager's first switch */
			say_sampled(s);
		} else if (s->stats_fd >= 0)
			snprintf(s->stats_state, sizeof(s->stats_state), "fd");
		else if (sysctl_stats_on())
			snprintf(s->stats_state, sizeof(s->stats_state), "sysctl");
		else {
			s->untimed = true;
			snprintf(s->stats_state, sizeof(s->stats_state),
				 "off: the kernel refused BPF_ENABLE_STATS (%s)", strerror(errno));
			log_notice("BPF program run times unavailable (%s): the agent's cost "
				   "counts its user-space CPU only",
				   strerror(errno));
		}
	}
	*ret = s;
	return 0;
}

struct selfcost *selfcost_free(struct selfcost *s)
{
	if (!s)
		return NULL;
	if (s->stats_fd >= 0)
		close(s->stats_fd);
	free(s->prev);
	free(s->cur);
	free(s->progs);
	free(s->maps);
	free(s->rings);
	free(s->percpu);
	free(s);
	return NULL;
}

static int prev_cmp(const void *a, const void *b)
{
	const struct prog_prev *x = a, *y = b;

	return x->id < y->id ? -1 : x->id > y->id;
}

void selfcost_adopt(struct selfcost *s, struct selfcost *old)
{
	struct prog_prev *t = s->prev;
	size_t n = s->n_prev, cap = s->cap_prev;

	/* kept only if they were being measured: not from before an untimed
	 * stretch (self.bpf_stats was false) */
	if (!old->untimed) {
		memcpy(s->est, old->est, sizeof(s->est));
		s->n_est = old->n_est;
	}
	s->prev = old->prev;
	s->n_prev = old->n_prev;
	s->cap_prev = old->cap_prev;
	old->prev = t;
	old->n_prev = n;
	old->cap_prev = cap;
}

static const struct prog_prev *prev_find(const struct selfcost *s, uint64_t id)
{
	struct prog_prev k = {.id = id};

	return s->n_prev ? bsearch(&k, s->prev, s->n_prev, sizeof(k), prev_cmp) : NULL;
}

void selfcost_forget(struct selfcost *s)
{
	for (size_t i = 0; i < s->n_est; i++)
		s->est[i].m.stale = true;
}

/* Runs the object's programs counted themselves since the last read, or
 * -1 when the object has no such counter; *id: the counter's map id. */
static int64_t read_runs(struct selfcost *s, struct bpf_object *obj, uint32_t *id)
{
	const struct bpf_map *map = bpf_object__find_map_by_name(obj, "dc_runs");
	struct bpf_map_info info;
	__u32 len = sizeof(info), zero = 0;
	const struct prog_prev *p;
	struct prog_prev *pp;
	uint64_t total = 0;
	int fd = map ? bpf_map__fd(map) : -1;

	memset(&info, 0, sizeof(info));
	if (fd < 0 || bpf_obj_get_info_by_fd(fd, &info, &len))
		return -1;
	*id = info.id;
	p = prev_find(s, RUNS_KEY(info.id));
	pp = VEC_PUSH(s->cur, s->n_cur, s->cap_cur);
	if (bpf_map_lookup_elem(fd, &zero, s->percpu)) {
		/* unread this window: the last reading stays the base, so that
		 * the next window does not count everything since the load */
		if (pp && p)
			*pp = *p;
		else if (pp)
			s->n_cur--;
		return -1;
	}
	for (int c = 0; c < s->ncpus; c++)
		total += s->percpu[c];
	if (pp)
		*pp = (struct prog_prev){.id = RUNS_KEY(info.id), .runs = total};
	/* a plain add can go back: a program preempted between its load and
	 * its store writes over the runs counted meanwhile on that CPU */
	if (p && total < p->runs)
		return 0;
	return (int64_t)(total - (p ? p->runs : 0));
}

static struct layer_est *est_of(struct selfcost *s, const char *layer, uint32_t runs_map)
{
	struct layer_est *e = NULL;

	for (size_t i = 0; i < s->n_est && !e; i++)
		if (!strcmp(s->est[i].name, layer))
			e = &s->est[i];
	if (!e && s->n_est == ELEMENTSOF(s->est))
		return NULL;
	if (!e) {
		e = &s->est[s->n_est++];
		snprintf(e->name, NAME_MAX_LEN, "%s", layer);
		e->m = (struct selfcost_est){};
	} else if (e->runs_map == runs_map)
		return e;
	/* new: nothing timed yet; its programs loaded again: the mean of
	 * their last load, until a full sample of these */
	e->runs_map = runs_map;
	e->m.stale = true;
	return e;
}

/* runs at the mean time per run */
static uint64_t est_price(const struct selfcost_est *e, uint64_t runs)
{
	return (uint64_t)llround((double)runs * e->ns / e->runs);
}

uint64_t selfcost_est_price(struct selfcost_est *e, uint64_t sampled, uint64_t sampled_ns,
			    uint64_t runs, uint64_t run_ns, bool *estimated)
{
	*estimated = false;
	if (sampled && sampled_ns) {
		if (e->stale && sampled >= SELFCOST_MIN_SAMPLED_RUNS) {
			/* what a run costs now */
			e->ns = e->runs = 0;
			e->stale = false;
		}
		e->ns = e->ns / 2 + (double)sampled_ns;
		e->runs = e->runs / 2 + (double)sampled;
		/* a handful of runs at a burst's edge (cold caches, new keys),
		 * scaled up to the window's thousands, would be one window's
		 * cost several times over: enough to spend a period's budget
		 * alone. Those weigh in the mean with the earlier samples. */
		if (sampled < SELFCOST_MIN_SAMPLED_RUNS && runs > sampled &&
		    e->runs > (double)sampled && run_ns) {
			*estimated = true;
			return est_price(e, runs);
		}
		return run_ns;
	}
	if (runs && !run_ns && e->runs > 0) {
		run_ns = est_price(e, runs);
		*estimated = run_ns > 0;
	}
	return run_ns;
}

static void read_programs(struct selfcost *s, struct layer_win *lw, struct bpf_object *obj)
{
	struct bpf_program *prog;
	size_t first = s->n_progs;
	uint64_t sampled = 0, sampled_ns = 0;
	uint32_t runs_map = 0;
	int64_t counted = read_runs(s, obj, &runs_map);
	struct layer_est *est;
	double f, k = 1; /* k: the layer's run time over the sample's */

	bpf_object__for_each_program(prog, obj)
	{
		struct bpf_prog_info info;
		__u32 len = sizeof(info);
		const struct prog_prev *p;
		struct prog_prev *pp;
		struct prog_win *pw;
		uint64_t dns, druns;
		int fd = bpf_program__fd(prog);

		if (fd < 0)
			continue; /* not loaded: a mechanism that lost, a function not probed */
		memset(&info, 0, sizeof(info));
		if (bpf_obj_get_info_by_fd(fd, &info, &len))
			continue;
		lw->programs++;
		/* a program loaded during the window counts from its load */
		p = prev_find(s, info.id);
		dns = info.run_time_ns - (p ? p->run_ns : 0);
		druns = info.run_cnt - (p ? p->runs : 0);
		pp = VEC_PUSH(s->cur, s->n_cur, s->cap_cur);
		if (pp)
			*pp = (struct prog_prev){
			    .id = info.id, .run_ns = info.run_time_ns, .runs = info.run_cnt};
		sampled += druns;
		sampled_ns += dns;
		if (!druns)
			continue;
		pw = VEC_PUSH(s->progs, s->n_progs, s->cap_progs);
		if (!pw)
			continue; /* out of memory: left out of this window's list only */
		*pw = (struct prog_win){.layer = lw->name, .run_ns = dns, .runs = druns};
		snprintf(pw->name, NAME_MAX_LEN, "%s", bpf_program__name(prog));
	}
	/*
	 * The layer's runs are the ones its programs counted; what the kernel
	 * timed (a sample, or all window: then f is about 1) gives the time
	 * per run and each program's share of them. Scaled up by time
	 * instead, a sample read low, fewer calls being made while the
	 * statistics slow each of them (0.50 to 0.93 of the runs under a
	 * system-call-bound writer, docs/operations.md), and up to 1/duty high
	 * while another tool had the statistics on. A layer whose programs
	 * ran fewer than SELFCOST_MIN_SAMPLED_RUNS times in the sample, or
	 * not at all, takes its time per run from the mean of its samples
	 * (struct selfcost_est), said in the record; none yet, its runs have
	 * no run time.
	 */
	if (counted >= 0) {
		f = sampled ? (double)counted / (double)sampled : 0;
		lw->runs = (uint64_t)counted;
	} else {
		f = s->scale;
		lw->runs = (uint64_t)llround((double)sampled * f);
	}
	if (s->untimed) /* timed by someone else: not the agent's to publish */
		sampled_ns = 0;
	lw->run_ns = (uint64_t)llround((double)sampled_ns * f);
	/* only where a sample is taken: with the statistics on all window
	 * (fd, sysctl) runs without run time are a reading's race, not a
	 * sample that missed them */
	est = s->sampling && counted >= 0 ? est_of(s, lw->name, runs_map) : NULL;
	if (est) {
		uint64_t priced = selfcost_est_price(&est->m, sampled, sampled_ns, lw->runs,
						     lw->run_ns, &lw->estimated);

		/* the programs' shares of the sample, at the price */
		if (lw->run_ns && priced != lw->run_ns)
			k = (double)priced / (double)lw->run_ns;
		lw->run_ns = priced;
	}
	for (size_t i = first; i < s->n_progs; i++) {
		s->progs[i].runs = (uint64_t)llround((double)s->progs[i].runs * f);
		s->progs[i].run_ns =
		    s->untimed ? 0 : (uint64_t)llround((double)s->progs[i].run_ns * f * k);
	}
}

/* Entries of a hash map, walking its keys; bounded, since a map that
 * changes under the walk can send it back to the start. */
static int64_t count_keys(int fd, uint32_t key_size, uint32_t max_entries)
{
	char *key = malloc(key_size), *next = malloc(key_size);
	int64_t n = 0;
	void *prev = NULL;

	if (!key || !next) {
		free(key);
		free(next);
		return -1;
	}
	while ((uint64_t)n < (uint64_t)max_entries && !bpf_map_get_next_key(fd, prev, next)) {
		memcpy(key, next, key_size);
		prev = key;
		n++;
	}
	free(key);
	free(next);
	return n;
}

/* Bytes the ring holds that user space has not read: producer minus
 * consumer position, from the two pages the kernel lets anyone map
 * read-only (libbpf 1.1 has no call for it). */
static int64_t ring_used(int fd, long page)
{
	void *p = mmap(NULL, (size_t)page * 2, PROT_READ, MAP_SHARED, fd, 0);
	uint64_t cons, prod;

	if (p == MAP_FAILED)
		return -1;
	cons = __atomic_load_n((uint64_t *)p, __ATOMIC_ACQUIRE);
	prod = __atomic_load_n((uint64_t *)((char *)p + page), __ATOMIC_ACQUIRE);
	munmap(p, (size_t)page * 2);
	return prod >= cons ? (int64_t)(prod - cons) : 0;
}

static const char *hash_type(enum bpf_map_type t)
{
	switch (t) {
	case BPF_MAP_TYPE_HASH:
		return "hash";
	case BPF_MAP_TYPE_PERCPU_HASH:
		return "percpu_hash";
	case BPF_MAP_TYPE_LRU_HASH:
		return "lru_hash";
	case BPF_MAP_TYPE_LRU_PERCPU_HASH:
		return "lru_percpu_hash";
	default:
		return NULL;
	}
}

static void read_maps(struct selfcost *s, const char *layer, struct bpf_object *obj)
{
	struct bpf_map *map;

	bpf_object__for_each_map(map, obj)
	{
		int fd = bpf_map__fd(map);
		enum bpf_map_type t = bpf_map__type(map);
		struct map_win mw = {.layer = layer, .max_entries = bpf_map__max_entries(map)};
		struct map_win *slot;

		if (fd < 0 || bpf_map__is_internal(map))
			continue;
		snprintf(mw.name, NAME_MAX_LEN, "%s", bpf_map__name(map));
		if (t == BPF_MAP_TYPE_RINGBUF) {
			mw.type = "ringbuf";
			mw.entries = ring_used(fd, s->page);
			slot = VEC_PUSH(s->rings, s->n_rings, s->cap_rings);
			if (slot)
				*slot = mw;
			continue;
		}
		/* arrays are always full; task storage and the window maps'
		 * outer arrays cannot be counted (the window maps' keys are
		 * the agent record's "keys") */
		if (!s->scanned || !(mw.type = hash_type(t)))
			continue;
		mw.entries = count_keys(fd, bpf_map__key_size(map), mw.max_entries);
		slot = VEC_PUSH(s->maps, s->n_maps, s->cap_maps);
		if (slot)
			*slot = mw;
	}
}

void selfcost_flip(struct selfcost *s, const struct selfcost_layer *layers, size_t n,
		   uint64_t window_ns, uint64_t now_ns)
{
	s->window_ns = window_ns;
	s->now_ns = now_ns;
	s->bpf_ns = 0;
	if (s->sampling) {
		if (s->on_since_ns) {
			/* still on (the sample ran past the close): count it to here */
			s->on_ns += now_ns - s->on_since_ns;
			s->on_since_ns = now_ns;
		}
		s->scale = s->on_ns ? (double)window_ns / (double)s->on_ns : 0;
		/* kernel.bpf_stats_enabled = 1: the programs were timed all
		 * window whatever the agent switched (another tool's fd does
		 * the same, and is not seen here) */
		if (sysctl_stats_on())
			s->scale = 1;
		s->on_ns = 0;
	}
	s->n_cur = s->n_progs = s->n_layers = 0;
	for (size_t i = 0; i < n && s->n_layers < ELEMENTSOF(s->layers); i++) {
		struct layer_win *lw;

		if (!layers[i].obj)
			continue;
		lw = &s->layers[s->n_layers++];
		*lw = (struct layer_win){.name = layers[i].name};
		read_programs(s, lw, layers[i].obj);
		s->bpf_ns += lw->run_ns;
	}
	/* programs that went away (a family stopped) leave the table with it */
	qsort_safe(s->cur, s->n_cur, sizeof(*s->cur), prev_cmp);
	{
		struct prog_prev *t = s->prev;
		size_t c = s->cap_prev;

		s->prev = s->cur;
		s->cap_prev = s->cap_cur;
		s->n_prev = s->n_cur;
		s->cur = t;
		s->cap_cur = c;
	}
}

void selfcost_window(struct selfcost *s, const struct selfcost_layer *layers, size_t n)
{
	size_t k = 0;

	s->n_maps = s->n_rings = 0;
	s->scanned = s->scan_ns && s->now_ns - s->last_scan_ns >= s->scan_ns;
	if (s->scanned)
		s->last_scan_ns = s->now_ns;
	/* the layers selfcost_flip read, in the same order */
	for (size_t i = 0; i < n && k < s->n_layers; i++) {
		if (!layers[i].obj)
			continue;
		s->layers[k++].user_ns = layers[i].user_ns;
		read_maps(s, layers[i].name, layers[i].obj);
	}
}

uint64_t selfcost_stats_on_for(const struct selfcost *s, uint64_t window_ns)
{
	return s->sampling || s->kept_on ? (uint64_t)(s->duty * (double)window_ns) : 0;
}

void selfcost_stats_keep_on(struct selfcost *s, uint64_t now_ns)
{
	if (!s->sampling)
		return;
	selfcost_stats_on(s, now_ns);
	if (!s->on_since_ns)
		return; /* refused: tried again at the next window */
	s->sampling = false;
	s->kept_on = true;
	s->scale = 1;
	snprintf(s->stats_state, sizeof(s->stats_state),
		 "fd (always on: a sample of each window would be under %g ms)",
		 SELFCOST_MIN_SAMPLE_NS / 1e6);
}

void selfcost_stats_resume(struct selfcost *s, uint64_t now_ns)
{
	if (!s->kept_on)
		return;
	s->kept_on = false;
	s->sampling = true;
	/* on since the keep-on: counted as on from this window's start */
	s->on_since_ns = now_ns;
	s->on_ns = 0;
	say_sampled(s);
}

void selfcost_stats_on(struct selfcost *s, uint64_t now_ns)
{
	if (!s->sampling || s->on_since_ns)
		return;
	s->stats_fd = bpf_enable_stats(BPF_STATS_RUN_TIME);
	if (s->stats_fd >= 0)
		s->on_since_ns = now_ns;
	/* refused now: the window reads no run time (scale 0) but the
	 * estimates of earlier samples (struct layer_est) */
}

void selfcost_stats_off(struct selfcost *s, uint64_t now_ns)
{
	if (!s->sampling || !s->on_since_ns)
		return;
	close(s->stats_fd);
	s->stats_fd = -1;
	s->on_ns += now_ns - s->on_since_ns;
	s->on_since_ns = 0;
}

uint64_t selfcost_bpf_ns(const struct selfcost *s)
{
	return s->bpf_ns;
}

const char *selfcost_bpf_stats(const struct selfcost *s)
{
	return s->stats_state;
}

static double share(uint64_t ns, uint64_t window_ns)
{
	return window_ns ? (double)ns / (double)window_ns : 0;
}

static void map_entry(struct dc_json *j, const struct map_win *m, bool ring)
{
	json_obj_begin(j);
	json_key(j, "layer");
	json_str(j, m->layer);
	json_key(j, "name");
	json_str(j, m->name);
	json_key(j, "type");
	json_str(j, m->type);
	json_key(j, ring ? "size" : "max_entries");
	json_u64(j, m->max_entries);
	json_key(j, ring ? "used" : "entries");
	if (m->entries < 0)
		json_null(j);
	else
		json_u64(j, (uint64_t)m->entries);
	json_key(j, "fill");
	if (m->entries < 0 || !m->max_entries)
		json_null(j);
	else
		json_double(j, (double)m->entries / m->max_entries);
	json_obj_end(j);
}

void selfcost_json(const struct selfcost *s, struct dc_json *j)
{
	double sec = (double)s->window_ns / 1e9;

	json_key(j, "layers");
	json_obj_begin(j);
	for (size_t i = 0; i < s->n_layers; i++) {
		const struct layer_win *l = &s->layers[i];

		json_key(j, l->name);
		json_obj_begin(j);
		json_key(j, "programs");
		json_u64(j, l->programs);
		json_key(j, "runs");
		json_u64(j, l->runs);
		json_key(j, "runs_per_sec");
		json_double(j, sec > 0 ? (double)l->runs / sec : 0);
		json_key(j, "run_ns");
		json_u64(j, l->run_ns);
		json_key(j, "run_ns_estimated");
		json_bool(j, l->estimated);
		/* runs without run time: counted, not timed (no sample, nor
		 * an earlier one to estimate from) */
		json_key(j, "ns_per_run");
		if (l->runs && !l->run_ns)
			json_null(j);
		else
			json_double(j, l->runs ? (double)l->run_ns / (double)l->runs : 0);
		json_key(j, "bpf_share");
		json_double(j, share(l->run_ns, s->window_ns));
		json_key(j, "user_ns");
		json_u64(j, l->user_ns);
		json_key(j, "share");
		json_double(j, share(l->run_ns + l->user_ns, s->window_ns));
		json_obj_end(j);
	}
	json_obj_end(j);

	json_key(j, "programs");
	json_arr_begin(j);
	for (size_t i = 0; i < s->n_progs; i++) {
		json_obj_begin(j);
		json_key(j, "layer");
		json_str(j, s->progs[i].layer);
		json_key(j, "name");
		json_str(j, s->progs[i].name);
		json_key(j, "runs");
		json_u64(j, s->progs[i].runs);
		json_key(j, "run_ns");
		json_u64(j, s->progs[i].run_ns);
		json_obj_end(j);
	}
	json_arr_end(j);

	json_key(j, "rings");
	json_arr_begin(j);
	for (size_t i = 0; i < s->n_rings; i++)
		map_entry(j, &s->rings[i], true);
	json_arr_end(j);

	if (!s->scanned)
		return;
	json_key(j, "map_fill");
	json_arr_begin(j);
	for (size_t i = 0; i < s->n_maps; i++)
		map_entry(j, &s->maps[i], false);
	json_arr_end(j);
}

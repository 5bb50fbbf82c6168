// SPDX-License-Identifier: Apache-2.0
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "elfsyms.h"
#include "log.h"
#include "macro.h"
#include "probe-uprobe.h"
#include "uprobe.skel.h"
#include "winmap.h"

struct probe_uprobe {
	struct uprobe_bpf *skel;
	struct bpf_link **links;
	size_t n_links;
	struct dc_up_func *funcs;
	size_t n_funcs;
	int ncpus;
	struct winmap agg;
	char detail[256];
	struct dc_up_entry *entries;
	size_t n, cap;
	uint64_t counters_prev[DC_UP_CNT_MAX];
};

struct probe_uprobe *probe_uprobe_free(struct probe_uprobe *p)
{
	if (!p)
		return NULL;
	for (size_t i = 0; i < p->n_links; i++)
		bpf_link__destroy(p->links[i]);
	free(p->links);
	uprobe_bpf__destroy(p->skel);
	winmap_close(&p->agg);
	free(p->funcs);
	free(p->entries);
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

static int attach(struct probe_uprobe *p, const char *path, uint64_t offset, uint64_t cookie)
{
	LIBBPF_OPTS(bpf_uprobe_opts, o, .bpf_cookie = cookie);
	struct bpf_link *l[2];

	o.retprobe = false;
	l[0] = bpf_program__attach_uprobe_opts(p->skel->progs.dc_up_entry, -1, path, offset, &o);
	if (!l[0])
		return -errno;
	o.retprobe = true;
	l[1] = bpf_program__attach_uprobe_opts(p->skel->progs.dc_up_return, -1, path, offset, &o);
	if (!l[1]) {
		int r = -errno;

		bpf_link__destroy(l[0]);
		return r;
	}
	p->links[p->n_links++] = l[0];
	p->links[p->n_links++] = l[1];
	return 0;
}

int probe_uprobe_new(const struct dc_config *cfg, struct probe_uprobe **ret, char *err,
		     size_t errlen)
{
	_cleanup_(probe_uprobe_freep) struct probe_uprobe *p = calloc(1, sizeof(*p));
	size_t max = (size_t)cfg->library_max_functions;
	int r;

	if (!p)
		return -ENOMEM;
	p->agg.inner_fd[0] = p->agg.inner_fd[1] = -1;
	p->ncpus = libbpf_num_possible_cpus();
	p->funcs = calloc(max, sizeof(*p->funcs));
	p->links = calloc(2 * max, sizeof(*p->links));
	if (!p->funcs || !p->links)
		return -ENOMEM;
	p->skel = uprobe_bpf__open();
	if (!p->skel)
		return -errno;
	/* atomic adds: threads of a process share keys and uprobes can nest */
	p->skel->rodata->plain_updates = false;
	p->skel->rodata->agent_tgid = (__u32)getpid();
	r = winmap_prepare(&p->agg, p->skel->maps.agg_gen, "dc_up", sizeof(struct dc_up_key),
			   sizeof(struct dc_up_val), (unsigned)cfg->library_max_keys,
			   strcmp(cfg->map_layout, "shared") != 0, p->ncpus);
	if (!r)
		r = uprobe_bpf__load(p->skel);
	if (!r)
		r = winmap_install(&p->agg);
	if (r) {
		snprintf(err, errlen, "cannot load the uprobe programs: %s", strerror(-r));
		return r;
	}
	for (int li = 0; li < cfg->n_libs; li++) {
		const struct dc_lib_cfg *lib = &cfg->libs[li];
		_cleanup_free_ struct elf_func *fs = NULL;
		int n = elf_find_funcs(lib->path, lib->functions, &fs, err, errlen);

		if (n < 0)
			return n;
		if (n == 0) {
			snprintf(err, errlen,
				 "%s: no function matches the patterns of probes.libraries[%d]",
				 lib->path, li);
			return -ENOENT;
		}
		for (int i = 0; i < n; i++) {
			struct dc_up_func *f = &p->funcs[p->n_funcs];
			uint64_t cookie = p->n_funcs;

			if (p->n_funcs == max) {
				snprintf(err, errlen,
					 "the library patterns select more than %zu functions "
					 "(maps.library_max_functions)",
					 max);
				return -E2BIG;
			}
			snprintf(f->name, sizeof(f->name), "%s", fs[i].name);
			snprintf(f->category, sizeof(f->category), "%s", lib->category);
			snprintf(f->feature, sizeof(f->feature), "%s-%s", fs[i].name,
				 lib->category);
			if (listed(lib->bytes, fs[i].name))
				cookie |= DC_UP_COOKIE_BYTES;
			r = attach(p, lib->path, fs[i].offset, cookie);
			if (r) {
				snprintf(err, errlen, "%s: cannot attach to %s: %s", lib->path,
					 fs[i].name, strerror(-r));
				return r;
			}
			p->n_funcs++;
		}
	}
	snprintf(p->detail, sizeof(p->detail), "%zu functions in %d libraries; atomic updates",
		 p->n_funcs, cfg->n_libs);
	log_info("uprobes attached to %zu library functions", p->n_funcs);
	*ret = TAKE_PTR(p);
	return 0;
}

const char *probe_uprobe_detail(const struct probe_uprobe *p)
{
	return p->detail;
}

const struct dc_up_func *probe_uprobe_func(const struct probe_uprobe *p, uint32_t i)
{
	return i < p->n_funcs ? &p->funcs[i] : NULL;
}

static int collect(const void *key, const void *values, int ncpus, void *ctx)
{
	struct probe_uprobe *p = ctx;
	const struct dc_up_key *k = key;
	struct dc_up_entry *e;

	if (p->n == p->cap) {
		size_t cap = p->cap ? p->cap * 2 : 64;
		void *n = realloc(p->entries, cap * sizeof(*p->entries));

		if (!n)
			return -ENOMEM;
		p->entries = n;
		p->cap = cap;
	}
	e = &p->entries[p->n++];
	memset(e, 0, sizeof(*e));
	e->cgroup_id = k->cgroup_id;
	e->tgid = k->tgid;
	e->func = k->func;
	for (int c = 0; c < ncpus; c++) {
		const struct dc_up_val *v = (const struct dc_up_val *)values + c;

		e->time_ns += v->time_ns;
		e->bytes += v->bytes;
		e->errors += v->errors;
		for (unsigned i = 0; i < DC_LAT_SLOTS; i++) {
			e->count += v->lat_hist[i];
			e->lat[i] += v->lat_hist[i];
		}
	}
	return 0;
}

int probe_uprobe_flip_and_drain(struct probe_uprobe *p, struct dc_up_drain *res)
{
	_cleanup_free_ __u64 *cnt = calloc((size_t)p->ncpus, sizeof(__u64));
	unsigned long long flip_us;
	bool batch;
	int r;

	if (!cnt)
		return -ENOMEM;
	p->n = 0;
	r = winmap_flip_and_drain(&p->agg, collect, p, &batch, &flip_us);
	if (r < 0)
		return r;
	res->entries = p->entries;
	res->n = p->n;
	for (__u32 i = 0; i < DC_UP_CNT_MAX; i++) {
		uint64_t sum = 0;

		if (!bpf_map_lookup_elem(bpf_map__fd(p->skel->maps.up_counters), &i, cnt))
			for (int c = 0; c < p->ncpus; c++)
				sum += cnt[c];
		res->counters[i] = sum - p->counters_prev[i];
		p->counters_prev[i] = sum;
	}
	return 0;
}

// SPDX-License-Identifier: Apache-2.0
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "elfsyms.h"
#include "filter.h"
#include "log.h"
#include "macro.h"
#include "probe-uprobe.h"
#include "uprobe.skel.h"
#include "fnagg.h"
#include "traces.h"

struct probe_uprobe {
	struct uprobe_bpf *skel;
	struct bpf_link **links;
	size_t n_links;
	struct dc_up_func *funcs;
	size_t n_funcs;
	struct fn_agg agg;
	char detail[256];
};

struct probe_uprobe *probe_uprobe_free(struct probe_uprobe *p)
{
	if (!p)
		return NULL;
	for (size_t i = 0; i < p->n_links; i++)
		bpf_link__destroy(p->links[i]);
	free(p->links);
	uprobe_bpf__destroy(p->skel);
	fn_agg_close(&p->agg);
	free(p->funcs);
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

	/* return probe first: an entry without its return probe in place
	 * would be an orphan on the thread's stack */
	o.retprobe = true;
	l[1] = bpf_program__attach_uprobe_opts(p->skel->progs.dc_up_return, -1, path, offset, &o);
	if (!l[1])
		return -errno;
	o.retprobe = false;
	l[0] = bpf_program__attach_uprobe_opts(p->skel->progs.dc_up_entry, -1, path, offset, &o);
	if (!l[0]) {
		int r = -errno;

		bpf_link__destroy(l[1]);
		return r;
	}
	p->links[p->n_links++] = l[0];
	p->links[p->n_links++] = l[1];
	return 0;
}

int probe_uprobe_new(const struct dc_config *cfg, struct traces *traces, struct probe_uprobe **ret,
		     char *err, size_t errlen)
{
	_cleanup_(probe_uprobe_freep) struct probe_uprobe *p = calloc(1, sizeof(*p));
	_cleanup_free_ struct dc_filter *filter = NULL;
	size_t max = (size_t)cfg->library_max_functions;
	int r;

	if (!p)
		return -ENOMEM;
	p->agg.win.inner_fd[0] = p->agg.win.inner_fd[1] = -1;
	p->funcs = calloc(max, sizeof(*p->funcs));
	p->links = calloc(2 * max, sizeof(*p->links));
	if (!p->funcs || !p->links)
		return -ENOMEM;
	p->skel = uprobe_bpf__open();
	if (!p->skel)
		return -errno;
	/* atomic adds: threads of a process share keys and uprobes can nest */
	p->skel->rodata->plain_updates = false;
	p->skel->rodata->agent_tgid = cfg->exclude_self ? (__u32)getpid() : 0;
	p->skel->rodata->traces_on = traces != NULL;
	r = traces_share(traces, p->skel->obj);
	if (r < 0) {
		snprintf(err, errlen, "cannot share the trace ring: %s", strerror(-r));
		return r;
	}
	r = filter_new(cfg, NULL, &filter, err, errlen);
	if (r < 0)
		return r;
	r = fn_agg_prepare(&p->agg, p->skel->maps.agg_gen, p->skel->maps.fn_counters, "dc_up",
			   (unsigned)cfg->library_max_keys, strcmp(cfg->map_layout, "shared") != 0);
	if (!r)
		r = filter_prepare(filter, p->skel->obj);
	if (!r)
		r = uprobe_bpf__load(p->skel);
	if (!r)
		r = fn_agg_install(&p->agg);
	if (!r)
		r = filter_install(filter, p->skel->obj);
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
				cookie |= DC_FN_COOKIE_BYTES;
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

int probe_uprobe_flip_and_drain(struct probe_uprobe *p, struct dc_fn_drain *res)
{
	return fn_agg_drain(&p->agg, res);
}

struct bpf_object *probe_uprobe_object(const struct probe_uprobe *p)
{
	return p->skel->obj;
}

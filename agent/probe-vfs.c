// SPDX-License-Identifier: Apache-2.0
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "datacrumbs/vfs.h"
#include "macro.h"
#include "probe-vfs.h"
#include "vfs.skel.h"

enum mech { MECH_FENTRY, MECH_KPROBE, MECH_MAX };
static const char *const mech_names[MECH_MAX] = {"fentry", "kprobe"};

static const struct {
	const char *name, *feature;
	bool bytes;
} funcs[DC_VFS_MAX] = {
#define DC_VFS_ROW(n, b) [DC_VFS_##n] = {#n, #n "-vfs", b},
    DC_VFS_FUNCS(DC_VFS_ROW)
#undef DC_VFS_ROW
};

struct probe_vfs {
	struct vfs_bpf *skel;
	enum mech mech;
	struct fn_agg agg;
	struct bpf_link *links[2 * DC_VFS_MAX];
	size_t n_links;
	char detail[512];
};

const char *probe_vfs_func_name(uint32_t func)
{
	return func < DC_VFS_MAX ? funcs[func].name : NULL;
}

const char *probe_vfs_feature(uint32_t func)
{
	return func < DC_VFS_MAX ? funcs[func].feature : NULL;
}

struct probe_vfs *probe_vfs_free(struct probe_vfs *p)
{
	if (!p)
		return NULL;
	for (size_t i = 0; i < p->n_links; i++)
		bpf_link__destroy(p->links[i]);
	vfs_bpf__destroy(p->skel);
	fn_agg_close(&p->agg);
	free(p);
	return NULL;
}

DEFINE_TRIVIAL_CLEANUP_FUNC(struct probe_vfs *, probe_vfs_free);

/* The fentry/fexit programs of function i, by name in the skeleton. */
static struct bpf_program *prog_of(struct vfs_bpf *skel, const char *prefix, unsigned i)
{
	char name[96];

	snprintf(name, sizeof(name), "%s%s", prefix, funcs[i].name);
	return bpf_object__find_program_by_name(skel->obj, name);
}

static int try_mechanism(struct probe_vfs *p, const struct probe_vfs_opts *o, enum mech m,
			 const struct btf *vmlinux, unsigned *attached, char *skipped, size_t sklen)
{
	struct vfs_bpf *skel = vfs_bpf__open();
	size_t off = 0;
	int r;

	if (!skel)
		return -errno;
	p->skel = skel;
	skel->rodata->plain_updates = false; /* VFS calls nest and run in any context */
	skel->rodata->agent_tgid = o->exclude_tgid;
	*attached = 0;
	skipped[0] = 0;
	for (unsigned i = 0; i < DC_VFS_MAX; i++) {
		/* a function this kernel lacks (or inlined away) is skipped, not fatal */
		bool have =
		    vmlinux && btf__find_by_name_kind(vmlinux, funcs[i].name, BTF_KIND_FUNC) > 0;

		bpf_program__set_autoload(prog_of(skel, "dc_fentry_", i), m == MECH_FENTRY && have);
		bpf_program__set_autoload(prog_of(skel, "dc_fexit_", i), m == MECH_FENTRY && have);
		if (!have)
			off += (size_t)snprintf(skipped + off, off < sklen ? sklen - off : 0,
						"%s%s", off ? "," : "", funcs[i].name);
	}
	bpf_program__set_autoload(skel->progs.dc_vfs_kprobe, m == MECH_KPROBE);
	bpf_program__set_autoload(skel->progs.dc_vfs_kretprobe, m == MECH_KPROBE);
	r = fn_agg_prepare(&p->agg, skel->maps.agg_gen, skel->maps.fn_counters, "dc_vfs",
			   o->max_keys, o->percpu);
	if (!r)
		r = vfs_bpf__load(skel);
	if (!r)
		r = fn_agg_install(&p->agg);
	if (r)
		return r;
	for (unsigned i = 0; i < DC_VFS_MAX; i++) {
		struct bpf_link *l[2] = {};

		if (m == MECH_FENTRY) {
			struct bpf_program *e = prog_of(skel, "dc_fentry_", i),
					   *x = prog_of(skel, "dc_fexit_", i);

			if (!bpf_program__autoload(e))
				continue;
			/* exit first, for the same reason as the kprobes below */
			l[1] = bpf_program__attach(x);
			l[0] = l[1] ? bpf_program__attach(e) : NULL;
			if (!l[0]) {
				bpf_link__destroy(l[1]);
				l[1] = NULL;
			}
		} else {
			LIBBPF_OPTS(bpf_kprobe_opts, ko,
				    .bpf_cookie = i | (funcs[i].bytes ? DC_FN_COOKIE_BYTES : 0));

			if (vmlinux &&
			    btf__find_by_name_kind(vmlinux, funcs[i].name, BTF_KIND_FUNC) <= 0)
				continue;
			/* return probe first: an entry seen without its return probe
			 * in place would be an orphan on the thread's stack */
			ko.retprobe = true;
			l[1] = bpf_program__attach_kprobe_opts(skel->progs.dc_vfs_kretprobe,
							       funcs[i].name, &ko);
			ko.retprobe = false;
			l[0] = l[1] ? bpf_program__attach_kprobe_opts(skel->progs.dc_vfs_kprobe,
								      funcs[i].name, &ko)
				    : NULL;
			if (!l[0]) {
				bpf_link__destroy(l[1]);
				l[1] = NULL;
			}
		}
		if (!l[0] || !l[1]) {
			r = -errno;
			/* the first function tells whether the mechanism works at all */
			if (!*attached)
				return r ? r : -EINVAL;
			off += (size_t)snprintf(skipped + off, off < sklen ? sklen - off : 0,
						"%s%s", off ? "," : "", funcs[i].name);
			continue;
		}
		p->links[p->n_links++] = l[0];
		p->links[p->n_links++] = l[1];
		(*attached)++;
	}
	return *attached ? 0 : -ENOENT;
}

int probe_vfs_new(const struct probe_vfs_opts *o, struct probe_vfs **ret, char *detail,
		  size_t detail_len)
{
	_cleanup_(probe_vfs_freep) struct probe_vfs *p = calloc(1, sizeof(*p));
	enum mech first = MECH_FENTRY, last = MECH_KPROBE;
	struct btf *vmlinux = btf__load_vmlinux_btf();
	char skipped[256];
	size_t off = 0;
	unsigned n = 0;
	int r = -ENOENT;

	if (!p) {
		btf__free(vmlinux);
		return -ENOMEM;
	}
	if (!strcmp(o->mechanism, "fentry"))
		last = MECH_FENTRY;
	else if (!strcmp(o->mechanism, "kprobe"))
		first = MECH_KPROBE;
	for (enum mech m = first; m <= last; m++) {
		p->agg.win.inner_fd[0] = p->agg.win.inner_fd[1] = -1;
		r = try_mechanism(p, o, m, vmlinux, &n, skipped, sizeof(skipped));
		if (!r) {
			p->mech = m;
			off += (size_t)snprintf(
			    p->detail + off, sizeof(p->detail) - off,
			    "%s%u functions%s%s; atomic updates", off ? "; " : "", n,
			    skipped[0] ? ", not in this kernel: " : "", skipped);
			snprintf(detail, detail_len, "%s", p->detail);
			btf__free(vmlinux);
			*ret = TAKE_PTR(p);
			return 0;
		}
		off +=
		    (size_t)snprintf(p->detail + off, sizeof(p->detail) - off, "%s%s refused: %s",
				     off ? "; " : "", mech_names[m], strerror(-r));
		if (off >= sizeof(p->detail))
			off = sizeof(p->detail) - 1;
		for (size_t i = 0; i < p->n_links; i++)
			bpf_link__destroy(p->links[i]);
		p->n_links = 0;
		vfs_bpf__destroy(p->skel);
		p->skel = NULL;
		fn_agg_close(&p->agg);
	}
	snprintf(detail, detail_len, "%s", p->detail);
	btf__free(vmlinux);
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

int probe_vfs_flip_and_drain(struct probe_vfs *p, struct dc_fn_drain *res)
{
	return fn_agg_drain(&p->agg, res);
}

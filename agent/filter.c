// SPDX-License-Identifier: Apache-2.0
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cgroup.h"
#include "filter.h"
#include "macro.h"

static int fail(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

int filter_cgroup_level(const char *path)
{
	int level = 0;

	if (path[0] != '/')
		return -EINVAL;
	for (const char *p = path; *p;) {
		size_t n;

		p += strspn(p, "/");
		n = strcspn(p, "/");
		if (!n)
			break;
		/* the level is counted from the text: "." and ".." would lie */
		if ((n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.'))
			return -EINVAL;
		level++;
		p += n;
	}
	return level < DC_FILTER_LEVELS ? level : -EINVAL;
}

static struct dc_filter_cgroup_entry *cgroup_slot(struct dc_filter *f, uint64_t id)
{
	for (size_t i = 0; i < f->n_cgroups; i++)
		if (f->cgroups[i].id == id)
			return &f->cgroups[i];
	f->cgroups[f->n_cgroups] = (struct dc_filter_cgroup_entry){.id = id};
	return &f->cgroups[f->n_cgroups++];
}

static struct dc_filter_uid_entry *uid_slot(struct dc_filter *f, uint32_t uid)
{
	for (size_t i = 0; i < f->n_uids; i++)
		if (f->uids[i].uid == uid)
			return &f->uids[i];
	f->uids[f->n_uids] = (struct dc_filter_uid_entry){.uid = uid};
	return &f->uids[f->n_uids++];
}

static struct dc_filter_comm_entry *comm_slot(struct dc_filter *f, const struct dc_filter_comm *c)
{
	for (size_t i = 0; i < f->n_comms; i++)
		if (!memcmp(&f->comms[i].comm, c, sizeof(*c)))
			return &f->comms[i];
	f->comms[f->n_comms] = (struct dc_filter_comm_entry){.comm = *c};
	return &f->comms[f->n_comms++];
}

typedef int (*add_fn)(struct dc_filter *f, const char *key, const char *v, uint8_t flag,
		      const char *root, char *err, size_t errlen);

/* Each line of a CFG_STRLIST value, passed to add(). */
static int each_line(const char *lines, const char *key, add_fn add, struct dc_filter *f,
		     uint8_t flag, const char *root, bool *missing, char *err, size_t errlen)
{
	size_t n = 0;

	for (const char *p = lines; *p;) {
		size_t l = strcspn(p, "\n");
		char v[PATH_MAX];
		int r;

		if (++n > DC_FILTER_MAX)
			return fail(err, errlen, "%s: more than %d elements", key, DC_FILTER_MAX);
		snprintf(v, sizeof(v), "%.*s", (int)l, p);
		r = add(f, key, v, flag, root, err, errlen);
		/* a cgroup not made yet: the rest still checked, so that a bad
		 * line after it is the file's fault (exit 2), not hidden behind
		 * the host's (exit 1, started again for ever) */
		if (r == -ENOENT)
			*missing = true;
		else if (r < 0)
			return r;
		p += l + (p[l] == '\n');
	}
	return 0;
}

static int add_cgroup(struct dc_filter *f, const char *key, const char *path, uint8_t flag,
		      const char *root, char *err, size_t errlen)
{
	char full[PATH_MAX];
	struct stat st;
	int level = filter_cgroup_level(path);

	if (level < 0)
		return fail(err, errlen,
			    "%s: \"%s\" is not an absolute cgroup path without \".\" and \"..\", "
			    "at most %d levels deep",
			    key, path, DC_FILTER_LEVELS - 1);
	if (!root)
		return fail(err, errlen, "%s: \"%s\": no cgroup2 hierarchy is mounted", key, path);
	if ((size_t)snprintf(full, sizeof(full), "%s%s", root, path) >= sizeof(full))
		return fail(err, errlen, "%s: \"%s\": path too long", key, path);
	if (stat(full, &st) < 0) {
		int e = errno;

		fail(err, errlen, "%s: \"%s\": %s (looked for %s)", key, path, strerror(e), full);
		/* not made yet (slurmd's scope, a unit started after this one):
		 * the host's state, which a later start may find changed */
		return e == ENOENT ? -ENOENT : -EINVAL;
	}
	if (!S_ISDIR(st.st_mode))
		return fail(err, errlen, "%s: \"%s\" is not a cgroup directory (%s)", key, path,
			    full);
	{
		struct dc_filter_cgroup_entry *e = cgroup_slot(f, (uint64_t)st.st_ino);

		e->level = (uint8_t)level;
		e->flags |= flag;
	}
	f->lists.cgroups |= flag;
	f->lists.cgroup_levels |= 1u << level;
	return 0;
}

static int add_comm(struct dc_filter *f, const char *key, const char *comm, uint8_t flag,
		    const char *root, char *err, size_t errlen)
{
	struct dc_filter_comm c = {};

	if (strlen(comm) >= sizeof(c.comm))
		return fail(err, errlen, "%s: \"%s\" is longer than %zu bytes", key, comm,
			    sizeof(c.comm) - 1);
	memcpy(c.comm, comm, strlen(comm));
	comm_slot(f, &c)->flags |= flag;
	f->lists.comms |= flag;
	return 0;
}

static void add_uids(struct dc_filter *f, const struct dc_intlist *l, uint8_t flag)
{
	for (uint32_t i = 0; i < l->n; i++)
		uid_slot(f, (uint32_t)l->v[i])->flags |= flag;
	if (l->n)
		f->lists.uids |= flag;
}

int filter_new(const struct dc_config *cfg, const char *root, struct dc_filter **ret, char *err,
	       size_t errlen)
{
	_cleanup_free_ struct dc_filter *f = calloc(1, sizeof(*f));
	char found[PATH_MAX];
	bool missing = false;
	int r;

	if (!f) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	if (!root && (cfg->filter_include_cgroups[0] || cfg->filter_exclude_cgroups[0]) &&
	    cgroup2_mount(found, sizeof(found)) == 0)
		root = found;
	if ((r = each_line(cfg->filter_include_cgroups, "filter.include_cgroups", add_cgroup, f,
			   DC_FILTER_INCLUDE, root, &missing, err, errlen)) < 0 ||
	    (r = each_line(cfg->filter_exclude_cgroups, "filter.exclude_cgroups", add_cgroup, f,
			   DC_FILTER_EXCLUDE, root, &missing, err, errlen)) < 0 ||
	    (r = each_line(cfg->filter_include_comms, "filter.include_comms", add_comm, f,
			   DC_FILTER_INCLUDE, root, &missing, err, errlen)) < 0 ||
	    (r = each_line(cfg->filter_exclude_comms, "filter.exclude_comms", add_comm, f,
			   DC_FILTER_EXCLUDE, root, &missing, err, errlen)) < 0)
		return r;
	if (missing)
		return -ENOENT; /* err names the last one missing */
	add_uids(f, &cfg->filter_include_uids, DC_FILTER_INCLUDE);
	add_uids(f, &cfg->filter_exclude_uids, DC_FILTER_EXCLUDE);
	*ret = TAKE_PTR(f);
	return 0;
}

struct dc_filter *filter_free(struct dc_filter *f)
{
	free(f);
	return NULL;
}

bool filter_active(const struct dc_filter *f)
{
	return f && (f->lists.cgroups || f->lists.uids || f->lists.comms);
}

void filter_describe(const struct dc_filter *f, char *out, size_t len)
{
	static const char *const dims[] = {"cgroups", "uids", "comms"};
	size_t off = 0;

	out[0] = 0;
	for (int d = 0; f && d < 3; d++)
		for (uint8_t flag = DC_FILTER_INCLUDE; flag <= DC_FILTER_EXCLUDE; flag <<= 1) {
			size_t n = 0;

			if (d == 0)
				for (size_t i = 0; i < f->n_cgroups; i++)
					n += !!(f->cgroups[i].flags & flag);
			else if (d == 1)
				for (size_t i = 0; i < f->n_uids; i++)
					n += !!(f->uids[i].flags & flag);
			else
				for (size_t i = 0; i < f->n_comms; i++)
					n += !!(f->comms[i].flags & flag);
			if (n && off < len)
				off += (size_t)snprintf(
				    out + off, len - off, "%s%s_%s %zu", off ? ", " : "",
				    flag == DC_FILTER_INCLUDE ? "include" : "exclude", dims[d], n);
		}
	if (!out[0])
		snprintf(out, len, "none");
}

static const char *const map_names[] = {"filter_cgroups", "filter_uids", "filter_comms"};

/* Write a .rodata variable into data (a copy of obj's .rodata) by name,
 * found through the object's BTF: one writer for every family's object,
 * whatever its skeleton looks like. */
static int rodata_set(struct bpf_object *obj, char *data, size_t data_size, const char *name,
		      const void *v, size_t size)
{
	struct btf *btf = bpf_object__btf(obj);
	int id = btf ? btf__find_by_name_kind(btf, ".rodata", BTF_KIND_DATASEC) : -ENOENT;
	const struct btf_var_secinfo *vs;
	const struct btf_type *sec;

	if (id < 0)
		return -ENOENT;
	sec = btf__type_by_id(btf, (__u32)id);
	vs = btf_var_secinfos(sec);
	for (unsigned i = 0; i < btf_vlen(sec); i++, vs++) {
		const struct btf_type *var = btf__type_by_id(btf, vs->type);

		if (strcmp(btf__name_by_offset(btf, var->name_off), name))
			continue;
		if (vs->size != size || vs->offset + size > data_size)
			return -EINVAL;
		memcpy(data + vs->offset, v, size);
		return 0;
	}
	return -ENOENT;
}

static int rodata_write(const struct dc_filter_lists *l, struct bpf_object *obj)
{
	struct bpf_map *m = bpf_object__find_map_by_name(obj, ".rodata");
	uint32_t word = (uint32_t)l->cgroups << DC_FILTER_CGROUPS_SHIFT |
			(uint32_t)l->uids << DC_FILTER_UIDS_SHIFT |
			(uint32_t)l->comms << DC_FILTER_COMMS_SHIFT;
	_cleanup_free_ char *data = NULL;
	const void *cur;
	size_t size;
	int r;

	cur = m ? bpf_map__initial_value(m, &size) : NULL;
	if (!cur)
		return -ENOENT;
	/* a copy: what the skeleton set already is kept */
	data = malloc(size);
	if (!data)
		return -ENOMEM;
	memcpy(data, cur, size);
	if ((r = rodata_set(obj, data, size, "filter_lists", &word, sizeof(word))) < 0 ||
	    (r = rodata_set(obj, data, size, "filter_cg_levels", &l->cgroup_levels,
			    sizeof(l->cgroup_levels))) < 0)
		return r;
	return bpf_map__set_initial_value(m, data, size);
}

int filter_prepare(const struct dc_filter *f, struct bpf_object *obj)
{
	static const struct dc_filter_lists none;
	const struct dc_filter_lists *l = f ? &f->lists : &none;
	size_t n[3] = {f ? f->n_cgroups : 0, f ? f->n_uids : 0, f ? f->n_comms : 0};
	int r;

	r = rodata_write(l, obj);
	if (r < 0)
		return r;
	for (size_t i = 0; i < ELEMENTSOF(map_names); i++) {
		struct bpf_map *m = bpf_object__find_map_by_name(obj, map_names[i]);

		if (!m)
			return -ENOENT;
		/* a hash map cannot be empty: 1 for an unused list */
		r = bpf_map__set_max_entries(m, n[i] ? (__u32)n[i] : 1);
		if (r < 0)
			return r;
	}
	return 0;
}

static int put(struct bpf_object *obj, const char *name, const void *key, uint8_t flags)
{
	struct bpf_map *m = bpf_object__find_map_by_name(obj, name);

	if (!m)
		return -ENOENT;
	return bpf_map_update_elem(bpf_map__fd(m), key, &flags, BPF_ANY) ? -errno : 0;
}

int filter_install(const struct dc_filter *f, struct bpf_object *obj)
{
	int r = 0;

	if (!f)
		return 0;
	for (size_t i = 0; !r && i < f->n_cgroups; i++)
		r = put(obj, map_names[0], &f->cgroups[i].id, f->cgroups[i].flags);
	for (size_t i = 0; !r && i < f->n_uids; i++)
		r = put(obj, map_names[1], &f->uids[i].uid, f->uids[i].flags);
	for (size_t i = 0; !r && i < f->n_comms; i++)
		r = put(obj, map_names[2], &f->comms[i].comm, f->comms[i].flags);
	return r;
}

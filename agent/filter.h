/* SPDX-License-Identifier: Apache-2.0 */
#ifndef DC_FILTER_H
#define DC_FILTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "datacrumbs/filter.h"

/*
 * The process filters of the configuration (filter.include_* and
 * filter.exclude_*), resolved once: cgroup paths to ids and levels, lists
 * merged into one entry per key with its flags. Every probe family's BPF
 * object carries its own copy of the filter maps (bpf/filter.bpf.h): a
 * probe calls filter_prepare() before load (the .rodata flags, the map
 * sizes) and filter_install() after it (the map contents).
 */

/* entries per list; more is a configuration error */
#define DC_FILTER_MAX DC_INTLIST_MAX

struct dc_filter_cgroup_entry {
	uint64_t id; /* the cgroup2 id: the inode number of its directory */
	uint8_t level;
	uint8_t flags; /* DC_FILTER_INCLUDE | DC_FILTER_EXCLUDE */
};

struct dc_filter_uid_entry {
	uint32_t uid;
	uint8_t flags;
};

struct dc_filter_comm_entry {
	struct dc_filter_comm comm;
	uint8_t flags;
};

/* What the programs' .rodata gets: which lists are non-empty (all zero: no
 * filter, and the verifier drops the filter code). */
struct dc_filter_lists {
	uint32_t cgroup_levels; /* bit l: a listed cgroup sits at level l */
	uint8_t cgroups;	/* DC_FILTER_INCLUDE: an include list is non-empty; EXCLUDE */
	uint8_t uids;
	uint8_t comms;
};

struct dc_filter {
	struct dc_filter_lists lists;
	struct dc_filter_cgroup_entry cgroups[2 * DC_FILTER_MAX];
	size_t n_cgroups;
	struct dc_filter_uid_entry uids[2 * DC_FILTER_MAX];
	size_t n_uids;
	struct dc_filter_comm_entry comms[2 * DC_FILTER_MAX];
	size_t n_comms;
};

/*
 * Resolve cfg's lists. root: the cgroup2 mount the cgroup paths are below
 * (NULL: find it, as agent/cgroup.c does). -EINVAL with the key and the
 * offending value in err (a path that does not exist, a list too long) for
 * the caller to report as a configuration error; -ENOMEM.
 */
int filter_new(const struct dc_config *cfg, const char *root, struct dc_filter **ret, char *err,
	       size_t errlen);
struct dc_filter *filter_free(struct dc_filter *f);

/* Level of a cgroup path below the mount ("/" is 0, "/a/b" is 2), or -EINVAL
 * for a relative path, "." or ".." components, or one deeper than the
 * programs look (DC_FILTER_LEVELS). */
int filter_cgroup_level(const char *path);

/* Whether any list is non-empty (f may be NULL: no filter). */
bool filter_active(const struct dc_filter *f);

/* "include_cgroups 1, exclude_comms 2", or "none": for the start-up log. */
void filter_describe(const struct dc_filter *f, char *out, size_t len);

struct bpf_object;

/* Before load: the object's .rodata filter flags (bpf/filter.bpf.h) and
 * its filter maps' sizes. f NULL: no filter. -ENOENT if obj has no filter. */
int filter_prepare(const struct dc_filter *f, struct bpf_object *obj);
/* After load: the filter maps' contents. */
int filter_install(const struct dc_filter *f, struct bpf_object *obj);

#endif

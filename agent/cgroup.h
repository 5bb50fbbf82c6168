/* SPDX-License-Identifier: Apache-2.0 */
#ifndef DC_CGROUP_H
#define DC_CGROUP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct dc_jobid;

/*
 * cgroup id -> path below the cgroup2 root ("/system.slice/x.service").
 * A cgroup2 id is the kernfs inode of its directory; the kernel opens it by
 * file handle (open_by_handle_at, needs CAP_DAC_READ_SEARCH), so a miss
 * costs one open and one readlink, not a tree walk. Bounded cache; ids that
 * no longer resolve (cgroup removed) give "".
 */
struct cgroup_cache;

/* Where the cgroup2 hierarchy is mounted (hybrid hosts too); -ENOENT. */
int cgroup2_mount(char *out, size_t len);

/* Where the io controller's cgroups live (/proc/cgroups): 1 the cgroup2
 * hierarchy, 2 a v1 one (a hybrid host: a bio's blkcg then means nothing
 * to the cgroup2 ids of the other layers), 0 not known. */
int cgroup_io_where(void);

/*
 * What the calling process may still charge to its memory cgroups before a
 * limit refuses it: the least, over its cgroup2 cgroup and each ancestor
 * with a memory.max, of that limit less its memory.current. A large kernel
 * object (the trace ring) charged up to such a limit before failing makes
 * the kernel's other allocations in the cgroup meanwhile reclaim and then
 * OOM-kill; checked first, it is refused instead. Page cache counts as
 * room (memory.stat's file, v1's total_cache): it is reclaimed first.
 * *room = UINT64_MAX where
 * nothing limits it; *which gets the tightest cgroup's path. -errno when
 * it cannot be told (no cgroup2, a v1 memory hierarchy): no limit then.
 */
int cgroup_memory_room(uint64_t *room, char *which, size_t len);
/* The same below root, for the cgroup path (testable); v1: the memory
 * controller's v1 files (memory.limit_in_bytes, memory.usage_in_bytes). */
int cgroup_memory_room_at(const char *root, const char *path, bool v1, uint64_t *room, char *which,
			  size_t len);

/* root NULL: wherever cgroup2 is mounted */
int cgroup_cache_new(const char *root, struct cgroup_cache **ret);
struct cgroup_cache *cgroup_cache_free(struct cgroup_cache *c);
const char *cgroup_cache_path(struct cgroup_cache *c, uint64_t id);
/* The job identity in that path (jobid.h), parsed once per cached cgroup;
 * NULL when the path is unresolved or names nothing known. */
const struct dc_jobid *cgroup_cache_job(struct cgroup_cache *c, uint64_t id);

#endif

// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cgroup.h"
#include "jobid.h"
#include "macro.h"

#define CACHE_SLOTS   4096 /* power of two; a miss evicts whatever holds the slot */
#define FILEID_KERNFS 0xfe

struct cg_slot {
	uint64_t id;
	char *path;
	struct dc_jobid *job; /* parsed once with the path; NULL when nothing found */
};

struct cgroup_cache {
	int root_fd;
	size_t root_len;
	char root[PATH_MAX];
	struct cg_slot slots[CACHE_SLOTS];
};

int cgroup_io_where(void)
{
	FILE *f = fopen("/proc/cgroups", "re");
	char line[256], name[64];
	int hier, n, on, where = 0;

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "%63s %d %d %d", name, &hier, &n, &on) == 4 &&
		    (!strcmp(name, "blkio") || !strcmp(name, "io"))) {
			where = on ? (hier ? 2 : 1) : 0;
			break;
		}
	if (f)
		fclose(f);
	return where;
}

/* bpf_get_current_cgroup_id() names a cgroup of the v2 hierarchy, which is
 * at /sys/fs/cgroup on unified systems and elsewhere (often .../unified) on
 * hybrid ones: find where it is mounted. */
int cgroup2_mount(char *out, size_t len)
{
	char line[4096], dev[256], mnt[PATH_MAX], type[64];
	FILE *f = fopen("/proc/self/mounts", "re");
	int r = -ENOENT;

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%255s %4095s %63s", dev, mnt, type) == 3 &&
		    !strcmp(type, "cgroup2")) {
			snprintf(out, len, "%s", mnt);
			r = 0;
			break;
		}
	fclose(f);
	return r;
}

int cgroup_cache_new(const char *root, struct cgroup_cache **ret)
{
	struct cgroup_cache *c = calloc(1, sizeof(*c));
	char found[PATH_MAX];

	if (!c)
		return -ENOMEM;
	if (!root) {
		int r = cgroup2_mount(found, sizeof(found));

		if (r < 0) {
			free(c);
			return r;
		}
		root = found;
	}
	c->root_fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (c->root_fd < 0) {
		int r = -errno;

		free(c);
		return r;
	}
	snprintf(c->root, sizeof(c->root), "%s", root);
	c->root_len = strlen(c->root);
	*ret = c;
	return 0;
}

struct cgroup_cache *cgroup_cache_free(struct cgroup_cache *c)
{
	if (!c)
		return NULL;
	for (size_t i = 0; i < CACHE_SLOTS; i++) {
		free(c->slots[i].path);
		free(c->slots[i].job);
	}
	close(c->root_fd);
	free(c);
	return NULL;
}

static char *resolve(struct cgroup_cache *c, uint64_t id)
{
	struct {
		struct file_handle fh;
		uint64_t id;
	} h = {.fh = {.handle_bytes = sizeof(uint64_t), .handle_type = FILEID_KERNFS}, .id = id};
	char link[64], path[PATH_MAX];
	_cleanup_close_ int fd = -1;
	ssize_t n;

	fd = open_by_handle_at(c->root_fd, &h.fh, O_RDONLY | O_CLOEXEC | O_PATH);
	if (fd < 0)
		return NULL;
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, path, sizeof(path) - 1);
	if (n < 0)
		return NULL;
	path[n] = 0;
	if (strncmp(path, c->root, c->root_len))
		return NULL;
	/* the root cgroup itself is "/" */
	return strdup(path[c->root_len] ? path + c->root_len : "/");
}

/* An unresolved id is retried at each lookup (it may not be visible yet),
 * so a NULL path does not mark the slot as filled. */
static struct cg_slot *lookup(struct cgroup_cache *c, uint64_t id)
{
	struct cg_slot *s = &c->slots[(id * 0x9E3779B97F4A7C15ULL) >> 52 & (CACHE_SLOTS - 1)];
	struct dc_jobid job;

	if (s->path && s->id == id)
		return s;
	free(s->path);
	free(s->job);
	s->job = NULL;
	s->id = id;
	s->path = resolve(c, id);
	if (s->path) {
		jobid_parse(s->path, &job);
		/* most cgroups carry at least a unit; the rest need no memory */
		if (!jobid_empty(&job)) {
			s->job = malloc(sizeof(job));
			if (s->job)
				*s->job = job;
		}
	}
	return s;
}

const char *cgroup_cache_path(struct cgroup_cache *c, uint64_t id)
{
	struct cg_slot *s;

	if (!c)
		return "";
	s = lookup(c, id);
	return s->path ? s->path : "";
}

const struct dc_jobid *cgroup_cache_job(struct cgroup_cache *c, uint64_t id)
{
	return c ? lookup(c, id)->job : NULL;
}

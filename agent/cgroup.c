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

/* Whether a comma-separated list (mount options, /proc/self/cgroup's
 * controllers) names the controller. */
static bool controller_listed(const char *list, const char *name)
{
	size_t n = strlen(name);

	for (const char *p = list; p && *p; p = strchr(p, ','), p = p ? p + 1 : NULL)
		if (!strncmp(p, name, n) && (p[n] == ',' || p[n] == 0))
			return true;
	return false;
}

/* Where a hierarchy of type ("cgroup2", or "cgroup" with the controller
 * among its options) is mounted; -ENOENT. */
static int mount_of(const char *type, const char *controller, char *out, size_t len)
{
	char line[4096], dev[256], mnt[PATH_MAX], t[64], opts[1024];
	FILE *f = fopen("/proc/self/mounts", "re");
	int r = -ENOENT;

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%255s %4095s %63s %1023s", dev, mnt, t, opts) == 4 &&
		    !strcmp(t, type) && (!controller || controller_listed(opts, controller))) {
			snprintf(out, len, "%s", mnt);
			r = 0;
			break;
		}
	fclose(f);
	return r;
}

/* bpf_get_current_cgroup_id() names a cgroup of the v2 hierarchy, which is
 * at /sys/fs/cgroup on unified systems and elsewhere (often .../unified) on
 * hybrid ones: find where it is mounted. */
int cgroup2_mount(char *out, size_t len)
{
	return mount_of("cgroup2", NULL, out, len);
}

/* A cgroup file's number; "max" as UINT64_MAX. */
static int read_limit(const char *root, const char *path, const char *file, uint64_t *v)
{
	char p[PATH_MAX * 2], buf[64];
	ssize_t n;
	int fd, r = 0;

	snprintf(p, sizeof(p), "%s%s/%s", root, path, file);
	fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	if (n < 0)
		r = -errno;
	close(fd);
	if (r < 0)
		return r;
	buf[n] = 0;
	if (!strncmp(buf, "max", 3)) {
		*v = UINT64_MAX;
		return 0;
	}
	{
		char *end;

		errno = 0;
		*v = strtoull(buf, &end, 10);
		if (errno || end == buf)
			return -EINVAL;
	}
	/* v1's "unlimited" is LONG_MAX rounded down to a page */
	if (*v >= 1ULL << 62)
		*v = UINT64_MAX;
	return 0;
}

/* A key's value in a cgroup's memory.stat; 0 when absent. */
static uint64_t read_stat(const char *root, const char *path, const char *key)
{
	char p[PATH_MAX * 2], line[256];
	size_t n = strlen(key);
	uint64_t v = 0;
	FILE *f;

	snprintf(p, sizeof(p), "%s%s/memory.stat", root, path);
	f = fopen(p, "re");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, n) && line[n] == ' ') {
			v = strtoull(line + n + 1, NULL, 10);
			break;
		}
	fclose(f);
	return v;
}

int cgroup_memory_room_at(const char *root, const char *path, bool v1, uint64_t *room, char *which,
			  size_t len)
{
	const char *max_file = v1 ? "memory.limit_in_bytes" : "memory.max";
	const char *used_file = v1 ? "memory.usage_in_bytes" : "memory.current";
	char cur[PATH_MAX];

	*room = UINT64_MAX;
	if (which && len)
		which[0] = 0;
	snprintf(cur, sizeof(cur), "%s", path);
	for (;;) {
		uint64_t max, used;
		char *slash;

		/* the root has no memory.max; a cgroup without the memory
		 * controller neither: its ancestors' limits still apply */
		if (read_limit(root, cur, max_file, &max) >= 0 && max != UINT64_MAX &&
		    read_limit(root, cur, used_file, &used) >= 0) {
			/* the page cache in it is reclaimed before a charge
			 * fails: a busy I/O node's cgroups sit near their
			 * limit with it, and have room all the same ... */
			uint64_t cache = read_stat(root, cur, v1 ? "total_cache" : "file");
			/* but not tmpfs and shared memory, which stay without
			 * swap (an MPI job's /dev/shm segments) */
			uint64_t shmem = read_stat(root, cur, v1 ? "total_shmem" : "shmem");
			uint64_t left;

			cache -= shmem < cache ? shmem : cache;

			used -= cache < used ? cache : used;
			left = max > used ? max - used : 0;

			if (left < *room) {
				*room = left;
				if (which)
					snprintf(which, len, "%s", cur[0] ? cur : "/");
			}
		}
		slash = strrchr(cur, '/');
		if (!slash || (slash == cur && !cur[1]))
			break;
		if (slash == cur)
			slash[1] = 0; /* "/a" -> "/" */
		else
			*slash = 0;
	}
	return 0;
}

int cgroup_memory_room(uint64_t *room, char *which, size_t len)
{
	char root[PATH_MAX], line[PATH_MAX + 64], v2[PATH_MAX] = "", v1[PATH_MAX] = "";
	bool have_v1 = false, have_v2 = false;
	FILE *f;

	*room = UINT64_MAX;
	f = fopen("/proc/self/cgroup", "re");
	if (!f)
		return -errno;
	/* "0::/path" for cgroup2; "N:memory,...:/path" where the memory
	 * controller is a v1 hierarchy's (a hybrid host), which then rules */
	while (fgets(line, sizeof(line), f)) {
		char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;

		if (!c2)
			continue;
		line[strcspn(line, "\n")] = 0;
		*c1 = 0;
		*c2 = 0;
		if (!strcmp(line, "0") && c1[1] == 0) {
			snprintf(v2, sizeof(v2), "%s", c2 + 1);
			have_v2 = true;
		} else if (controller_listed(c1 + 1, "memory")) {
			snprintf(v1, sizeof(v1), "%s", c2 + 1);
			have_v1 = true;
		}
	}
	fclose(f);
	if (have_v1 && mount_of("cgroup", "memory", root, sizeof(root)) >= 0)
		return cgroup_memory_room_at(root, v1, true, room, which, len);
	if (have_v2 && cgroup2_mount(root, sizeof(root)) >= 0)
		return cgroup_memory_room_at(root, v2, false, room, which, len);
	return -ENOENT;
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

// SPDX-License-Identifier: Apache-2.0
/* filter.*: the configuration's lists, and their resolution into the
 * entries and flags the BPF filter maps and .rodata get. The cgroup paths
 * resolve below a directory made here, standing in for the cgroup2 mount. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "filter.h"
#include "tap.h"

static struct dc_config c;
static char err[1024];

static int load(const char *text)
{
	err[0] = 0;
	return config_load_string(&c, text, err, sizeof(err));
}

static const struct dc_filter_cgroup_entry *cg_find(const struct dc_filter *f, uint64_t id)
{
	for (size_t i = 0; i < f->n_cgroups; i++)
		if (f->cgroups[i].id == id)
			return &f->cgroups[i];
	return NULL;
}

static uint64_t ino(const char *root, const char *rel)
{
	char p[4096];
	struct stat st;

	snprintf(p, sizeof(p), "%s%s", root, rel);
	return stat(p, &st) ? 0 : (uint64_t)st.st_ino;
}

int main(void)
{
	char root[] = "/tmp/dc-test-filter-XXXXXX", path[4096], desc[256];
	struct dc_filter *f = NULL;
	const struct dc_filter_cgroup_entry *e;
	int r;

	/* levels: counted from the text, so the text must not lie */
	CHECK(filter_cgroup_level("/") == 0, "the root is level 0");
	CHECK(filter_cgroup_level("/system.slice") == 1, "one component: level 1");
	CHECK(filter_cgroup_level("//a//b/") == 2, "repeated and trailing slashes ignored");
	CHECK(filter_cgroup_level("a/b") == -EINVAL, "a relative path is refused");
	CHECK(filter_cgroup_level("/a/../b") == -EINVAL, "\"..\" is refused");
	CHECK(filter_cgroup_level("/a/./b") == -EINVAL, "\".\" is refused");
	CHECK(filter_cgroup_level("/a/.hidden") == 2, "a name starting with a dot is a name");
	CHECK(filter_cgroup_level("/1/2/3/4/5/6/7/8/9/10/11/12/13/14/15") == 15,
	      "15 levels: the deepest the programs look at");
	CHECK(filter_cgroup_level("/1/2/3/4/5/6/7/8/9/10/11/12/13/14/15/16") == -EINVAL,
	      "16 levels: refused");

	/* the configuration's side: types and bounds, from the table */
	config_defaults(&c);
	CHECK(c.filter_include_uids.n == 0 && !c.filter_include_comms[0] &&
		  !c.filter_exclude_cgroups[0],
	      "every list is empty by default");
	r = filter_new(&c, "/nonexistent", &f, err, sizeof(err));
	CHECK(r == 0 && !filter_active(f), "no list: no filter, and no cgroup mount needed");
	filter_describe(f, desc, sizeof(desc));
	CHECK_STR(desc, "none", "described as none");
	f = filter_free(f);
	CHECK(!filter_active(NULL), "a NULL filter is no filter");

	r = load("filter = { include_uids = [1000, 0]; exclude_uids = [4294967294L]; };\n");
	CHECK(r == 0 && c.filter_include_uids.n == 2 && c.filter_include_uids.v[0] == 1000 &&
		  c.filter_include_uids.v[1] == 0 && c.filter_exclude_uids.v[0] == 4294967294LL,
	      "uid lists load (%s)", err);
	r = load("filter = { include_uids = [-1]; };\n");
	CHECK(r < 0 && strstr(err, "filter.include_uids") && strstr(err, "out of range"),
	      "a negative uid is refused: %s", err);
	r = load("filter = { exclude_uids = [4294967295L]; };\n");
	CHECK(r < 0 && strstr(err, "out of range"), "(uid_t)-1 is no uid: %s", err);
	r = load("filter = { exclude_uids = [3000000000]; };\n");
	CHECK(r < 0 && strstr(err, "L suffix"),
	      "a bare integer libconfig cut to 32 bits says how to write it: %s", err);
	r = load("filter = { include_uids = [\"root\"]; };\n");
	CHECK(r < 0 && strstr(err, "not an integer"), "a uid must be a number: %s", err);
	r = load("filter = { include_uids = 1000; };\n");
	CHECK(r < 0 && strstr(err, "list of integers"), "a uid list must be a list: %s", err);
	r = load("filter = { include_comms = [\"0123456789abcdef\"]; };\n");
	CHECK(r < 0 && strstr(err, "filter.include_comms") && strstr(err, "longer than 15"),
	      "a comm longer than 15 bytes is refused: %s", err);
	r = load("filter = { exclude_comms = [\"\"]; };\n");
	CHECK(r < 0 && strstr(err, "filter.exclude_comms"), "an empty comm is refused: %s", err);
	r = load("filter = { exclude_cgroups = [\"\"]; };\n");
	CHECK(r < 0 && strstr(err, "filter.exclude_cgroups"), "an empty path is refused: %s", err);
	CHECK(config_set(&c, "filter.include_uids", "1000", err, sizeof(err)) < 0,
	      "lists are set in the file, not on the command line");

	/* resolution below a stand-in cgroup2 mount */
	if (!mkdtemp(root)) {
		CHECK(0, "mkdtemp: %s", strerror(errno));
		return tap_done();
	}
	snprintf(path, sizeof(path), "%s/job", root);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/job/step", root);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/file", root);
	close(creat(path, 0644));

	r = load("filter = {\n"
		 "  include_cgroups = [\"/job\"]; exclude_cgroups = [\"/job/step/\", \"/job\"];\n"
		 "  include_uids = [1000, 1000]; exclude_uids = [1000, 7];\n"
		 "  include_comms = [\"fio\"]; exclude_comms = [\"dd\", \"fio\"];\n};\n");
	CHECK(r == 0, "filter lists load (%s)", err);
	r = filter_new(&c, root, &f, err, sizeof(err));
	CHECK(r == 0 && filter_active(f), "resolved (%s)", err);
	if (r == 0) {
		e = cg_find(f, ino(root, "/job"));
		CHECK(f->n_cgroups == 2, "one entry per cgroup: %zu", f->n_cgroups);
		CHECK(e && e->level == 1 && e->flags == (DC_FILTER_INCLUDE | DC_FILTER_EXCLUDE),
		      "/job: its directory's inode, level 1, on both lists");
		e = cg_find(f, ino(root, "/job/step"));
		CHECK(e && e->level == 2 && e->flags == DC_FILTER_EXCLUDE,
		      "/job/step/: level 2, excluded");
		CHECK_U64(f->lists.cgroup_levels, (1u << 1) | (1u << 2),
			  "the programs look at levels 1 and 2 only");
		CHECK_U64(f->lists.cgroups, DC_FILTER_INCLUDE | DC_FILTER_EXCLUDE,
			  "both cgroup lists in use");
		CHECK(f->n_uids == 2 && f->uids[0].uid == 1000 &&
			  f->uids[0].flags == (DC_FILTER_INCLUDE | DC_FILTER_EXCLUDE) &&
			  f->uids[1].uid == 7 && f->uids[1].flags == DC_FILTER_EXCLUDE,
		      "uids merged: 1000 on both lists, 7 excluded");
		CHECK(f->n_comms == 2 &&
			  !memcmp(f->comms[0].comm.comm, "fio\0\0\0\0\0\0\0\0\0\0\0\0", 16) &&
			  f->comms[0].flags == (DC_FILTER_INCLUDE | DC_FILTER_EXCLUDE) &&
			  !strcmp(f->comms[1].comm.comm, "dd") &&
			  f->comms[1].flags == DC_FILTER_EXCLUDE,
		      "comms zero-padded as the kernel keeps them, merged");
		filter_describe(f, desc, sizeof(desc));
		CHECK_STR(desc,
			  "include_cgroups 1, exclude_cgroups 2, include_uids 1, exclude_uids 2, "
			  "include_comms 1, exclude_comms 2",
			  "described per list");
	}
	f = filter_free(f);

	r = load("filter = { exclude_uids = [0]; };\n");
	r = r ? r : filter_new(&c, root, &f, err, sizeof(err));
	CHECK(r == 0 && f->lists.uids == DC_FILTER_EXCLUDE && !f->lists.cgroups &&
		  !f->lists.comms && !f->lists.cgroup_levels,
	      "only the lists in use are flagged (%s)", err);
	f = filter_free(f);

	/* a bad line after a missing cgroup is still the file's fault */
	r = load("filter = { include_cgroups = [\"/nope/x\", \"rel\"]; };\n");
	r = r ? r : filter_new(&c, root, &f, err, sizeof(err));
	CHECK(r == -EINVAL && strstr(err, "\"rel\" is not an absolute"),
	      "a bad line after a missing cgroup: -EINVAL, named: %s", err);
	r = load("filter = { include_cgroups = [\"/job\", \"/nope/x\"]; };\n");
	r = r ? r : filter_new(&c, root, &f, err, sizeof(err));
	/* -ENOENT, not -EINVAL: the host's state (exit 1, started again) */
	CHECK(r == -ENOENT && strstr(err, "filter.include_cgroups") && strstr(err, "/nope/x") &&
		  strstr(err, "No such file"),
	      "a path that does not exist: -ENOENT, its key and itself named: %s", err);
	r = load("filter = { exclude_cgroups = [\"/file\"]; };\n");
	r = r ? r : filter_new(&c, root, &f, err, sizeof(err));
	CHECK(r == -EINVAL && strstr(err, "not a cgroup directory"), "a file is no cgroup: %s",
	      err);
	r = load("filter = { exclude_cgroups = [\"job\"]; };\n");
	r = r ? r : filter_new(&c, root, &f, err, sizeof(err));
	CHECK(r == -EINVAL && strstr(err, "filter.exclude_cgroups") && strstr(err, "absolute"),
	      "a relative path is refused: %s", err);
	{
		char text[8192];
		size_t off = (size_t)snprintf(text, sizeof(text), "filter = { include_cgroups = [");

		for (int i = 0; i <= DC_FILTER_MAX; i++)
			off += (size_t)snprintf(text + off, sizeof(text) - off, "%s\"/job\"",
						i ? ", " : "");
		snprintf(text + off, sizeof(text) - off, "]; };\n");
		r = load(text);
		r = r ? r : filter_new(&c, root, &f, err, sizeof(err));
		CHECK(r == -EINVAL && strstr(err, "more than"), "at most %d per list: %s",
		      DC_FILTER_MAX, err);
	}
	f = filter_free(f);

	snprintf(path, sizeof(path), "%s/job/step", root);
	rmdir(path);
	snprintf(path, sizeof(path), "%s/job", root);
	rmdir(path);
	snprintf(path, sizeof(path), "%s/file", root);
	unlink(path);
	rmdir(root);
	return tap_done();
}

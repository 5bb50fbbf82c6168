// SPDX-License-Identifier: Apache-2.0
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cgroup.h"
#include "tap.h"

static char root[64];

static void put(const char *path, const char *file, const char *text)
{
	char p[512];
	FILE *f;

	snprintf(p, sizeof(p), "%s%s", root, path);
	mkdir(p, 0755);
	snprintf(p, sizeof(p), "%s%s/%s", root, path, file);
	f = fopen(p, "w");
	if (f) {
		fputs(text, f);
		fclose(f);
	}
}

/* a v2 cgroup's limit, use and memory.stat */
static void v2(const char *path, const char *max, const char *current, const char *stat)
{
	put(path, "memory.max", max);
	put(path, "memory.current", current);
	if (stat)
		put(path, "memory.stat", stat);
}

/* the room below root at path (v2), UINT64_MAX - 1 when it cannot be read */
static uint64_t room_at(const char *path, char *which, size_t len)
{
	uint64_t room;

	return cgroup_memory_room_at(root, path, false, &room, which, len) == 0 ? room
										: UINT64_MAX - 1;
}

int main(void)
{
	char which[256];
	uint64_t room;

	snprintf(root, sizeof(root), "/tmp/dc-test-cgroup-XXXXXX");
	if (!mkdtemp(root))
		return 1;
	/* the root holds no memory.max; /a is limited, /a/b not, /a/b/c is */
	put("", "memory.current", "999999\n");
	v2("/a", "1000000\n", "400000\n", NULL);
	v2("/a/b", "max\n", "300000\n", NULL);
	v2("/a/b/c", "900000\n", "100000\n", NULL);
	CHECK_U64(room_at("/a/b/c", which, sizeof(which)), 600000,
		  "the tightest room is an ancestor's (/a: 1000000 - 400000)");
	CHECK(!strcmp(which, "/a"), "and it is named: %s", which);
	CHECK_U64(room_at("/a/b", which, sizeof(which)), 600000,
		  "a cgroup without a limit: its ancestors' apply");
	/* page cache is room: reclaimed before a charge fails ... */
	v2("/e", "1000000\n", "990000\n", "anon 90000\nfile 900000\nkernel 0\n");
	CHECK_U64(room_at("/e", which, sizeof(which)), 910000,
		  "the page cache in memory.current counts as room");
	/* ... but not shared memory (tmpfs, /dev/shm): no swap, no reclaim */
	v2("/s", "1000000\n", "990000\n", "anon 90000\nfile 900000\nshmem 800000\n");
	CHECK_U64(room_at("/s", which, sizeof(which)), 110000,
		  "shared memory in the page cache is no room");
	v2("/d", "500\n", "800\n", NULL);
	CHECK_U64(room_at("/d", which, sizeof(which)), 0,
		  "a cgroup past its limit (memory.current above a lowered memory.max): no room");
	CHECK_U64(room_at("/", which, sizeof(which)), UINT64_MAX, "the root: no limit");
	CHECK_U64(room_at("/no/such", which, sizeof(which)), UINT64_MAX,
		  "a path with no files (a v1 memory hierarchy): no limit");
	/* v1: its file names, and "unlimited" as LONG_MAX rounded to a page */
	put("/v", "memory.limit_in_bytes", "9223372036854771712\n");
	put("/v", "memory.usage_in_bytes", "5000\n");
	put("/v/w", "memory.limit_in_bytes", "536870912\n");
	put("/v/w", "memory.usage_in_bytes", "3000\n");
	put("/v/w", "memory.stat", "cache 5\nrss 1000\ntotal_cache 2000\n");
	CHECK(cgroup_memory_room_at(root, "/v/w", true, &room, which, sizeof(which)) == 0 &&
		  room == 536870912 - 1000 && !strcmp(which, "/v/w"),
	      "v1: the limit in memory.limit_in_bytes, its unlimited parent none (%llu, %s)",
	      (unsigned long long)room, which);
	{
		char cmd[128];

		snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
		if (system(cmd) != 0)
			return 1;
	}
	return tap_done();
}

// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <stdio.h>
#include <unistd.h>

#include "filepath.h"
#include "filevec.h"
#include "fs-util.h"
#include "tap.h"

/* cpu_id_bound() over a cpulist file holding text */
static int bound_of(const char *text)
{
	char path[] = "/tmp/dc-cpulist-XXXXXX";
	int fd = mkstemp(path), r;

	if (fd < 0 || write(fd, text, strlen(text)) != (ssize_t)strlen(text))
		return -1000;
	close(fd);
	r = cpu_id_bound(path);
	unlink(path);
	return r;
}

static int join(const char *comps, size_t len, bool trunc, char *out, size_t outlen)
{
	return filepath_join(comps, len, trunc, out, outlen);
}

int main(void)
{
	char out[8192], hex[17], big[5000];
	struct fname_table t;
	const struct fname *f;
	static struct fhash_seen seen;
	size_t o = 0;
	int r;

	/* leaf first, NUL-separated, reversed into a path */
	r = join("c\0b\0a\0", 6, false, out, sizeof(out));
	CHECK_STR(out, "/a/b/c", "three components");
	CHECK_U64(r, 6, "length returned");
	join("", 0, false, out, sizeof(out));
	CHECK_STR(out, "/", "no component is the root");
	join("x\0", 2, true, out, sizeof(out));
	CHECK_STR(out, ".../x", "a truncated walk says so");
	/* a buffer cut short by the kernel: last component without its NUL */
	join("leaf\0dir", 8, false, out, sizeof(out));
	CHECK_STR(out, "/dir/leaf", "unterminated last component");
	/* hostile bytes pass through untouched (escaping is the JSON writer's) */
	join("a\nb\"\xff\0d\0", 7, false, out, sizeof(out));
	CHECK(!strcmp(out, "/d/a\nb\"\xff"), "newline, quote and invalid UTF-8 kept as bytes");
	r = join("abc\0", 4, false, out, 4);
	CHECK(r == -ENAMETOOLONG, "too small a buffer is an error");

	/* a 4095-byte path: 20 components of 200 bytes and one of 75 */
	for (int i = 0; i < 21; i++) {
		size_t l = i == 0 ? 74 : 199;

		memset(big + o, 'a' + i, l);
		o += l;
		big[o++] = 0;
	}
	r = join(big, o, false, out, sizeof(out));
	CHECK(r == 20 * 200 + 75, "a path at PATH_MAX is rebuilt whole (%d)", r);

	/* FNV-1a 64 reference values */
	CHECK_U64(filepath_hash(""), 0xcbf29ce484222325ULL, "hash of the empty string");
	CHECK_U64(filepath_hash("a"), 0xaf63dc4c8601ec8cULL, "hash of \"a\"");
	CHECK(filepath_hash("/a/b") != filepath_hash("/a/c"), "different paths, different hashes");
	filepath_hash_hex(0xabcULL, hex);
	CHECK_STR(hex, "0000000000000abc", "hex is 16 digits");

	/* the name table */
	fname_table_init(&t, 100000);
	CHECK(fname_get(&t, 1, 2, 0, 0) == NULL, "empty table knows nothing");
	CHECK(fname_put(&t, 1, 2, 0, "/x", false, 0) == 0, "put");
	f = fname_get(&t, 1, 2, 0, 0);
	CHECK(f && !strcmp(f->path, "/x") && f->hash == filepath_hash("/x"), "get what was put");
	CHECK(fname_get(&t, 2, 1, 0, 0) == NULL, "(dev, ino) are not interchangeable");
	fname_put(&t, 1, 2, 0, "/y", false, 0);
	f = fname_get(&t, 1, 2, 0, 0);
	CHECK(f && !strcmp(f->path, "/y"), "a new name replaces the old (rename)");
	/* ext4 gives a deleted file's inode number to the next file created:
	 * another generation, another file, both named */
	CHECK(fname_put(&t, 1, 2, 77, "/z", false, 0) == 0, "put another generation");
	f = fname_get(&t, 1, 2, 0, 0);
	CHECK(f && !strcmp(f->path, "/y"), "the first generation keeps its name");
	f = fname_get(&t, 1, 2, 77, 0);
	CHECK(f && !strcmp(f->path, "/z") && f->igen == 77, "the second has its own");
	CHECK(fname_get(&t, 1, 2, 78, 0) == NULL, "an unseen generation is unknown");
	/* one inode number, thousands of generations (a create and delete
	 * loop on ext4): all kept, and found */
	for (uint32_t i = 0; i < 3000; i++)
		fname_put(&t, 9, 12, 1000 + i, "/tmpfile", false, 0);
	CHECK(fname_get(&t, 9, 12, 1000 + 2999, 0) != NULL && fname_get(&t, 9, 12, 1000, 0) != NULL,
	      "3000 generations of one inode number all named");
	for (uint64_t i = 0; i < 5000; i++)
		fname_put(&t, 7, 1000 + i, 0, "/many", false, 10);
	f = fname_get(&t, 7, 1000 + 4321, 0, 10);
	CHECK(f != NULL, "5000 names all kept while in use");
	CHECK(t.cap >= 2 * t.used, "at most half full (%zu of %zu)", t.used, t.cap);
	/* names not used for two windows make room instead of growing */
	for (uint64_t i = 0; i < 5000; i++)
		fname_put(&t, 8, i, 0, "/later", false, 20);
	CHECK(fname_get(&t, 1, 2, 0, 20) == NULL,
	      "a name unused since window 0 is forgotten by 20");
	CHECK(fname_get(&t, 8, 4999, 0, 20) != NULL, "recent names are kept");
	fname_table_free(&t);

	fname_table_init(&t, 3);
	fname_put(&t, 1, 1, 0, "/1", false, 5);
	fname_put(&t, 1, 2, 0, "/2", false, 5);
	fname_put(&t, 1, 3, 0, "/3", false, 5);
	r = fname_put(&t, 1, 4, 0, "/4", false, 5);
	CHECK(r == -ENOSPC, "the bound holds");
	CHECK(fname_get(&t, 1, 3, 0, 5) != NULL, "what was kept stays");
	fname_table_free(&t);

	/* per-CPU values combine: counts add, highest offsets take the maximum */
	{
		struct dc_file_val v1 = {.read_ops = 2, .max_read_end = 100, .read_size = {1, 2}};
		struct dc_file_val v2 = {.read_ops = 3, .max_read_end = 50, .read_size = {0, 5}};
		struct dc_file_sum a = {}, b = {}, d;
		struct dc_file_entry e[4] = {
		    {.tgid = 2, .cgroup_id = 1, .dev = 1, .ino = 9},
		    {.tgid = 1, .cgroup_id = 1, .dev = 1, .ino = 5},
		    {.tgid = 2, .cgroup_id = 1, .dev = 1, .ino = 3},
		    {.tgid = 2, .cgroup_id = 0, .dev = 1, .ino = 3},
		};
		size_t lo, hi;

		file_sum_add_val(&a, &v1);
		file_sum_add_val(&a, &v2);
		CHECK_U64(a.read_ops, 5, "counts add");
		CHECK_U64(a.max_read_end, 100, "maxima take the maximum");
		CHECK_U64(a.read_size[1], 7, "buckets add");
		b = a;
		file_sum_add(&b, &a);
		CHECK_U64(b.read_ops, 10, "sums add");
		CHECK_U64(b.max_read_end, 100, "sums keep the maximum");
		file_sum_delta(&d, &b, &a);
		CHECK_U64(d.read_ops, 5, "delta of counts");
		CHECK_STR(file_bucket_name(0), "0_100", "first Darshan bucket");
		CHECK_STR(file_bucket_name(9), "1G_PLUS", "last Darshan bucket");
		file_sort(e, 4);
		file_range(e, 4, 2, 1, &lo, &hi);
		CHECK(hi - lo == 2 && e[lo].ino == 3 && e[lo + 1].ino == 9,
		      "a process's files are contiguous and ordered");
		file_range(e, 4, 7, 1, &lo, &hi);
		CHECK(lo == hi, "no files for an unknown process");
	}

	/* a key that held two slots in one window comes out as one file */
	{
		struct dc_file_entry e[5] = {
		    {.tgid = 2,
		     .dev = 1,
		     .ino = 9,
		     .v = {.read_ops = 1, .max_read_end = 10, .files = 1}},
		    {.tgid = 1, .dev = 1, .ino = 5, .v = {.write_ops = 4, .files = 1}},
		    {.tgid = 2,
		     .dev = 1,
		     .ino = 9,
		     .v = {.read_ops = 2, .max_read_end = 30, .files = 1}},
		    {.tgid = 2, .dev = 2, .ino = 9, .v = {.read_ops = 8, .files = 1}},
		    {.tgid = 2,
		     .dev = 1,
		     .ino = 9,
		     .v = {.read_ops = 4, .max_read_end = 20, .files = 1}},
		};
		size_t n;

		file_sort(e, 5);
		n = file_merge_sorted(e, 5);
		CHECK_U64(n, 3, "three distinct keys");
		CHECK(e[0].tgid == 1 && e[0].v.write_ops == 4, "a lone key is kept as is");
		CHECK(e[1].dev == 1 && e[1].ino == 9 && e[1].v.read_ops == 7 &&
			  e[1].v.max_read_end == 30 && e[1].v.files == 1,
		      "a key's slots are summed, its maximum kept, and it is one file");
		CHECK(e[2].dev == 2 && e[2].v.read_ops == 8, "another device is another key");
		e[0] = (struct dc_file_entry){
		    .tgid = 3, .dev = 1, .ino = 9, .igen = 5, .v = {.write_ops = 1, .files = 1}};
		e[1] = (struct dc_file_entry){
		    .tgid = 3, .dev = 1, .ino = 9, .igen = 4, .v = {.write_ops = 2, .files = 1}};
		file_sort(e, 2);
		CHECK_U64(file_merge_sorted(e, 2), 2,
			  "another generation of the inode is another file");
		CHECK(e[0].igen == 4 && e[0].v.write_ops == 2, "generations sort in order");
		CHECK_U64(file_merge_sorted(e, 0), 0, "nothing to merge");
	}

	/* CPU ids past the count where the possible mask has holes */
	CHECK(bound_of("0-3,8-11\n") == 12, "0-3,8-11: ids up to 11");
	CHECK(bound_of("0\n") == 1 && bound_of("0-1\n") == 2, "one CPU, two CPUs");
	CHECK(bound_of("2,5\n") == 6, "single ids");
	CHECK(bound_of("x\n") == -EINVAL && bound_of("3-1\n") == -EINVAL, "nonsense refused");
	CHECK(cpu_id_bound("/nonexistent/possible") == -ENOENT, "missing file");

	CHECK(fhash_first(&seen, 42), "first sight of a hash");
	CHECK(!fhash_first(&seen, 42), "second sight is not first");
	{
		/* five hashes of one set: four are held at once, in any order of
		 * use; a fifth displaces the least recently offered */
		uint64_t same[5], x = 0x123456789abcdefULL;
		size_t n = 0, set = fhash_set(0x51ab1e);

		while (n < 5) {
			x = x * 6364136223846793005ULL + 1442695040888963407ULL;
			if (x && fhash_set(x) == set)
				same[n++] = x;
		}
		for (int i = 0; i < 4; i++)
			CHECK(fhash_first(&seen, same[i]), "hash %d of one set: first", i);
		for (int round = 0; round < 2; round++)
			for (int i = 3; i >= 0; i--)
				CHECK(!fhash_first(&seen, same[i]),
				      "four hashes sharing a set are all remembered (%d, round %d)",
				      i, round);
		CHECK(fhash_first(&seen, same[4]), "a fifth in the set: first");
		/* after the rounds above, same[3] was the least recently offered */
		CHECK(fhash_first(&seen, same[3]), "the least recently offered was displaced");
		CHECK(!fhash_first(&seen, same[4]) && !fhash_first(&seen, same[0]),
		      "the others stay");
	}
	return tap_done();
}

// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "spool.h"
#include "tap.h"

static char base[64];

static int rm_rf(const char *dir)
{
	char cmd[PATH_MAX + 16];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd);
}

static int spool_write_file(const char *path, const char *data, size_t len)
{
	FILE *f = fopen(path, "w");

	if (!f)
		return -1;
	fwrite(data, 1, len, f);
	return fclose(f);
}

static bool has_seg(const char *dir, uint64_t seq)
{
	char p[PATH_MAX];

	snprintf(p, sizeof(p), "%s/%020llu.seg", dir, (unsigned long long)seq);
	return access(p, F_OK) == 0;
}

int main(void)
{
	char dir[PATH_MAX], moved[PATH_MAX];
	struct spool *s = NULL;
	struct dc_buf b = {};
	int r;

	snprintf(base, sizeof(base), "/tmp/dc-test-spool-XXXXXX");
	if (!mkdtemp(base))
		return 1;
	snprintf(dir, sizeof(dir), "%s/a/spool", base);
	snprintf(moved, sizeof(moved), "%s/moved", base);

	r = spool_open(dir, false, &s);
	CHECK(r == 0, "open makes the directory and its parents (%d)", r);
	if (r)
		return 1;
	CHECK(spool_write(s, spool_next_seq(s), "one", 3) == 0 && has_seg(dir, 0), "a write");

	/* removed with its parents: the next write makes it again */
	rm_rf(base);
	mkdir(base, 0700);
	r = spool_write(s, spool_next_seq(s), "two", 3);
	CHECK(r == 0, "a write after the directory was removed (%d)", r);
	CHECK(has_seg(dir, 1) && !has_seg(dir, 0), "... lands in the directory made again");
	CHECK(spool_recreated(s) == 1, "... counted (%u)", spool_recreated(s));
	CHECK(spool_read(s, 1, &b) == 0 && b.len == 3 && !memcmp(b.data, "two", 3),
	      "... and is read back from there");
	CHECK(spool_read(s, 0, &b) == -ENOENT, "the segment removed with it is gone: ENOENT");

	/* renamed: still ours, writes follow it and nothing is made */
	r = rename(dir, moved);
	CHECK(r == 0, "rename the directory");
	CHECK(spool_write(s, spool_next_seq(s), "three", 5) == 0 && has_seg(moved, 2) &&
		  access(dir, F_OK) != 0,
	      "a renamed directory keeps taking writes; none is made at the old path");
	CHECK(spool_recreated(s) == 1, "... not counted as made again (%u)", spool_recreated(s));

	/* removed, and something at its path that is not the agent's alone
	 * (made first by another user, or writable by others): not taken */
	rm_rf(base);
	mkdir(base, 0700);
	snprintf(moved, sizeof(moved), "%s/a", base);
	mkdir(moved, 0700);
	if (mkdir(dir, 0700) == 0 && chown(dir, 65534, 65534) == 0) {
		r = spool_write(s, spool_next_seq(s), "x", 1);
		CHECK(r == -EPERM, "a directory another user made at the path is refused (%d)", r);
		CHECK(spool_gone(s), "... and the spool still says its directory is gone");
		chown(dir, geteuid(), getegid());
		chmod(dir, 0777);
		r = spool_write(s, spool_next_seq(s), "x", 1);
		CHECK(r == -EPERM, "one others may write to is refused (%d)", r);
		chmod(dir, 0750);
		r = spool_write(s, spool_next_seq(s), "x", 1);
		CHECK(r == 0 && !spool_gone(s), "one that is the agent's alone is taken (%d)", r);
	}

	/* removed where its parent cannot be made: the error, not a crash */
	rm_rf(base);
	if (symlink("/proc/self/nonexistent-dir", base) == 0) {
		r = spool_write(s, spool_next_seq(s), "four", 4);
		CHECK(r < 0, "a directory that cannot be made again: an error (%d)", r);
		unlink(base);
	}
	spool_free(s);
	s = NULL;

	/* reached through a symlink (moved to another disk): made again where
	 * it was, not in place of the link */
	{
		char real[PATH_MAX], link[PATH_MAX];
		struct stat st;

		rm_rf(base);
		mkdir(base, 0700);
		snprintf(real, sizeof(real), "%s/real", base);
		snprintf(link, sizeof(link), "%s/link", base);
		mkdir(real, 0700);
		if (symlink(real, link) == 0 && spool_open(link, false, &s) == 0) {
			rm_rf(real);
			r = spool_write(s, spool_next_seq(s), "y", 1);
			CHECK(r == 0 && lstat(link, &st) == 0 && S_ISLNK(st.st_mode) &&
				  has_seg(real, 0),
			      "a spool behind a symlink is made again at the link's target (%d)",
			      r);
			spool_free(s);
		}
	}

	/* at open: a name like a segment's taken by something else is never
	 * written (numbered past it); the agent's own leftover temporary file
	 * goes, another file named .tmp stays */
	{
		char p[PATH_MAX + 64];
		uint64_t q;

		rm_rf(base);
		mkdir(base, 0700);
		snprintf(dir, sizeof(dir), "%s/spool", base);
		mkdir(dir, 0700);
		snprintf(p, sizeof(p), "%s/%020d.seg", dir, 3);
		CHECK(spool_write_file(p, "s", 1) == 0, "a segment 3");
		snprintf(p, sizeof(p), "%s/%020d.seg", dir, 7);
		mkdir(p, 0700);
		snprintf(p, sizeof(p), "%s/%020d.seg.tmp", dir, 8);
		spool_write_file(p, "t", 1);
		snprintf(p, sizeof(p), "%s/notes.tmp", dir);
		spool_write_file(p, "mine", 4);
		/* set aside by an earlier run: no segment, but its number taken */
		snprintf(p, sizeof(p), "%s/%020d.seg.bad", dir, 11);
		spool_write_file(p, "b", 1);
		r = spool_open(dir, false, &s);
		CHECK(r == 0, "open (%d)", r);
		snprintf(p, sizeof(p), "%s/%020d.seg.tmp", dir, 8);
		CHECK(access(p, F_OK) != 0,
		      "the agent's own leftover temporary file is deleted at open");
		if (!r) {
			CHECK(spool_skipped(s) == 1, "the directory 7 is skipped (%zu)",
			      spool_skipped(s));
			q = spool_next_seq(s);
			CHECK(q == 12,
			      "new segments are numbered past it and past the set-aside 11: "
			      "12, not 4 (%llu)",
			      (unsigned long long)q);
			r = spool_write(s, q, "z", 1);
			CHECK(r == 0 && has_seg(dir, 12), "... and written (%d)", r);
			snprintf(p, sizeof(p), "%s/notes.tmp", dir);
			CHECK(access(p, F_OK) == 0, "another file named .tmp is left alone");
			/* a second agent on the same directory: refused while the
			 * first holds it, taken once the first is gone */
			{
				struct spool *t = NULL;

				r = spool_open(dir, false, &t);
				CHECK(r == -EBUSY && !t,
				      "a second open of a spool in use: -EBUSY (%d)", r);
				t = spool_free(t);
				spool_free(s);
				s = NULL;
				r = spool_open(dir, false, &t);
				CHECK(r == 0, "... and open once the first closed it (%d)", r);
				spool_free(t);
			}
		}
	}
	/* a stray file under a segment's name: its first bytes read, not the
	 * whole of it */
	{
		static char junk[1 << 20];
		char p[PATH_MAX + 64];

		memset(junk, 'x', sizeof(junk));
		snprintf(p, sizeof(p), "%s/%020d.seg", dir, 20);
		CHECK(spool_write_file(p, junk, sizeof(junk)) == 0, "a stray 1 MiB segment 20");
		r = spool_open(dir, false, &s);
		CHECK(r == 0, "open (%d)", r);
		if (!r) {
			r = spool_read(s, 20, &b);
			CHECK(r == 0 && b.len == 8,
			      "... read as far as its magic, 8 bytes, not 1 MiB (%d, %zu)", r,
			      b.len);
			r = spool_read(s, 12, &b);
			CHECK(r == 0 && b.len == 1 && b.data[0] == 'z',
			      "a file shorter than the magic read whole (%d, %zu)", r, b.len);
			s = spool_free(s);
		}
	}
	buf_free(&b);
	rm_rf(base);
	return tap_done();
}

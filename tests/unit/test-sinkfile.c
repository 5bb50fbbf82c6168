// SPDX-License-Identifier: Apache-2.0
/* The file sink at a full disk, made with RLIMIT_FSIZE (no mount, no root):
 * a write stops part way through a record, as on a filling file system. */
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sink.h"
#include "tap.h"

#define REC_LEN 300
#define LIMIT	1000

static void record(char *out, int i)
{
	int n = snprintf(out, REC_LEN, "{\"schema\":1,\"i\":%d,\"pad\":\"", i);

	memset(out + n, 'x', REC_LEN - n - 3);
	memcpy(out + REC_LEN - 3, "\"}\n", 3);
}

static size_t lines_in(const char *path)
{
	FILE *f = fopen(path, "re");
	size_t n = 0;
	int c;

	if (!f)
		return 0;
	while ((c = fgetc(f)) != EOF)
		n += c == '\n';
	fclose(f);
	return n;
}

/* Each line of path a whole record, their numbers in order: want. */
static bool whole_records(const char *path, const int *want, size_t n)
{
	FILE *f = fopen(path, "re");
	char line[2 * REC_LEN];
	size_t i = 0;
	bool ok = f != NULL;
	int got;

	while (ok && fgets(line, sizeof(line), f)) {
		ok = i < n && strlen(line) == REC_LEN &&
		     sscanf(line, "{\"schema\":1,\"i\":%d,", &got) == 1 && got == want[i];
		i++;
	}
	if (f)
		fclose(f);
	return ok && i == n;
}

/* The last line of path is record i, whole. */
static bool last_is(const char *path, int i)
{
	FILE *f = fopen(path, "re");
	char line[4 * REC_LEN], last[4 * REC_LEN] = "";
	int got = -1;

	while (f && fgets(line, sizeof(line), f))
		memcpy(last, line, sizeof(last));
	if (f)
		fclose(f);
	return strlen(last) == REC_LEN && sscanf(last, "{\"schema\":1,\"i\":%d,", &got) == 1 &&
	       got == i;
}

/* Lines of path, whole or not. */
static size_t lines_of(const char *path)
{
	FILE *f = fopen(path, "re");
	char line[2 * REC_LEN];
	size_t n = 0;

	while (f && fgets(line, sizeof(line), f))
		n++;
	if (f)
		fclose(f);
	return n;
}

/* Standard output (not the agent's file: no cut back) at the limit: a write
 * stops in record 3, and what is left of it stays held, written first when
 * writes work again, whatever is dropped past the bound or carried by a
 * reload meanwhile; else the next record is glued onto half a line.
 * Round 0: held past the bound. Round 1: a reload whose next output is
 * standard output again (the same file). Round 2: a reload to another
 * file (other), which must not start with half a record. Round 3: as 1,
 * but the reload's try gets 50 bytes of the tail out first. Round 4: as
 * 1, but another writer appends a line meanwhile: the rest would no longer
 * end its record's line. */
static void tail_kept(const char *path, const char *other)
{
	struct rlimit old, lim = {.rlim_cur = 3 * REC_LEN + 100};
	struct dc_sink *s = NULL, *s2 = NULL;
	struct dc_window w = {0};
	struct dc_buf carry = {0};
	struct sink_tail tail = {0};
	uint64_t dropped = 0, records = 0, pending = 0, carried = 0, dropped2 = 0;
	uint64_t records2 = 0, bytes2 = 0, dbytes2 = 0, bytes = 0;
	size_t carry_len = 0;
	int rounds = 0;
	char rec[REC_LEN];
	int out = -1, saved, r, r2 = -1;

	getrlimit(RLIMIT_FSIZE, &old);
	lim.rlim_max = old.rlim_max;
	saved = dup(STDOUT_FILENO);
	for (int round = 0; round < 5; round++) {
		fflush(stdout); /* the last round's lines, not into the file */
		out = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0600);
		if (out < 0 || saved < 0 || dup2(out, STDOUT_FILENO) < 0)
			break;
		close(out);
		/* the reloads' bound holds record 4, to be carried */
		r = sink_file_new("-", round ? 1 << 20 : 400, &s);
		if (r == 0 && setrlimit(RLIMIT_FSIZE, &lim) == 0) {
			for (int i = 0; i < 5; i++) {
				record(rec, i);
				sink_write(s, DC_REC_FEATURES, &w, rec, REC_LEN);
			}
			/* 1,000 bytes written; held: 200 of record 3, then
			 * record 4 (over round 0's 400-byte bound) */
			r2 = sink_flush(s);
			if (round) {
				/* the tail's try in its file fails at the limit
				 * (round 3: after 50 more bytes) */
				struct rlimit more = lim;

				more.rlim_cur += round == 3 ? 50 : 0;
				if (setrlimit(RLIMIT_FSIZE, &more) < 0)
					rounds = -100; /* said below */
				tail.len = 0;
				carried = sink_file_take_pending(s, &carry, &tail);
				carry_len = carry.len;
			}
			setrlimit(RLIMIT_FSIZE, &old);
			if (round == 4) {
				int o = open(path, O_WRONLY | O_APPEND | O_CLOEXEC);

				if (o < 0 || write(o, "other\n", 6) != 6)
					rounds = -100;
				if (o >= 0)
					close(o);
			}
			if (round == 0) {
				record(rec, 5);
				sink_write(s, DC_REC_FEATURES, &w, rec, REC_LEN);
				sink_flush(s);
			}
			sink_close(s);
			dropped = s->stats.dropped_records;
			records = s->stats.records;
			bytes = s->stats.bytes;
			pending = s->stats.pending_bytes;
			if (round && sink_file_new(round == 2 ? other : "-", 1 << 20, &s2) == 0) {
				sink_file_put_pending(s2, &carry, carried, &tail);
				sink_flush(s2);
				sink_close(s2);
				dropped2 = s2->stats.dropped_records;
				dbytes2 = s2->stats.dropped_bytes;
				records2 = s2->stats.records;
				bytes2 = s2->stats.bytes;
				s2 = sink_free(s2);
				rounds++;
			} else if (!round)
				rounds++;
			buf_free(&carry);
		}
		s = sink_free(s);
		fflush(stdout);
		dup2(saved, STDOUT_FILENO);
		if (round == 0) {
			const int want[] = {0, 1, 2, 3, 5};

			CHECK(r2 < 0, "standard output: the flush fails at the limit (%d)", r2);
			CHECK(dropped == 1 && records == 5 && pending == 0,
			      "record 4 dropped past the bound, not what is left of record 3 (%llu "
			      "dropped, %llu written, %llu bytes held)",
			      (unsigned long long)dropped, (unsigned long long)records,
			      (unsigned long long)pending);
			CHECK(whole_records(path, want, 5),
			      "every line a whole record: 0, 1, 2, 3 (ended once writes work), 5");
		} else if (round == 1) {
			const int want[] = {0, 1, 2, 3, 4};

			CHECK(carried == 2 && tail.len == 200 && carry_len == 500 && dropped == 0,
			      "a reload carries the rest of record 3 first, and record 4 (%llu "
			      "records, "
			      "%zu bytes, a tail of %zu)",
			      (unsigned long long)carried, carry_len, tail.len);
			CHECK(whole_records(path, want, 5) && dropped2 == 0 && records2 == 2 &&
				  bytes2 == 500,
			      "the next output on the same file ends record 3 there, then record 4 "
			      "(%llu records, %llu bytes)",
			      (unsigned long long)records2, (unsigned long long)bytes2);
		} else if (round == 3) {
			const int want[] = {0, 1, 2, 3, 4};

			CHECK(
			    tail.len == 150 && bytes == 3 * REC_LEN + 150 && records2 == 2 &&
				bytes2 == 450 && whole_records(path, want, 5),
			    "a short try of the tail: its 50 bytes out once, the other 150 carried "
			    "(a tail of %zu; %llu and %llu bytes written)",
			    tail.len, (unsigned long long)bytes, (unsigned long long)bytes2);
		} else if (round == 4) {
			CHECK(dropped2 == 1 && records2 == 1 && last_is(path, 4) &&
				  lines_of(path) == 5,
			      "another writer's line since: the rest of record 3 counted lost, "
			      "record 4 on a line of its own (%llu lost)",
			      (unsigned long long)dropped2);
		} else {
			const int want[] = {4};

			CHECK(dropped2 == 1 && dbytes2 == 200 && records2 == 1 &&
				  whole_records(other, want, 1),
			      "to another file: the rest of record 3 counted lost, not put at its "
			      "top "
			      "(%llu lost)",
			      (unsigned long long)dropped2);
			CHECK(lines_of(path) == 4,
			      "the first file keeps records 0 to 2 and the beginning of 3 (%zu "
			      "lines)",
			      lines_of(path));
		}
	}
	if (saved >= 0)
		close(saved);
	CHECK(rounds == 5, "all five rounds set up (%d)", rounds);
}

int main(void)
{
	const char *tmp = getenv("TMPDIR");
	char dir[PATH_MAX], path[PATH_MAX + 32], rec[REC_LEN];
	struct rlimit old, lim = {.rlim_cur = LIMIT, .rlim_max = RLIM_INFINITY};
	struct dc_window w = {0};
	struct dc_sink *s = NULL;
	struct stat st;
	int r;

	snprintf(dir, sizeof(dir), "%s/dc-sinkfile-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(dir))
		return 1;
	snprintf(path, sizeof(path), "%s/records.jsonl", dir);
	signal(SIGXFSZ, SIG_IGN); /* past the limit, write() fails with EFBIG */
	r = sink_file_new(path, 1 << 20, &s);
	CHECK(r == 0, "file sink opened (%d)", r);
	if (r) {
		rmdir(dir);
		return 1;
	}
	getrlimit(RLIMIT_FSIZE, &old);
	lim.rlim_max = old.rlim_max;
	CHECK(setrlimit(RLIMIT_FSIZE, &lim) == 0, "file size limited to %d bytes", LIMIT);

	for (int i = 0; i < 5; i++) {
		record(rec, i);
		sink_write(s, DC_REC_FEATURES, &w, rec, REC_LEN);
	}
	r = sink_flush(s);
	CHECK(r < 0, "the flush fails at the limit (%d)", r);
	CHECK(stat(path, &st) == 0 && st.st_size == 3 * REC_LEN,
	      "the record written in part is taken back out: %lld bytes, three whole records",
	      (long long)st.st_size);
	CHECK(s->stats.records == 3, "three records committed (%llu)",
	      (unsigned long long)s->stats.records);
	CHECK(s->stats.pending_bytes == 2 * REC_LEN, "two records held (%llu bytes)",
	      (unsigned long long)s->stats.pending_bytes);

	/* the stop: its last try fails too, and what it held is lost */
	sink_close(s);
	CHECK(s->stats.dropped_records == 2 && s->stats.dropped_bytes == 2 * REC_LEN,
	      "the stop loses the two records held, not the three written (%llu records, %llu "
	      "bytes)",
	      (unsigned long long)s->stats.dropped_records,
	      (unsigned long long)s->stats.dropped_bytes);
	CHECK(s->stats.pending_bytes == 0, "nothing held after the close (%llu bytes)",
	      (unsigned long long)s->stats.pending_bytes);
	sink_close(s);
	CHECK(s->stats.dropped_records == 2, "a second close counts nothing more (%llu)",
	      (unsigned long long)s->stats.dropped_records);
	setrlimit(RLIMIT_FSIZE, &old);
	sink_free(s);
	CHECK(lines_in(path) == 3, "the file holds the three whole records (%zu lines)",
	      lines_in(path));

	/* held past max_pending (400 bytes): the oldest whole records go,
	 * counted, and what is held still counts only what is held */
	lim.rlim_cur = 3 * REC_LEN;
	r = sink_file_new(path, 400, &s);
	CHECK(r == 0 && setrlimit(RLIMIT_FSIZE, &lim) == 0, "opened again, at its limit (%d)", r);
	if (r) {
		unlink(path);
		rmdir(dir);
		return 1;
	}
	for (int i = 0; i < 3; i++) {
		record(rec, 10 + i);
		sink_write(s, DC_REC_FEATURES, &w, rec, REC_LEN);
	}
	sink_flush(s);
	CHECK(s->stats.dropped_records == 2 && s->stats.pending_bytes == REC_LEN,
	      "past the bound the two oldest records are dropped, one kept (%llu dropped, %llu "
	      "bytes held)",
	      (unsigned long long)s->stats.dropped_records,
	      (unsigned long long)s->stats.pending_bytes);
	sink_close(s);
	CHECK(s->stats.dropped_records == 3 && s->stats.records == 0,
	      "the stop loses the one kept (%llu dropped in all)",
	      (unsigned long long)s->stats.dropped_records);
	setrlimit(RLIMIT_FSIZE, &old);
	sink_free(s);
	CHECK(lines_in(path) == 3, "the file holds the three whole records (%zu lines)",
	      lines_in(path));
	unlink(path);
	{
		char other[PATH_MAX + 32];

		snprintf(other, sizeof(other), "%s/other.jsonl", dir);
		tail_kept(path, other);
		unlink(other);
	}
	unlink(path);
	rmdir(dir);
	printf("1..%d\n", tap_n);
	return tap_failed ? 1 : 0;
}

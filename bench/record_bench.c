// SPDX-License-Identifier: Apache-2.0
/*
 * The agent's user-space cost per feature record: record_features() for N
 * processes of five ops each, as a window of a busy node (a few hundred
 * short-lived processes a second) has the agent write them. Run it under
 * `valgrind --tool=callgrind` for instruction counts that do not move with
 * the machine's noise.
 *
 *   record_bench [RECORDS]   prints "RECORDS NS_TOTAL NS_PER_RECORD BYTES"
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "clock.h"
#include "datacrumbs/hist.h"
#include "featvec.h"
#include "json.h"
#include "record.h"

static struct dc_agg_entry op(uint32_t tgid, unsigned o, uint64_t count, uint64_t bytes,
			      uint64_t time_ns)
{
	struct dc_agg_entry e = {.tgid = tgid, .cgroup_id = 4242, .op = (uint16_t)o};

	e.v.count = count;
	e.v.bytes = bytes;
	e.v.time_ns = time_ns;
	e.v.lat[dc_hist_slot(time_ns / (count ? count : 1), DC_LAT_SLOTS)] = count;
	e.v.size[dc_hist_slot(bytes / (count ? count : 1), DC_SIZE_SLOTS)] = count;
	return e;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 100000;
	struct dc_window w = {.seq = 7,
			      .start_real_us = 1700000000000000ULL,
			      .end_real_us = 1700000001000000ULL,
			      .end_mono_ns = 1000000000ULL};
	struct dc_record_ctx ctx = {
	    .host = "bench-host", .run_id = "0123456789abcdef", .boot_id = "boot", .w = &w};
	struct dc_buf b = {};
	unsigned long long bytes = 0;
	long long t0 = now_ns();

	for (long i = 0; i < n; i++) {
		uint32_t pid = 100000 + (uint32_t)i;
		struct dc_agg_entry e[] = {
		    op(pid, DC_OP_openat, 12 + i % 7, 0, 48000),
		    op(pid, DC_OP_read, 40 + i % 13, 163840 + (uint64_t)i, 120000),
		    op(pid, DC_OP_write, 3, 512, 9000),
		    op(pid, DC_OP_mmap, 20, 1 << 20, 30000),
		    op(pid, DC_OP_close, 12, 0, 6000),
		};
		struct dc_proc_ident id = {.pid = pid,
					   .comm = "cat",
					   .cgroup_id = 4242,
					   .cgroup = "/user.slice/user-0.slice/session-1.scope",
					   .uid_known = true,
					   .exe = "/usr/bin/cat"};

		buf_reset(&b);
		record_features(&b, &ctx, &id, e, sizeof(e) / sizeof(e[0]), NULL);
		bytes += b.len;
	}
	t0 = now_ns() - t0;
	printf("%ld %lld %.1f %llu\n", n, t0, (double)t0 / (double)n, bytes);
	buf_free(&b);
	return 0;
}

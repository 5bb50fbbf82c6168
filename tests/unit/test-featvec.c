// SPDX-License-Identifier: Apache-2.0
#include <math.h>

#include "datacrumbs/hist.h"
#include "featvec.h"
#include "json.h"
#include "record.h"
#include "tap.h"

static struct dc_agg_entry mk(uint32_t tgid, uint64_t cg, unsigned op, uint64_t count,
			      uint64_t bytes, uint64_t time_ns)
{
	struct dc_agg_entry e = {.tgid = tgid, .cgroup_id = cg, .op = (uint16_t)op};

	e.v.count = count;
	e.v.bytes = bytes;
	e.v.time_ns = time_ns;
	e.v.lat[dc_hist_slot(time_ns / (count ? count : 1), DC_LAT_SLOTS)] = count;
	return e;
}

int main(void)
{
	struct dc_agg_entry e[] = {
	    mk(20, 1, DC_OP_openat, 2, 0, 2000),
	    mk(10, 1, DC_OP_pwrite64, 100, 409600, 1000000),
	    mk(10, 1, DC_OP_pread64, 50, 204800, 500000),
	    mk(10, 1, DC_OP_openat, 10, 0, 100000),
	    mk(10, 2, DC_OP_read, 1, 10, 10),
	    mk(10, 1, DC_OP_mmap, 1, 1 << 20, 400), /* length, not a transfer */
	};
	struct dc_window w = {.seq = 7,
			      .start_real_us = 1000,
			      .end_real_us = 2001000,
			      .start_mono_ns = 0,
			      .end_mono_ns = 2000000000ULL};
	struct dc_record_ctx ctx = {.host = "h\"1", .run_id = "r", .boot_id = "b", .w = &w};
	struct dc_proc_ident id = {.pid = 10, .comm = "we\nird", .cgroup_id = 1, .cgroup = "/a"};
	struct dc_features f;
	struct dc_agg_val kv = {};
	struct dc_agg_sum s = {}, d;
	struct dc_buf b = {};
	size_t end;

	featvec_sort(e, 6);
	CHECK(e[0].tgid == 10 && e[0].cgroup_id == 1, "sorted by tgid then cgroup");
	end = featvec_group_end(e, 6, 0);
	CHECK_U64(end, 4, "group of (10, cgroup 1) has 4 ops");
	CHECK_U64(featvec_group_end(e, 6, 4), 5, "(10, cgroup 2) is its own record");
	CHECK_U64(featvec_group_end(e, 6, 5), 6, "pid 20 is its own record");

	featvec_compute(e, end, window_seconds(&w), &f);
	CHECK_U64(f.ops, 161, "total ops");
	CHECK_U64(f.write_bytes, 409600, "write bytes");
	CHECK_U64(f.read_bytes, 204800, "read bytes");
	CHECK(fabs(f.write_bw - 204800) < 1e-6, "write bandwidth per second of window (%g)",
	      f.write_bw);
	CHECK(fabs(f.write_bw_io - 409600 / 0.001) < 1e-3,
	      "write bandwidth per second of I/O time");
	CHECK(fabs(f.iops - 75) < 1e-9, "IOPS counts data calls only (%g)", f.iops);
	CHECK_U64(f.copy_ops, 0, "no copies");
	{
		/* a cp by copy_file_range: a copy, neither a read nor a write */
		struct dc_agg_entry cp[] = {mk(30, 1, DC_OP_copy_file_range, 3, 3 << 20, 900),
					    mk(30, 1, DC_OP_write, 1, 10, 5)};
		struct dc_features g;

		featvec_compute(cp, 2, 2.0, &g);
		CHECK(g.copy_ops == 3 && g.copy_bytes == 3 << 20 && g.copy_time_ns == 900 &&
			  g.write_bytes == 10 && g.write_ops == 1 && g.read_bytes == 0,
		      "copies in their own class (%llu ops, %llu bytes; write %llu)",
		      (unsigned long long)g.copy_ops, (unsigned long long)g.copy_bytes,
		      (unsigned long long)g.write_bytes);
		CHECK(fabs(g.copy_bw - (3 << 20) / 2.0) < 1e-6 && fabs(g.iops - 2) < 1e-9,
		      "copy bandwidth per second of window; IOPS counts copies (%g)", g.iops);
	}
	CHECK(fabs(f.meta_share - 11.0 / 161) < 1e-12, "metadata share (mmap and openat)");
	CHECK_U64(f.meta_ops, 11, "mmap is metadata, its length is not bandwidth");

	record_features(&b, &ctx, &id, e, end, NULL);
	buf_putc(&b, 0);
	CHECK(b.data[strlen(b.data) - 1] == '\n', "one line per record");
	CHECK(strstr(b.data, "\"comm\":\"we\\nird\"") != NULL, "comm escaped");
	CHECK(strstr(b.data, "\"host\":\"h\\\"1\"") != NULL, "host escaped");
	CHECK(strstr(b.data, "\"window\":7") != NULL, "window sequence");
	CHECK(strstr(b.data, "\"pwrite64\":{\"class\":\"data_write\",\"count\":100") != NULL,
	      "op keyed by name with its class");
	CHECK(strchr(b.data, '\n') == b.data + strlen(b.data) - 1,
	      "no raw newline inside the record");
	CHECK(!strstr(b.data, "\"uid\"") && strstr(b.data, "\"exe\":\"\",") &&
		  strstr(b.data, "\"cgroup\":\"/a\",\"job\":{},"),
	      "unknown process: no uid, empty exe; no job: an empty object");
	{
		struct dc_proc_ident who = id;
		struct dc_jobid job;

		jobid_parse("/system.slice/slurmstepd.scope/job_42/step_0", &job);
		who.uid_known = true;
		who.uid = 0;
		who.exe = "py\"thon";
		who.job = &job;
		buf_reset(&b);
		record_features(&b, &ctx, &who, e, end, NULL);
		buf_putc(&b, 0);
		CHECK(strstr(b.data, "\"comm\":\"we\\nird\",\"uid\":0,\"exe\":\"py\\\"thon\",") !=
			  NULL,
		      "uid 0 is a uid; exe escaped, after comm");
		CHECK(strstr(b.data, "\"job\":{\"unit\":\"slurmstepd.scope\",\"slice\":"
				     "\"system.slice\",\"slurm_job\":\"42\"},") != NULL,
		      "job object holds only the members found");
	}

	{
		struct dc_layers lay = {.lacks = (1u << DC_LACKS_BLOCK) | (1u << DC_LACKS_VFS)};

		CHECK(!strstr(b.data, "\"lacks\""), "nothing lacking: no lacks member");
		buf_reset(&b);
		record_features(&b, &ctx, &id, e, end, &lay);
		buf_putc(&b, 0);
		CHECK(strstr(b.data, "\"job\":{},\"lacks\":[\"block\",\"vfs\"],\"ops\":{") != NULL,
		      "the layers lacking, in order, after the job");
		lay.lacks = 1u << DC_LACKS_LIBRARIES;
		buf_reset(&b);
		record_features(&b, &ctx, &id, e, end, &lay);
		buf_putc(&b, 0);
		CHECK(strstr(b.data, "\"lacks\":[\"libraries\"],") != NULL, "one layer lacking");
		lay.lacks = 0;
		buf_reset(&b);
		record_features(&b, &ctx, &id, e, end, &lay);
		buf_putc(&b, 0);
		CHECK(!strstr(b.data, "\"lacks\"") && !strstr(b.data, "\"window_losses\""),
		      "layers given, none lacking, no losses: neither member");
		lay.lost_map_full = 3;
		buf_reset(&b);
		record_features(&b, &ctx, &id, e, end, &lay);
		buf_putc(&b, 0);
		CHECK(strstr(b.data, "\"job\":{},\"window_losses\":{\"map_full\":3,"
				     "\"recursion_misses\":0},\"ops\":{") != NULL,
		      "the window's losses, both named, after the job");
		lay.lost_map_full = 0;
		lay.lost_recursion = 1;
		buf_reset(&b);
		record_features(&b, &ctx, &id, e, end, &lay);
		buf_putc(&b, 0);
		CHECK(strstr(b.data, "\"window_losses\":{\"map_full\":0,\"recursion_misses\":1}"),
		      "a recursion miss alone");
		CHECK_STR(lacks_name(DC_LACKS_PAGE_CACHE), "page_cache", "names as in the records");
		CHECK_STR(lacks_name(DC_LACKS_MAX), "unknown", "out of range");
	}

	/* per-CPU values are summed into 64-bit histograms */
	kv.lat_hist[2] = 3;
	kv.lat_hist[5] = 0xFFFFFFFFu;
	agg_sum_add_val(&s, &kv);
	agg_sum_add_val(&s, &kv);
	CHECK_U64(s.lat[5], 2ULL * 0xFFFFFFFFu, "slot sums do not wrap at 32 bits");
	CHECK_U64(s.count, 2 * (3ULL + 0xFFFFFFFFu), "count is the sum of the latency slots");
	agg_sum_delta(&d, &s, &s);
	CHECK_U64(d.count, 0, "delta of equal snapshots");

	/* the slot map's fold writes over an entry it did not zero */
	{
		struct dc_agg_val a = {.errors = 1, .bytes = 7, .time_ns = 9, .tr_out = 2};
		struct dc_agg_val bv = {.bytes = 5, .tr_kept = 3};
		const void *vals[] = {&a, &bv};
		struct dc_agg_entry want = {}, got;
		struct dc_agg_key k = {.cgroup_id = 4, .tgid = 5, .op = 6};

		a.lat_hist[0] = 2;
		a.lat_hist[DC_LAT_SLOTS - 1] = 0xFFFFFFFFu;
		a.size_hist[DC_SIZE_SLOTS - 1] = 4;
		bv.lat_hist[DC_LAT_SLOTS - 1] = 0xFFFFFFFFu;
		bv.size_hist[1] = 1;
		agg_entry_fold(&want, &k, &a, 1);
		agg_sum_add_val(&want.v, &bv);
		memset(&got, 0xA5, sizeof(got));
		agg_entry_fold_each(&got, &k, vals, 2);
		CHECK(got.cgroup_id == 4 && got.tgid == 5 && got.op == 6 &&
			  !memcmp(&got.v, &want.v, sizeof(want.v)),
		      "a fold over garbage equals one over zeros (count %llu, want %llu)",
		      (unsigned long long)got.v.count, (unsigned long long)want.v.count);
		CHECK_U64(got.v.lat[DC_LAT_SLOTS - 1], 2ULL * 0xFFFFFFFFu,
			  "the first value widened");
		memset(&got, 0xA5, sizeof(got));
		agg_entry_fold_each(&got, &k, vals, 0);
		CHECK_U64(got.v.count + got.v.bytes + got.v.lat[0], 0, "no values: a zero entry");
	}

	/* a key drained from two slots in one window is one entry */
	{
		struct dc_agg_entry m[5] = {
		    {.tgid = 1, .cgroup_id = 1, .op = 2, .v = {.count = 1, .bytes = 10}},
		    {.tgid = 1, .cgroup_id = 1, .op = 2, .v = {.count = 2, .bytes = 20}},
		    {.tgid = 1, .cgroup_id = 1, .op = 3, .v = {.count = 4}},
		    {.tgid = 2, .cgroup_id = 1, .op = 2, .v = {.count = 8}},
		    {.tgid = 2, .cgroup_id = 1, .op = 2, .v = {.count = 16}},
		};
		size_t n = featvec_merge(m, 5);

		CHECK_U64(n, 3, "duplicates merged, distinct keys kept");
		CHECK(m[0].op == 2 && m[0].v.count == 3 && m[0].v.bytes == 30,
		      "the merged entry sums both (count %llu, bytes %llu)",
		      (unsigned long long)m[0].v.count, (unsigned long long)m[0].v.bytes);
		CHECK(m[1].op == 3 && m[1].v.count == 4, "the next key moves up untouched");
		CHECK(m[2].tgid == 2 && m[2].v.count == 24, "a trailing pair merged");
		CHECK_U64(featvec_merge(m, 0), 0, "nothing to merge");
	}
	{
		struct dc_agg_val z = {}, zero_ns = {}, t = {};

		zero_ns.lat_hist[0] = 1;
		t.time_ns = 5;
		CHECK(!agg_val_touched(&z), "a zeroed slot holds nothing");
		CHECK(agg_val_touched(&zero_ns), "a call of 0 ns counts (latency slot 0)");
		CHECK(agg_val_touched(&t), "a call with time counts");
	}
	/* an agent record with every layer on: every counter has a name */
	{
		struct dc_agent_stats st = {
		    .version = "t", .map_layout = "percpu", .block = true, .pagecache = true};
		struct dc_blk_entry un[DC_BLK_OP_MAX] = {};
		struct dc_agg_entry ov[2] = {};

		st.blk_unattributed = un;
		st.unattributed = ov;
		st.n_unattributed = 2;
		buf_reset(&b);
		record_agent(&b, &ctx, &st);
		buf_putc(&b, 0);
		CHECK(strstr(b.data, "\"completion_unseen\":0") &&
			  strstr(b.data, "\"inflight_at_stop\":0") &&
			  strstr(b.data, "\"agg_map_full\":0") && strstr(b.data, "\"page_cache\""),
		      "agent record names every drop counter of every layer");
	}
	buf_free(&b);
	return tap_done();
}

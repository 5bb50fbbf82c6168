// SPDX-License-Identifier: Apache-2.0
#include <stdio.h>

#include "hist.h"
#include "ops.h"
#include "record.h"

const char *record_type_name(enum dc_rec_type t)
{
	switch (t) {
	case DC_REC_FEATURES:
		return "features";
	case DC_REC_AGENT:
		return "agent";
	case DC_REC_DEVICE:
		return "device";
	default:
		return "unknown";
	}
}

static void header(struct dc_json *j, const struct dc_record_ctx *ctx, enum dc_rec_type t)
{
	json_key(j, "schema");
	json_u64(j, DC_RECORD_SCHEMA);
	json_key(j, "type");
	json_str(j, record_type_name(t));
	json_key(j, "host");
	json_str(j, ctx->host);
	json_key(j, "run");
	json_str(j, ctx->run_id);
	json_key(j, "boot");
	json_str(j, ctx->boot_id);
	json_key(j, "window");
	json_u64(j, ctx->w->seq);
	json_key(j, "ts_start");
	json_u64(j, ctx->w->start_real_us);
	json_key(j, "ts_end");
	json_u64(j, ctx->w->end_real_us);
	json_key(j, "duration_us");
	json_u64(j, (ctx->w->end_mono_ns - ctx->w->start_mono_ns) / 1000);
}

static void hist(struct dc_json *j, const char *key, const uint64_t *slots, unsigned n)
{
	unsigned used = hist_used(slots, n);

	json_key(j, key);
	json_arr_begin(j);
	for (unsigned i = 0; i < used; i++)
		json_u64(j, slots[i]);
	json_arr_end(j);
}

static void op_body(struct dc_json *j, const struct dc_op_info *oi, const struct dc_agg_sum *v)
{
	json_obj_begin(j);
	json_key(j, "class");
	json_str(j, ops_class_name(oi->cls));
	json_key(j, "count");
	json_u64(j, v->count);
	json_key(j, "errors");
	json_u64(j, v->errors);
	json_key(j, "bytes");
	json_u64(j, v->bytes);
	json_key(j, "time_ns");
	json_u64(j, v->time_ns);
	json_key(j, "lat_p50_ns");
	json_u64(j, (uint64_t)(hist_quantile(v->lat, DC_LAT_SLOTS, 0.50) + 0.5));
	json_key(j, "lat_p90_ns");
	json_u64(j, (uint64_t)(hist_quantile(v->lat, DC_LAT_SLOTS, 0.90) + 0.5));
	json_key(j, "lat_p99_ns");
	json_u64(j, (uint64_t)(hist_quantile(v->lat, DC_LAT_SLOTS, 0.99) + 0.5));
	hist(j, "lat_hist", v->lat, DC_LAT_SLOTS);
	if (oi->size_src != DC_SZ_NONE)
		hist(j, "size_hist", v->size, DC_SIZE_SLOTS);
	json_obj_end(j);
}

static void quantile(struct dc_json *j, const char *key, const uint64_t *slots, double q)
{
	json_key(j, key);
	json_u64(j, (uint64_t)(hist_quantile(slots, DC_LAT_SLOTS, q) + 0.5));
}

/* The fields of one block op; the caller opens and closes the object. */
static void blk_fields(struct dc_json *j, const struct dc_blk_sum *v, bool hists)
{
	json_key(j, "count");
	json_u64(j, v->count);
	json_key(j, "bytes");
	json_u64(j, v->bytes);
	json_key(j, "queue_ns");
	json_u64(j, v->queue_ns);
	json_key(j, "device_ns");
	json_u64(j, v->device_ns);
	quantile(j, "queue_p50_ns", v->qlat, 0.5);
	quantile(j, "queue_p99_ns", v->qlat, 0.99);
	quantile(j, "device_p50_ns", v->dlat, 0.5);
	quantile(j, "device_p99_ns", v->dlat, 0.99);
	if (hists) {
		hist(j, "queue_hist", v->qlat, DC_LAT_SLOTS);
		hist(j, "device_hist", v->dlat, DC_LAT_SLOTS);
		hist(j, "size_hist", v->size, DC_SIZE_SLOTS);
	}
}

void record_device(struct dc_buf *b, const struct dc_record_ctx *ctx, const char *name,
		   const struct dc_blk_entry *e, size_t n)
{
	struct dc_json j;
	char dev[32];

	snprintf(dev, sizeof(dev), "%u:%u", blk_major(e[0].dev), blk_minor(e[0].dev));
	json_init(&j, b);
	json_obj_begin(&j);
	header(&j, ctx, DC_REC_DEVICE);
	json_key(&j, "dev");
	json_str(&j, dev);
	json_key(&j, "name");
	json_str(&j, name);
	json_key(&j, "ops");
	json_obj_begin(&j);
	for (size_t i = 0; i < n;) {
		struct dc_blk_sum all = {};
		uint64_t kernel_bytes = 0, kernel_count = 0;
		size_t k = i;

		for (; k < n && e[k].op == e[i].op; k++) {
			blk_sum_add(&all, &e[k].v);
			if (!e[k].tgid) {
				kernel_bytes += e[k].v.bytes;
				kernel_count += e[k].v.count;
			}
		}
		json_key(&j, blk_op_name(e[i].op));
		json_obj_begin(&j);
		blk_fields(&j, &all, true);
		/* requests no user process submitted: writeback, journal, ... */
		json_key(&j, "kernel_count");
		json_u64(&j, kernel_count);
		json_key(&j, "kernel_bytes");
		json_u64(&j, kernel_bytes);
		json_obj_end(&j);
		i = k;
	}
	json_obj_end(&j);
	json_obj_end(&j);
	buf_putc(b, '\n');
}

static void pc_fields(struct dc_json *j, const struct dc_pc_val *v, uint64_t page_size)
{
	json_key(j, "added_pages");
	json_u64(j, v->added_pages);
	json_key(j, "dirtied_pages");
	json_u64(j, v->dirtied_pages);
	json_key(j, "removed_pages");
	json_u64(j, v->removed_pages);
	json_key(j, "page_size");
	json_u64(j, page_size);
}

void record_features(struct dc_buf *b, const struct dc_record_ctx *ctx,
		     const struct dc_proc_ident *id, const struct dc_agg_entry *e, size_t n,
		     const struct dc_layers *lay)
{
	const struct dc_blk_sum *blk = lay ? lay->blk : NULL;
	struct dc_features f;
	struct dc_json j;

	featvec_compute(e, n, window_seconds(ctx->w), &f);
	json_init(&j, b);
	json_obj_begin(&j);
	header(&j, ctx, DC_REC_FEATURES);
	json_key(&j, "pid");
	json_u64(&j, id->pid);
	json_key(&j, "comm");
	json_str(&j, id->comm);
	json_key(&j, "cgroup_id");
	json_u64(&j, id->cgroup_id);
	json_key(&j, "cgroup");
	json_str(&j, id->cgroup);

	json_key(&j, "ops");
	json_obj_begin(&j);
	for (size_t i = 0; i < n; i++) {
		const struct dc_op_info *oi = ops_get(e[i].op);

		if (!oi || e[i].op == DC_OP_NONE)
			continue;
		json_key(&j, oi->name);
		op_body(&j, oi, &e[i].v);
	}
	json_obj_end(&j);

	json_key(&j, "totals");
	json_obj_begin(&j);
	json_key(&j, "ops");
	json_u64(&j, f.ops);
	json_key(&j, "errors");
	json_u64(&j, f.errors);
	json_key(&j, "time_ns");
	json_u64(&j, f.time_ns);
	json_key(&j, "read_ops");
	json_u64(&j, f.read_ops);
	json_key(&j, "read_bytes");
	json_u64(&j, f.read_bytes);
	json_key(&j, "read_time_ns");
	json_u64(&j, f.read_time_ns);
	json_key(&j, "write_ops");
	json_u64(&j, f.write_ops);
	json_key(&j, "write_bytes");
	json_u64(&j, f.write_bytes);
	json_key(&j, "write_time_ns");
	json_u64(&j, f.write_time_ns);
	json_key(&j, "metadata_ops");
	json_u64(&j, f.meta_ops);
	json_key(&j, "metadata_time_ns");
	json_u64(&j, f.meta_time_ns);
	json_key(&j, "sync_ops");
	json_u64(&j, f.sync_ops);
	json_key(&j, "sync_time_ns");
	json_u64(&j, f.sync_time_ns);
	json_key(&j, "async_ops");
	json_u64(&j, f.async_ops);
	json_obj_end(&j);

	if (blk) {
		json_key(&j, "block");
		json_obj_begin(&j);
		for (unsigned op = 0; op < DC_BLK_OP_MAX; op++) {
			if (!blk[op].count && !blk[op].bytes)
				continue;
			json_key(&j, blk_op_name(op));
			json_obj_begin(&j);
			blk_fields(&j, &blk[op], false);
			json_obj_end(&j);
		}
		json_obj_end(&j);
	}

	if (lay && lay->libs_on) {
		json_key(&j, "functions");
		json_obj_begin(&j);
		for (size_t i = 0; i < lay->n_libs; i++) {
			const struct dc_lib_stat *l = &lay->libs[i];

			json_key(&j, l->feature);
			json_obj_begin(&j);
			json_key(&j, "count");
			json_u64(&j, l->count);
			json_key(&j, "time_ns");
			json_u64(&j, l->time_ns);
			json_key(&j, "bytes");
			json_u64(&j, l->bytes);
			json_key(&j, "errors");
			json_u64(&j, l->errors);
			quantile(&j, "lat_p50_ns", l->lat, 0.5);
			quantile(&j, "lat_p99_ns", l->lat, 0.99);
			hist(&j, "lat_hist", l->lat, DC_LAT_SLOTS);
			json_obj_end(&j);
		}
		json_obj_end(&j);
	}

	if (lay && lay->pc_on) {
		static const struct dc_pc_val none;
		const struct dc_pc_val *pc = lay->pc ? lay->pc : &none;
		/* pages a write created are added and dirtied; the rest were read in */
		uint64_t added =
		    (pc->added_pages > pc->dirtied_pages ? pc->added_pages - pc->dirtied_pages
							 : 0) *
		    lay->page_size;

		json_key(&j, "page_cache");
		json_obj_begin(&j);
		pc_fields(&j, pc, lay->page_size);
		/* estimates: the bytes read that did not have to be brought in */
		json_key(&j, "read_hit_bytes_est");
		json_u64(&j, f.read_bytes > added ? f.read_bytes - added : 0);
		json_key(&j, "read_miss_bytes_est");
		json_u64(&j, f.read_bytes < added ? f.read_bytes : added);
		json_obj_end(&j);
	}

	json_key(&j, "derived");
	json_obj_begin(&j);
	json_key(&j, "read_bw");
	json_double(&j, f.read_bw);
	json_key(&j, "write_bw");
	json_double(&j, f.write_bw);
	json_key(&j, "read_bw_io");
	json_double(&j, f.read_bw_io);
	json_key(&j, "write_bw_io");
	json_double(&j, f.write_bw_io);
	json_key(&j, "iops");
	json_double(&j, f.iops);
	json_key(&j, "ops_per_sec");
	json_double(&j, f.ops_per_sec);
	json_key(&j, "metadata_share");
	json_double(&j, f.meta_share);
	json_key(&j, "metadata_time_share");
	json_double(&j, f.meta_time_share);
	json_obj_end(&j);

	json_obj_end(&j);
	buf_putc(b, '\n');
}

static const char *const counter_names[DC_CNT_MAX] = {
    [DC_CNT_AGG_FULL] = "agg_map_full",
    [DC_CNT_STASH_FAIL] = "entry_stash_full",
    [DC_CNT_NO_ENTRY] = "exit_without_entry",
    [DC_CNT_PROC_FAIL] = "proc_map_full",
};

static void fn_drops(struct dc_json *j, const char *family, const uint64_t *c)
{
	json_key(j, family);
	json_obj_begin(j);
	json_key(j, "drops");
	json_obj_begin(j);
	json_key(j, "agg_map_full");
	json_u64(j, c[DC_FN_CNT_AGG_FULL]);
	json_key(j, "too_deep");
	json_u64(j, c[DC_FN_CNT_TOO_DEEP]);
	json_key(j, "return_without_entry");
	json_u64(j, c[DC_FN_CNT_NO_ENTRY]);
	json_key(j, "orphan_entries");
	json_u64(j, c[DC_FN_CNT_ORPHAN]);
	json_obj_end(j);
	json_obj_end(j);
}

void record_agent(struct dc_buf *b, const struct dc_record_ctx *ctx, const struct dc_agent_stats *s)
{
	struct dc_json j;

	json_init(&j, b);
	json_obj_begin(&j);
	header(&j, ctx, DC_REC_AGENT);
	json_key(&j, "version");
	json_str(&j, s->version);
	json_key(&j, "events");
	json_u64(&j, s->events);
	json_key(&j, "records");
	json_u64(&j, s->records);
	json_key(&j, "keys");
	json_u64(&j, s->keys);

	json_key(&j, "drops");
	json_obj_begin(&j);
	for (unsigned i = 0; i < DC_CNT_MAX; i++) {
		json_key(&j, counter_names[i]);
		json_u64(&j, s->counters[i]);
	}
	json_key(&j, "recursion_misses");
	json_u64(&j, s->recursion_misses);
	json_obj_end(&j);

	/* totals of the calls that overflowed the window map: not attributed
	 * to a process, but not lost either */
	json_key(&j, "unattributed");
	json_obj_begin(&j);
	for (size_t i = 0; i < s->n_unattributed; i++) {
		const struct dc_op_info *oi = ops_get(s->unattributed[i].op);

		if (!oi || !s->unattributed[i].v.count)
			continue;
		json_key(&j, oi->name);
		op_body(&j, oi, &s->unattributed[i].v);
	}
	json_obj_end(&j);

	json_key(&j, "cost");
	json_obj_begin(&j);
	json_key(&j, "flip_us");
	json_u64(&j, s->flip_us);
	json_key(&j, "drain_us");
	json_u64(&j, s->drain_us);
	json_key(&j, "encode_us");
	json_u64(&j, s->encode_us);
	json_key(&j, "cpu_user_us");
	json_u64(&j, s->cpu_user_us);
	json_key(&j, "cpu_sys_us");
	json_u64(&j, s->cpu_sys_us);
	json_key(&j, "cpu_share");
	json_double(&j, s->cpu_share);
	json_key(&j, "rss_kib");
	json_u64(&j, s->rss_kib);
	json_obj_end(&j);

	if (s->block) {
		static const char *const blk_counter_names[DC_BLK_CNT_MAX] = {
		    [DC_BLK_CNT_AGG_FULL] = "agg_map_full",
		    [DC_BLK_CNT_NO_ISSUE] = "completion_without_issue",
		    [DC_BLK_CNT_RQ_FULL] = "inflight_map_full",
		    [DC_BLK_CNT_NO_ORIGIN] = "issue_without_bio",
		    [DC_BLK_CNT_UNSEEN] = "completion_unseen",
		};

		json_key(&j, "block");
		json_obj_begin(&j);
		json_key(&j, "drops");
		json_obj_begin(&j);
		for (unsigned i = 0; i < DC_BLK_CNT_MAX; i++) {
			json_key(&j, blk_counter_names[i]);
			json_u64(&j, s->blk_counters[i]);
		}
		json_key(&j, "recursion_misses");
		json_u64(&j, s->blk_recursion_misses);
		json_key(&j, "inflight_at_stop");
		json_u64(&j, s->blk_inflight_at_stop);
		json_obj_end(&j);
		json_key(&j, "unattributed");
		json_obj_begin(&j);
		for (unsigned op = 0; op < DC_BLK_OP_MAX && s->blk_unattributed; op++) {
			if (!s->blk_unattributed[op].v.count && !s->blk_unattributed[op].v.bytes)
				continue;
			json_key(&j, blk_op_name(op));
			json_obj_begin(&j);
			json_key(&j, "count");
			json_u64(&j, s->blk_unattributed[op].v.count);
			json_key(&j, "bytes");
			json_u64(&j, s->blk_unattributed[op].v.bytes);
			json_obj_end(&j);
		}
		json_obj_end(&j);
		json_obj_end(&j);
	}

	if (s->libraries)
		fn_drops(&j, "libraries", s->up_counters);
	if (s->vfs)
		fn_drops(&j, "vfs", s->vfs_counters);

	if (s->pagecache) {
		json_key(&j, "page_cache");
		json_obj_begin(&j);
		json_key(&j, "drops");
		json_obj_begin(&j);
		json_key(&j, "agg_map_full");
		json_u64(&j, s->pc_counters[DC_PC_CNT_AGG_FULL]);
		json_key(&j, "recursion_misses");
		json_u64(&j, s->pc_recursion_misses);
		json_obj_end(&j);
		json_key(&j, "kernel");
		json_obj_begin(&j);
		pc_fields(&j, &s->pc_kernel, 0);
		json_obj_end(&j);
		json_key(&j, "unattributed");
		json_obj_begin(&j);
		pc_fields(&j, &s->pc_unattributed, 0);
		json_obj_end(&j);
		json_obj_end(&j);
	}

	json_key(&j, "sinks");
	json_obj_begin(&j);
	if (s->sinks)
		s->sinks(&j, s->sinks_opaque);
	json_obj_end(&j);

	json_key(&j, "maps");
	json_obj_begin(&j);
	json_key(&j, "max_keys");
	json_u64(&j, s->max_keys);
	json_key(&j, "layout");
	json_str(&j, s->map_layout);
	json_obj_end(&j);

	json_key(&j, "probes");
	json_arr_begin(&j);
	for (size_t i = 0; i < s->n_probes; i++) {
		json_obj_begin(&j);
		json_key(&j, "name");
		json_str(&j, s->probes[i].name);
		json_key(&j, "mechanism");
		json_str(&j, s->probes[i].mechanism);
		json_key(&j, "detail");
		json_str(&j, s->probes[i].detail);
		json_obj_end(&j);
	}
	json_arr_end(&j);

	json_obj_end(&j);
	buf_putc(b, '\n');
}

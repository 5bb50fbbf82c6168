// SPDX-License-Identifier: Apache-2.0
#include <stdio.h>

#include "hist.h"
#include "ops.h"
#include "record.h"
#include "tracefmt.h"

const char *record_type_name(enum dc_rec_type t)
{
	switch (t) {
	case DC_REC_FEATURES:
		return "features";
	case DC_REC_AGENT:
		return "agent";
	case DC_REC_DEVICE:
		return "device";
	case DC_REC_FILE:
		return "file";
	case DC_REC_FILENAME:
		return "filename";
	case DC_REC_TRACE:
		return "trace";
	case DC_REC_STACKS:
		return "stacks";
	default:
		return "unknown";
	}
}

const char *lacks_name(enum dc_lacks_bit l)
{
	static const char *const names[DC_LACKS_MAX] = {
	    [DC_LACKS_FILES] = "files",		  [DC_LACKS_BLOCK] = "block",
	    [DC_LACKS_PAGE_CACHE] = "page_cache", [DC_LACKS_IO_URING] = "io_uring",
	    [DC_LACKS_LIBRARIES] = "libraries",	  [DC_LACKS_VFS] = "vfs",
	};

	return (unsigned)l < DC_LACKS_MAX ? names[l] : "unknown";
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
	json_key(j, "file_faults");
	json_u64(j, v->file_faults);
	json_key(j, "fault_arounds");
	json_u64(j, v->fault_arounds);
	json_key(j, "page_size");
	json_u64(j, page_size);
}

/* "key": {name: {count, time_ns, bytes, errors, quantiles, histogram}, ...}:
 * function-level layers and io_uring opcodes alike. */
static void stat_objects(struct dc_json *j, const char *key, const struct dc_lib_stat *st, size_t n)
{
	json_key(j, key);
	json_obj_begin(j);
	for (size_t i = 0; i < n; i++) {
		json_key(j, st[i].feature);
		json_obj_begin(j);
		json_key(j, "count");
		json_u64(j, st[i].count);
		json_key(j, "time_ns");
		json_u64(j, st[i].time_ns);
		json_key(j, "bytes");
		json_u64(j, st[i].bytes);
		json_key(j, "errors");
		json_u64(j, st[i].errors);
		quantile(j, "lat_p50_ns", st[i].lat, 0.5);
		quantile(j, "lat_p99_ns", st[i].lat, 0.99);
		hist(j, "lat_hist", st[i].lat, DC_LAT_SLOTS);
		json_obj_end(j);
	}
	json_obj_end(j);
}

/* Darshan's counters, named as Darshan names them (lower case, no prefix). */
static void access_fields(struct dc_json *j, const struct dc_file_sum *s)
{
	static const struct {
		const char *name;
		size_t off;
	} f[] = {
#define A(field, name) {name, offsetof(struct dc_file_sum, field)}
	    A(files, "files"),
	    A(opens, "opens"),
	    A(read_ops, "reads"),
	    A(write_ops, "writes"),
	    A(read_bytes, "bytes_read"),
	    A(write_bytes, "bytes_written"),
	    A(read_time_ns, "read_time_ns"),
	    A(write_time_ns, "write_time_ns"),
	    A(meta_ops, "meta_ops"),
	    A(meta_time_ns, "meta_time_ns"),
	    A(sync_ops, "fsyncs"),
	    A(sync_time_ns, "fsync_time_ns"),
	    A(errors, "errors"),
	    A(seq_reads, "seq_reads"),
	    A(seq_writes, "seq_writes"),
	    A(consec_reads, "consec_reads"),
	    A(consec_writes, "consec_writes"),
	    A(rw_switches, "rw_switches"),
	    A(file_unaligned, "file_not_aligned"),
	    A(mem_unaligned, "mem_not_aligned"),
#undef A
	};

	for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++) {
		json_key(j, f[i].name);
		json_u64(j, *(const uint64_t *)((const char *)s + f[i].off));
	}
	/* Darshan's MAX_BYTE_*: the highest byte offset touched, -1 for none */
	json_key(j, "max_byte_read");
	json_i64(j, s->max_read_end ? (int64_t)s->max_read_end - 1 : -1);
	json_key(j, "max_byte_written");
	json_i64(j, s->max_write_end ? (int64_t)s->max_write_end - 1 : -1);
	for (int w = 0; w < 2; w++) {
		const uint64_t *b = w ? s->write_size : s->read_size;

		json_key(j, w ? "size_write" : "size_read");
		json_obj_begin(j);
		for (unsigned i = 0; i < DC_DARSHAN_BUCKETS; i++) {
			json_key(j, file_bucket_name(i));
			json_u64(j, b[i]);
		}
		json_obj_end(j);
	}
}

/* (boot, pid, proc_start_ns) names one process: a pid alone may be a later
 * one's */
static void start_field(struct dc_json *j, const struct dc_proc_ident *id)
{
	if (!id->start_ns)
		return;
	json_key(j, "proc_start_ns");
	json_u64(j, id->start_ns);
}

static void ident(struct dc_json *j, const struct dc_proc_ident *id)
{
	json_key(j, "pid");
	json_u64(j, id->pid);
	json_key(j, "comm");
	json_str(j, id->comm);
	json_key(j, "cgroup_id");
	json_u64(j, id->cgroup_id);
	json_key(j, "cgroup");
	json_str(j, id->cgroup);
}

static void dev_field(struct dc_json *j, uint32_t dev)
{
	char s[32];

	/* the kernel's internal dev_t: 12-bit major above a 20-bit minor */
	snprintf(s, sizeof(s), "%u:%u", dev >> 20, dev & 0xfffff);
	json_key(j, "dev");
	json_str(j, s);
}

void record_file(struct dc_buf *b, const struct dc_record_ctx *ctx, const struct dc_proc_ident *id,
		 const struct dc_file_entry *e, const char *fhash)
{
	struct dc_json j;

	json_init(&j, b);
	json_obj_begin(&j);
	header(&j, ctx, DC_REC_FILE);
	ident(&j, id);
	start_field(&j, id);
	json_key(&j, "fhash");
	if (fhash[0])
		json_str(&j, fhash);
	else
		json_null(&j);
	dev_field(&j, e->dev);
	json_key(&j, "ino");
	json_u64(&j, e->ino);
	json_key(&j, "igen");
	json_u64(&j, e->igen);
	access_fields(&j, &e->v);
	json_obj_end(&j);
	buf_putc(b, '\n');
}

void record_filename(struct dc_buf *b, const struct dc_record_ctx *ctx, const char *fhash,
		     const char *path, bool truncated, uint32_t dev, uint64_t ino, uint32_t igen)
{
	struct dc_json j;

	json_init(&j, b);
	json_obj_begin(&j);
	header(&j, ctx, DC_REC_FILENAME);
	json_key(&j, "fhash");
	json_str(&j, fhash);
	json_key(&j, "path");
	json_str(&j, path);
	json_key(&j, "truncated");
	json_bool(&j, truncated);
	dev_field(&j, dev);
	json_key(&j, "ino");
	json_u64(&j, ino);
	json_key(&j, "igen");
	json_u64(&j, igen);
	json_obj_end(&j);
	buf_putc(b, '\n');
}

static void job_member(struct dc_json *j, const char *key, const char *val)
{
	if (!val[0])
		return;
	json_key(j, key);
	json_str(j, val);
}

/* Only the members found: a consumer tests for a key, never for a value. */
static void job_fields(struct dc_json *j, const struct dc_jobid *job)
{
	json_key(j, "job");
	json_obj_begin(j);
	if (job) {
		job_member(j, "unit", job->unit);
		job_member(j, "slice", job->slice);
		job_member(j, "container", job->container);
		job_member(j, "pod", job->pod);
		job_member(j, "slurm_job", job->slurm_job);
		job_member(j, "flux_job", job->flux_job);
	}
	json_obj_end(j);
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
	if (id->uid_known) {
		json_key(&j, "uid");
		json_u64(&j, id->uid);
	}
	json_key(&j, "exe");
	json_str(&j, id->exe ? id->exe : "");
	start_field(&j, id);
	json_key(&j, "cgroup_id");
	json_u64(&j, id->cgroup_id);
	json_key(&j, "cgroup");
	json_str(&j, id->cgroup);
	job_fields(&j, id->job);
	/* only where something is missing: the common window stays as short */
	if (lay && lay->lacks) {
		json_key(&j, "lacks");
		json_arr_begin(&j);
		for (unsigned l = 0; l < DC_LACKS_MAX; l++)
			if (lay->lacks & (1u << l))
				json_str(&j, lacks_name(l));
		json_arr_end(&j);
	}
	if (lay && (lay->lost_map_full || lay->lost_recursion)) {
		json_key(&j, "window_losses");
		json_obj_begin(&j);
		json_key(&j, "map_full");
		json_u64(&j, lay->lost_map_full);
		json_key(&j, "recursion_misses");
		json_u64(&j, lay->lost_recursion);
		json_obj_end(&j);
	}

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
	json_key(&j, "copy_ops");
	json_u64(&j, f.copy_ops);
	json_key(&j, "copy_bytes");
	json_u64(&j, f.copy_bytes);
	json_key(&j, "copy_time_ns");
	json_u64(&j, f.copy_time_ns);
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

	if (lay && lay->libs_on)
		stat_objects(&j, "functions", lay->libs, lay->n_libs);
	if (lay && lay->uring_on)
		stat_objects(&j, "io_uring", lay->uring, lay->n_uring);

	if (lay && lay->pc_on) {
		static const struct dc_pc_val none;
		const struct dc_pc_val *pc = lay->pc ? lay->pc : &none;
		/* pages a write created are added and dirtied; the rest were read
		 * in. O_DIRECT reads add none: what the process read from its
		 * devices counts as missed too, where the block layer runs */
		uint64_t added =
		    (pc->added_pages > pc->dirtied_pages ? pc->added_pages - pc->dirtied_pages
							 : 0) *
		    lay->page_size;

		/* the reads a page cache can serve: of files, where the file
		 * layer tells them apart (pipes and sockets are no hits) */
		uint64_t rd =
		    lay->files_on ? (lay->access ? lay->access->read_bytes : 0) : f.read_bytes;

		if (blk && blk[DC_BLK_READ].bytes > added)
			added = blk[DC_BLK_READ].bytes;

		json_key(&j, "page_cache");
		json_obj_begin(&j);
		pc_fields(&j, pc, lay->page_size);
		/* estimates: the bytes read that did not have to be brought in */
		json_key(&j, "read_hit_bytes_est");
		json_u64(&j, rd > added ? rd - added : 0);
		json_key(&j, "read_miss_bytes_est");
		json_u64(&j, rd < added ? rd : added);
		json_obj_end(&j);
	}

	if (lay && lay->files_on) {
		static const struct dc_file_sum none;

		json_key(&j, "access");
		json_obj_begin(&j);
		access_fields(&j, lay->access ? lay->access : &none);
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
	json_key(&j, "copy_bw");
	json_double(&j, f.copy_bw);
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

/* NULL: a counter published outside "drops" (filtered calls are no loss) */
static const char *const counter_names[DC_CNT_MAX] = {
    [DC_CNT_AGG_FULL] = "agg_map_full",
    [DC_CNT_STASH_FAIL] = "entry_stash_full",
    [DC_CNT_NO_ENTRY] = "exit_without_entry",
    [DC_CNT_PROC_FAIL] = "proc_map_full",
    [DC_CNT_NOT_RESTARTED] = "interrupted_not_restarted",
};

/* irq: the family's calls in interrupt context, listed (maybe none) when
 * the family can see such calls at all (the VFS layer) */
static void fn_drops(struct dc_json *j, const char *family, const uint64_t *c, bool irq_seen,
		     const struct dc_lib_stat *irq, size_t n_irq)
{
	json_key(j, family);
	json_obj_begin(j);
	json_key(j, "filtered");
	json_u64(j, c[DC_FN_CNT_FILTERED]);
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
	if (irq_seen)
		stat_objects(j, "interrupts", irq, n_irq);
	json_obj_end(j);
}

static const char *const stk_counter_names[DC_STK_CNT_MAX] = {
    [DC_STK_CNT_KEY_FULL] = "key_map_full",
    [DC_STK_CNT_USTACK_LOST] = "user_stacks_lost",
    [DC_STK_CNT_KSTACK_LOST] = "kernel_stacks_lost",
    [DC_STK_CNT_KSTACK_STALE] = "kernel_stacks_stale",
    [DC_STK_CNT_CAPTURES] = "kernel_captures",
    [DC_STK_CNT_ANNOUNCED] = "processes_announced",
    [DC_STK_CNT_ANNOUNCE_LOST] = "announcements_lost",
};

static void stacks_agent_fields(struct dc_json *j, const struct stacks_drain *d)
{
	json_key(j, "stacks");
	json_obj_begin(j);
	json_key(j, "keys");
	json_u64(j, d->keys);
	json_key(j, "rows");
	json_u64(j, d->n);
	for (unsigned i = 0; i < DC_STK_CNT_MAX; i++) {
		json_key(j, stk_counter_names[i]);
		json_u64(j, d->counters[i]);
	}
	json_key(j, "unattributed");
	json_obj_begin(j);
	json_key(j, "count");
	json_u64(j, d->unattributed_count);
	json_key(j, "time_ns");
	json_u64(j, d->unattributed_time_ns);
	json_key(j, "bytes");
	json_u64(j, d->unattributed_bytes);
	json_obj_end(j);
	json_key(j, "caller_fixups");
	json_u64(j, d->caller_fixups);
	json_key(j, "kallsyms_reads");
	json_u64(j, d->kallsyms_reads);
	json_key(j, "flip_us");
	json_u64(j, d->flip_us);
	json_key(j, "drain_us");
	json_u64(j, d->drain_us);
	json_key(j, "symbolize_us");
	json_u64(j, d->symbolize_us);
	json_key(j, "symbols");
	json_obj_begin(j);
	json_key(j, "elf_loads");
	json_u64(j, d->sym.elf_loads);
	json_key(j, "elf_evictions");
	json_u64(j, d->sym.elf_evictions);
	json_key(j, "elf_failures");
	json_u64(j, d->sym.elf_failures);
	json_key(j, "maps_reads");
	json_u64(j, d->sym.maps_reads);
	json_key(j, "maps_failures");
	json_u64(j, d->sym.maps_failures);
	json_key(j, "cache_bytes");
	json_u64(j, d->sym.cache_bytes);
	json_key(j, "processes");
	json_u64(j, d->sym.pids);
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
	json_key(&j, "filtered");
	json_u64(&j, s->counters[DC_CNT_FILTERED]);
	json_key(&j, "compat_calls");
	json_u64(&j, s->counters[DC_CNT_COMPAT]);

	json_key(&j, "drops");
	json_obj_begin(&j);
	for (unsigned i = 0; i < DC_CNT_MAX; i++) {
		if (!counter_names[i])
			continue;
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
	json_key(&j, "rss_anon_kib");
	json_u64(&j,
		 s->rss_kib - (s->rss_shared_kib < s->rss_kib ? s->rss_shared_kib : s->rss_kib));
	json_key(&j, "rss_shared_kib");
	json_u64(&j, s->rss_shared_kib);
	json_key(&j, "bpf_run_ns");
	json_u64(&j, s->bpf_run_ns);
	json_key(&j, "bpf_share");
	json_double(&j, s->bpf_share);
	json_key(&j, "total_share");
	json_double(&j, s->total_share);
	json_key(&j, "node_share");
	json_double(&j, s->node_share);
	json_key(&j, "bpf_stats");
	json_str(&j, s->bpf_stats ? s->bpf_stats : "off");
	json_obj_end(&j);
	if (s->self)
		s->self(&j, s->self_opaque);

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
		json_key(&j, "filtered");
		json_u64(&j, s->blk_counters[DC_BLK_CNT_FILTERED]);
		json_key(&j, "requests_spilled");
		json_u64(&j, s->blk_counters[DC_BLK_CNT_RQ_SPILLED]);
		json_key(&j, "drops");
		json_obj_begin(&j);
		for (unsigned i = 0; i < DC_BLK_CNT_MAX; i++) {
			if (!blk_counter_names[i])
				continue;
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
		fn_drops(&j, "libraries", s->up_counters, false, NULL, 0);
	if (s->vfs)
		fn_drops(&j, "vfs", s->vfs_counters, true, s->vfs_interrupts, s->n_vfs_interrupts);

	if (s->uring) {
		const struct dc_lib_stat *u = &s->ur_unattributed;

		json_key(&j, "io_uring");
		json_obj_begin(&j);
		json_key(&j, "filtered");
		json_u64(&j, s->ur_counters[DC_UR_CNT_FILTERED]);
		json_key(&j, "drops");
		json_obj_begin(&j);
		json_key(&j, "agg_map_full");
		json_u64(&j, s->ur_counters[DC_UR_CNT_AGG_FULL]);
		json_key(&j, "completion_without_submit");
		json_u64(&j, s->ur_counters[DC_UR_CNT_NO_SUBMIT]);
		json_key(&j, "inflight_map_full");
		json_u64(&j, s->ur_counters[DC_UR_CNT_INFLIGHT_FULL]);
		json_key(&j, "recursion_misses");
		json_u64(&j, s->ur_recursion_misses);
		json_obj_end(&j);
		json_key(&j, "unattributed");
		json_obj_begin(&j);
		json_key(&j, "count");
		json_u64(&j, u->count);
		json_key(&j, "errors");
		json_u64(&j, u->errors);
		json_key(&j, "bytes");
		json_u64(&j, u->bytes);
		json_key(&j, "time_ns");
		json_u64(&j, u->time_ns);
		json_obj_end(&j);
		json_obj_end(&j);
	}

	if (s->traces) {
		const struct traces_window *t = &s->tr_window;

		json_key(&j, "traces");
		json_obj_begin(&j);
		/* per window, exactly: seen = kept + sampled_out + dropped */
		json_key(&j, "seen");
		json_u64(&j, s->tr_seen);
		json_key(&j, "kept");
		json_u64(&j, s->tr_kept);
		json_key(&j, "sampled_out");
		json_u64(&j, s->tr_out);
		json_key(&j, "dropped");
		json_u64(&j, s->tr_drop);
		json_key(&j, "events");
		json_u64(&j, t->events);
		json_key(&j, "metadata_records");
		json_u64(&j, t->meta_records);
		json_key(&j, "weight_sum");
		json_u64(&j, t->weight_sum);
		json_key(&j, "raw_bytes");
		json_u64(&j, t->raw_bytes);
		json_key(&j, "zstd_bytes");
		json_u64(&j, t->zstd_bytes);
		json_key(&j, "sealed_early");
		json_u64(&j, t->too_many);
		json_key(&j, "unreadable");
		json_u64(&j, t->unknown);
		/* the other layers keep full workloads' and slow calls only
		 * (docs/traces.md); seen = kept + sampled_out + dropped */
		json_key(&j, "layers");
		json_obj_begin(&j);
		for (unsigned l = DC_LAYER_SYSCALL + 1; l < DC_LAYER_MAX; l++) {
			const uint64_t *o = t->layers[l];

			json_key(&j, trace_layer_name(l));
			json_obj_begin(&j);
			json_key(&j, "seen");
			json_u64(&j, o[DC_TR_KEPT] + o[DC_TR_SAMPLED_OUT] + o[DC_TR_DROPPED]);
			json_key(&j, "kept");
			json_u64(&j, o[DC_TR_KEPT]);
			json_key(&j, "sampled_out");
			json_u64(&j, o[DC_TR_SAMPLED_OUT]);
			json_key(&j, "dropped");
			json_u64(&j, o[DC_TR_DROPPED]);
			json_obj_end(&j);
		}
		json_obj_end(&j);
		json_obj_end(&j);
	}

	if (s->stacks)
		stacks_agent_fields(&j, s->stacks);

	if (s->files) {
		static const struct dc_file_sum none;

		json_key(&j, "files");
		json_obj_begin(&j);
		json_key(&j, "names");
		json_u64(&j, s->file_names);
		json_key(&j, "max_keys");
		json_u64(&j, s->file_max_keys);
		json_key(&j, "slots_in_use");
		json_u64(&j, s->file_slots_in_use);
		json_key(&j, "slots_reclaimed");
		json_u64(&j, s->file_slots_reclaimed);
		json_key(&j, "slots_reclaimed_exited");
		json_u64(&j, s->file_slots_reclaimed_exited);
		json_key(&j, "drops");
		json_obj_begin(&j);
		json_key(&j, "agg_map_full");
		json_u64(&j, s->file_counters[DC_FILE_CNT_AGG_FULL]);
		json_key(&j, "names_lost");
		json_u64(&j, s->file_counters[DC_FILE_CNT_PATH_LOST]);
		json_key(&j, "names_not_kept");
		json_u64(&j, s->file_names_not_kept);
		json_obj_end(&j);
		json_key(&j, "unattributed");
		json_obj_begin(&j);
		access_fields(&j, s->file_unattributed ? s->file_unattributed : &none);
		json_obj_end(&j);
		json_obj_end(&j);
	}

	if (s->pagecache) {
		json_key(&j, "page_cache");
		json_obj_begin(&j);
		json_key(&j, "filtered");
		json_u64(&j, s->pc_counters[DC_PC_CNT_FILTERED]);
		json_key(&j, "drops");
		json_obj_begin(&j);
		json_key(&j, "agg_map_full");
		json_u64(&j, s->pc_counters[DC_PC_CNT_AGG_FULL]);
		json_key(&j, "recursion_misses");
		json_u64(&j, s->pc_recursion_misses);
		json_obj_end(&j);
		json_key(&j, "kernel");
		json_obj_begin(&j);
		pc_fields(&j, &s->pc_kernel, s->pc_page_size);
		json_obj_end(&j);
		json_key(&j, "unattributed");
		json_obj_begin(&j);
		pc_fields(&j, &s->pc_unattributed, s->pc_page_size);
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
	json_key(&j, "slots_in_use");
	json_u64(&j, s->slots_in_use);
	json_key(&j, "slots_reclaimed");
	json_u64(&j, s->slots_reclaimed);
	json_key(&j, "slots_reclaimed_exited");
	json_u64(&j, s->slots_reclaimed_exited);
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

void record_stacks(struct dc_buf *b, const struct dc_record_ctx *ctx,
		   const struct dc_proc_ident *id, const struct stack_row *rows, size_t n,
		   const struct stack_object *objs, size_t n_objs)
{
	struct dc_json j;

	json_init(&j, b);
	json_obj_begin(&j);
	header(&j, ctx, DC_REC_STACKS);
	ident(&j, id);
	json_key(&j, "exe");
	json_str(&j, id->exe ? id->exe : "");
	start_field(&j, id);
	job_fields(&j, id->job);
	json_key(&j, "stacks");
	json_arr_begin(&j);
	for (size_t i = 0; i < n; i++) {
		const struct dc_op_info *oi = ops_get(rows[i].op);

		json_obj_begin(&j);
		json_key(&j, "op");
		json_str(&j, oi ? oi->name : "unknown");
		json_key(&j, "count");
		json_u64(&j, rows[i].count);
		json_key(&j, "time_ns");
		json_u64(&j, rows[i].time_ns);
		json_key(&j, "bytes");
		json_u64(&j, rows[i].bytes);
		json_key(&j, "stack");
		json_str(&j, rows[i].stack);
		json_obj_end(&j);
	}
	json_arr_end(&j);
	/* objects some frame could not be named in: "name+0xoffset" frames */
	json_key(&j, "objects");
	json_obj_begin(&j);
	for (size_t i = 0; i < n_objs; i++) {
		json_key(&j, objs[i].name);
		json_obj_begin(&j);
		json_key(&j, "path");
		json_str(&j, objs[i].path);
		json_key(&j, "build_id");
		json_str(&j, objs[i].build_id);
		json_obj_end(&j);
	}
	json_obj_end(&j);
	json_obj_end(&j);
	buf_putc(b, '\n');
}

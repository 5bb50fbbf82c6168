// SPDX-License-Identifier: Apache-2.0
#include <assert.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <math.h>
#include <limits.h>
#include <malloc.h>
#include <signal.h>
#include <sys/epoll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-daemon.h>
#include <systemd/sd-event.h>
#include <time.h>
#include <unistd.h>

#include "budget.h"
#include "cgroup.h"
#include "filter.h"
#include "fs-util.h"
#include "jobpool.h"
#include "log.h"
#include "macro.h"
#include "manager.h"
#include "probe-block.h"
#include "probe-pagecache.h"
#include "probe-uring.h"
#include "probe-uprobe.h"
#include "datacrumbs/vfs.h"
#include "preempt.h"
#include "probe-vfs.h"
#include "probe-file.h"
#include "slotmap.h"
#include "traces.h"
#include "stacks.h"
#include "probe-syscall.h"
#include "procstat.h"
#include "record.h"
#include "selfcost.h"
#include "selfstat.h"
#include "uring-ops.h"
#include "sink.h"
#include "window.h"
#include "winmap.h"

/* What a sink may hold for retry when its destination fails (disk full). */
#define SINK_MAX_PENDING (64u << 20)

/* a process's key in a window: (tgid, cgroup) */
struct proc_key {
	uint64_t cgroup_id;
	uint32_t tgid;
};

struct manager {
	struct dc_config cfg;
	struct jobpool *pool; /* the window's drains, side by side */
	sd_event *event;
	sd_event_source *timer;
	struct probe_syscall *sys;
	int clock_fd;		    /* every family's windows' clock (winclock_new()) */
	struct probe_block *blk;    /* NULL when probes.block.enable is false */
	struct probe_pagecache *pc; /* likewise */
	struct probe_uprobe *up;    /* NULL when no library is configured */
	struct probe_vfs *vfs;	    /* NULL when off or refused by the kernel */
	struct probe_file *files;   /* owned by sys; NULL when the file layer is off */
	sd_event_source *files_io;
	const struct dc_file_drain *fres; /* the window being published */
	struct fhash_seen *fh_seen;	  /* names already published this run */
	struct dc_lib_stat *libstats;
	size_t libstats_cap;
	struct probe_uring *ur;			     /* NULL when off or refused by the kernel */
	const struct dc_uring_drain *urd;	     /* the window being published */
	struct dc_lib_stat urstats[DC_URING_OP_MAX]; /* scratch: one process's opcodes */
	char urnames[DC_URING_OP_MAX][8];	     /* "op_<n>" of opcodes the table lacks */
	uint64_t page_size;
	char vfs_detail[512]; /* why the VFS layer is off, when it is */
	/* scratch: processes seen only by the other layers; keys alone (an
	 * aggregate entry, histograms and all, took 2.7 MB here after a
	 * storm of 100,000 files, held for the agent's life) */
	struct proc_key *only;
	size_t only_cap;
	struct cgroup_cache *cgroups;
	struct dc_filter *filter; /* filter.*, resolved at start; each probe loads its own copy */
	struct dc_sink *sinks[2]; /* file, kafka: each optional */
	/* records a failing output file still held at a reload, for the next */
	struct dc_buf carry;
	uint64_t carry_records;
	struct sink_tail carry_tail; /* the end of a record at its front */
	size_t n_sinks;
	struct dc_sink *kafka;	     /* borrowed from sinks[]: it takes trace batches too */
	struct dc_sink *trace_files; /* NULL when traces.output.dir is "" */
	struct traces *traces;	     /* made before the families load; NULL when traces are off */
	sd_event_source *traces_io, *traces_timer;
	sd_event_source *stats_timer; /* switches sampled BPF statistics on, then off */
	uint64_t stats_on_for_ns;
	bool stats_switched_on;	    /* this window's sample has begun */
	sd_event_source *stacks_io; /* processes announced for symbolization */
	uint64_t traces_flush_usec;
	uint64_t trace_next_id; /* kept across a restart of the syscall family */
	struct dc_buf tbatch;
	/* supervision */
	int (*reload_load)(void *ctx, struct dc_config *out);
	void *reload_ctx;
	char reload_error[160];	    /* why the last reload did not take, for STATUS= */
	char self_cgroup[PATH_MAX]; /* the agent's cgroup2 path ("" unknown) */
	sd_event_source *watchdog;
	uint64_t watchdog_usec, last_close_usec, status_usec;
	unsigned watchdog_warned;
	uint64_t windows_published;
	double last_rate;
	uint64_t closing_seq;	    /* the window being closed, for the flip threads */
	struct traces_window tstat; /* what the window's sealed batches held */
	struct dc_windows win;
	char host[256];
	char run_id[40];
	char boot_id[40];
	struct dc_buf rec;
	struct dc_selfstat self;
	struct selfcost *cost;
	struct dc_budget *budget;
	unsigned budget_level;	       /* in force: what the running probes reflect */
	bool budget_trial;	       /* and it was a trial step back (budget.h) */
	uint64_t budget_switch_ns;     /* CPU the last change of level took (attach, detach) */
	uint64_t budget_switch_us_pub; /* the same, for the next window's record */
	bool vfs_attached;	       /* the VFS layer attached under this configuration */
	unsigned lacked; /* layers_lacking() at the window's start, and at any change since */
	/* the window being published: its lacks and its losses.*, told to
	 * each of its features records */
	unsigned win_lacks;
	uint64_t win_map_full, win_recursion;
	/* families (FAM_LIBS, FAM_VFS) the budget gave back, or a reload's
	 * rollback restarted, that did not start: tried again at a close
	 * every owed_gap windows, the gap doubling up to 64 windows or a
	 * minute (budget_retry) */
	unsigned budget_owed;
	unsigned owed_gap;
	uint64_t owed_retry_seq;
	char owed_detail[2][1200]; /* libraries, VFS: the last try's failure, for the record */
	bool start_quiet;	   /* a family's start logs its failure at debug: a retry */
	char libs_err[1024];	   /* why the libraries last failed to start */
	bool vfs_bad_config;	   /* its start failed on probes.vfs, not on the kernel */
	char budget_note[160];	   /* the last change of level, for STATUS= */
	/* a reload replacing the budget closes the window: the old budget
	 * judges it no more (a step it took would be undone at once) */
	bool budget_replaced;
	struct dc_sink_stats sinks_prev[2];
	/* what stopped sinks counted since the last window's losses: the
	 * next window's (a reload's sinks start from zero) */
	struct sink_carry {
		uint64_t queue_full, shed, dropped_bytes, dropped_records;
	} sink_carry;
	bool kafka_was_down; /* the Kafka sink a reload stopped had no brokers */
	struct window_losses {
		uint64_t map_full, ring_full, sampled_out, recursion_misses;
		uint64_t queue_full, spool_shed, sink_dropped_bytes, sink_dropped_records;
		uint64_t trace_unsealed;
	} losses;
	struct dc_probe_report probes[10];
	size_t n_probes;
	bool stopping;
};

static uint64_t clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * NSEC_PER_SEC + (uint64_t)ts.tv_nsec;
}

static void read_id(const char *path, char *out, size_t len)
{
	FILE *f = fopen(path, "re");

	out[0] = 0;
	if (!f)
		return;
	if (fgets(out, (int)len, f))
		out[strcspn(out, "\n")] = 0;
	fclose(f);
}

/* The probes off before the sinks' last delivery, which may wait on Kafka
 * for kafka.flush_timeout: no program should run for the node meanwhile,
 * nor the kernel time every program for the statistics' fd. */
static void probes_detach(struct manager *m)
{
	m->sys = probe_syscall_free(m->sys);
	m->files = NULL; /* the system-call family's */
	m->blk = probe_block_free(m->blk);
	m->pc = probe_pagecache_free(m->pc);
	m->up = probe_uprobe_free(m->up);
	m->vfs = probe_vfs_free(m->vfs);
	m->ur = probe_uring_free(m->ur);
	m->cost = selfcost_free(m->cost);
}

struct manager *manager_free(struct manager *m)
{
	if (!m)
		return NULL;
	sd_event_source_unref(m->timer);
	sd_event_unref(m->event);
	m->pool = jobpool_free(m->pool);
	probes_detach(m); /* done already after a clean run (manager_run) */
	if (m->clock_fd >= 0)
		close(m->clock_fd);
	sd_event_source_unref(m->files_io);
	free(m->fh_seen);
	free(m->libstats);
	m->cgroups = cgroup_cache_free(m->cgroups);
	m->filter = filter_free(m->filter);
	free(m->budget);
	/* the sinks' last delivery, if manager_run did not make it (a failure) */
	for (size_t i = 0; i < m->n_sinks; i++)
		m->sinks[i] = sink_free(m->sinks[i]);
	m->trace_files = sink_free(m->trace_files);
	buf_free(&m->carry);
	sd_event_source_unref(m->traces_io);
	sd_event_source_unref(m->traces_timer);
	sd_event_source_disable_unref(m->stats_timer);
	sd_event_source_unref(m->stacks_io);
	sd_event_source_unref(m->watchdog);
	/* after every family and the ring's event source */
	m->traces = traces_free(m->traces);
	buf_free(&m->tbatch);
	buf_free(&m->rec);
	free(m->only);
	free(m);
	return NULL;
}

DEFINE_TRIVIAL_CLEANUP_FUNC(struct manager *, manager_free);

/* "vda" for 254:0, from sysfs; "" when the device is gone. */
static void device_name(uint32_t dev, char *out, size_t len)
{
	char path[128], line[256];
	FILE *f;

	out[0] = 0;
	snprintf(path, sizeof(path), "/sys/dev/block/%u:%u/uevent", blk_major(dev), blk_minor(dev));
	f = fopen(path, "re");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "DEVNAME=", 8)) {
			line[strcspn(line, "\n")] = 0;
			snprintf(out, len, "%.63s", line + 8);
			break;
		}
	fclose(f);
}

/* A family's drain failed: its counts stay in the kernel map that was not
 * read and go out with a later window, summed with its counts: the next
 * one's, or for a map chosen by a clock's parity (agent/winmap.h) and the
 * slot maps' halves the one after, when the programs are back on that map.
 * Not a loss, unless a drain stops part way: a batch delete has taken the
 * keys it read, which are then not published (an allocation failure). */
static void drain_failed(int r, const char *family, uint64_t seq)
{
	if (r < 0)
		log_warning_errno(r,
				  "Window %llu: cannot drain the %s maps: %m; their counts go out "
				  "with a later window",
				  (unsigned long long)seq, family);
}

/* Hand the record in m->rec to every sink; 0 if at least one took it. */
static int manager_write(struct manager *m, enum dc_rec_type type, const struct dc_window *w)
{
	int r = m->n_sinks ? -EIO : 0;

	for (size_t i = 0; i < m->n_sinks; i++)
		if (sink_write(m->sinks[i], type, w, m->rec.data, m->rec.len) == 0)
			r = 0;
	return r;
}

static void report_sinks(struct dc_json *j, void *opaque)
{
	struct manager *m = opaque;

	for (size_t i = 0; i < m->n_sinks; i++)
		sink_report(m->sinks[i], j);
}

/* One features record for (tgid, cgroup): its syscall ops (maybe none) and
 * what the other layers saw of it. */
static int up_cmp(const void *a, const void *b)
{
	const struct dc_fn_entry *x = a, *y = b;

	if (x->tgid != y->tgid)
		return x->tgid < y->tgid ? -1 : 1;
	if (x->cgroup_id != y->cgroup_id)
		return x->cgroup_id < y->cgroup_id ? -1 : 1;
	return x->func < y->func ? -1 : x->func > y->func;
}

/* Append the function-level stats of (tgid, cgroup) from a sorted drain to
 * m->libstats[n...]; feature names from the family's table. */
static size_t fn_stats_for(struct manager *m, const struct dc_fn_drain *d, uint32_t tgid,
			   uint64_t cgroup_id, size_t n,
			   const char *(*feature)(struct manager *, uint32_t))
{
	struct dc_fn_entry key = {.tgid = tgid, .cgroup_id = cgroup_id};
	size_t lo = 0, hi = d->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (up_cmp(&d->entries[mid], &key) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t i = lo;
	     i < d->n && d->entries[i].tgid == tgid && d->entries[i].cgroup_id == cgroup_id; i++) {
		const struct dc_fn_entry *e = &d->entries[i];
		const char *name = feature(m, e->func);

		if (n == m->libstats_cap) {
			size_t cap = m->libstats_cap ? m->libstats_cap * 2 : 32;
			void *p = realloc(m->libstats, cap * sizeof(*m->libstats));

			if (!p)
				break;
			m->libstats = p;
			m->libstats_cap = cap;
		}
		m->libstats[n++] = (struct dc_lib_stat){.feature = name ? name : "?",
							.count = e->count,
							.time_ns = e->time_ns,
							.bytes = e->bytes,
							.errors = e->errors,
							.lat = e->lat};
	}
	return n;
}

static const char *up_feature(struct manager *m, uint32_t func)
{
	const struct dc_up_func *f = probe_uprobe_func(m->up, func);

	return f ? f->feature : NULL;
}

static const char *vfs_feature(struct manager *m, uint32_t func)
{
	return probe_vfs_feature(func);
}

/* One file record per (process, file), each preceded by its name's
 * dictionary record the first time this run publishes that name. */
static void emit_files(struct manager *m, const struct dc_record_ctx *ctx,
		       const struct dc_proc_ident *id, const struct dc_file_entry *e, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		const struct fname *fn =
		    probe_file_name(m->files, e[i].dev, e[i].ino, e[i].igen, ctx->w->seq);
		char hex[17] = "";

		if (fn) {
			filepath_hash_hex(fn->hash, hex);
			if (fhash_first(m->fh_seen, fn->hash)) {
				buf_reset(&m->rec);
				record_filename(&m->rec, ctx, hex, fn->path, fn->truncated, fn->dev,
						fn->ino, fn->igen);
				if (!m->rec.err)
					manager_write(m, DC_REC_FILENAME, ctx->w);
			}
		}
		buf_reset(&m->rec);
		record_file(&m->rec, ctx, id, &e[i], hex);
		if (!m->rec.err)
			manager_write(m, DC_REC_FILE, ctx->w);
	}
}

/* When tgid started (proc_start_ns), by /proc; 0 once it has exited. */
static uint64_t proc_start_procfs(uint32_t tgid)
{
	_cleanup_fclose_ FILE *f = NULL;
	long hz = sysconf(_SC_CLK_TCK);
	char path[64], line[1024];
	uint64_t ticks;

	snprintf(path, sizeof(path), "/proc/%u/stat", tgid);
	f = fopen(path, "re");
	/* whole ticks already: the kernel's ns floored to them agree */
	if (!f || !fgets(line, sizeof(line), f) || hz <= 0 || procstat_start_ticks(line, &ticks))
		return 0;
	return ticks * (1000000000ULL / (uint64_t)hz);
}

/* A process only the other layers saw (block, page cache, VFS) has no
 * kernel record of its name: ask /proc while it still lives. */
static void proc_from_procfs(uint32_t tgid, struct dc_proc_info *proc)
{
	char path[64], buf[PATH_MAX], line[256];
	ssize_t n;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%u/comm", tgid);
	f = fopen(path, "re");
	if (!f)
		return;
	if (fgets(proc->comm, sizeof(proc->comm), f))
		proc->comm[strcspn(proc->comm, "\n")] = 0;
	fclose(f);
	snprintf(path, sizeof(path), "/proc/%u/exe", tgid);
	n = readlink(path, buf, sizeof(buf) - 1);
	if (n > 0) {
		static const char deleted[] = " (deleted)";
		size_t l = (size_t)n;

		buf[n] = 0;
		/* a replaced binary's link says so: the name is the file's */
		if (l > sizeof(deleted) - 1 && !strcmp(buf + l - (sizeof(deleted) - 1), deleted))
			buf[l - (sizeof(deleted) - 1)] = 0;
		/* as long as the kernel's copy at most (DC_EXE_LEN - 1 bytes) */
		snprintf(proc->exe, DC_EXE_LEN, "%.*s", DC_EXE_LEN - 1,
			 strrchr(buf, '/') ? strrchr(buf, '/') + 1 : buf);
	}
	proc->start_ns = proc_start_procfs(tgid);
	snprintf(path, sizeof(path), "/proc/%u/status", tgid);
	f = fopen(path, "re");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "Uid: %u", &proc->uid) == 1) {
			proc->known = true;
			break;
		}
	fclose(f);
}

/* Who tgid is, for the records of (tgid, cgroup_id): the kernel's record of
 * it, else /proc's while it lives. noted: its system calls in the window
 * renewed the kernel's record. id's strings point into proc. */
static void proc_ident(struct manager *m, uint32_t tgid, uint64_t cgroup_id, bool noted,
		       struct dc_proc_info *proc, struct dc_proc_ident *id)
{
	if (!tgid)
		/* the kernel's work for cgroup_id (writeback): no process */
		*proc = (struct dc_proc_info){.comm = "[kernel]"};
	else if (probe_syscall_proc(m->sys, tgid, proc) < 0)
		proc_from_procfs(tgid, proc);
	else if (!noted && sees_kernel_pids()) {
		/* the record is of an earlier window, and of an earlier process
		 * if the pid was reused since by one that made no system call
		 * (faults on a mapping it inherited): /proc tells while the
		 * process lives, where /proc's pids are the kernel's. One that
		 * has exited renewed the record at its exit (on_proc_exit). */
		uint64_t start = proc_start_procfs(tgid);

		if (start && start != proc->start_ns) {
			*proc = (struct dc_proc_info){};
			proc_from_procfs(tgid, proc);
		}
	}
	*id = (struct dc_proc_ident){.pid = tgid,
				     .comm = proc->comm,
				     .cgroup_id = cgroup_id,
				     .cgroup = cgroup_cache_path(m->cgroups, cgroup_id),
				     .uid_known = proc->known,
				     .uid = proc->uid,
				     .exe = proc->exe,
				     .start_ns = proc->start_ns,
				     .job = cgroup_cache_job(m->cgroups, cgroup_id)};
}

/*
 * The configured layers not running: a features record without them has
 * no members for them, and a model reading that as no activity would
 * learn that a window of heavy I/O called no VFS function. Read at the
 * window's close, before the budget's next change or a retry applies.
 */
static unsigned layers_lacking(const struct manager *m)
{
	unsigned l = 0;

	if (m->cfg.files_enable && !m->files)
		l |= 1u << DC_LACKS_FILES;
	if (m->cfg.block_enable && !m->blk)
		l |= 1u << DC_LACKS_BLOCK;
	if (m->cfg.pagecache_enable && !m->pc)
		l |= 1u << DC_LACKS_PAGE_CACHE;
	if (m->cfg.uring_enable && !m->ur)
		l |= 1u << DC_LACKS_IO_URING;
	if (m->cfg.n_libs && !m->up)
		l |= 1u << DC_LACKS_LIBRARIES;
	if (m->cfg.vfs_enable && !m->vfs)
		l |= 1u << DC_LACKS_VFS;
	return l;
}

static int emit_features(struct manager *m, const struct dc_record_ctx *ctx, uint32_t tgid,
			 uint64_t cgroup_id, const struct dc_agg_entry *e, size_t n,
			 const struct dc_blk_drain *bres, const struct dc_pc_drain *pres,
			 const struct dc_fn_drain *ures, const struct dc_fn_drain *vres)
{
	struct dc_proc_info proc;
	struct dc_proc_ident id;
	struct dc_layers lay = {.lacks = m->win_lacks,
				.lost_map_full = m->win_map_full,
				.lost_recursion = m->win_recursion,
				.pc_on = m->pc != NULL,
				.page_size = m->page_size};
	struct dc_blk_sum blk[DC_BLK_OP_MAX];
	struct dc_file_sum access = {};
	const struct dc_pc_entry *pce = m->pc ? pc_find(pres, tgid, cgroup_id) : NULL;

	proc_ident(m, tgid, cgroup_id, n > 0, &proc, &id);
	if (m->blk) {
		blk_sum_for(bres->entries, bres->n, tgid, cgroup_id, blk);
		lay.blk = blk;
	}
	lay.pc = pce ? &pce->v : NULL;
	if (m->up || m->vfs) {
		lay.libs_on = true;
		if (m->up)
			lay.n_libs = fn_stats_for(m, ures, tgid, cgroup_id, lay.n_libs, up_feature);
		if (m->vfs)
			lay.n_libs =
			    fn_stats_for(m, vres, tgid, cgroup_id, lay.n_libs, vfs_feature);
		lay.libs = m->libstats;
	}
	if (m->files) {
		size_t lo, hi;

		lay.files_on = true;
		file_range(m->fres->entries, m->fres->n, tgid, cgroup_id, &lo, &hi);
		for (size_t i = lo; i < hi; i++)
			file_sum_add(&access, &m->fres->entries[i].v);
		lay.access = hi > lo ? &access : NULL;
		if (!strcmp(m->cfg.files_granularity, "file"))
			emit_files(m, ctx, &id, m->fres->entries + lo, hi - lo);
	}
	if (m->ur) {
		const struct dc_uring_entry *ue = uring_find(m->urd, tgid, cgroup_id, &lay.n_uring);

		for (size_t i = 0; i < lay.n_uring; i++)
			m->urstats[i] = (struct dc_lib_stat){
			    .feature = uring_op_name(ue[i].opcode, m->urnames[ue[i].opcode & 0xff],
						     sizeof(m->urnames[0])),
			    .count = ue[i].count,
			    .time_ns = ue[i].time_ns,
			    .bytes = ue[i].bytes,
			    .errors = ue[i].errors,
			    .lat = ue[i].lat};
		lay.uring_on = true;
		lay.uring = m->urstats;
	}
	buf_reset(&m->rec);
	record_features(&m->rec, ctx, &id, e, n, &lay);
	if (m->rec.err)
		return -ENOMEM;
	return manager_write(m, DC_REC_FEATURES, ctx->w);
}

static int proc_key_cmp(const void *a, const void *b)
{
	const struct proc_key *x = a, *y = b;

	if (x->tgid != y->tgid)
		return x->tgid < y->tgid ? -1 : 1;
	return x->cgroup_id < y->cgroup_id ? -1 : x->cgroup_id > y->cgroup_id;
}

/* The agent's cgroup2 path, as cgroup_cache_path() gives paths ("" if
 * unknown): the "0::" line of /proc/self/cgroup. */
static void self_cgroup(char *out, size_t len)
{
	_cleanup_fclose_ FILE *f = fopen("/proc/self/cgroup", "re");
	char line[PATH_MAX + 8];

	*out = 0;
	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, "0::", 3)) {
			size_t n = strcspn(line + 3, "\n");

			if (n < len) {
				memcpy(out, line + 3, n);
				out[n] = 0;
			}
			return;
		}
}

static void only_add(struct manager *m, const struct dc_drain_result *res, size_t *n, uint32_t tgid,
		     uint64_t cgroup_id)
{
	/* tgid 0 with a cgroup: kernel threads' block requests for a cgroup
	 * (writeback of its pages, the bio's cgroup); without one, or for the
	 * root, they are no one's. The agent's own cgroup's are its records
	 * file written back: published, they would feed back (exclude_self) */
	if (!tgid) {
		const char *path = cgroup_id ? cgroup_cache_path(m->cgroups, cgroup_id) : "";

		if (!path[0] || !strcmp(path, "/") ||
		    (m->cfg.exclude_self && !strcmp(path, m->self_cgroup)))
			return;
	}
	if (!featvec_has(res->entries, res->n, tgid, cgroup_id))
		m->only[(*n)++] = (struct proc_key){.tgid = tgid, .cgroup_id = cgroup_id};
}

/* The (tgid, cgroup) pairs with block, page-cache, function or io_uring
 * activity but no syscall entry, sorted and unique, in m->only. Kernel
 * threads (tgid 0) are published as pid 0 of the cgroup they worked for
 * (the block layer's writeback, by the bio's cgroup); what they did for no
 * cgroup is left to the device and agent records. */
static size_t layer_only_procs(struct manager *m, const struct dc_drain_result *res,
			       const struct dc_blk_drain *bres, const struct dc_pc_drain *pres,
			       const struct dc_fn_drain *ures, const struct dc_fn_drain *vres)
{
	size_t n_ur = m->urd ? m->urd->n : 0;
	/* a process with file keys and no syscall entry: its call's exit
	 * program ran as the two maps flipped (slotmap_flip_together()) */
	size_t n_f = m->files ? m->fres->n : 0;
	size_t n = 0, want = bres->n + pres->n + ures->n + vres->n + n_ur + n_f, u = 0;

	if (want > m->only_cap) {
		void *p = realloc(m->only, want * sizeof(*m->only));

		if (!p)
			return 0;
		m->only = p;
		m->only_cap = want;
	}
	for (size_t i = 0; i < bres->n; i++)
		only_add(m, res, &n, bres->entries[i].tgid, bres->entries[i].cgroup_id);
	for (size_t i = 0; i < pres->n; i++)
		only_add(m, res, &n, pres->entries[i].tgid, pres->entries[i].cgroup_id);
	for (size_t i = 0; i < ures->n; i++)
		only_add(m, res, &n, ures->entries[i].tgid, ures->entries[i].cgroup_id);
	for (size_t i = 0; i < vres->n; i++)
		only_add(m, res, &n, vres->entries[i].tgid, vres->entries[i].cgroup_id);
	for (size_t i = 0; i < n_ur; i++)
		only_add(m, res, &n, m->urd->entries[i].tgid, m->urd->entries[i].cgroup_id);
	for (size_t i = 0; i < n_f; i++)
		only_add(m, res, &n, m->fres->entries[i].tgid, m->fres->entries[i].cgroup_id);
	qsort_safe(m->only, n, sizeof(*m->only), proc_key_cmp);
	for (size_t i = 0; i < n; i++)
		if (!u || proc_key_cmp(&m->only[u - 1], &m->only[i]))
			m->only[u++] = m->only[i];
	return u;
}

/*
 * Closing a window flips every family's map on the main thread
 * (flip_layers), then each family waits for an RCU grace period (several
 * ms) before it drains: one after the other the waits took most of a 100 ms
 * window. They are independent, so they run in parallel threads and
 * overlap; the main thread only waits for them all. Starting the
 * families is alike (families_start). The threads are kept from window to
 * window (jobpool.h): the most families run side by side, one thread each.
 */
#define FAMILY_JOBS_MAX 8

struct family_job {
	const char *family;
	int (*run)(struct manager *m, void *res);
	void *res;
	bool on;
	int r;
	struct manager *m;
	uint64_t cpu_ns; /* the thread's CPU: this family's share of the agent's */
};

static int flip_syscall(struct manager *m, void *res)
{
	return probe_syscall_flip_and_drain(m->sys, res);
}

static int flip_files(struct manager *m, void *res)
{
	return probe_file_flip_and_drain(m->files, m->closing_seq, res);
}

static int flip_block(struct manager *m, void *res)
{
	return probe_block_flip_and_drain(m->blk, res);
}

static int flip_pagecache(struct manager *m, void *res)
{
	return probe_pagecache_flip_and_drain(m->pc, res);
}

static int flip_uring(struct manager *m, void *res)
{
	return probe_uring_flip_and_drain(m->ur, res);
}

static int flip_uprobe(struct manager *m, void *res)
{
	return probe_uprobe_flip_and_drain(m->up, res);
}

static int flip_vfs(struct manager *m, void *res)
{
	return probe_vfs_flip_and_drain(m->vfs, res);
}

static int flip_stacks(struct manager *m, void *res)
{
	return stacks_flip_and_drain(probe_syscall_stacks(m->sys), res);
}

/* One stacks record per (process, cgroup) of the window's rows. */
static void emit_stacks(struct manager *m, const struct dc_record_ctx *ctx,
			const struct stacks_drain *d)
{
	size_t o = 0;

	for (size_t i = 0; i < d->n;) {
		size_t end = i, o_end;
		uint32_t tgid = d->rows[i].tgid;
		uint64_t cgroup_id = d->rows[i].cgroup_id;
		struct dc_proc_info proc;
		struct dc_proc_ident id;

		while (end < d->n && d->rows[end].tgid == tgid &&
		       d->rows[end].cgroup_id == cgroup_id)
			end++;
		while (o < d->n_objs &&
		       (d->objs[o].tgid < tgid ||
			(d->objs[o].tgid == tgid && d->objs[o].cgroup_id < cgroup_id)))
			o++;
		for (o_end = o; o_end < d->n_objs && d->objs[o_end].tgid == tgid &&
				d->objs[o_end].cgroup_id == cgroup_id;
		     o_end++)
			;
		/* its rows are its system calls' */
		proc_ident(m, tgid, cgroup_id, true, &proc, &id);
		buf_reset(&m->rec);
		record_stacks(&m->rec, ctx, &id, d->rows + i, end - i, d->objs + o, o_end - o);
		if (!m->rec.err)
			manager_write(m, DC_REC_STACKS, ctx->w);
		i = end;
	}
}

static void job_run(void *p)
{
	struct family_job *j = p;
	uint64_t t0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);

	j->r = j->run(j->m, j->res);
	j->cpu_ns = clock_ns(CLOCK_THREAD_CPUTIME_ID) - t0;
}

/* Side by side on the pool's threads, at most max at once; without threads
 * the jobs run here: slower, never lost. */
static void jobs_run_max(struct manager *m, struct family_job *jobs, size_t n, unsigned max)
{
	void *on[FAMILY_JOBS_MAX];
	unsigned k = 0;

	assert(n <= FAMILY_JOBS_MAX);
	for (size_t i = 0; i < n; i++) {
		jobs[i].m = m;
		jobs[i].r = 0;
		jobs[i].cpu_ns = 0;
		if (jobs[i].on)
			on[k++] = &jobs[i];
	}
	jobpool_run_max(m->pool, job_run, on, k, max);
}

static void jobs_run(struct manager *m, struct family_job *jobs, size_t n)
{
	jobs_run_max(m, jobs, n, FAMILY_JOBS_MAX);
}

static void flip_all(struct manager *m, struct family_job *jobs, size_t n)
{
	jobs_run(m, jobs, n);
	for (size_t i = 0; i < n; i++)
		if (jobs[i].on)
			drain_failed(jobs[i].r, jobs[i].family, m->closing_seq);
}

static void notify_status(struct manager *m, const char *also);

/* Seal the open trace batch and hand it to the trace sinks (files, Kafka). */
static void traces_publish(struct manager *m, const struct dc_window *w)
{
	struct traces_window st;
	int r = traces_seal(m->traces, &m->tbatch, &st);

	if (r < 0) {
		log_warning_errno(r,
				  "Cannot compress the trace batch of window %llu: %m; its %llu "
				  "events are lost",
				  (unsigned long long)w->seq, (unsigned long long)st.events);
		/* lost, not written: not among the events */
		m->tstat.unsealed += st.events;
		return;
	}
	m->tstat.events += st.events;
	m->tstat.meta_records += st.meta_records;
	m->tstat.weight_sum += st.weight_sum;
	m->tstat.raw_bytes += st.raw_bytes;
	m->tstat.zstd_bytes += st.zstd_bytes;
	m->tstat.unknown += st.unknown;
	if (!m->tbatch.len)
		return;
	if (m->trace_files)
		sink_write(m->trace_files, DC_REC_TRACE, w, m->tbatch.data, m->tbatch.len);
	if (m->kafka)
		sink_write(m->kafka, DC_REC_TRACE, w, m->tbatch.data, m->tbatch.len);
	/* the sinks copied it: a burst's frame need not stay in the RSS */
	if (m->tbatch.cap > (2u << 20))
		buf_free(&m->tbatch);
}

/* Read the trace ring: file names first, so that the events' files have
 * their names; a batch past its bound is sealed without waiting, as window
 * w's (at a close, the window closed, whose calls these are). */
static void traces_read(struct manager *m, const struct dc_window *w)
{
	if (m->files)
		probe_file_consume(m->files, m->win.cur.seq);
	traces_consume(m->traces);
	if (traces_batch_full(m->traces)) {
		m->tstat.too_many++;
		traces_publish(m, w);
	}
}

static int on_traces_io(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
	struct manager *m = userdata;

	traces_read(m, &m->win.cur);
	return 0;
}

/* Rounded, not cut: 4.1 s is 4100000000 ns, where a cast gives 4099999999
 * and aligned windows would end off the interval's multiples. */
static uint64_t interval_ns(double sec)
{
	return (uint64_t)llround(sec * 1e9);
}

/* Sampled BPF statistics: on for their share of each window, in its middle,
 * away from the window close (the flip, the drain, the switches' own text
 * patching), which would make the sample unlike the rest of the window. */
static int on_stats_timer(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct manager *m = userdata;
	uint64_t now = clock_ns(CLOCK_MONOTONIC);

	if (m->stats_on_for_ns && !m->stats_switched_on) {
		selfcost_stats_on(m->cost, now);
		m->stats_switched_on = true;
		if (sd_event_source_set_time(s, (now + m->stats_on_for_ns) / NSEC_PER_USEC) >= 0 &&
		    sd_event_source_set_enabled(s, SD_EVENT_ONESHOT) >= 0)
			return 0;
		/* cannot come back to switch them off: off now, sampled short */
	}
	selfcost_stats_off(m->cost, now);
	return 0;
}

/* A window starts at now_ns: its sample is due half the off time later. A
 * failure to arm the timer leaves the statistics as they are: on, measured
 * over the whole window, not lost. The window's own length, which aligned
 * windows do not all share (window 0, one after a late close). */
static void stats_window_start(struct manager *m, uint64_t now_ns)
{
	uint64_t window = windows_deadline(&m->win, now_ns) - now_ns;
	uint64_t on_for = selfcost_stats_on_for(m->cost, window);
	uint64_t per_interval = selfcost_stats_on_for(m->cost, m->win.interval_ns);
	uint64_t at = (now_ns + (window - on_for) / 2) / NSEC_PER_USEC;
	int r;

	/* every window's sample would be too short: on for good, or until
	 * a reload makes the windows longer */
	if (per_interval && per_interval < SELFCOST_MIN_SAMPLE_NS) {
		selfcost_stats_keep_on(m->cost, now_ns);
		on_for = 0;
	} else {
		selfcost_stats_resume(m->cost, now_ns);
		if (on_for && on_for < SELFCOST_MIN_SAMPLE_NS) {
			/* this window alone is short (window 0 of aligned
			 * windows, the start taking part of it; one after a
			 * late close): sampled whole */
			selfcost_stats_on(m->cost, now_ns);
			on_for = 0;
		}
	}
	m->stats_on_for_ns = on_for;
	m->stats_switched_on = false;
	if (!on_for) {
		if (m->stats_timer)
			sd_event_source_set_enabled(m->stats_timer, SD_EVENT_OFF);
		return;
	}
	/* on from the last window's sample if it ran late: off until due */
	selfcost_stats_off(m->cost, now_ns);
	if (!m->stats_timer)
		r = sd_event_add_time(m->event, &m->stats_timer, CLOCK_MONOTONIC, at, 1000,
				      on_stats_timer, m);
	else
		r = sd_event_source_set_time(m->stats_timer, at);
	if (r >= 0)
		r = sd_event_source_set_enabled(m->stats_timer, SD_EVENT_ONESHOT);
	if (r < 0) {
		selfcost_stats_on(m->cost, now_ns);
		log_warning_errno(r, "Cannot time the BPF statistics' sample: on all window: %m");
	}
}

static int on_traces_timer(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct manager *m = userdata;

	traces_read(m, &m->win.cur);
	return sd_event_source_set_time_relative(s, m->traces_flush_usec);
}

static int on_stacks_ring(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
	struct manager *m = userdata;

	stacks_consume(probe_syscall_stacks(m->sys));
	return 0;
}

static void trace_comm(void *opaque, uint32_t pid, char *out, size_t len)
{
	struct manager *m = opaque;
	struct dc_proc_info proc = {};

	if (probe_syscall_proc(m->sys, pid, &proc) < 0)
		proc_from_procfs(pid, &proc);
	snprintf(out, len, "%s", proc.comm);
}

static uint64_t trace_file(void *opaque, uint32_t dev, uint64_t ino, uint32_t igen,
			   const char **path)
{
	struct manager *m = opaque;
	const struct fname *fn =
	    m->files ? probe_file_name(m->files, dev, ino, igen, m->win.cur.seq) : NULL;

	*path = fn ? fn->path : NULL;
	return fn ? fn->hash : 0;
}

static const char *trace_lib_func(void *opaque, uint32_t func)
{
	struct manager *m = opaque;
	const struct dc_up_func *f = m->up ? probe_uprobe_func(m->up, func) : NULL;

	return f ? f->name : NULL;
}

/* One window's losses of every layer and sink, in one place: what a
 * consumer checks before trusting the window's numbers. */
/* Sink i's losses since they were last taken, into m->sink_carry: a
 * window's summary takes them from there (window_losses). */
static void sink_losses_since(struct manager *m, size_t i)
{
	const struct dc_sink_stats *now = &m->sinks[i]->stats;
	struct dc_sink_stats *prev;

	if (i >= ELEMENTSOF(m->sinks_prev))
		return;
	prev = &m->sinks_prev[i];
	m->sink_carry.queue_full += now->queue_full - prev->queue_full;
	m->sink_carry.shed += now->shed_records - prev->shed_records;
	m->sink_carry.dropped_bytes += now->dropped_bytes - prev->dropped_bytes;
	m->sink_carry.dropped_records += now->dropped_records - prev->dropped_records;
	*prev = *now;
}

/* Events of the window that found a map full, every layer (counted in the
 * unattributed totals or not at all): the agent record's losses.map_full,
 * and what every features record of the window is told (record.h) */
static uint64_t map_full_sum(const uint64_t *sys, const uint64_t *blk, const uint64_t *pc,
			     const uint64_t *ur, const uint64_t *file, const uint64_t *up,
			     const uint64_t *vfs)
{
	return sys[DC_CNT_AGG_FULL] + sys[DC_CNT_STASH_FAIL] + blk[DC_BLK_CNT_AGG_FULL] +
	       blk[DC_BLK_CNT_RQ_FULL] + pc[DC_PC_CNT_AGG_FULL] + ur[DC_UR_CNT_AGG_FULL] +
	       ur[DC_UR_CNT_INFLIGHT_FULL] + file[DC_FILE_CNT_AGG_FULL] + up[DC_FN_CNT_AGG_FULL] +
	       vfs[DC_FN_CNT_AGG_FULL];
}

static void window_losses(struct manager *m, const struct dc_agent_stats *st)
{
	struct window_losses *l = &m->losses;

	*l = (struct window_losses){
	    .map_full =
		map_full_sum(st->counters, st->blk_counters, st->pc_counters, st->ur_counters,
			     st->file_counters, st->up_counters, st->vfs_counters),
	    .ring_full = st->tr_drop + st->file_counters[DC_FILE_CNT_PATH_LOST] +
			 st->tr_window.layers[DC_LAYER_LIB][DC_TR_DROPPED] +
			 st->tr_window.layers[DC_LAYER_VFS][DC_TR_DROPPED] +
			 st->tr_window.layers[DC_LAYER_BLOCK][DC_TR_DROPPED],
	    .sampled_out = st->tr_out,
	    .trace_unsealed = st->tr_window.unsealed,
	    .recursion_misses = st->recursion_misses + st->blk_recursion_misses +
				st->pc_recursion_misses + st->ur_recursion_misses,
	};
	for (size_t i = 0; i < m->n_sinks; i++)
		sink_losses_since(m, i);
	l->queue_full += m->sink_carry.queue_full;
	l->spool_shed += m->sink_carry.shed;
	l->sink_dropped_bytes += m->sink_carry.dropped_bytes;
	l->sink_dropped_records += m->sink_carry.dropped_records;
	m->sink_carry = (struct sink_carry){};
}

static void report_self(struct dc_json *j, void *opaque)
{
	struct manager *m = opaque;
	const struct window_losses *l = &m->losses;

	selfcost_json(m->cost, j);
	json_key(j, "losses");
	json_obj_begin(j);
	json_key(j, "map_full");
	json_u64(j, l->map_full);
	json_key(j, "ring_full");
	json_u64(j, l->ring_full);
	json_key(j, "sampled_out");
	json_u64(j, l->sampled_out);
	json_key(j, "recursion_misses");
	json_u64(j, l->recursion_misses);
	json_key(j, "queue_full");
	json_u64(j, l->queue_full);
	json_key(j, "spool_shed");
	json_u64(j, l->spool_shed);
	json_key(j, "sink_dropped_bytes");
	json_u64(j, l->sink_dropped_bytes);
	json_key(j, "sink_dropped_records");
	json_u64(j, l->sink_dropped_records);
	json_key(j, "trace_unsealed");
	json_u64(j, l->trace_unsealed);
	json_obj_end(j);

	json_key(j, "budget");
	if (m->cfg.budget_cpu <= 0) {
		json_null(j);
		return;
	}
	json_obj_begin(j);
	json_key(j, "cpu");
	json_double(j, m->cfg.budget_cpu);
	json_key(j, "period_s");
	json_double(j, m->cfg.budget_period);
	json_key(j, "average");
	json_double(j, m->budget->judged);
	json_key(j, "level");
	json_u64(j, m->budget_level);
	json_key(j, "step");
	json_str(j, budget_level_name(m->budget_level));
	json_key(j, "reduced");
	json_arr_begin(j);
	for (unsigned lv = 1; lv <= m->budget_level; lv++)
		if (m->budget->applicable & (1u << lv))
			json_str(j, budget_level_name(lv));
	json_arr_end(j);
	/* a consumer weighing windows by their detail knows this level may
	 * not last: a trial that goes over steps down again */
	json_key(j, "trial");
	json_bool(j, m->budget_trial);
	json_key(j, "at_floor");
	json_bool(j, m->budget->at_floor);
	json_key(j, "switch_cpu_us");
	json_u64(j, m->budget_switch_us_pub);
	json_obj_end(j);
}

static unsigned budget_feed(struct manager *m, uint64_t window_ns, uint64_t cost_ns);
static void budget_change(struct manager *m, unsigned level);
static void budget_apply(struct manager *m, unsigned level);
static void budget_retry(struct manager *m);
static unsigned budget_missing(const struct manager *m);
static void budget_restart(struct manager *m, unsigned fams);
static void budget_owe(struct manager *m, size_t i);
static void probes_report(struct manager *m);

/*
 * Every layer's keyed counts end their window here, on this thread, before
 * the drains' threads start (the overflow totals and loss counters are read
 * on those: docs/design.md): a call is in the same window in every layer
 * that saw it (one exit program run writes the file layer's keys, then the
 * system-call layer's; a buffered write's pages are dirtied inside the
 * call). The window maps' clock is the system-call slot map's seq
 * (winmap.h): they note the slot they close, then the slot maps' stores
 * end every layer's window, the file layer's one store before. Flipped by
 * each family on its own thread, the layers ended up to 8 ms apart when the
 * node was busy, and a window's page-cache dirtying then disagreed with its
 * writes by hundreds of pages. With a clock each, raised one store after
 * another, a preemption between two stores would split the calls of that
 * moment between windows; one store leaves no such moment. The stack
 * profile flips on its own thread: its window map and its stack
 * generations turn together (stacks.c).
 */
static void flip_layers(struct manager *m)
{
	struct slotmap *maps[2];
	size_t n = 0;

	if (m->blk)
		winmap_flip(probe_block_winmap(m->blk));
	if (m->pc)
		winmap_flip(probe_pagecache_winmap(m->pc));
	if (m->ur)
		winmap_flip(probe_uring_winmap(m->ur));
	if (m->up)
		winmap_flip(probe_uprobe_winmap(m->up));
	if (m->vfs)
		winmap_flip(probe_vfs_winmap(m->vfs));
	if (m->sys) {
		if (m->files)
			maps[n++] = probe_file_slotmap(m->files);
		maps[n++] = probe_syscall_slotmap(m->sys);
	}
	slotmap_flip_together(maps, n);
}

/* Close the current window and publish everything it counted. */
static int manager_close_window(struct manager *m)
{
	struct dc_drain_result res = {};
	struct dc_file_drain fres = {};
	struct dc_agg_sum tsum = {}; /* the window's syscall totals, for the trace counters */
	struct dc_blk_drain bres = {};
	struct dc_pc_drain pres = {};
	struct dc_fn_drain ures = {}, vres = {};
	struct dc_uring_drain urres = {};
	struct stacks_drain sres = {};
	bool stk = probe_syscall_stacks(m->sys) != NULL;
	size_t n_only;
	struct dc_agent_stats st = {};
	uint64_t rs_slots, rs_reclaimed, rs_exited;
	struct dc_selfstat self = {};
	struct dc_window w;
	struct dc_record_ctx ctx;
	uint64_t t0, records = 0, events = 0;
	unsigned next_level;

	windows_close(&m->win, clock_ns(CLOCK_MONOTONIC), clock_ns(CLOCK_REALTIME) / 1000, &w);
	ctx = (struct dc_record_ctx){
	    .host = m->host, .run_id = m->run_id, .boot_id = m->boot_id, .w = &w};

	struct family_job jobs[] = {
	    {.family = "syscall", .run = flip_syscall, .res = &res, .on = true},
	    {.family = "file", .run = flip_files, .res = &fres, .on = m->files != NULL},
	    {.family = "block", .run = flip_block, .res = &bres, .on = m->blk != NULL},
	    {.family = "page-cache", .run = flip_pagecache, .res = &pres, .on = m->pc != NULL},
	    {.family = "io_uring", .run = flip_uring, .res = &urres, .on = m->ur != NULL},
	    {.family = "library", .run = flip_uprobe, .res = &ures, .on = m->up != NULL},
	    {.family = "VFS", .run = flip_vfs, .res = &vres, .on = m->vfs != NULL},
	    {.family = "stacks", .run = flip_stacks, .res = &sres, .on = stk},
	};

	struct selfcost_layer layers[] = {
	    {.name = "syscall", .obj = m->sys ? probe_syscall_object(m->sys) : NULL},
	    {.name = "block", .obj = m->blk ? probe_block_object(m->blk) : NULL},
	    {.name = "page_cache", .obj = m->pc ? probe_pagecache_object(m->pc) : NULL},
	    {.name = "io_uring", .obj = m->ur ? probe_uring_object(m->ur) : NULL},
	    {.name = "libraries", .obj = m->up ? probe_uprobe_object(m->up) : NULL},
	    {.name = "vfs", .obj = m->vfs ? probe_vfs_object(m->vfs) : NULL},
	};

	m->closing_seq = w.seq;
	flip_layers(m);
	selfcost_flip(m->cost, layers, ELEMENTSOF(layers), w.end_mono_ns - w.start_mono_ns,
		      w.end_mono_ns);
	flip_all(m, jobs, ELEMENTSOF(jobs));
	layers[0].user_ns = jobs[0].cpu_ns + jobs[1].cpu_ns + jobs[7].cpu_ns;
	layers[1].user_ns = jobs[2].cpu_ns;
	layers[2].user_ns = jobs[3].cpu_ns;
	layers[3].user_ns = jobs[4].cpu_ns;
	layers[4].user_ns = jobs[5].cpu_ns;
	layers[5].user_ns = jobs[6].cpu_ns;
	selfcost_window(m->cost, layers, ELEMENTSOF(layers));
	stats_window_start(m, w.end_mono_ns);
	m->fres = &fres;
	m->urd = m->ur ? &urres : NULL;
	if (m->up)
		qsort_safe(ures.entries, ures.n, sizeof(*ures.entries), up_cmp);
	if (m->vfs)
		qsort_safe(vres.entries, vres.n, sizeof(*vres.entries), up_cmp);
	/* the syscall map has flipped: every call it counted as kept has its
	 * event in the ring */
	if (m->traces)
		traces_read(m, &w);

	/* counts lost to a full map may be any process's: every record of
	 * the window says so (the same sums as the agent record's losses) */
	m->win_map_full = map_full_sum(res.counters, bres.counters, pres.counters, urres.counters,
				       fres.counters, ures.counters, vres.counters);
	m->win_recursion = res.recursion_misses + bres.recursion_misses + pres.recursion_misses +
			   urres.recursion_misses;
	m->win_lacks = m->lacked | layers_lacking(m);
	t0 = clock_ns(CLOCK_MONOTONIC);
	featvec_sort(res.entries, res.n);
	res.n = featvec_merge(res.entries, res.n);
	for (size_t i = 0; i < res.n;) {
		size_t end = featvec_group_end(res.entries, res.n, i);

		for (size_t k = i; k < end; k++)
			events += res.entries[k].v.count;
		if (emit_features(m, &ctx, res.entries[i].tgid, res.entries[i].cgroup_id,
				  res.entries + i, end - i, &bres, &pres, &ures, &vres) == 0)
			records++;
		i = end;
	}
	/* processes seen only by the other layers in this window (a write whose
	 * pages were dirtied before the window closed but whose call returned
	 * after): their activity is published too, with no syscall ops */
	n_only = layer_only_procs(m, &res, &bres, &pres, &ures, &vres);
	for (size_t i = 0; i < n_only; i++)
		if (emit_features(m, &ctx, m->only[i].tgid, m->only[i].cgroup_id, NULL, 0, &bres,
				  &pres, &ures, &vres) == 0)
			records++;
	for (unsigned op = 0; op < DC_OP_MAX; op++)
		events += res.overflow[op].v.count;

	/* one device record per disk with requests in this window */
	blk_sort_by_dev(bres.entries, bres.n);
	for (size_t i = 0; i < bres.n;) {
		size_t end = i;
		char name[64];

		while (end < bres.n && bres.entries[end].dev == bres.entries[i].dev)
			end++;
		device_name(bres.entries[i].dev, name, sizeof(name));
		buf_reset(&m->rec);
		record_device(&m->rec, &ctx, name, bres.entries + i, end - i);
		if (!m->rec.err)
			manager_write(m, DC_REC_DEVICE, &w);
		i = end;
	}

	if (stk)
		emit_stacks(m, &ctx, &sres);

	if (m->traces) {
		traces_publish(m, &w);
		for (size_t i = 0; i < res.n; i++)
			agg_sum_add(&tsum, &res.entries[i].v);
		for (unsigned op = 0; op < DC_OP_MAX; op++)
			agg_sum_add(&tsum, &res.overflow[op].v);
	}

	selfstat_read(&self);
	/* before the initializer: the order its expressions run in is unspecified */
	rs_slots = probe_syscall_slots(m->sys, &rs_reclaimed, &rs_exited);
	st = (struct dc_agent_stats){
	    .version = DC_VERSION,
	    .events = events,
	    .records = records,
	    .keys = res.n,
	    .unattributed = res.overflow,
	    .n_unattributed = DC_OP_MAX,
	    .flip_us = res.flip_us,
	    .drain_us = res.drain_us,
	    .encode_us = (clock_ns(CLOCK_MONOTONIC) - t0) / 1000,
	    .cpu_user_us = self.user_us - m->self.user_us,
	    .cpu_sys_us = self.sys_us - m->self.sys_us,
	    .rss_kib = self.rss_kib,
	    .rss_shared_kib = self.rss_shared_kib,
	    .sinks = report_sinks,
	    .sinks_opaque = m,
	    .max_keys = probe_syscall_max_keys(m->sys),
	    .map_layout = probe_syscall_layout(m->sys),
	    .slots_in_use = rs_slots,
	    .slots_reclaimed = rs_reclaimed,
	    .slots_reclaimed_exited = rs_exited,
	    .probes = m->probes,
	    .n_probes = m->n_probes,
	    .block = m->blk != NULL,
	    .blk_unattributed = bres.overflow,
	    .stacks = stk ? &sres : NULL,
	};
	memcpy(st.counters, res.counters, sizeof(st.counters));
	memcpy(st.blk_counters, bres.counters, sizeof(st.blk_counters));
	st.recursion_misses = res.recursion_misses;
	st.blk_recursion_misses = bres.recursion_misses;
	if (m->stopping && m->blk)
		st.blk_inflight_at_stop = probe_block_inflight_at_stop(m->blk);
	st.pagecache = m->pc != NULL;
	st.libraries = m->up != NULL;
	memcpy(st.up_counters, ures.counters, sizeof(st.up_counters));
	st.vfs = m->vfs != NULL;
	st.uring = m->ur != NULL;
	memcpy(st.ur_counters, urres.counters, sizeof(st.ur_counters));
	st.ur_recursion_misses = urres.recursion_misses;
	st.ur_unattributed = (struct dc_lib_stat){.count = urres.overflow.count,
						  .time_ns = urres.overflow.time_ns,
						  .bytes = urres.overflow.bytes,
						  .errors = urres.overflow.errors};
	if (m->traces) {
		st.traces = true;
		/* the system calls' part: none where the kernel refused their
		 * programs' trace code (the other layers' events still come) */
		if (m->sys && probe_syscall_traces(m->sys)) {
			st.tr_seen = tsum.count;
			st.tr_kept = tsum.tr_kept;
			st.tr_out = tsum.tr_out;
			st.tr_drop = tsum.tr_drop;
		}
		st.tr_window = m->tstat;
		traces_layers_read(m->traces, st.tr_window.layers);
		m->tstat = (struct traces_window){};
	}
	st.files = m->files != NULL;
	memcpy(st.file_counters, fres.counters, sizeof(st.file_counters));
	st.file_names = fres.names;
	st.file_names_not_kept = fres.names_not_kept;
	st.file_max_keys = fres.max_keys;
	st.file_slots_in_use = fres.slots_in_use;
	st.file_slots_reclaimed = fres.slots_reclaimed;
	st.file_slots_reclaimed_exited = fres.slots_reclaimed_exited;
	st.file_unattributed = &fres.overflow;
	memcpy(st.vfs_counters, vres.counters, sizeof(st.vfs_counters));
	/* tgid 0, cgroup 0: calls in interrupt context (bpf/func.bpf.h); the
	 * features are written, so their buffer is free again */
	if (m->vfs) {
		st.n_vfs_interrupts = fn_stats_for(m, &vres, 0, 0, 0, vfs_feature);
		st.vfs_interrupts = m->libstats;
	}
	memcpy(st.pc_counters, pres.counters, sizeof(st.pc_counters));
	st.pc_recursion_misses = pres.recursion_misses;
	st.pc_unattributed = pres.overflow;
	st.pc_page_size = m->page_size;
	for (size_t k = 0; k < pres.n; k++)
		if (!pres.entries[k].tgid)
			pc_val_add(&st.pc_kernel, &pres.entries[k].v);
	st.cpu_share = window_seconds(&w) > 0
			   ? (double)(st.cpu_user_us + st.cpu_sys_us) / 1e6 / window_seconds(&w)
			   : 0;
	st.bpf_run_ns = selfcost_bpf_ns(m->cost);
	st.bpf_stats = selfcost_bpf_stats(m->cost);
	st.bpf_share =
	    window_seconds(&w) > 0 ? (double)st.bpf_run_ns / 1e9 / window_seconds(&w) : 0;
	st.total_share = st.bpf_share + st.cpu_share;
	{
		long ncpu = sysconf(_SC_NPROCESSORS_ONLN);

		st.node_share = st.total_share / (double)(ncpu > 0 ? ncpu : 1);
	}
	/* judged now, so the record says what this window weighed; applied
	 * after it is published, so each window ran at one level throughout */
	next_level = m->stopping || m->budget_replaced
			 ? m->budget_level
			 : budget_feed(m, w.end_mono_ns - w.start_mono_ns,
				       st.bpf_run_ns + (st.cpu_user_us + st.cpu_sys_us) * 1000);
	/* published in this window's record: the new budget owes it nothing */
	if (m->budget_replaced)
		m->budget_switch_ns = 0;
	window_losses(m, &st);
	st.self = report_self;
	st.self_opaque = m;
	m->self = self;

	m->windows_published++;
	m->last_close_usec = clock_ns(CLOCK_MONOTONIC) / 1000;
	m->last_rate = window_seconds(&w) > 0 ? (double)events / window_seconds(&w) : 0;
	buf_reset(&m->rec);
	record_agent(&m->rec, &ctx, &st);
	if (!m->rec.err)
		manager_write(m, DC_REC_AGENT, &w);
	/* a failing sink logs once per failure streak itself and keeps the data */
	for (size_t i = 0; i < m->n_sinks; i++)
		sink_flush(m->sinks[i]);
	m->urd = NULL;		     /* urres goes out of scope */
	m->budget_switch_us_pub = 0; /* published in this window's record */
	if (next_level != m->budget_level)
		budget_change(m, next_level);
	else if (m->budget_owed && !m->stopping)
		budget_retry(m);
	/* the next window's records lack what is missing from its start, a
	 * family a reload starts later in it included */
	m->lacked = layers_lacking(m);
	/* systemd reads these; once a second is enough for systemctl status,
	 * and a listener that reads slowly must not slow the windows */
	if (!m->stopping && m->last_close_usec - m->status_usec >= USEC_PER_SEC) {
		m->status_usec = m->last_close_usec;
		notify_status(m, "");
	}
	return 0;
}

static int on_timer(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct manager *m = userdata;
	uint64_t next;

	manager_close_window(m);
	next = windows_deadline(&m->win, clock_ns(CLOCK_MONOTONIC));
	sd_event_source_set_time(s, next / NSEC_PER_USEC);
	sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
	return 0;
}

static int on_stop(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata)
{
	struct manager *m = userdata;

	if (m->stopping)
		return 0;
	m->stopping = true;
	/* the last window's close, then Kafka's flush: a flush_timeout beyond
	 * the unit's stop timeout (90 s by default) would end in SIGKILL */
	sd_notifyf(0, "STOPPING=1\nEXTEND_TIMEOUT_USEC=%llu",
		   (unsigned long long)((m->kafka ? m->cfg.kafka_flush_timeout : 0) + 30) *
		       USEC_PER_SEC);
	if (si)
		log_info("Received SIG%s, publishing the last window and exiting",
			 sigabbrev_np((int)si->ssi_signo));
	else
		log_info("Run duration reached, publishing the last window and exiting");
	/* the partial window is published, so a stop loses nothing */
	manager_close_window(m);
	return sd_event_exit(sd_event_source_get_event(s), 0);
}

static int on_duration(sd_event_source *s, uint64_t usec, void *userdata)
{
	return on_stop(s, NULL, userdata);
}

static int on_files_ring(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
	struct manager *m = userdata;

	probe_file_consume(m->files, m->win.cur.seq);
	return 0;
}

/* Probe families a configuration change restarts (the rest keeps running). */
enum family {
	FAM_SYSCALL = 1 << 0, /* with the file layer, traces and their filters */
	FAM_LIBS = 1 << 1,
	FAM_VFS = 1 << 2,
	FAM_PC = 1 << 3,
	FAM_URING = 1 << 4,
	FAM_BLOCK = 1 << 5,
	FAM_ALL = (1 << 6) - 1,
	/* not families: what else a reload may touch */
	CH_SINKS = 1 << 8,
	CH_INTERVAL = 1 << 9,
	CH_LOG = 1 << 10,
	CH_TRACE_POLICY = 1 << 11,
	CH_FILTER = 1 << 12,
	CH_HOST = 1 << 13,
	CH_BUDGET = 1 << 14,
	CH_SELF = 1 << 15,
};

static unsigned config_changes(const struct dc_config *a, const struct dc_config *b);
static void families_stop(struct manager *m, unsigned fam);
static int families_start(struct manager *m, const struct dc_config *cfg, unsigned fam,
			  bool *config_error);
static void sinks_stop(struct manager *m, const struct dc_config *next);
static void carry_handover(struct manager *m, const struct dc_config *cfg);
static int sinks_start(struct manager *m, const struct dc_config *cfg, bool rollback,
		       bool *config_error);
static void set_host(struct manager *m, const struct dc_config *cfg);
static int filter_load(struct manager *m, const struct dc_config *cfg, struct dc_filter **out);

/* STATUS= for systemctl status: what runs, what flows, what is wrong. */
/* also: other assignments to send in the same message ("READY=1\n") */
static void notify_status(struct manager *m, const char *also)
{
	char probes[256] = "", kafka[160] = "", budget[256] = "", lost[160] = "";
	size_t off = 0;
	const struct window_losses *l = &m->losses;

	for (size_t i = 0; i < m->n_probes; i++)
		off += (size_t)snprintf(probes + off,
					off < sizeof(probes) ? sizeof(probes) - off : 0, "%s%s=%s",
					i ? " " : "", m->probes[i].name, m->probes[i].mechanism);
	if (m->kafka) {
		struct sink_kafka_state ks;

		sink_kafka_state(m->kafka, &ks);
		off =
		    (size_t)snprintf(kafka, sizeof(kafka),
				     "; kafka %s, %zu segments undelivered, %llu KiB in the spool",
				     ks.brokers_down ? "brokers down" : "up", ks.segments,
				     (unsigned long long)(ks.spool_bytes >> 10));
		if (ks.spool_failing && off < sizeof(kafka))
			snprintf(kafka + off, sizeof(kafka) - off,
				 ", %llu KiB in memory waiting for it",
				 (unsigned long long)(ks.held_bytes >> 10));
	}
	/* the agent record's losses, by what was lost (sampled_out is the
	 * sampling's choice, not a loss) */
	{
		uint64_t calls = l->map_full + l->recursion_misses,
			 events = l->ring_full + l->trace_unsealed,
			 records = l->sink_dropped_records + l->spool_shed;

		if (!m->windows_published)
			snprintf(lost, sizeof(lost), "no window closed yet");
		else if (!calls && !events && !records)
			snprintf(lost, sizeof(lost), "nothing lost in the last window");
		else
			snprintf(
			    lost, sizeof(lost),
			    "lost in the last window: %llu calls, %llu trace events, %llu records",
			    (unsigned long long)calls, (unsigned long long)events,
			    (unsigned long long)records);
	}
	if (m->cfg.budget_cpu > 0)
		snprintf(budget, sizeof(budget), "; cost %.2f%% of a core (budget %.2f%%%s%s%s)",
			 m->budget->judged * 100, m->cfg.budget_cpu * 100,
			 m->budget_level ? ", " : "", m->budget_level ? m->budget_note : "",
			 m->budget->at_floor ? ", over at the floor" : "");
	sd_notifyf(0, "%sSTATUS=%s%s%.0f calls/s, %llu windows published, %s%s%s; probes %s", also,
		   m->reload_error[0] ? m->reload_error : "", m->reload_error[0] ? "; " : "",
		   m->last_rate, (unsigned long long)m->windows_published, lost, kafka, budget,
		   probes);
}

/*
 * The watchdog is fed from the loop only while windows keep closing: a
 * loop that still spins but whose windows stalled (a flip stuck in the
 * kernel, a sink wedged) stops the pings and systemd restarts the agent.
 */
static int on_watchdog(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct manager *m = userdata;
	uint64_t now = clock_ns(CLOCK_MONOTONIC) / 1000;
	uint64_t limit = (uint64_t)(m->cfg.interval * 2e6) + 10 * USEC_PER_SEC;

	if (now - m->last_close_usec <= limit)
		sd_notify(0, "WATCHDOG=1");
	else if (!m->watchdog_warned++)
		log_error("No window closed for %llu s: withholding the watchdog ping",
			  (unsigned long long)((now - m->last_close_usec) / USEC_PER_SEC));
	return sd_event_source_set_time_relative(s, m->watchdog_usec / 3);
}

static int watchdog_start(struct manager *m)
{
	uint64_t usec = 0;
	int r;

	m->last_close_usec = clock_ns(CLOCK_MONOTONIC) / 1000;
	if (sd_watchdog_enabled(0, &usec) <= 0 || !usec)
		return 0; /* systemd asked for no watchdog */
	m->watchdog_usec = usec;
	r = sd_event_add_time_relative(m->event, &m->watchdog, CLOCK_MONOTONIC, usec / 3, 0,
				       on_watchdog, m);
	if (r >= 0)
		r = sd_event_source_set_enabled(m->watchdog, SD_EVENT_ON);
	return r < 0 ? log_error_errno(r, "Cannot arm the watchdog: %m") : 0;
}

/* A reload refused before anything changed, for why: the log and STATUS=. */
static void reload_refused(struct manager *m, const char *why)
{
	snprintf(m->reload_error, sizeof(m->reload_error),
		 "reload refused (%.100s): running on the previous configuration", why);
	log_error("Reload refused: %s; still running on the previous one", why);
}

/* A reload's close of the window so far: its CPU (the drain, the records)
 * is that window's, and a level change it decides is the budget's switch
 * already; the reload's own switch CPU counts from after it, not twice. */
static void reload_close_window(struct manager *m, struct dc_selfstat *before)
{
	log_debug("Reload: publishing the window so far");
	manager_close_window(m);
	selfstat_read(before);
}

/*
 * SIGHUP (systemctl reload): read the file again aside and validate it; an
 * invalid one leaves everything running as it was and says so. A valid one
 * is applied where it differs: the window so far is published first, then
 * the probe families whose settings changed (and only those) are reattached
 * and the sinks reopened if theirs did; the interval, the log level and the
 * trace sampling change in place, with no program reloaded.
 */
static int on_hup(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata)
{
	struct manager *m = userdata;
	struct dc_filter *nf = NULL;
	struct dc_selfstat before = {}, after = {};
	struct dc_config nc;
	bool config_error = false, vfs_was = m->vfs_attached;
	bool closed = false;
	unsigned ch;
	int r, level;

	selfstat_read(&before);
	sd_notifyf(0, "RELOADING=1\nMONOTONIC_USEC=%llu\nSTATUS=Reloading the configuration",
		   (unsigned long long)(clock_ns(CLOCK_MONOTONIC) / 1000));
	m->reload_error[0] = 0;
	if (!m->reload_load) {
		log_notice("Received SIGHUP but no configuration file to reload, ignoring");
		goto done;
	}
	r = m->reload_load(m->reload_ctx, &nc);
	if (r >= 0)
		r = filter_load(m, &nc, &nf);
	if (r < 0) {
		snprintf(m->reload_error, sizeof(m->reload_error),
			 "reload refused (invalid configuration, see the log): running on the "
			 "previous one");
		log_error("Reload refused: the new configuration is invalid; still running on the "
			  "previous one");
		goto done;
	}
	ch = config_changes(&m->cfg, &nc);
	if (!ch) {
		log_info("Reload: configuration unchanged");
		filter_free(nf);
		goto done;
	}
	if ((ch & (CH_TRACE_POLICY | FAM_SYSCALL)) && nc.traces_enable) {
		/* what only the running system can tell (a cgroup that does not
		 * exist), before anything changes */
		char err[512];

		if (traces_check_policy(&nc, err, sizeof(err)) < 0) {
			reload_refused(m, err);
			filter_free(nf);
			goto done;
		}
	}
	if ((ch & FAM_LIBS) && !(ch & CH_BUDGET) && nc.n_libs && m->cfg.budget_cpu > 0) {
		/* the budget may keep the libraries off through this reload
		 * (below), unattached: what attaching them would refuse is
		 * refused here, before anything changes */
		char err[1024];

		if (probe_uprobe_check(&nc, err, sizeof(err)) < 0) {
			reload_refused(m, err);
			filter_free(nf);
			goto done;
		}
	}
	level = log_parse_level(nc.log_level);
	log_set_max_level(level < 0 ? LOG_INFO : level);
	m->budget_replaced = ch & CH_BUDGET;
	if ((ch & CH_BUDGET) && m->budget_level != DC_BUDGET_FULL && !(ch & (FAM_ALL | CH_SINKS))) {
		/* a new budget starts from full detail: the window so far goes
		 * out at the level it ran at, not said to be full (nor judged
		 * as full by the new budget) */
		reload_close_window(m, &before);
		closed = true;
	}
	if (ch & (FAM_ALL | CH_SINKS)) {
		struct dc_filter *old_filter = NULL;
		unsigned kept_off, start;

		/* everything counted so far goes out under the old settings */
		reload_close_window(m, &before);
		closed = true;
		/* the budget keeps the libraries off (and no new budget
		 * restarts from full detail): attached now, their probes
		 * (thousands, each a perf event on older kernels) would be
		 * detached again at once; checked above, attached when the
		 * budget steps back. A rollback keeps them off too. */
		kept_off = m->budget_level >= DC_BUDGET_LIBRARIES_OFF ? FAM_LIBS : 0;
		start = ch & FAM_ALL & ~(ch & CH_BUDGET ? 0 : kept_off);
		families_stop(m, ch & FAM_ALL);
		if (ch & CH_FILTER) {
			old_filter = m->filter;
			m->filter = TAKE_PTR(nf);
		}
		if (ch & CH_HOST)
			set_host(m, &nc);
		r = 0;
		if (ch & CH_SINKS) {
			sinks_stop(m, &nc);
			r = sinks_start(m, &nc, false, &config_error);
			if (r < 0)
				snprintf(m->reload_error, sizeof(m->reload_error),
					 "reload failed to open the new outputs: running on the "
					 "previous configuration");
		}
		if (r >= 0) {
			if (ch & FAM_VFS)
				m->vfs_attached = false; /* judged afresh under the new settings */
			r = families_start(m, &nc, start, &config_error);
			if (r < 0) {
				families_stop(m, ch & FAM_ALL);
				snprintf(m->reload_error, sizeof(m->reload_error),
					 "reload failed to attach the new probes: running on the "
					 "previous configuration");
			}
		}
		if (r >= 0 && (ch & CH_SINKS))
			carry_handover(m, &nc);
		if (r < 0) {
			/* all of the running configuration back, not a mix: the
			 * filter, the host, the log level, the outputs, the probes */
			/* "Configuration reload failed ...": the STATUS= words */
			log_error("Configuration %s", m->reload_error);
			if (old_filter) {
				filter_free(m->filter);
				m->filter = TAKE_PTR(old_filter);
			}
			if (ch & CH_HOST)
				set_host(m, &m->cfg);
			level = log_parse_level(m->cfg.log_level);
			log_set_max_level(level < 0 ? LOG_INFO : level);
			if (ch & CH_SINKS) {
				sinks_stop(m, &m->cfg);
				r = sinks_start(m, &m->cfg, true, &config_error);
				/* to the old file sink, or counted lost; also when
				 * the agent stops here (its close tries them) */
				carry_handover(m, &m->cfg);
				if (r < 0)
					return sd_event_exit(m->event, r);
			}
			if (ch & FAM_VFS)
				m->vfs_attached = false;
			/* at the level in force, as the families ran */
			start = ch & FAM_ALL & ~kept_off;
			r = families_start(m, &m->cfg, start, &config_error);
			if (r < 0 && (start & FAM_LIBS) && m->cfg.n_libs && !m->up) {
				/* the running configuration's libraries cannot be
				 * probed now either (deleted since they attached): the
				 * rest of it runs, and they are owed, rather than the
				 * agent stopping */
				families_stop(m, ch & FAM_ALL);
				if (ch & FAM_VFS)
					m->vfs_attached = false;
				r = families_start(m, &m->cfg, ch & FAM_ALL & ~FAM_LIBS,
						   &config_error);
				/* owed where the level runs them; else they come
				 * back with the detail, tried then */
				if (r >= 0 && m->budget_level < DC_BUDGET_LIBRARIES_OFF)
					budget_owe(m, 0);
			}
			if (r < 0)
				return sd_event_exit(m->event, r);
			/* a VFS layer that ran and now does not start is owed too,
			 * not off as on a kernel that never had it */
			if ((ch & FAM_VFS) && vfs_was && !m->vfs) {
				m->vfs_attached = true;
				if (m->budget_level < DC_BUDGET_VFS_OFF)
					budget_owe(m, 1);
			}
			/* the families come back at the budget's level, as they ran;
			 * what cannot start is owed */
			budget_apply(m, m->budget_level);
			filter_free(nf);
			goto done;
		}
		filter_free(old_filter);
	}
	filter_free(nf);
	if ((ch & CH_TRACE_POLICY) && m->traces && !(ch & FAM_SYSCALL)) {
		char err[512];

		r = traces_set_policy(m->traces, &nc, false, err, sizeof(err));
		if (r < 0) {
			/* checked above: a cgroup removed since */
			log_error("Reload: trace sampling not changed: %s", err);
			snprintf(m->reload_error, sizeof(m->reload_error),
				 "reload left the trace sampling as it was: %.100s", err);
			nc.traces_one_in_n = m->cfg.traces_one_in_n;
			nc.traces_slow_ms = m->cfg.traces_slow_ms;
			nc.traces_slice_ms = m->cfg.traces_slice_ms;
			nc.traces_period_s = m->cfg.traces_period_s;
			nc.traces_rate = m->cfg.traces_rate;
			nc.traces_burst = m->cfg.traces_burst;
			nc.traces_cgroup_rate = m->cfg.traces_cgroup_rate;
			nc.traces_cgroup_burst = m->cfg.traces_cgroup_burst;
			memcpy(nc.traces_full_cgroups, m->cfg.traces_full_cgroups,
			       sizeof(nc.traces_full_cgroups));
		}
		m->traces_flush_usec = (uint64_t)nc.traces_flush_ms * 1000;
	}
	if (ch & CH_INTERVAL) {
		/* the tries' spacing is counted in windows: started afresh */
		m->owed_gap = 0;
		m->owed_retry_seq = m->win.cur.seq + 1;
		windows_set_interval(&m->win, interval_ns(nc.interval), nc.align_windows);
		sd_event_source_set_time(
		    m->timer, windows_deadline(&m->win, clock_ns(CLOCK_MONOTONIC)) / NSEC_PER_USEC);
	}
	if (ch & CH_SELF) {
		struct selfcost *sc;

		if (selfcost_new(nc.self_bpf_stats, nc.self_bpf_stats_duty, nc.self_map_scan_sec,
				 &sc) >= 0) {
			/* the programs were read at the last close: their time since,
			 * not since their load, is the next window's */
			selfcost_adopt(sc, m->cost);
			selfcost_free(m->cost);
			m->cost = sc;
			stats_window_start(m, clock_ns(CLOCK_MONOTONIC));
		}
	}
	/* what was applied: a trace policy that failed kept its old fields */
	m->cfg = nc;
	/* another trace policy, another cost per run (families started again
	 * are new programs: their run counter's id tells selfcost) */
	if (ch & CH_TRACE_POLICY)
		selfcost_forget(m->cost);
	if (ch & CH_BUDGET) {
		/* a new budget starts from full detail and judges it afresh */
		struct dc_budget_params bp = {.cpu = m->cfg.budget_cpu,
					      .period_sec = m->cfg.budget_period,
					      .recover_below = m->cfg.budget_recover_below};

		budget_init(m->budget, &bp);
		m->budget_replaced = false;
		m->budget_note[0] = 0;
		m->budget_trial = false;
		budget_apply(m, DC_BUDGET_FULL);
	} else if (m->budget_level && (ch & (FAM_ALL | CH_TRACE_POLICY)))
		/* restarted families and a new trace policy come back at the
		 * level in force, not at full detail */
		budget_apply(m, m->budget_level);
	else if (m->budget_owed) {
		/* an owed family the reload started, or configured away, is
		 * owed no more; one it did not touch still is */
		m->budget_owed &= budget_missing(m);
		probes_report(m);
	}
	/* a window the reload began lacks what the new settings run without
	 * (the families' restart in between is the reload's, not a lack); one
	 * it did not close keeps what it lacked since its start */
	if (closed)
		m->lacked = layers_lacking(m);
	{
		/* what changed, comma-separated */
		const char *what[] = {ch & FAM_ALL ? "probes reattached" : NULL,
				      ch & CH_SINKS ? "outputs reopened" : NULL,
				      ch & CH_INTERVAL ? "interval" : NULL,
				      ch & CH_TRACE_POLICY ? "trace sampling" : NULL,
				      ch & CH_BUDGET ? "budget" : NULL,
				      ch & CH_LOG ? "log level" : NULL};
		char list[160] = "";
		size_t o = 0;

		for (size_t i = 0; i < ELEMENTSOF(what); i++)
			if (what[i] && o < sizeof(list))
				o += (size_t)snprintf(list + o, sizeof(list) - o, "%s%s",
						      o ? ", " : "", what[i]);
		log_info("Reloaded the configuration: %s", list);
	}
done:
	/* a rollback keeps the old budget, which judges the windows again */
	m->budget_replaced = false;
	/* every SIGHUP opens the output file again, reopened sinks or not:
	 * logrotate's postrotate (packaging/datacrumbs.logrotate) moves it */
	for (size_t i = 0; i < m->n_sinks; i++) {
		r = sink_file_reopen(m->sinks[i]);
		if (r < 0)
			log_error_errno(r,
					"Cannot reopen the output %s: %m; writing on to the "
					"file already open",
					m->cfg.output);
	}
	/* like a change of budget level, a reload's one-off CPU (reattaching
	 * probes parses the kernel's BTF) is not what the running level costs */
	selfstat_read(&after);
	m->budget_switch_ns +=
	    (after.user_us + after.sys_us - before.user_us - before.sys_us) * 1000;
	m->budget_switch_us_pub = m->budget_switch_ns / 1000;
	notify_status(m, "READY=1\n");
	return 0;
}

/* Which part of the agent a setting belongs to, by its key. */
static unsigned key_scope(const char *path)
{
	static const struct {
		const char *prefix;
		unsigned scope;
	} t[] = {
	    {"interval", CH_INTERVAL},
	    {"align_windows", CH_INTERVAL},
	    {"log_level", CH_LOG},
	    {"host", CH_HOST | CH_SINKS | FAM_SYSCALL},
	    {"output.", CH_SINKS},
	    {"kafka.", CH_SINKS},
	    {"spool.", CH_SINKS},
	    {"traces.output.", CH_SINKS},
	    {"traces.sampling.", CH_TRACE_POLICY},
	    {"traces.flush_ms", CH_TRACE_POLICY},
	    {"traces.", FAM_SYSCALL | CH_SINKS},
	    {"budget.", CH_BUDGET},
	    {"self.", CH_SELF},
	    {"filter.", CH_FILTER | FAM_ALL},
	    {"probes.syscall.", FAM_SYSCALL},
	    {"probes.stacks.", FAM_SYSCALL | CH_SINKS}, /* the Kafka topic follows enable */
	    {"probes.files.", FAM_SYSCALL},
	    {"maps.files_", FAM_SYSCALL},
	    {"probes.vfs.", FAM_VFS},
	    {"maps.vfs_", FAM_VFS},
	    {"probes.pagecache.", FAM_PC},
	    {"maps.pagecache_", FAM_PC},
	    {"probes.io_uring.", FAM_URING},
	    {"maps.io_uring_", FAM_URING},
	    {"probes.block.", FAM_BLOCK},
	    {"maps.block_", FAM_BLOCK},
	    {"maps.library_", FAM_LIBS},
	    /* the map layout and update mode are every family's */
	    {"maps.", FAM_ALL},
	};

	for (size_t i = 0; i < ELEMENTSOF(t); i++)
		if (!strncmp(path, t[i].prefix, strlen(t[i].prefix)))
			return t[i].scope;
	return FAM_ALL | CH_SINKS; /* unknown to this table: restart everything */
}

/* What differs between two configurations, as key_scope() bits. */
static unsigned config_changes(const struct dc_config *a, const struct dc_config *b)
{
	size_t n;
	const struct dc_cfg_item *it = config_table(&n);
	unsigned ch = 0;

	for (size_t i = 0; i < n; i++)
		if (memcmp((const char *)a + it[i].offset, (const char *)b + it[i].offset,
			   it[i].size))
			ch |= key_scope(it[i].path);
	if (a->n_libs != b->n_libs || memcmp(a->libs, b->libs, sizeof(a->libs)))
		ch |= FAM_LIBS;
	/* the families that emit trace events hold the system-call object's
	 * ring and policy (traces_share()): a new one needs them restarted */
	if ((ch & FAM_SYSCALL) && (a->traces_enable || b->traces_enable))
		ch |= FAM_LIBS | FAM_VFS | FAM_BLOCK;
	return ch;
}

/* Which budget steps have something to switch off here. */
static unsigned budget_applicable(const struct manager *m)
{
	unsigned mask = 0;

	/* configured is not enough: without their ring (traces_share() said
	 * why) there are no traces to sample less, and the steps would spend
	 * a period each changing nothing */
	if (m->traces)
		mask |= 1u << DC_BUDGET_TRACES_REDUCED | 1u << DC_BUDGET_TRACES_OFF;
	if (m->sys && probe_syscall_stacks(m->sys))
		mask |= 1u << DC_BUDGET_STACKS_OFF;
	if (m->cfg.n_libs)
		mask |= 1u << DC_BUDGET_LIBRARIES_OFF;
	if (m->vfs_attached)
		mask |= 1u << DC_BUDGET_VFS_OFF;
	return mask;
}

static unsigned budget_feed(struct manager *m, uint64_t window_ns, uint64_t cost_ns)
{
	if (m->cfg.budget_cpu <= 0) {
		m->budget_switch_ns = 0; /* nothing to judge: a budget set later starts clean */
		return m->budget_level;
	}
	/* a level is judged on what it costs to run, not on the one-off cost
	 * of switching to it (re-attaching the VFS probes parses the kernel's
	 * BTF): that is published, in budget.switch_cpu_us, not weighed */
	cost_ns -= cost_ns > m->budget_switch_ns ? m->budget_switch_ns : cost_ns;
	m->budget_switch_ns = 0;
	budget_set_applicable(m->budget, budget_applicable(m));
	return budget_window(m->budget, window_ns, cost_ns);
}

/* Make the running probes match a budget level (idempotent: a reload calls
 * it again for families it restarted). */
static void budget_apply(struct manager *m, unsigned level)
{
	int r;

	m->budget_level = level;
	selfcost_forget(m->cost);
	if (m->traces) {
		struct dc_config rc = m->cfg;
		char err[256];

		if (level >= DC_BUDGET_TRACES_REDUCED) {
			rc.traces_one_in_n =
			    rc.traces_one_in_n > 100000000 ? 1000000000 : rc.traces_one_in_n * 10;
			rc.traces_rate /= 10;
			rc.traces_cgroup_rate /= 10;
			rc.traces_full_cgroups[0] = 0;
		}
		r = traces_set_policy(m->traces, &rc, true, err, sizeof(err));
		if (r >= 0)
			r = traces_pause(m->traces, level >= DC_BUDGET_TRACES_OFF);
		if (r < 0)
			log_warning_errno(r, "CPU budget: cannot change the trace sampling: %m");
	}
	if (m->sys && probe_syscall_stacks(m->sys)) {
		r = stacks_pause(probe_syscall_stacks(m->sys), level >= DC_BUDGET_STACKS_OFF);
		if (r < 0)
			log_warning_errno(r, "CPU budget: cannot change the stack policy: %m");
	}
	if (level >= DC_BUDGET_LIBRARIES_OFF && m->up)
		families_stop(m, FAM_LIBS);
	if (level >= DC_BUDGET_VFS_OFF && m->vfs)
		families_stop(m, FAM_VFS);
	m->owed_gap = 0;
	budget_restart(m, budget_missing(m));
	probes_report(m);
}

/* The families this budget level runs that are not running: given back by
 * the budget, they did not start again. A family that never attached
 * under this configuration is not missing (the VFS layer on a kernel
 * without fentry and kprobes). */
static unsigned budget_missing(const struct manager *m)
{
	unsigned fams = 0;

	if (m->budget_level < DC_BUDGET_LIBRARIES_OFF && !m->up && m->cfg.n_libs)
		fams |= FAM_LIBS;
	if (m->budget_level < DC_BUDGET_VFS_OFF && !m->vfs && m->vfs_attached)
		fams |= FAM_VFS;
	return fams;
}

/* The families a budget level can owe, by index (owed_detail's too). */
static const struct {
	unsigned fam;
	const char *what;
} owable[] = {{FAM_LIBS, "library"}, {FAM_VFS, "VFS"}};

/* Family i of owable[] did not start: owed, said when it was not already,
 * its reason kept for probes[]. */
static void budget_owe(struct manager *m, size_t i)
{
	if (!(m->budget_owed & owable[i].fam))
		log_warning("The %s probes did not start again; trying again at later windows' "
			    "closes, spaced 1, 2, 4 ... windows apart up to 64 windows or a minute",
			    owable[i].what);
	m->budget_owed |= owable[i].fam;
	snprintf(m->owed_detail[i], sizeof(m->owed_detail[i]),
		 "did not start again (%s); tried again at later windows' closes",
		 i ? m->vfs_detail : m->libs_err);
}

/* Start each of fams; what does not start is owed (budget_retry), said
 * once per failure streak and family: a retry's own failure logs at debug. */
static void budget_restart(struct manager *m, unsigned fams)
{
	bool config_error = false;
	unsigned cap;

	for (size_t i = 0; i < ELEMENTSOF(owable); i++) {
		if (!(fams & owable[i].fam))
			continue;
		m->start_quiet = m->budget_owed & owable[i].fam;
		/* the VFS layer's failure is logged and detailed by its start,
		 * which returns 0 for it (expected on some kernels): it is told
		 * by what is running */
		families_start(m, &m->cfg, owable[i].fam, &config_error);
		m->start_quiet = false;
		if (!(budget_missing(m) & owable[i].fam)) {
			if (m->budget_owed & owable[i].fam)
				log_notice("The %s probes came back (window %llu)", owable[i].what,
					   (unsigned long long)m->win.cur.seq);
			m->budget_owed &= ~owable[i].fam;
			continue;
		}
		budget_owe(m, i);
	}
	m->budget_owed &= budget_missing(m);
	if (!m->budget_owed)
		return;
	/* 64 windows, or a minute where windows are short: a try can parse
	 * the kernel's BTF */
	cap = m->cfg.interval > 0 && 60.0 / m->cfg.interval > 64
		  ? (unsigned)(60.0 / m->cfg.interval)
		  : 64;
	m->owed_gap = m->owed_gap ? (m->owed_gap >= cap / 2 ? cap : 2 * m->owed_gap) : 1;
	m->owed_retry_seq = m->win.cur.seq + m->owed_gap;
}

/* At a window's close with no change of level: the owed families again,
 * when their time has come. The CPU it takes is a switch's: published and
 * not weighed (budget_feed). */
static void budget_retry(struct manager *m)
{
	struct dc_selfstat before = {}, after = {};
	unsigned owed = m->budget_owed;

	m->budget_owed &= budget_missing(m); /* a reload may have started them */
	if (m->budget_owed != owed)
		probes_report(m);
	if (!m->budget_owed || m->win.cur.seq < m->owed_retry_seq)
		return;
	selfstat_read(&before);
	budget_restart(m, m->budget_owed);
	probes_report(m);
	selfstat_read(&after);
	m->budget_switch_ns +=
	    (after.user_us + after.sys_us - before.user_us - before.sys_us) * 1000;
	m->budget_switch_us_pub = m->budget_switch_ns / 1000;
}

static void budget_change(struct manager *m, unsigned level)
{
	bool back = level < m->budget_level;
	struct dc_selfstat before = {}, after = {};

	log_notice("CPU budget: the agent cost %.2f%% of a core (budget %.2f%% over %g s): %s "
		   "%s (level %u of %u)%s",
		   m->budget->judged * 100, m->cfg.budget_cpu * 100, m->cfg.budget_period,
		   back ? "restoring detail," : "giving up detail,", budget_level_name(level),
		   level, DC_BUDGET_LEVELS - 1,
		   m->budget->trial ? ", a trial: under the budget, not under recover_below" : "");
	m->budget_trial = m->budget->trial;
	snprintf(m->budget_note, sizeof(m->budget_note), "budget %s since window %llu%s",
		 budget_level_name(level), (unsigned long long)m->win.cur.seq,
		 m->budget_trial ? " (a trial)" : "");
	selfstat_read(&before);
	budget_apply(m, level);
	selfstat_read(&after);
	m->budget_switch_ns =
	    (after.user_us + after.sys_us - before.user_us - before.sys_us) * 1000;
	m->budget_switch_us_pub = m->budget_switch_ns / 1000;
	notify_status(m, "");
}

static void probes_report(struct manager *m)
{
	static const char budget_off[] = "switched off by the CPU budget (budget.cpu)";

	m->n_probes = 0;
	if (m->sys) {
		m->probes[m->n_probes++] = (struct dc_probe_report){
		    .name = "syscall",
		    .mechanism = probe_syscall_mechanism(m->sys),
		    .detail = probe_syscall_detail(m->sys),
		};
		m->probes[m->n_probes++] = (struct dc_probe_report){
		    .name = "files",
		    .mechanism = m->files ? probe_syscall_mechanism(m->sys) : "off",
		    .detail = probe_syscall_files_detail(m->sys)};
	}
	if (m->up)
		m->probes[m->n_probes++] =
		    (struct dc_probe_report){.name = "libraries",
					     .mechanism = probe_uprobe_mechanism(m->up),
					     .detail = probe_uprobe_detail(m->up)};
	else if (m->cfg.n_libs && m->budget_level >= DC_BUDGET_LIBRARIES_OFF)
		m->probes[m->n_probes++] = (struct dc_probe_report){
		    .name = "libraries", .mechanism = "off", .detail = budget_off};
	else if (m->budget_owed & budget_missing(m) & FAM_LIBS)
		m->probes[m->n_probes++] = (struct dc_probe_report){
		    .name = "libraries", .mechanism = "off", .detail = m->owed_detail[0]};
	if (!m->vfs && m->vfs_attached && m->budget_level >= DC_BUDGET_VFS_OFF)
		m->probes[m->n_probes++] = (struct dc_probe_report){
		    .name = "vfs", .mechanism = "off", .detail = budget_off};
	else if (!m->vfs && (m->budget_owed & budget_missing(m) & FAM_VFS))
		m->probes[m->n_probes++] = (struct dc_probe_report){
		    .name = "vfs", .mechanism = "off", .detail = m->owed_detail[1]};
	else if (m->vfs)
		m->probes[m->n_probes++] =
		    (struct dc_probe_report){.name = "vfs",
					     .mechanism = probe_vfs_mechanism(m->vfs),
					     .detail = probe_vfs_detail(m->vfs)};
	else if (m->vfs_detail[0])
		m->probes[m->n_probes++] = (struct dc_probe_report){
		    .name = "vfs", .mechanism = "off", .detail = m->vfs_detail};
	if (m->pc)
		m->probes[m->n_probes++] = (struct dc_probe_report){
		    .name = "pagecache",
		    .mechanism = probe_pagecache_mechanism(m->pc),
		    .detail = probe_pagecache_detail(m->pc),
		};
	if (m->ur)
		m->probes[m->n_probes++] = (struct dc_probe_report){
		    .name = "io_uring",
		    .mechanism = probe_uring_mechanism(m->ur),
		    .detail = probe_uring_detail(m->ur),
		};
	if (m->blk)
		m->probes[m->n_probes++] = (struct dc_probe_report){
		    .name = "block",
		    .mechanism = probe_block_mechanism(m->blk),
		    .detail = probe_block_detail(m->blk),
		};
}

static void families_stop(struct manager *m, unsigned fam)
{
	if (fam & FAM_SYSCALL) {
		m->traces_io = sd_event_source_disable_unref(m->traces_io);
		m->traces_timer = sd_event_source_disable_unref(m->traces_timer);
		m->stacks_io = sd_event_source_disable_unref(m->stacks_io);
		m->files_io = sd_event_source_disable_unref(m->files_io);
		if (m->traces)
			m->trace_next_id = traces_next_id(m->traces);
		m->files = NULL;
		m->sys = probe_syscall_free(m->sys);
	}
	if (fam & FAM_LIBS)
		m->up = probe_uprobe_free(m->up);
	if (fam & FAM_VFS) {
		m->vfs = probe_vfs_free(m->vfs);
		m->vfs_detail[0] = 0;
	}
	if (fam & FAM_PC)
		m->pc = probe_pagecache_free(m->pc);
	if (fam & FAM_URING)
		m->ur = probe_uring_free(m->ur);
	if (fam & FAM_BLOCK)
		m->blk = probe_block_free(m->blk);
	/* the traces go with the syscall family, which the families sharing
	 * them are stopped with (config_changes()); last, as they hold the
	 * ring's maps too (a family still loaded keeps them alive) */
	if (fam & FAM_SYSCALL)
		m->traces = traces_free(m->traces);
}

/* What a family's start needs besides the manager; filled in by the thread. */
struct start_args {
	const struct dc_config *cfg;
	char libs_err[1024];
};

/* Whether task-context programs may use plain adds on per-CPU values: the
 * kernel never preempts them (preempt.h), and maps.updates allows it. In
 * the family's own thread: the model's sources (debugfs, or the kernel's
 * gzipped config) are read off the start's critical path. */
static bool plain_ok(const struct dc_config *cfg)
{
	const char *why;

	return strcmp(cfg->map_updates, "atomic") != 0 &&
	       preempt_allows_plain_updates(preempt_detect(&why));
}

static int start_syscall(struct manager *m, void *p)
{
	return probe_syscall_new(((struct start_args *)p)->cfg, m->traces, m->clock_fd, &m->sys);
}

static int start_libs(struct manager *m, void *p)
{
	struct start_args *a = p;

	return probe_uprobe_new(a->cfg, m->traces, m->clock_fd, plain_ok(a->cfg), &m->up,
				a->libs_err, sizeof(a->libs_err));
}

static int start_vfs(struct manager *m, void *p)
{
	const struct start_args *a = p;
	const struct dc_config *cfg = a->cfg;
	struct probe_vfs_opts vo = {
	    .mechanism = cfg->vfs_mechanism,
	    .categories = cfg->vfs_categories,
	    .max_keys = (unsigned)cfg->vfs_max_keys,
	    .percpu = strcmp(cfg->map_layout, "shared") != 0,
	    .plain_updates = plain_ok(cfg),
	    .exclude_tgid = cfg->exclude_self ? (uint32_t)getpid() : 0,
	    .filter = m->filter,
	    .traces = m->traces,
	    .clock_fd = m->clock_fd,
	};

	bool selected[DC_VFS_MAX];
	int r;

	/* the settings alone, apart: every mechanism's refusal by the kernel
	 * (a verifier's EINVAL among them) leaves the layer off, while a bad
	 * setting is the operator's to fix (exit 2, no restart) */
	r = probe_vfs_select(cfg->vfs_categories, selected, m->vfs_detail, sizeof(m->vfs_detail));
	m->vfs_bad_config = r < 0;
	if (r < 0)
		return r;
	if (strcmp(cfg->vfs_mechanism, "fentry") && strcmp(cfg->vfs_mechanism, "kprobe"))
		tracefs_ensure();
	return probe_vfs_new(&vo, &m->vfs, m->vfs_detail, sizeof(m->vfs_detail));
}

static int start_pagecache(struct manager *m, void *p)
{
	return probe_pagecache_new(((struct start_args *)p)->cfg, m->clock_fd, &m->pc);
}

static int start_uring(struct manager *m, void *p)
{
	return probe_uring_new(((struct start_args *)p)->cfg, m->clock_fd, &m->ur);
}

static int start_block(struct manager *m, void *p)
{
	return probe_block_new(((struct start_args *)p)->cfg, m->traces, m->clock_fd, &m->blk);
}

/* The main thread's part of the syscall family: its rings on the event loop. */
static int syscall_watch(struct manager *m, const struct dc_config *cfg)
{
	int r;

	m->files = probe_syscall_files(m->sys);
	if (m->traces) {
		struct traces_resolver tr = {.comm = trace_comm,
					     .file = trace_file,
					     .lib_func = trace_lib_func,
					     .opaque = m};

		traces_set_resolver(m->traces, &tr);
		traces_continue_ids(m->traces, m->trace_next_id);
		m->traces_flush_usec = (uint64_t)cfg->traces_flush_ms * 1000;
		r = sd_event_add_io(m->event, &m->traces_io, traces_ring_fd(m->traces), EPOLLIN,
				    on_traces_io, m);
		if (r >= 0)
			r = sd_event_add_time_relative(m->event, &m->traces_timer, CLOCK_MONOTONIC,
						       m->traces_flush_usec, 1000, on_traces_timer,
						       m);
		if (r >= 0)
			r = sd_event_source_set_enabled(m->traces_timer, SD_EVENT_ON);
		if (r < 0)
			return log_error_errno(r, "Cannot watch the trace ring: %m");
	}
	if (probe_syscall_stacks(m->sys)) {
		r = sd_event_add_io(m->event, &m->stacks_io,
				    stacks_ring_fd(probe_syscall_stacks(m->sys)), EPOLLIN,
				    on_stacks_ring, m);
		if (r < 0)
			return log_error_errno(r, "Cannot watch the process ring: %m");
	}
	if (m->files) {
		if (!m->fh_seen)
			m->fh_seen = calloc(1, sizeof(*m->fh_seen));
		if (!m->fh_seen)
			return log_error_errno(-ENOMEM, "Out of memory");
		r = sd_event_add_io(m->event, &m->files_io, probe_file_ring_fd(m->files), EPOLLIN,
				    on_files_ring, m);
		if (r < 0)
			return log_error_errno(r, "Cannot watch the file-name ring: %m");
	}
	return 0;
}

/*
 * Attach the families in fam (each one that cfg enables). A family the
 * kernel refuses is logged and left off, except the syscall layer.
 *
 * The families load side by side, in threads: a load is mostly the
 * kernel's verifier and per-CPU allocations, and installing a family's
 * window map waits for an RCU grace period, so one after the other they took
 * half of the time to READY. The library, VFS and block families write
 * into the system-call family's trace ring; the traces are made here
 * first, and whichever family loads first creates their maps
 * (traces_share()), so none waits for another (the system-call family's
 * verification alone was most of the start, with the other CPU idle).
 * Three at most at once, the system-call family first: each load parses
 * the kernel's BTF into a copy of its own (about 11 MB here), and all six
 * side by side took the start's peak RSS from 37 to 50 MiB for no earlier
 * READY (bench/start_bench.py), the longest load (the system-call family's)
 * then sharing its CPU. Each family's outcome is logged here, in the main
 * thread, in order.
 */
static int families_start(struct manager *m, const struct dc_config *cfg, unsigned fam,
			  bool *config_error)
{
	enum { SYSCALL, PAGECACHE, URING, LIBS, VFS, BLOCK };
	struct start_args a = {.cfg = cfg};
	struct family_job jobs[] = {
	    [SYSCALL] = {.family = "syscall",
			 .run = start_syscall,
			 .res = &a,
			 .on = fam & FAM_SYSCALL},
	    [PAGECACHE] = {.family = "page-cache",
			   .run = start_pagecache,
			   .res = &a,
			   .on = (fam & FAM_PC) && cfg->pagecache_enable},
	    [URING] = {.family = "io_uring",
		       .run = start_uring,
		       .res = &a,
		       .on = (fam & FAM_URING) && cfg->uring_enable},
	    [LIBS] = {.family = "library",
		      .run = start_libs,
		      .res = &a,
		      .on = (fam & FAM_LIBS) && cfg->n_libs},
	    [VFS] = {.family = "VFS",
		     .run = start_vfs,
		     .res = &a,
		     .on = (fam & FAM_VFS) && cfg->vfs_enable},
	    [BLOCK] = {.family = "block",
		       .run = start_block,
		       .res = &a,
		       .on = (fam & FAM_BLOCK) && cfg->block_enable},
	};
	int r;

	/* slow attaches (thousands of functions, a big BTF) must not look like
	 * a hang to systemd: extend the start (or reload) timeout */
	sd_notify(0, "EXTEND_TIMEOUT_USEC=30000000");
	if ((fam & FAM_SYSCALL) && cfg->traces_enable) {
		char err[512];

		/* none left by a stop that did not take the syscall family */
		m->traces = traces_free(m->traces);
		r = traces_new(cfg, NULL, &m->traces, err, sizeof(err));
		if (r < 0)
			return log_error_errno(r, "Cannot set up sampled traces: %s", err);
	}
	for (size_t i = 0; i < ELEMENTSOF(jobs); i++)
		if (jobs[i].on)
			log_debug("Starting the %s probes", jobs[i].family);
	jobs_run_max(m, jobs, ELEMENTSOF(jobs), 3);
	if (jobs[SYSCALL].on && jobs[SYSCALL].r < 0)
		return jobs[SYSCALL].r;
	if (jobs[PAGECACHE].on && jobs[PAGECACHE].r < 0)
		log_warning_errno(jobs[PAGECACHE].r,
				  "Page-cache probes unavailable (%m): layer off, ignoring");
	if (jobs[URING].on && jobs[URING].r < 0)
		log_warning_errno(jobs[URING].r,
				  "io_uring probes unavailable (%m): layer off, ignoring");
	if (fam & FAM_SYSCALL) {
		r = m->traces ? traces_start(m->traces) : 0;
		if (r == -ENOENT)
			/* the ring could not be made (traces_share() said why):
			 * every family loaded without traces */
			m->traces = traces_free(m->traces);
		else if (r < 0)
			return log_error_errno(r, "Cannot start the trace reader: %m");
		r = syscall_watch(m, cfg);
		if (r < 0)
			return r;
	}
	r = jobs[LIBS].r;
	if (r < 0) {
		*config_error = r == -ENOENT || r == -ENOEXEC || r == -E2BIG;
		snprintf(m->libs_err, sizeof(m->libs_err), "%s",
			 a.libs_err[0] ? a.libs_err : strerror(-r));
		if (m->start_quiet)
			return log_debug_errno(r, "Cannot probe the configured libraries: %s",
					       m->libs_err);
		return log_error_errno(r, "Cannot probe the configured libraries: %s", m->libs_err);
	}
	if (jobs[VFS].on) {
		r = jobs[VFS].r;
		if (r >= 0)
			m->vfs_attached = true;
		if (r < 0 && m->vfs_bad_config) {
			*config_error = true;
			return log_error_errno(r, "probes.vfs: %s", m->vfs_detail);
		}
		if (r < 0)
			/* expected on kernels without fentry and kprobes: the other layers run */
			log_full_errno(m->start_quiet ? LOG_DEBUG : LOG_NOTICE, 0,
				       "VFS probes off: %s", m->vfs_detail);
		else
			/* the layer chooses among fentry, kprobes and tracepoints
			 * itself (not through mech_choose): said here, with what
			 * was refused on the way */
			log_full_errno(m->start_quiet ? LOG_DEBUG : LOG_INFO, 0,
				       "VFS probes attached with %s (%s)",
				       probe_vfs_mechanism(m->vfs), probe_vfs_detail(m->vfs));
	}
	if (jobs[BLOCK].on && jobs[BLOCK].r < 0)
		/* the other layers still run; the agent record lists no block probe */
		log_warning_errno(jobs[BLOCK].r,
				  "Block probes unavailable (%m): block layer off, ignoring");
	probes_report(m);
	/* loading parsed the kernel's BTF (tens of MB) and freed it: hand the
	 * freed heap back, or it stays in the agent's RSS for its whole life */
	malloc_trim(0);
	return 0;
}

/* What a reload carried from the file sink it stopped (a full disk's
 * records, the rest of one written in part) goes to the file sink of cfg,
 * first, or is lost if cfg has none. Only once the reload has settled on
 * its outputs (committed, or rolled back to the old ones): handed to a new
 * sink that a rollback then stops, the rest of a record would be dropped
 * there (another file) while the old file keeps its beginning. */
static void carry_handover(struct manager *m, const struct dc_config *cfg)
{
	/* the file sink, when there is one, is the first (sinks_start) */
	struct dc_sink *file = cfg->output[0] && m->n_sinks ? m->sinks[0] : NULL;

	if (m->carry.len && file) {
		log_notice("%" PRIu64 " records the previous output could not write go to %s first",
			   m->carry_records, cfg->output);
		sink_file_put_pending(file, &m->carry, m->carry_records, &m->carry_tail);
	} else if (m->carry.len) {
		log_error("%" PRIu64 " records the previous output could not write have no "
			  "output file to go to: they are lost",
			  m->carry_records);
		m->sink_carry.dropped_records += m->carry_records;
		m->sink_carry.dropped_bytes += m->carry.len;
	}
	buf_free(&m->carry);
	m->carry_records = 0;
	m->carry_tail.len = 0;
}

/* next: the configuration whose sinks follow (a reload) */
static void sinks_stop(struct manager *m, const struct dc_config *next)
{
	/* a reload's: Kafka's flush (bounded), after the last window was
	 * handed over; what a full disk left in the file sink moves to the
	 * next one */
	m->kafka_was_down = false;
	for (size_t i = 0; i < m->n_sinks; i++) {
		m->carry_records += sink_file_take_pending(m->sinks[i], &m->carry, &m->carry_tail);
		if (m->sinks[i] == m->kafka) {
			struct sink_kafka_state ks;

			sink_kafka_state(m->sinks[i], &ks);
			m->kafka_was_down = ks.brokers_down;
			/* a reload's flush holds the event loop, which feeds the
			 * watchdog (30 s): bounded well under it; the spool keeps
			 * what it did not deliver (a replay, not a loss) */
			sink_kafka_stop(m->sinks[i], m->stopping ? UINT64_MAX : 10000,
					next->kafka_brokers[0] ? next->spool_dir : "");
		}
		/* what this sink counted since the last window's losses (the
		 * window's own flush, the stop's losses) reaches the next
		 * window's */
		sink_close(m->sinks[i]);
		sink_losses_since(m, i);
		m->sinks[i] = sink_free(m->sinks[i]);
	}
	m->n_sinks = 0;
	m->kafka = NULL;
	/* new sinks count from zero: so do the deltas of the losses summary */
	memset(m->sinks_prev, 0, sizeof(m->sinks_prev));
	m->trace_files = sink_free(m->trace_files);
}

/* rollback: the running configuration's sinks again, after a reload's
 * failed (what it checked at its start is not checked again) */
static int sinks_start(struct manager *m, const struct dc_config *cfg, bool rollback,
		       bool *config_error)
{
	int r;

	if (cfg->output[0]) {
		r = sink_file_new(cfg->output, SINK_MAX_PENDING, &m->sinks[m->n_sinks]);
		if (r < 0)
			return log_error_errno(r, "Cannot open the output %s: %m%s", cfg->output,
					       r == -ENXIO ? " (a FIFO with no reader)" : "");
		m->n_sinks++;
	}
	if (cfg->kafka_brokers[0]) {
		char err[1024];
		bool still_down =
		    m->kafka_was_down && !strcmp(cfg->kafka_brokers, m->cfg.kafka_brokers);
		struct sink_kafka_params kp = {
		    .brokers = cfg->kafka_brokers,
		    .properties = cfg->kafka_properties,
		    .secrets_at = cfg->kafka_secrets_at,
		    .secrets_file = cfg->kafka_secrets,
		    .topic_features = cfg->kafka_topic_features,
		    .topic_agent = cfg->kafka_topic_agent,
		    .topic_traces = cfg->traces_enable ? cfg->kafka_topic_traces : NULL,
		    .topic_stacks = cfg->stacks_enable ? cfg->kafka_topic_stacks : NULL,
		    .key_cgroup = !strcmp(cfg->kafka_key, "host_cgroup"),
		    .host = m->host,
		    .run = m->run_id,
		    .spool_dir = cfg->spool_dir,
		    .spool_max_bytes = (uint64_t)cfg->spool_max_mib << 20,
		    .spool_fsync = cfg->spool_fsync,
		    .flush_timeout_ms = (uint64_t)(cfg->kafka_flush_timeout * 1000),
		    /* a reload while the brokers were down: no wait for an
		     * answer that will not come, the event loop (and the
		     * window) held meanwhile */
		    .start_timeout_ms =
			still_down ? 0 : (uint64_t)(cfg->kafka_start_timeout * 1000),
		    /* and believed down from the start: a second reload moments
		     * later, before librdkafka has said so again, waits no more */
		    .brokers_down = still_down,
		    .topics_checked = rollback,
		};

		r = sink_kafka_new(&kp, m->event, &m->sinks[m->n_sinks], err, sizeof(err));
		if (r < 0) {
			log_error("Cannot start publishing to Kafka: %s", err);
			if (r == -EINVAL || r == -ENOENT)
				*config_error = true;
			return r;
		}
		m->kafka = m->sinks[m->n_sinks++];
	}
	if (!m->n_sinks) {
		*config_error = true;
		return log_error_errno(-EINVAL,
				       "No output: output.path is empty and kafka.brokers is "
				       "not set; records would go nowhere");
	}
	if (cfg->traces_enable && cfg->traces_dir[0]) {
		struct sink_trace_params tp = {
		    .dir = cfg->traces_dir,
		    .host = m->host,
		    .rotate_bytes = (uint64_t)cfg->traces_rotate_mib << 20,
		    .rotate_usec = (uint64_t)cfg->traces_rotate_sec * USEC_PER_SEC,
		    .max_bytes = (uint64_t)cfg->traces_max_mib << 20,
		};

		r = sink_trace_new(&tp, &m->trace_files);
		if (r < 0)
			return log_error_errno(r, "Cannot write trace files in %s: %m",
					       cfg->traces_dir);
	}
	return 0;
}

static void set_host(struct manager *m, const struct dc_config *cfg)
{
	if (cfg->host[0])
		snprintf(m->host, sizeof(m->host), "%s", cfg->host);
	else if (gethostname(m->host, sizeof(m->host) - 1) < 0)
		snprintf(m->host, sizeof(m->host), "unknown");
}

static int filter_load(struct manager *m, const struct dc_config *cfg, struct dc_filter **out)
{
	char err[1024], what[256];
	int r = filter_new(cfg, NULL, out, err, sizeof(err));

	if (r < 0)
		return log_error_errno(r, "Invalid filter: %s", err);
	filter_describe(*out, what, sizeof(what));
	if (filter_active(*out))
		log_info("Filters: %s", what);
	return 0;
}

int manager_new(const struct dc_config *cfg, double duration_sec, struct manager **ret,
		bool *config_error)
{
	_cleanup_(manager_freep) struct manager *m = NULL;
	uint64_t t0_mono, t0_real_us;
	int r;

	*config_error = false;
	m = calloc(1, sizeof(*m));
	if (!m)
		return log_error_errno(-ENOMEM, "Out of memory");
	m->clock_fd = -1;
	m->cfg = *cfg;
	/* before anything starts: a malformed list is the configuration's
	 * fault (exit 2), a cgroup not made yet the host's (-ENOENT, exit 1:
	 * systemd starts the agent again) */
	r = filter_load(m, cfg, &m->filter);
	if (r < 0) {
		*config_error = r == -EINVAL;
		return r;
	}
	set_host(m, cfg);
	read_id("/proc/sys/kernel/random/uuid", m->run_id, sizeof(m->run_id));
	read_id("/proc/sys/kernel/random/boot_id", m->boot_id, sizeof(m->boot_id));

	r = sd_event_default(&m->event);
	if (r < 0)
		return log_error_errno(r, "Cannot create the event loop: %m");

	self_cgroup(m->self_cgroup, sizeof(m->self_cgroup));
	r = cgroup_cache_new(NULL, &m->cgroups);
	if (r < 0)
		log_warning_errno(r, "Cannot open the cgroup2 hierarchy (%m): records will carry "
				     "cgroup ids without paths, ignoring");
	m->page_size = (uint64_t)sysconf(_SC_PAGESIZE);
	m->budget = calloc(1, sizeof(*m->budget));
	if (!m->budget)
		return log_error_errno(-ENOMEM, "Out of memory");
	budget_init(m->budget,
		    &(struct dc_budget_params){.cpu = cfg->budget_cpu,
					       .period_sec = cfg->budget_period,
					       .recover_below = cfg->budget_recover_below});
	r = selfcost_new(cfg->self_bpf_stats, cfg->self_bpf_stats_duty, cfg->self_map_scan_sec,
			 &m->cost);
	if (r < 0)
		return log_error_errno(r, "Cannot set up the agent's self-measurement: %m");
	r = jobpool_new(FAMILY_JOBS_MAX, "dc-drain", &m->pool);
	if (r < 0)
		return log_error_errno(r, "Out of memory");
	if (jobpool_threads(m->pool) < FAMILY_JOBS_MAX)
		log_warning("Only %u of %u threads for the window's drains: they run in turn",
			    jobpool_threads(m->pool), FAMILY_JOBS_MAX);
	m->clock_fd = winclock_new();
	if (m->clock_fd < 0)
		return log_error_errno(m->clock_fd, "Cannot create the windows' clock map: %m");
	/* window 0 starts before the first program attaches: the families
	 * attached first count while the rest load (seconds, for a thousand
	 * library functions), and those calls are window 0's */
	t0_mono = clock_ns(CLOCK_MONOTONIC);
	t0_real_us = clock_ns(CLOCK_REALTIME) / 1000;
	r = families_start(m, cfg, FAM_ALL, config_error);
	if (r < 0)
		return r;
	/* after the probes: Kafka's topic check waits up to
	 * kafka.start_timeout for brokers that do not answer, and the node's
	 * I/O went unobserved meanwhile (3.5 s at an upgrade during an
	 * outage, an audit); now it is window 0's */
	r = sinks_start(m, cfg, false, config_error);
	if (r < 0)
		return r;

	/* main() blocked the three before any thread started */
	if ((r = sd_event_add_signal(m->event, NULL, SIGINT, on_stop, m)) < 0 ||
	    (r = sd_event_add_signal(m->event, NULL, SIGTERM, on_stop, m)) < 0 ||
	    (r = sd_event_add_signal(m->event, NULL, SIGHUP, on_hup, m)) < 0)
		return log_error_errno(r, "Cannot install signal handlers: %m");

	windows_init(&m->win, interval_ns(cfg->interval), cfg->align_windows, t0_mono, t0_real_us);
	stats_window_start(m, clock_ns(CLOCK_MONOTONIC));
	selfstat_read(&m->self);
	r = sd_event_add_time(m->event, &m->timer, CLOCK_MONOTONIC,
			      windows_deadline(&m->win, clock_ns(CLOCK_MONOTONIC)) / NSEC_PER_USEC,
			      /* accuracy */ 1000, on_timer, m);
	if (r < 0)
		return log_error_errno(r, "Cannot arm the window timer: %m");
	if (duration_sec > 0) {
		r = sd_event_add_time_relative(m->event, NULL, CLOCK_MONOTONIC,
					       (uint64_t)(duration_sec * 1e6), 1000, on_duration,
					       m);
		if (r < 0)
			return log_error_errno(r, "Cannot arm the duration timer: %m");
	}
	r = watchdog_start(m);
	if (r < 0)
		return r;

	*ret = TAKE_PTR(m);
	return 0;
}

void manager_set_reload(struct manager *m, int (*load)(void *ctx, struct dc_config *out), void *ctx)
{
	m->reload_load = load;
	m->reload_ctx = ctx;
}

/* The sinks' last delivery, once the last window is handed over: what they
 * give up there (records held, a full spool's shedding, the final flush's
 * drops) reaches no agent record, so the exit status says it. */
static int sinks_close(struct manager *m)
{
	uint64_t records, shed, bytes;

	for (size_t i = 0; i < m->n_sinks; i++) {
		sink_close(m->sinks[i]);
		sink_losses_since(m, i);
	}
	/* all that no agent record took (the last one takes the carry): at a
	 * clean stop the close's own, after a failed rollback the stopped
	 * sinks' too */
	shed = m->sink_carry.shed;
	records = m->sink_carry.dropped_records + shed;
	bytes = m->sink_carry.dropped_bytes;
	if (!records && !bytes)
		return 0;
	log_error("Stopped with %" PRIu64 " records lost after the last agent record (%" PRIu64
		  " shed by the full spool, %" PRIu64 " bytes of the output file's): exit "
		  "status %d",
		  records, shed, bytes, DC_STOP_LOST);
	return DC_STOP_LOST;
}

int manager_run(struct manager *m)
{
	int r, closed;

	/* probes attached and sinks up (a broker that is down is the spool's
	 * business, not a reason to hold readiness back) */
	notify_status(m, "READY=1\n");
	{
		char to[PATH_MAX + 512];
		int n = 0;

		if (m->cfg.output[0])
			n = snprintf(to, sizeof(to), "%s", m->cfg.output);
		if (m->kafka && n >= 0 && (size_t)n < sizeof(to))
			snprintf(to + n, sizeof(to) - (size_t)n,
				 "%sKafka at %s (topics %s, %s; spool %s)", n ? " and " : "",
				 m->cfg.kafka_brokers, m->cfg.kafka_topic_features,
				 m->cfg.kafka_topic_agent, m->cfg.spool_dir);
		log_info("Running: %g s windows, records to %s", m->cfg.interval, to);
	}
	r = sd_event_loop(m->event);
	if (r < 0) {
		/* a reload's rollback that failed: the sinks still make their
		 * last delivery, and say what it lost, before the error exit */
		log_error_errno(r, "Stopping on an error: %m");
		sd_notify(0, "STOPPING=1");
	}
	probes_detach(m);
	/* the detach may have taken time (perf-event uprobes extend the stop
	 * themselves, by 30 s from their last link): the flush still gets all
	 * of kafka.flush_timeout before systemd's SIGKILL */
	if (m->kafka)
		sd_notifyf(0, "EXTEND_TIMEOUT_USEC=%llu",
			   (unsigned long long)(m->cfg.kafka_flush_timeout + 30) * USEC_PER_SEC);
	closed = sinks_close(m);
	return r < 0 ? r : closed;
}

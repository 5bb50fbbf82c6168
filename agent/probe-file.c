// SPDX-License-Identifier: Apache-2.0
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "counters.h"
#include "fs-util.h"
#include "log.h"
#include "macro.h"
#include "ops.h"
#include "probe-file.h"
#include "slotmap.h"
#include "syscall.skel.h"

#define KIND_HAS_BUF 0x10 /* bpf/file.bpf.c: arg1 is the buffer itself */

struct probe_file {
	struct ring_buffer *ring;
	struct bpf_map *overflow, *counters;
	int ncpus, pos_fd;
	int cpu_ids;		       /* one more than the highest possible CPU id */
	const struct dc_file_aux *aux; /* file_aux, mapped read-only */
	size_t aux_len;
	/* positions of keys given back at this close, written to file_pos
	 * in one batch (park_flush) */
	struct dc_file_pos_key park_keys[256];
	struct dc_file_pos park_vals[256];
	unsigned n_parked;
	bool percpu;
	struct slotmap agg;
	uint64_t max_keys, max_positions, ring_bytes;
	char detail[512];
	struct dc_file_entry *entries;
	size_t n, cap;
	struct dc_file_sum overflow_prev;
	uint64_t counters_prev[DC_FILE_CNT_MAX];
	struct fname_table names;
	uint64_t window; /* the window being filled, for names arriving now */
	uint64_t names_in, names_dropped;
	uint64_t names_in_prev, names_dropped_prev;
};

/* What the file layer does with each system call, by operation. */
static uint8_t kind_of_op(const char *op)
{
	static const struct {
		const char *op;
		uint8_t kind;
	} t[] = {
	    {"read", DC_FK_READ | KIND_HAS_BUF},
	    {"readv", DC_FK_READ},
	    {"write", DC_FK_WRITE | KIND_HAS_BUF},
	    {"writev", DC_FK_WRITE},
	    {"pread64", DC_FK_PREAD | KIND_HAS_BUF},
	    {"preadv", DC_FK_PREAD},
	    {"pwrite64", DC_FK_PWRITE | KIND_HAS_BUF},
	    {"pwritev", DC_FK_PWRITE},
	    {"preadv2", DC_FK_PREAD2},
	    {"pwritev2", DC_FK_PWRITE2},
	    {"open", DC_FK_OPEN},
	    {"openat", DC_FK_OPEN},
	    {"openat2", DC_FK_OPEN},
	    {"creat", DC_FK_OPEN},
	    {"close", DC_FK_META},
	    {"lseek", DC_FK_META},
	    {"fstat", DC_FK_META},
	    {"newfstatat", DC_FK_META_AT},
	    {"ftruncate", DC_FK_META},
	    {"fallocate", DC_FK_META},
	    {"fadvise64", DC_FK_META},
	    {"readahead", DC_FK_META},
	    {"flock", DC_FK_META},
	    {"fsync", DC_FK_SYNC},
	    {"fdatasync", DC_FK_SYNC},
	    {"sync_file_range", DC_FK_SYNC},
	    {"copy_file_range", DC_FK_COPY},
	    {"splice", DC_FK_COPY},
	    {"sendfile", DC_FK_SENDFILE},
	};

	for (size_t i = 0; i < ELEMENTSOF(t); i++)
		if (!strcmp(t[i].op, op))
			return t[i].kind;
	return DC_FK_NONE;
}

static void fill_kinds(uint8_t *kinds)
{
	uint8_t ops[DC_FILE_NR_MAX];

	ops_fill_nr_table(ops, DC_FILE_NR_MAX);
	for (size_t nr = 0; nr < DC_FILE_NR_MAX; nr++)
		kinds[nr] = ops[nr] ? kind_of_op(ops_get(ops[nr])->name) : DC_FK_NONE;
}

static void aux_unmap(struct probe_file *p)
{
	if (p->aux)
		munmap((void *)p->aux, p->aux_len);
	p->aux = NULL;
}

struct probe_file *probe_file_free(struct probe_file *p)
{
	if (!p)
		return NULL;
	ring_buffer__free(p->ring);
	aux_unmap(p);
	slotmap_close(&p->agg);
	fname_table_free(&p->names);
	free(p->entries);
	free(p);
	return NULL;
}

DEFINE_TRIVIAL_CLEANUP_FUNC(struct probe_file *, probe_file_free);

static int on_path(void *ctx, void *data, size_t size)
{
	struct probe_file *p = ctx;
	const struct dc_path_ev *ev = data;
	char path[DC_PATH_BUF + 8];
	size_t len;

	if (size < offsetof(struct dc_path_ev, buf))
		return 0;
	len = size - offsetof(struct dc_path_ev, buf);
	if (ev->len < len)
		len = ev->len;
	p->names_in++;
	if (filepath_join(ev->buf, len, ev->flags & DC_PATH_TRUNCATED, path, sizeof(path)) < 0 ||
	    fname_put(&p->names, ev->dev, ev->ino, ev->igen, path, ev->flags & DC_PATH_TRUNCATED,
		      p->window) < 0)
		p->names_dropped++;
	return 0;
}

int probe_file_new(const struct dc_config *cfg, struct probe_file **ret)
{
	_cleanup_(probe_file_freep) struct probe_file *p = calloc(1, sizeof(*p));
	uint64_t percpu_bytes;

	if (!p)
		return -ENOMEM;
	p->agg.barrier_inner_fd = -1;
	p->ncpus = libbpf_num_possible_cpus();
	if (p->ncpus <= 0)
		return p->ncpus;
	/* per-CPU regions are indexed by CPU id (agent/probe-syscall.c) */
	p->cpu_ids = possible_cpu_ids(p->ncpus);
	p->max_keys = (uint64_t)cfg->files_max_keys;
	p->max_positions = (uint64_t)cfg->files_max_positions;
	/* a ring is a power of two pages */
	p->ring_bytes = pow2_at_least((uint64_t)cfg->files_ring_kib * 1024);
	if (p->ring_bytes < 4096)
		p->ring_bytes = 4096;
	/* per-CPU only while both halves fit the map budget: a file value is
	 * larger than a syscall one and file keys are many */
	percpu_bytes = 2 * p->max_keys * sizeof(struct dc_file_val) * (uint64_t)p->cpu_ids;
	p->percpu = strcmp(cfg->map_layout, "shared") &&
		    (!strcmp(cfg->map_layout, "percpu") ||
		     percpu_bytes <= (uint64_t)cfg->map_memory_mib << 20);
	/* a name for every key of two windows, with room to spare */
	fname_table_init(&p->names, (size_t)p->max_keys * 4);
	*ret = TAKE_PTR(p);
	return 0;
}

bool probe_file_fits_percpu(const struct probe_file *p)
{
	return p->percpu;
}

static bool file_val_touched(const void *value)
{
	const struct dc_file_val *v = value;

	/* every call the layer counts adds to one of these */
	return v->read_ops || v->write_ops || v->meta_ops || v->sync_ops || v->errors;
}

/* A key the slot map takes back: its previous offsets go to the position
 * LRU, where the programs seed them from if the key comes back, so that a
 * pause longer than two windows does not break a sequential scan. */
static uint32_t file_owner(const void *key)
{
	return ((const struct dc_file_key *)key)->tgid;
}

static void park_flush(void *ctx)
{
	struct probe_file *p = ctx;
	__u32 n = p->n_parked;

	if (n && bpf_map_update_batch(p->pos_fd, p->park_keys, p->park_vals, &n, NULL)) {
		/* the rest one by one; all of them where the kernel has no batch
		 * updates (before 5.6), which leaves the count as it was */
		if (n == p->n_parked)
			n = 0;
		for (unsigned i = n; i < p->n_parked; i++)
			(void)bpf_map_update_elem(p->pos_fd, &p->park_keys[i], &p->park_vals[i],
						  BPF_ANY);
	}
	p->n_parked = 0;
}

/* A key leaving its slot: its positions, read where the programs keep
 * them (a racing write may tear them: they only steer the sequential and
 * consecutive counts of a key that comes back) */
static void park_position(void *ctx, const void *key, uint32_t slot)
{
	struct probe_file *p = ctx;
	const struct dc_file_key *k = key;
	struct dc_file_pos pos;
	uint32_t start;

	if (!p->aux || slot >= p->max_keys)
		return;
	/* the start first: a program resetting the slot for a process given
	 * the same pid writes it last, so these positions are never parked
	 * under the new one's start (on x86; elsewhere a hint) */
	start = __atomic_load_n(&p->aux[slot].start, __ATOMIC_ACQUIRE);
	pos = p->aux[slot].pos;
	if (!pos.have_read && !pos.have_write)
		return;
	if (p->n_parked == ELEMENTSOF(p->park_keys))
		park_flush(p);
	p->park_keys[p->n_parked] = (struct dc_file_pos_key){
	    .ino = k->ino, .tgid = k->tgid, .dev = k->dev, .start = start, .igen = k->igen};
	p->park_vals[p->n_parked++] = pos;
}

int probe_file_prepare(struct probe_file *p, struct syscall_bpf *skel, bool percpu, bool plain,
		       bool direct)
{
	int r;

	p->percpu = percpu;
	skel->rodata->files_on = true;
	fill_kinds((uint8_t *)skel->rodata->nr_kind);
	bpf_map__set_max_entries(skel->maps.file_pos, (__u32)p->max_positions);
	bpf_map__set_max_entries(skel->maps.file_aux, (__u32)p->max_keys);
	bpf_map__set_max_entries(skel->maps.paths, (__u32)p->ring_bytes);
	p->overflow = skel->maps.file_overflow;
	p->counters = skel->maps.file_counters;
	snprintf(p->detail, sizeof(p->detail),
		 "in the syscall programs; %s maps of %llu keys, %s updates; files read by %s",
		 p->percpu ? "per-CPU" : "shared", (unsigned long long)p->max_keys,
		 plain ? "plain" : "atomic",
		 direct ? "direct loads (bpf_rdonly_cast)" : "bpf_probe_read_kernel");
	skel->rodata->file_max = (__u32)p->max_keys;
	skel->rodata->file_regions = p->percpu ? (__u32)p->cpu_ids : 1;
	r = slotmap_prepare(&p->agg, skel->obj, "file", sizeof(struct dc_file_key),
			    sizeof(struct dc_file_val), (unsigned)p->max_keys,
			    skel->rodata->file_regions, file_val_touched);
	if (r)
		return r;
	skel->rodata->file_half = p->agg.half;
	p->agg.park = park_position;
	p->agg.park_flush = park_flush;
	p->agg.park_ctx = p;
	p->agg.owner = file_owner;
	/* a file's key goes after one window without calls: each file a
	 * process opens is a key, and a data loader opening thousands a
	 * second held four windows' worth of them with the default; a file
	 * that comes back keeps its offsets (park_position, file_seed) */
	p->agg.idle_reclaim = 0;
	return 0;
}

void probe_file_disable(struct syscall_bpf *skel)
{
	/* the code is dead (files_on false): its maps need not exist */
	skel->rodata->files_on = false;
	bpf_map__set_autocreate(skel->maps.file_idx, false);
	bpf_map__set_autocreate(skel->maps.file_keys, false);
	bpf_map__set_autocreate(skel->maps.file_vals, false);
	bpf_map__set_autocreate(skel->maps.file_ring, false);
	bpf_map__set_autocreate(skel->maps.file_free, false);
	bpf_map__set_autocreate(skel->maps.file_state, false);
	bpf_map__set_autocreate(skel->maps.file_barrier, false);
	bpf_map__set_autocreate(skel->maps.file_overflow, false);
	bpf_map__set_autocreate(skel->maps.file_pos, false);
	bpf_map__set_autocreate(skel->maps.file_aux, false);
	bpf_map__set_autocreate(skel->maps.chunk_scratch, false);
	/* The name walk is a global function (dc_send_path), which kernels
	 * before 6.8 verify even where no call reaches it: the maps it uses
	 * stay, the ring at its smallest (a page). */
	bpf_map__set_max_entries(skel->maps.paths, 4096);
}

int probe_file_install(struct probe_file *p, struct syscall_bpf *skel)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	void *a;

	p->pos_fd = bpf_map__fd(skel->maps.file_pos);
	p->aux_len = (p->max_keys * sizeof(struct dc_file_aux) + pg - 1) / pg * pg;
	a = mmap(NULL, p->aux_len, PROT_READ, MAP_SHARED, bpf_map__fd(skel->maps.file_aux), 0);
	if (a == MAP_FAILED)
		return -errno;
	p->aux = a;
	return slotmap_install(&p->agg);
}

void probe_file_reset(struct probe_file *p)
{
	aux_unmap(p);
	slotmap_close(&p->agg);
}

int probe_file_start(struct probe_file *p, struct syscall_bpf *skel)
{
	p->ring = ring_buffer__new(bpf_map__fd(skel->maps.paths), on_path, p, NULL);
	return p->ring ? 0 : -errno;
}

void probe_file_note(struct probe_file *p, const char *why)
{
	size_t n = strlen(p->detail);

	snprintf(p->detail + n, sizeof(p->detail) - n, " (%s)", why);
}

const char *probe_file_detail(const struct probe_file *p)
{
	return p->detail;
}

int probe_file_ring_fd(struct probe_file *p)
{
	return ring_buffer__epoll_fd(p->ring);
}

int probe_file_consume(struct probe_file *p, uint64_t window)
{
	int r;

	p->window = window;
	r = ring_buffer__consume(p->ring);
	return r < 0 ? r : 0;
}

static int collect(const void *key, const void *const *values, unsigned n, void *ctx)
{
	struct probe_file *p = ctx;
	const struct dc_file_key *k = key;
	/* not zeroed twice: the literal below writes every member */
	struct dc_file_entry *e = VEC_PUSH_RAW(p->entries, p->n, p->cap);

	if (!e)
		return -ENOMEM;
	*e = (struct dc_file_entry){.cgroup_id = k->cgroup_id,
				    .tgid = k->tgid,
				    .dev = k->dev,
				    .igen = k->igen,
				    .ino = k->ino};
	e->v.files = 1;
	for (unsigned c = 0; c < n; c++)
		file_sum_add_val(&e->v, values[c]);
	return 0;
}

struct slotmap *probe_file_slotmap(struct probe_file *p)
{
	return &p->agg;
}

int probe_file_flip_and_drain(struct probe_file *p, uint64_t window, struct dc_file_drain *res)
{
	_cleanup_free_ struct dc_file_val *vals = calloc((size_t)p->ncpus, sizeof(*vals));
	unsigned long long flip_us;
	struct dc_file_sum cur = {};
	__u32 zero = 0;
	int r;

	if (!vals)
		return -ENOMEM;
	p->n = 0;
	r = slotmap_flip_and_drain(&p->agg, collect, p, &flip_us);
	/* after the flip every name the closed window sent is in the ring */
	probe_file_consume(p, window);
	if (r < 0)
		return r;
	file_sort(p->entries, p->n);
	/* a key taken back and returning within the window has two slots */
	p->n = file_merge_sorted(p->entries, p->n);
	res->entries = p->entries;
	res->n = p->n;
	if (!bpf_map_lookup_elem(bpf_map__fd(p->overflow), &zero, vals))
		for (int c = 0; c < p->ncpus; c++)
			file_sum_add_val(&cur, &vals[c]);
	file_sum_delta(&res->overflow, &cur, &p->overflow_prev);
	/* the size buckets are 32-bit per-CPU counters, which wrap: each
	 * bucket's delta is folded modulo 2^32 (the overflow is never reset) */
	for (unsigned i = 0; i < DC_DARSHAN_BUCKETS; i++) {
		res->overflow.read_size[i] &= 0xFFFFFFFFu;
		res->overflow.write_size[i] &= 0xFFFFFFFFu;
	}
	p->overflow_prev = cur;
	percpu_counters_delta(p->counters, DC_FILE_CNT_MAX, p->ncpus, p->counters_prev,
			      res->counters);
	res->names = p->names_in - p->names_in_prev;
	res->names_not_kept = p->names_dropped - p->names_dropped_prev;
	res->max_keys = p->max_keys;
	res->slots_in_use = slotmap_used(&p->agg);
	res->slots_reclaimed = p->agg.reclaimed;
	res->slots_reclaimed_exited = p->agg.reclaimed_exited;
	p->names_in_prev = p->names_in;
	p->names_dropped_prev = p->names_dropped;
	return 0;
}

const struct fname *probe_file_name(struct probe_file *p, uint32_t dev, uint64_t ino, uint32_t igen,
				    uint64_t window)
{
	return fname_get(&p->names, dev, ino, igen, window);
}

// SPDX-License-Identifier: Apache-2.0
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cgroup.h"
#include "datacrumbs/vfs.h"
#include "filepath.h"
#include "log.h"
#include "macro.h"
#include "ops.h"
#include "syscall.skel.h"
#include "tracefmt.h"
#include "traces.h"

#define MAX_FULL_CGROUPS 64

/* The maps every emitting object shares (bpf/tracering.bpf.h), in this
 * order; created by the first object that shares them (traces_share()). */
static const char *const shared_names[] = {"traces", "trace_cfg", "trace_full", "trace_lcnt"};
enum { SH_RING, SH_CFG, SH_FULL, SH_LCNT, SH_MAX };

struct traces {
	struct ring_buffer *ring;
	/* the shared maps' fds, -1 until created; the families load in threads
	 * side by side, and whichever shares first creates them */
	int fd[SH_MAX];
	int share_err; /* <0: they could not be made; traces off for every object */
	pthread_mutex_t lock;
	uint64_t lcnt_prev[DC_LAYER_MAX][DC_TR_OUTCOMES];
	int ncpus;
	struct dc_trace_cfg policy;
	uint64_t full_ids[MAX_FULL_CGROUPS];
	unsigned n_full;
	uint64_t ring_bytes, batch_max;
	int zstd_level;
	struct trace_host host;
	char host_name[256];
	struct trace_batch batch;
	struct traces_resolver res;
	uint64_t next_id; /* DFTracer's per-trace event index */
	uint64_t unknown, sealed_early;
	int64_t realtime_off_ns;
};

static uint64_t clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * NSEC_PER_SEC + (uint64_t)ts.tv_nsec;
}

#define GCRA_MAX_NS (1ULL << 62)

static __u64 gap_ns(double rate)
{
	double g = 1e9 / rate;

	return g >= (double)GCRA_MAX_NS ? GCRA_MAX_NS : (__u64)g;
}

static __u64 burst_ns(__u64 gap, int64_t burst)
{
	return burst > 0 && gap > GCRA_MAX_NS / (__u64)burst ? GCRA_MAX_NS : gap * (__u64)burst;
}

/* The policy the configuration asks for, checked; full-trace cgroups by id
 * (skip_gone: those whose directory is gone are left out, not an error). */
static int build_policy(const struct dc_config *cfg, struct dc_trace_cfg *p, uint64_t *ids,
			unsigned *n_ids, bool skip_gone, char *err, size_t errlen)
{
	char root[PATH_MAX], list[sizeof(cfg->traces_full_cgroups)], *save = NULL;

	*p = (struct dc_trace_cfg){
	    .mode = DC_TRACE_ON,
	    .one_in_n = (__u32)cfg->traces_one_in_n,
	    /* 0 reads as 1, as the programs take it */
	    .draw_max = dc_draw_max(cfg->traces_one_in_n > 0 ? (__u32)cfg->traces_one_in_n : 1),
	    .slow_ns = (__u64)(cfg->traces_slow_ms * 1e6),
	    /* rounded as config.c's check_together() takes them, which
	     * refuses a slice without a period or beyond it */
	    .slice_ns = (__u64)llround(cfg->traces_slice_ms * 1e6),
	    .period_ns = (__u64)llround(cfg->traces_period_s * 1e9),
	};
	/* GCRA: one event per gap; a burst is burst gaps of credit (both held
	 * to 2^62 ns, 146 years: a rate of 1e-12/s is one that never lets
	 * through, not an overflow) */
	if (cfg->traces_rate > 0) {
		p->node_gap_ns = gap_ns(cfg->traces_rate);
		p->node_burst_ns = burst_ns(p->node_gap_ns, cfg->traces_burst);
	}
	if (cfg->traces_cgroup_rate > 0) {
		p->cg_gap_ns = gap_ns(cfg->traces_cgroup_rate);
		p->cg_burst_ns = burst_ns(p->cg_gap_ns, cfg->traces_cgroup_burst);
	}
	*n_ids = 0;
	snprintf(list, sizeof(list), "%s", cfg->traces_full_cgroups);
	for (char *c = strtok_r(list, "\n", &save); c; c = strtok_r(NULL, "\n", &save)) {
		char path[PATH_MAX * 2];
		struct stat st;
		int r;

		if (*n_ids == MAX_FULL_CGROUPS) {
			snprintf(err, errlen, "traces.sampling.full_cgroups: more than %d",
				 MAX_FULL_CGROUPS);
			return -E2BIG;
		}
		r = cgroup2_mount(root, sizeof(root));
		if (r < 0) {
			snprintf(err, errlen,
				 "traces.sampling.full_cgroups: no cgroup2 hierarchy to find %s in",
				 c);
			return r;
		}
		snprintf(path, sizeof(path), "%s/%s", root, c[0] == '/' ? c + 1 : c);
		/* a cgroup2 id is the inode number of its directory */
		if (stat(path, &st) < 0 || !S_ISDIR(st.st_mode)) {
			if (skip_gone)
				continue;
			snprintf(err, errlen, "traces.sampling.full_cgroups: no cgroup %s (%s)", c,
				 path);
			return -ENOENT;
		}
		ids[(*n_ids)++] = st.st_ino;
	}
	p->full_cgroups = *n_ids;
	return 0;
}

int traces_new(const struct dc_config *cfg, const char *host, struct traces **ret, char *err,
	       size_t errlen)
{
	struct traces *t = calloc(1, sizeof(*t));
	char node[256];
	int r;

	if (!t)
		return -ENOMEM;
	for (int i = 0; i < SH_MAX; i++)
		t->fd[i] = -1;
	pthread_mutex_init(&t->lock, NULL);
	r = build_policy(cfg, &t->policy, t->full_ids, &t->n_full, false, err, errlen);
	if (r < 0) {
		traces_free(t);
		return r;
	}
	if (!host) {
		if (cfg->host[0])
			snprintf(node, sizeof(node), "%s", cfg->host);
		else if (gethostname(node, sizeof(node) - 1) < 0)
			snprintf(node, sizeof(node), "unknown");
		node[sizeof(node) - 1] = 0;
		host = node;
	}
	/* a ring is a power of two pages */
	t->ring_bytes = pow2_at_least((uint64_t)cfg->traces_ring_mib << 20);
	if (t->ring_bytes < 4096)
		t->ring_bytes = 4096;
	t->batch_max = (uint64_t)cfg->traces_batch_max_mib << 20;
	t->zstd_level = (int)cfg->traces_zstd_level;
	snprintf(t->host_name, sizeof(t->host_name), "%s", host);
	t->host = (struct trace_host){.name = t->host_name, .hhash = filepath_hash(host)};
	*ret = t;
	return 0;
}

struct traces *traces_free(struct traces *t)
{
	if (!t)
		return NULL;
	ring_buffer__free(t->ring);
	for (int i = 0; i < SH_MAX; i++)
		if (t->fd[i] >= 0)
			close(t->fd[i]);
	pthread_mutex_destroy(&t->lock);
	trace_batch_free(&t->batch);
	free(t);
	return NULL;
}

int traces_prepare(struct traces *t, struct syscall_bpf *skel)
{
	int r = traces_share(t, skel->obj);

	if (r == 0)
		traces_disable(skel);
	else if (r > 0)
		skel->rodata->traces_on = true;
	return r;
}

void traces_disable(struct syscall_bpf *skel)
{
	skel->rodata->traces_on = false;
	bpf_map__set_autocreate(skel->maps.traces, false);
	bpf_map__set_autocreate(skel->maps.trace_cfg, false);
	bpf_map__set_autocreate(skel->maps.trace_node_tat, false);
	bpf_map__set_autocreate(skel->maps.trace_cg_tat, false);
	bpf_map__set_autocreate(skel->maps.trace_full, false);
	bpf_map__set_autocreate(skel->maps.trace_percpu, false);
	bpf_map__set_autocreate(skel->maps.trace_lcnt, false);
}

/* The full-trace set first, the policy that says how many there are last:
 * a program never looks for entries that are not there yet. */
static int write_policy(struct traces *t)
{
	__u32 zero = 0;
	__u8 one = 1;
	int r;

	for (unsigned i = 0; i < t->n_full; i++)
		if (bpf_map_update_elem(t->fd[SH_FULL], &t->full_ids[i], &one, BPF_ANY))
			return -errno;
	r = bpf_map_update_elem(t->fd[SH_CFG], &zero, &t->policy, BPF_ANY);
	return r ? -errno : 0;
}

static const char *const blk_op_names[] = {"read", "write", "flush", "discard", "other"};
static const struct {
	const char *name, *category;
} vfs_funcs[] = {
#define VFS_FUNC(name, cat, bytes) {#name, #cat},
    DC_VFS_FUNCS(VFS_FUNC)
#undef VFS_FUNC
};

/* The "cat" of a VFS-family function: the layer it belongs to in the
 * multi-level view (datacrumbs-flame colours by it): the VFS itself, a
 * file system, the page cache, or the bio submission path. */
static const char *vfs_cat(uint32_t func)
{
	const char *c = func < ELEMENTSOF(vfs_funcs) ? vfs_funcs[func].category : "vfs";

	if (!strcmp(c, "vfs"))
		return "vfs";
	if (!strcmp(c, "file_cache") || !strcmp(c, "page_cache"))
		return "pagecache";
	if (!strcmp(c, "bio"))
		return "bio";
	return "fs";
}

/* The event's operation name: the catalogues' for the kernel layers, the
 * agent's table of attached functions for libraries. */
static const char *op_name(const struct traces *t, const struct dc_trace_ev *e)
{
	const struct dc_op_info *oi;
	const char *n = NULL;

	switch (e->layer) {
	case DC_LAYER_SYSCALL:
		oi = ops_get(e->op);
		n = oi ? oi->name : NULL;
		break;
	case DC_LAYER_LIB:
		n = t->res.lib_func ? t->res.lib_func(t->res.opaque, e->op) : NULL;
		break;
	case DC_LAYER_VFS:
		n = e->op < ELEMENTSOF(vfs_funcs) ? vfs_funcs[e->op].name : NULL;
		break;
	case DC_LAYER_BLOCK:
		n = e->op < ELEMENTSOF(blk_op_names) ? blk_op_names[e->op] : NULL;
		break;
	}
	return n ? n : "unknown";
}

static int on_event(void *ctx, void *data, size_t size)
{
	struct traces *t = ctx;
	const struct dc_trace_ev *e = data;
	struct trace_names n = {};
	char comm[32] = "";

	if (size < sizeof(*e) || e->version != DC_TRACE_VERSION) {
		t->unknown++;
		return 0;
	}
	n.op = op_name(t, e);
	if (e->layer == DC_LAYER_VFS)
		n.cat = vfs_cat(e->op);
	/* a name once per process and batch: resolving costs a map lookup */
	if (t->res.comm && !trace_batch_knows_pid(&t->batch, e->pid)) {
		t->res.comm(t->res.opaque, e->pid, comm, sizeof(comm));
		n.comm = comm[0] ? comm : NULL;
	}
	if ((e->flags & DC_TEV_FILE) && t->res.file)
		n.fhash = t->res.file(t->res.opaque, e->dev, e->ino, e->igen, &n.path);
	trace_batch_add(&t->batch, &t->host, e, &n, t->realtime_off_ns, t->next_id++);
	return 0;
}

int traces_start(struct traces *t)
{
	if (t->fd[SH_RING] < 0)
		return -ENOENT; /* no object took the maps: nothing emits */
	t->ncpus = libbpf_num_possible_cpus();
	if (t->ncpus <= 0)
		return t->ncpus ? t->ncpus : -EINVAL;
	t->ring = ring_buffer__new(t->fd[SH_RING], on_event, t, NULL);
	return t->ring ? 0 : -errno;
}

/* The shared maps, made as obj declares them (each emitting object
 * declares them alike: tracering.bpf.h), the ring at its configured size,
 * with the policy in them before any program can load. Under t->lock. */
static int create_shared(struct traces *t, struct bpf_object *obj)
{
	char which[PATH_MAX];
	int fd[SH_MAX], r = 0;
	uint64_t room;
	int i;

	/* The ring is charged to the agent's memory cgroup page by page as it
	 * is made: one larger than the room left pushed the cgroup to its
	 * limit before failing, and the allocations of the families loading
	 * meanwhile were OOM-killed (the agent, or whoever shared its
	 * cgroup). Half the room at most, the rest for what the agent holds. */
	if (cgroup_memory_room(&room, which, sizeof(which)) >= 0 && t->ring_bytes > room / 2) {
		log_notice("The trace ring's %" PRIu64 " bytes are more than half of the %" PRIu64
			   " the memory cgroup %s lets the agent take: not made",
			   t->ring_bytes, room, which);
		return -ENOMEM;
	}

	for (i = 0; i < SH_MAX; i++) {
		const struct bpf_map *m = bpf_object__find_map_by_name(obj, shared_names[i]);
		LIBBPF_OPTS(bpf_map_create_opts, o, .map_flags = m ? bpf_map__map_flags(m) : 0);

		if (!m) {
			r = -ENOENT;
			break;
		}
		fd[i] = bpf_map_create(
		    bpf_map__type(m), shared_names[i], bpf_map__key_size(m), bpf_map__value_size(m),
		    i == SH_RING ? (__u32)t->ring_bytes : bpf_map__max_entries(m), &o);
		if (fd[i] < 0) {
			r = -errno;
			break;
		}
	}
	if (r >= 0) {
		/* published only with the policy in them: no object may load
		 * against maps that say less than the configuration */
		memcpy(t->fd, fd, sizeof(fd));
		r = write_policy(t);
		if (r < 0)
			for (i = 0; i < SH_MAX; i++)
				t->fd[i] = -1;
		i = SH_MAX;
	}
	if (r < 0)
		while (i-- > 0)
			close(fd[i]);
	return r;
}

int traces_share(struct traces *t, struct bpf_object *obj)
{
	bool on = false;
	int r = 0;

	if (t) {
		pthread_mutex_lock(&t->lock);
		if (t->fd[SH_RING] < 0 && !t->share_err) {
			r = create_shared(t, obj);
			if (r < 0) {
				/* as before the maps were made here: a family loads
				 * without traces when they cannot be had */
				t->share_err = r;
				log_warning_errno(r,
						  "Cannot set up the trace ring (%" PRIu64
						  " bytes) and its maps (%m): sampled traces off",
						  t->ring_bytes);
			}
		}
		on = t->fd[SH_RING] >= 0;
		pthread_mutex_unlock(&t->lock);
	}
	for (size_t i = 0; i < SH_MAX; i++) {
		struct bpf_map *m = bpf_object__find_map_by_name(obj, shared_names[i]);

		if (!m)
			return -ENOENT;
		r = on ? bpf_map__reuse_fd(m, t->fd[i]) : bpf_map__set_autocreate(m, false);
		if (r < 0)
			return r;
	}
	return on;
}

void traces_layers_read(struct traces *t, uint64_t out[DC_LAYER_MAX][DC_TR_OUTCOMES])
{
	uint64_t v[t->ncpus > 0 ? t->ncpus : 1];

	memset(out, 0, sizeof(uint64_t) * DC_LAYER_MAX * DC_TR_OUTCOMES);
	if (t->fd[SH_LCNT] < 0)
		return;
	for (__u32 l = 0; l < DC_LAYER_MAX; l++)
		for (__u32 o = 0; o < DC_TR_OUTCOMES; o++) {
			__u32 k = l * DC_TR_OUTCOMES + o;
			uint64_t sum = 0;

			if (bpf_map_lookup_elem(t->fd[SH_LCNT], &k, v))
				continue;
			for (int c = 0; c < t->ncpus; c++)
				sum += v[c];
			/* never reset in the kernel: the window's share is the increase */
			out[l][o] = sum - t->lcnt_prev[l][o];
			t->lcnt_prev[l][o] = sum;
		}
}

int traces_check_policy(const struct dc_config *cfg, char *err, size_t errlen)
{
	struct dc_trace_cfg p;
	uint64_t ids[MAX_FULL_CGROUPS];
	unsigned n;

	return build_policy(cfg, &p, ids, &n, false, err, errlen);
}

int traces_set_policy(struct traces *t, const struct dc_config *cfg, bool skip_gone, char *err,
		      size_t errlen)
{
	struct dc_trace_cfg p;
	uint64_t ids[MAX_FULL_CGROUPS];
	unsigned n;
	int r = build_policy(cfg, &p, ids, &n, skip_gone, err, errlen);

	if (r < 0)
		return r;
	/* drop the old full-trace set after the policy stops pointing at it */
	t->policy = p;
	t->policy.full_cgroups = 0;
	r = write_policy(t);
	for (unsigned i = 0; !r && i < t->n_full; i++)
		bpf_map_delete_elem(t->fd[SH_FULL], &t->full_ids[i]);
	memcpy(t->full_ids, ids, sizeof(ids));
	t->n_full = n;
	t->policy = p;
	return r ? r : write_policy(t);
}

int traces_pause(struct traces *t, bool paused)
{
	struct dc_trace_cfg p = t->policy;
	__u32 zero = 0;

	/* the programs still run the policy: every call is then sampled out,
	 * so each window's seen = kept + sampled_out + dropped still holds */
	if (paused)
		p.mode = DC_TRACE_OFF;
	return bpf_map_update_elem(t->fd[SH_CFG], &zero, &p, BPF_ANY) ? -errno : 0;
}

void traces_set_resolver(struct traces *t, const struct traces_resolver *r)
{
	t->res = *r;
}

uint64_t traces_next_id(const struct traces *t)
{
	return t->next_id;
}

void traces_continue_ids(struct traces *t, uint64_t next_id)
{
	t->next_id = next_id;
}

int traces_ring_fd(struct traces *t)
{
	return ring_buffer__epoll_fd(t->ring);
}

int traces_consume(struct traces *t)
{
	int r;

	/* one offset per read: the clocks drift apart by far less than a µs
	 * between two reads a window apart */
	t->realtime_off_ns = (int64_t)(clock_ns(CLOCK_REALTIME) - clock_ns(CLOCK_MONOTONIC));
	r = ring_buffer__consume(t->ring);
	return r < 0 ? r : 0;
}

bool traces_batch_full(const struct traces *t)
{
	return t->batch.meta.len + t->batch.events.len >= t->batch_max;
}

int traces_seal(struct traces *t, struct dc_buf *out, struct traces_window *st)
{
	size_t raw = 0;
	int r = 0;

	*st = (struct traces_window){
	    .events = t->batch.n_events,
	    .meta_records = t->batch.n_meta,
	    .weight_sum = t->batch.weight_sum,
	    .unknown = t->unknown,
	};
	t->unknown = 0;
	buf_reset(out);
	if (!t->batch.n_events)
		return 0;
	r = trace_batch_seal(&t->batch, t->zstd_level, out, &raw);
	st->raw_bytes = raw;
	st->zstd_bytes = out->len;
	return r;
}

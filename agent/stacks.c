// SPDX-License-Identifier: Apache-2.0
/*
 * Why four stack maps and this order at each window close
 * (include/datacrumbs/stacks.h has the key):
 *
 *   1. stk_seq := s + 1      the generation window s+1 captures into; its
 *                            map was cleared two closes ago
 *   2. flip the key map      waits for every running program (RCU), so no
 *                            program still uses generation s - 1 or older
 *   3. drain window s        keys name user stacks of s-1 or s (a program
 *                            that read the generation before step 1 and
 *                            the map slot after step 2) and kernel stacks
 *                            one generation older still: s-2 .. s, intact
 *   4. clear generation s-2  no later key can name it: window s+1's keys
 *                            name s-1 .. s+1
 *
 * So a stack id is read from the map that issued it before that map is
 * cleared, and an id is never reissued for another stack in between (the
 * programs do not pass BPF_F_REUSE_STACKID: a taken bucket loses the new
 * stack, counted, instead of overwriting the old one).
 */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "cgroup.h"
#include "counters.h"
#include "datacrumbs/trace.h"
#include "filepath.h"
#include "json.h"
#include "macro.h"
#include "ops.h"
#include "stacks.h"
#include "syscall.skel.h"
#include "winmap.h"

#define MAX_FULL_CGROUPS 64
#define MAX_PIDS	 4096 /* processes whose mappings are cached (LRU) */

struct entry {
	struct dc_stk_key k;
	struct dc_stk_val v;
};

struct stacks {
	struct syscall_bpf *skel;
	struct winmap agg;
	struct bpf_map *gens[DC_STACK_GENS];
	uint32_t seq;
	uint32_t max_stacks, max_keys;
	int ncpus;
	struct dc_stk_cfg policy;
	uint64_t full_ids[MAX_FULL_CGROUPS];
	unsigned n_full;
	uint64_t counters_prev[DC_STK_CNT_MAX];
	struct dc_stk_val overflow_prev;
	struct symbolizer *sym;
	uint64_t modules_hash; /* /proc/modules when kallsyms was last read; 0: not since start */
	struct ring_buffer *newpid; /* processes announced by the programs */
	struct entry *ent;
	size_t n_ent, cap_ent;
	struct stacks_drain d;
	size_t cap_rows, cap_objs;
	struct dc_buf sb;
	uint64_t (*ips)[DC_STACK_DEPTH];
};

static uint64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * USEC_PER_SEC + (uint64_t)ts.tv_nsec / 1000;
}

static int build_policy(const struct dc_config *cfg, struct dc_stk_cfg *p, uint64_t *ids,
			unsigned *n_ids, char *err, size_t errlen)
{
	char root[PATH_MAX], list[sizeof(cfg->stacks_full_cgroups)], *save = NULL;

	*p = (struct dc_stk_cfg){
	    .mode = 1,
	    .one_in_n = (__u32)cfg->stacks_one_in_n,
	    .draw_max = dc_draw_max((__u32)cfg->stacks_one_in_n),
	    .slow_ns = (__u64)(cfg->stacks_slow_ms * 1e6),
	};
	*n_ids = 0;
	snprintf(list, sizeof(list), "%s", cfg->stacks_full_cgroups);
	for (char *c = strtok_r(list, "\n", &save); c; c = strtok_r(NULL, "\n", &save)) {
		char path[PATH_MAX * 2];
		struct stat st;
		int r;

		if (*n_ids == MAX_FULL_CGROUPS) {
			snprintf(err, errlen, "probes.stacks.full_cgroups: more than %d",
				 MAX_FULL_CGROUPS);
			return -E2BIG;
		}
		r = cgroup2_mount(root, sizeof(root));
		if (r < 0) {
			snprintf(err, errlen,
				 "probes.stacks.full_cgroups: no cgroup2 hierarchy to find %s in",
				 c);
			return r;
		}
		snprintf(path, sizeof(path), "%s/%s", root, c[0] == '/' ? c + 1 : c);
		/* a cgroup2 id is the inode number of its directory */
		if (stat(path, &st) < 0 || !S_ISDIR(st.st_mode)) {
			snprintf(err, errlen, "probes.stacks.full_cgroups: no cgroup %s (%s)", c,
				 path);
			return -ENOENT;
		}
		ids[(*n_ids)++] = st.st_ino;
	}
	p->full_cgroups = *n_ids;
	if (!p->one_in_n && !p->slow_ns && !p->full_cgroups) {
		snprintf(err, errlen,
			 "probes.stacks: one_in_n, slow_ms and full_cgroups are all off: no call "
			 "would be profiled");
		return -EINVAL;
	}
	return 0;
}

int stacks_new(const struct dc_config *cfg, struct stacks **ret, char *err, size_t errlen)
{
	struct stacks *s = calloc(1, sizeof(*s));
	int r;

	if (!s)
		return -ENOMEM;
	s->agg.inner_fd[0] = s->agg.inner_fd[1] = -1;
	s->max_stacks = (uint32_t)cfg->stacks_max_stacks;
	s->max_keys = (uint32_t)cfg->stacks_max_keys;
	s->ncpus = libbpf_num_possible_cpus();
	s->ips = malloc(sizeof(*s->ips) * 2);
	r = s->ips ? build_policy(cfg, &s->policy, s->full_ids, &s->n_full, err, errlen) : -ENOMEM;
	if (!r)
		r = symbolizer_new((uint64_t)cfg->stacks_max_symbols_mib << 20, MAX_PIDS, &s->sym);
	if (!r) {
		/* kernel frames stay "[unknown]_[k]" if this fails, reported per frame */
		int k = symbolizer_load_kallsyms(s->sym, "/proc/kallsyms");

		if (k < 0)
			snprintf(err, errlen, "cannot read /proc/kallsyms: %s", strerror(-k));
		else if (!sym_kernel_count(s->sym))
			snprintf(err, errlen,
				 "/proc/kallsyms shows no addresses (kernel.kptr_restrict, or not "
				 "root)");
	}
	if (r < 0) {
		if (!err[0])
			snprintf(err, errlen, "%s", strerror(-r));
		stacks_free(s);
		return r;
	}
	*ret = s;
	return 0;
}

void stacks_reset(struct stacks *s)
{
	winmap_close(&s->agg);
	ring_buffer__free(s->newpid);
	s->newpid = NULL;
}

static void drain_clear(struct stacks_drain *d)
{
	for (size_t i = 0; i < d->n; i++)
		free(d->rows[i].stack);
	for (size_t i = 0; i < d->n_objs; i++) {
		free(d->objs[i].name);
		free(d->objs[i].path);
	}
	d->n = d->n_objs = 0;
}

struct stacks *stacks_free(struct stacks *s)
{
	if (!s)
		return NULL;
	winmap_close(&s->agg);
	ring_buffer__free(s->newpid);
	drain_clear(&s->d);
	free(s->d.rows);
	free(s->d.objs);
	free(s->ent);
	free(s->ips);
	buf_free(&s->sb);
	symbolizer_free(s->sym);
	free(s);
	return NULL;
}

int stacks_prepare(struct stacks *s, struct syscall_bpf *skel, int mech)
{
	struct bpf_program *sw[3] = {skel->progs.dc_switch_btf, skel->progs.dc_switch_raw,
				     skel->progs.dc_switch_tp};

	s->skel = skel;
	skel->rodata->stacks_on = true;
	s->gens[0] = skel->maps.stk_0;
	s->gens[1] = skel->maps.stk_1;
	s->gens[2] = skel->maps.stk_2;
	s->gens[3] = skel->maps.stk_3;
	for (int i = 0; i < DC_STACK_GENS; i++)
		bpf_map__set_max_entries(s->gens[i], s->max_stacks);
	/* the switch program on the mechanism the syscall programs got */
	for (int i = 0; i < 3; i++)
		bpf_program__set_autoload(sw[i], i == mech);
	/* shared, not per-CPU: only chosen calls update it */
	return winmap_prepare(&s->agg, skel->maps.stk_gen, skel->maps.stk_gen_clock, -1, "dc_stk",
			      sizeof(struct dc_stk_key), sizeof(struct dc_stk_val), s->max_keys,
			      false, s->ncpus);
}

void stacks_disable(struct syscall_bpf *skel)
{
	skel->rodata->stacks_on = false;
	bpf_program__set_autoload(skel->progs.dc_switch_btf, false);
	bpf_program__set_autoload(skel->progs.dc_switch_raw, false);
	bpf_program__set_autoload(skel->progs.dc_switch_tp, false);
	bpf_map__set_autocreate(skel->maps.stk_0, false);
	bpf_map__set_autocreate(skel->maps.stk_1, false);
	bpf_map__set_autocreate(skel->maps.stk_2, false);
	bpf_map__set_autocreate(skel->maps.stk_3, false);
	bpf_map__set_autocreate(skel->maps.stk_gen, false);
	bpf_map__set_autocreate(skel->maps.stk_gen_clock, false);
	bpf_map__set_autocreate(skel->maps.stk_overflow, false);
	bpf_map__set_autocreate(skel->maps.stk_counters, false);
	bpf_map__set_autocreate(skel->maps.stk_percpu, false);
	bpf_map__set_autocreate(skel->maps.stk_cfg, false);
	bpf_map__set_autocreate(skel->maps.stk_full, false);
	bpf_map__set_autocreate(skel->maps.stk_pids, false);
	bpf_map__set_autocreate(skel->maps.stk_newpid, false);
}

/* The full-profile set first, the policy that says how many there are last. */
static int write_policy(struct stacks *s)
{
	__u32 zero = 0;
	__u8 one = 1;

	for (unsigned i = 0; i < s->n_full; i++)
		if (bpf_map_update_elem(bpf_map__fd(s->skel->maps.stk_full), &s->full_ids[i], &one,
					BPF_ANY))
			return -errno;
	return bpf_map_update_elem(bpf_map__fd(s->skel->maps.stk_cfg), &zero, &s->policy, BPF_ANY)
		   ? -errno
		   : 0;
}

int stacks_pause(struct stacks *s, bool paused)
{
	struct dc_stk_cfg off = {.mode = 0};
	__u32 zero = 0;

	if (!paused)
		return write_policy(s);
	return bpf_map_update_elem(bpf_map__fd(s->skel->maps.stk_cfg), &zero, &off, BPF_ANY)
		   ? -errno
		   : 0;
}

static int on_newpid(void *ctx, void *data, size_t size)
{
	struct stacks *s = ctx;
	const struct dc_stk_newpid *e = data;

	if (size >= sizeof(*e))
		sym_note_pid(s->sym, e->tgid, e->ident);
	return 0;
}

int stacks_install(struct stacks *s)
{
	int r = winmap_install(&s->agg);

	s->seq = 0;
	s->skel->bss->stk_seq = 0;
	if (r)
		return r;
	ring_buffer__free(s->newpid);
	s->newpid = ring_buffer__new(bpf_map__fd(s->skel->maps.stk_newpid), on_newpid, s, NULL);
	if (!s->newpid)
		return -errno;
	return write_policy(s);
}

int stacks_ring_fd(struct stacks *s)
{
	return s->newpid ? ring_buffer__epoll_fd(s->newpid) : -EBADF;
}

int stacks_consume(struct stacks *s)
{
	int r = s->newpid ? ring_buffer__consume(s->newpid) : 0;

	return r < 0 ? r : 0;
}

static int collect(const void *key, const void *values, int ncpus, void *ctx)
{
	struct stacks *s = ctx;
	struct entry *e = VEC_PUSH(s->ent, s->n_ent, s->cap_ent);

	(void)ncpus;
	if (!e)
		return -ENOMEM;
	memcpy(&e->k, key, sizeof(e->k));
	memcpy(&e->v, values, sizeof(e->v));
	return 0;
}

static void put_frame(struct dc_buf *b, const char *name, const char *suffix)
{
	char clean[512];

	sym_clean_frame(name, clean, sizeof(clean));
	if (b->len)
		buf_putc(b, ';');
	buf_printf(b, "%s%s", clean, suffix);
}

/* The tracing machinery a switch-out stack starts with, not the I/O path. */
static bool machinery(const char *n)
{
	return !strncmp(n, "bpf_", 4) || !strncmp(n, "__bpf_", 6) ||
	       !strncmp(n, "__traceiter_", 12) || !strncmp(n, "trace_call_bpf", 14) ||
	       !strncmp(n, "perf_trace_", 11);
}

static void note_object(struct stacks *s, const struct entry *e, const char *base,
			const struct sym_frame *f)
{
	struct stacks_drain *d = &s->d;
	struct stack_object *o;

	for (size_t i = 0; i < d->n_objs; i++)
		if (d->objs[i].tgid == e->k.tgid && d->objs[i].cgroup_id == e->k.cgroup_id &&
		    !strcmp(d->objs[i].path, f->object))
			return;
	o = VEC_PUSH(d->objs, d->n_objs, s->cap_objs);
	if (!o)
		return;
	*o = (struct stack_object){.tgid = e->k.tgid, .cgroup_id = e->k.cgroup_id};
	o->name = strdup(base);
	o->path = strdup(f->object);
	snprintf(o->build_id, sizeof(o->build_id), "%s", f->build_id);
	if (!o->name || !o->path) {
		free(o->name);
		free(o->path);
		d->n_objs--;
	}
}

static void user_frame(struct stacks *s, const struct entry *e, uint64_t ip)
{
	struct sym_frame f;
	char name[256];
	const char *base;

	if (sym_user(s->sym, e->k.tgid, ip, &f) < 0 || !f.object) {
		put_frame(&s->sb, "[unknown]", "");
		return;
	}
	if (f.name) {
		put_frame(&s->sb, f.name, "");
		return;
	}
	base = strrchr(f.object, '/') ? strrchr(f.object, '/') + 1 : f.object;
	if (!base[0] || base[0] == '[') {
		put_frame(&s->sb, f.object[0] ? f.object : "[anon]", "");
		return;
	}
	/* offline: the build id (objects in the record) names base+offset */
	snprintf(name, sizeof(name), "%s+0x%llx", base, (unsigned long long)f.offset);
	put_frame(&s->sb, name, "");
	note_object(s, e, base, &f);
}

/* Which modules are loaded where: a hash (filepath_hash) of each
 * /proc/modules line's name, size and address, not its use count or state,
 * which move all the time; 1 where the kernel has no modules. Never 0. */
static uint64_t modules_hash(void)
{
	_cleanup_fclose_ FILE *f = fopen("/proc/modules", "re");
	uint64_t h = 0;
	char line[512];

	if (!f)
		return 1;
	while (fgets(line, sizeof(line), f)) {
		char name[128], addr[32] = "", key[200];
		unsigned long size = 0;

		if (sscanf(line, "%127s %lu %*s %*s %*s %31s", name, &size, addr) < 2)
			continue;
		snprintf(key, sizeof(key), "%s %lu %s", name, size, addr);
		h = h * 31 + filepath_hash(key);
	}
	return h | 1;
}

/* Kernel symbols read again at the first drain, once this agent's programs
 * are loaded (their JIT images are the switch-out stacks' leaf frames, cut
 * by name), and whenever the modules change (a file system's module loaded
 * at its first mount): else their addresses take the nearest symbol read
 * before. */
static void kallsyms_refresh(struct stacks *s)
{
	uint64_t h = modules_hash();

	if (h == s->modules_hash)
		return;
	if (symbolizer_load_kallsyms(s->sym, "/proc/kallsyms") < 0)
		return; /* the symbols read before stay */
	s->modules_hash = h;
	s->d.kallsyms_reads++;
}

static int read_stack(struct stacks *s, int gen, int32_t id, uint64_t *ips)
{
	memset(ips, 0, sizeof(uint64_t) * DC_STACK_DEPTH);
	return bpf_map_lookup_elem(bpf_map__fd(s->gens[gen & (DC_STACK_GENS - 1)]), &id, ips)
		   ? -errno
		   : 0;
}

static const char *mark_name(int32_t id, bool kernel)
{
	switch (id) {
	case DC_STACK_ONCPU:
		return "[on-cpu]";
	case DC_STACK_STALE:
		return "[kernel stack stale]";
	default:
		return kernel ? "[kernel stack lost]" : "[user stack lost]";
	}
}

/* user frames root to leaf, [syscall] op, kernel frames root to leaf */
static void build_stack(struct stacks *s, const struct entry *e)
{
	uint64_t *u = s->ips[0], *k = s->ips[1];
	const struct dc_op_info *oi = ops_get(e->k.op);
	char marker[64];
	int nu = 0, nk = 0;

	buf_reset(&s->sb);
	if (e->k.ustack >= 0 && read_stack(s, e->k.ugen, e->k.ustack, u) == 0)
		while (nu < DC_STACK_DEPTH && u[nu])
			nu++;
	if (e->k.ustack < 0 || !nu)
		put_frame(&s->sb, mark_name(DC_STACK_LOST, false), "");
	/* a walk that stopped at the leaf: the caller is all there is above it */
	if (nu == 1 && e->k.caller && e->k.caller != u[0]) {
		user_frame(s, e, e->k.caller);
		s->d.caller_fixups++;
	}
	for (int i = nu - 1; i >= 0; i--) {
		user_frame(s, e, u[i]);
		/* the caller a frameless leaf's walk skipped: between the leaf and
		 * the walk's next frame (the kernel set it only where it follows a
		 * call instruction, bpf/stacks.bpf.h) */
		if (i == 1 && e->k.caller && e->k.caller != u[1]) {
			user_frame(s, e, e->k.caller);
			s->d.caller_fixups++;
		}
	}
	snprintf(marker, sizeof(marker), "[syscall] %s", oi ? oi->name : "?");
	put_frame(&s->sb, marker, "");
	if (e->k.kstack >= 0 && read_stack(s, e->k.kgen, e->k.kstack, k) == 0)
		while (nk < DC_STACK_DEPTH && k[nk])
			nk++;
	if (e->k.kstack < 0 || !nk) {
		put_frame(&s->sb, mark_name(e->k.kstack >= 0 ? DC_STACK_LOST : e->k.kstack, true),
			  "");
		return;
	}
	/* leaf first in the map: skip the tracing frames there, then root first */
	{
		int leaf = 0;

		while (leaf < nk) {
			const char *n = sym_kernel(s->sym, k[leaf]);

			if (!n || !machinery(n))
				break;
			leaf++;
		}
		for (int i = nk - 1; i >= leaf; i--) {
			const char *n = sym_kernel(s->sym, k[i]);

			put_frame(&s->sb, n ? n : "[unknown]", "_[k]");
		}
	}
}

static int row_cmp(const void *a, const void *b)
{
	const struct stack_row *x = a, *y = b;
	int c;

	if (x->tgid != y->tgid)
		return x->tgid < y->tgid ? -1 : 1;
	if (x->cgroup_id != y->cgroup_id)
		return x->cgroup_id < y->cgroup_id ? -1 : 1;
	c = strcmp(x->stack, y->stack);
	if (c)
		return c;
	return x->op < y->op ? -1 : x->op > y->op;
}

static int obj_cmp(const void *a, const void *b)
{
	const struct stack_object *x = a, *y = b;

	if (x->tgid != y->tgid)
		return x->tgid < y->tgid ? -1 : 1;
	return x->cgroup_id < y->cgroup_id ? -1 : x->cgroup_id > y->cgroup_id;
}

static int ent_cmp(const void *a, const void *b)
{
	const struct entry *x = a, *y = b;

	return x->k.tgid < y->k.tgid ? -1 : x->k.tgid > y->k.tgid;
}

static void clear_gen(struct stacks *s, int gen)
{
	int fd = bpf_map__fd(s->gens[gen & (DC_STACK_GENS - 1)]);
	_cleanup_free_ __u32 *keys = malloc(sizeof(*keys) * s->max_stacks);
	size_t n = 0;
	__u32 next;

	/* nothing writes this generation any more: list its ids, delete them
	 * (get_next_key after each delete would rescan from the start) */
	if (!keys)
		return;
	for (int r = bpf_map_get_next_key(fd, NULL, &next); !r && n < s->max_stacks;
	     r = bpf_map_get_next_key(fd, &keys[n - 1], &next))
		keys[n++] = next;
	for (size_t i = 0; i < n; i++)
		bpf_map_delete_elem(fd, &keys[i]);
}

int stacks_flip_and_drain(struct stacks *s, struct stacks_drain *out)
{
	/* announcements not yet read: their mappings first, while the
	 * processes may still be there */
	stacks_consume(s);
	struct stacks_drain *d = &s->d;
	uint32_t closing = s->seq;
	unsigned long long flip_us;
	bool batch;
	uint64_t t0 = now_us(), t1;
	int r;

	drain_clear(d);
	*d = (struct stacks_drain){.rows = d->rows, .objs = d->objs};
	s->n_ent = 0;
	__atomic_store_n(&s->skel->bss->stk_seq, closing + 1, __ATOMIC_SEQ_CST);
	s->seq = closing + 1;
	r = winmap_flip_and_drain(&s->agg, collect, s, &batch, &flip_us);
	if (r < 0)
		return r;
	percpu_counters_delta(s->skel->maps.stk_counters, DC_STK_CNT_MAX, s->ncpus,
			      s->counters_prev, d->counters);
	{
		struct dc_stk_val *vals = calloc((size_t)s->ncpus, sizeof(*vals)), cur = {};
		int fd = bpf_map__fd(s->skel->maps.stk_overflow);

		for (__u32 op = 0; vals && op < DC_OP_MAX; op++)
			if (!bpf_map_lookup_elem(fd, &op, vals))
				for (int c = 0; c < s->ncpus; c++) {
					cur.count += vals[c].count;
					cur.time_ns += vals[c].time_ns;
					cur.bytes += vals[c].bytes;
				}
		free(vals);
		d->unattributed_count = cur.count - s->overflow_prev.count;
		d->unattributed_time_ns = cur.time_ns - s->overflow_prev.time_ns;
		d->unattributed_bytes = cur.bytes - s->overflow_prev.bytes;
		s->overflow_prev = cur;
	}
	d->keys = s->n_ent;
	d->flip_us = flip_us;
	t1 = now_us();
	/* one process's keys together: its mappings are looked up once */
	qsort_safe(s->ent, s->n_ent, sizeof(*s->ent), ent_cmp);
	kallsyms_refresh(s);
	sym_new_batch(s->sym);
	for (size_t i = 0; i < s->n_ent; i++) {
		struct stack_row *row;

		build_stack(s, &s->ent[i]);
		if (s->sb.err)
			return -ENOMEM;
		row = VEC_PUSH(d->rows, d->n, s->cap_rows);
		if (!row)
			return -ENOMEM;
		*row = (struct stack_row){.tgid = s->ent[i].k.tgid,
					  .cgroup_id = s->ent[i].k.cgroup_id,
					  .op = s->ent[i].k.op,
					  .stack = strndup(s->sb.data, s->sb.len),
					  .count = s->ent[i].v.count,
					  .time_ns = s->ent[i].v.time_ns,
					  .bytes = s->ent[i].v.bytes};
		if (!row->stack) {
			d->n--;
			return -ENOMEM;
		}
	}
	qsort_safe(d->rows, d->n, sizeof(*d->rows), row_cmp);
	/* keys whose ids differ but whose frames read the same: one row */
	{
		size_t w = 0;

		for (size_t i = 0; i < d->n; i++) {
			if (w && !row_cmp(&d->rows[w - 1], &d->rows[i])) {
				d->rows[w - 1].count += d->rows[i].count;
				d->rows[w - 1].time_ns += d->rows[i].time_ns;
				d->rows[w - 1].bytes += d->rows[i].bytes;
				free(d->rows[i].stack);
				continue;
			}
			d->rows[w++] = d->rows[i];
		}
		d->n = w;
	}
	qsort_safe(d->objs, d->n_objs, sizeof(*d->objs), obj_cmp);
	d->symbolize_us = now_us() - t1;
	if (closing >= 2)
		clear_gen(s, (int)(closing - 2));
	sym_get_stats(s->sym, &d->sym);
	d->drain_us = now_us() - t0 - flip_us - d->symbolize_us;
	*out = *d;
	return 0;
}

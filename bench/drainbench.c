// SPDX-License-Identifier: Apache-2.0
/*
 * The agent's window drain, timed on a map of N keys: the agent's own
 * system-call slot map (agent/slotmap.c, per-CPU regions or one shared
 * region; "percpu", "shared"), or the per-window hash behind a map-of-maps
 * slot it used before and the other layers still use (agent/winmap.c ->
 * agent/drain.c; "hash-percpu", "hash-shared"), closed and emptied by the
 * agent's own code, each key's per-CPU values summed as the agent does
 * (agg_entry_fold). The keys are written from user space, every CPU's
 * value filled, before each repetition. Prints one line per repetition:
 *   "<keys> <layout> <max_entries> <flip us> <drain us> <batch 0|1>"
 * "floor" drains a shared hash of the same keys with 8-byte values (same
 * drain code, nothing folded, no flip): the kernel's own walk, whatever a
 * value holds; what any design keeping a per-window hash pays at least.
 * "percpu-live" and "percpu-exited" are "percpu" with the agent's check for
 * exited processes on (slotmap.owner, done at the close before the flip,
 * on the main thread: in "flip us"): every key's process alive (this one),
 * or every key's process gone, so that every slot goes back at each close
 * (the worst case: a node whose processes all exited within the window).
 * usage: drainbench KEYS LAYOUT REPS
 */
#include <bpf/bpf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "baseline.skel.h"
#include "featvec.h"
#include "slotmap.h"
#include "winmap.h"

struct sums {
	struct dc_agg_entry *e;
	size_t n;
};

/* the agent's own fold of each key (agent/probe-syscall.c collect()) */
static int collect(const void *key, const void *values, int ncpus, void *ctx)
{
	struct sums *s = ctx;
	const struct dc_agg_key *k = key;
	struct dc_agg_entry *e = &s->e[s->n++];

	memset(e, 0, sizeof(*e));
	agg_entry_fold(e, k, values, ncpus);
	return 0;
}

/* the same for the slot map (agent/probe-syscall.c collect()) */
static int collect_slots(const void *key, const void *const *values, unsigned n, void *ctx)
{
	struct sums *s = ctx;
	struct dc_agg_entry *e = &s->e[s->n++];

	agg_entry_fold_each(e, key, values, n);
	return 0;
}

static int count_key(const void *key, const void *values, int ncpus, void *ctx)
{
	(void)key, (void)values, (void)ncpus;
	(*(size_t *)ctx)++;
	return 0;
}

static unsigned long long now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long long)ts.tv_sec * 1000000ULL + (unsigned long long)ts.tv_nsec / 1000;
}

/* N keys as a workload of N / 50 processes x 50 operations would make them */
static int fill(int fd, unsigned n, int ncpus)
{
	struct dc_agg_val *vals = calloc((size_t)ncpus, sizeof(*vals));

	if (!vals)
		return -ENOMEM;
	for (unsigned i = 0; i < n; i++) {
		struct dc_agg_key k = {.cgroup_id = 1, .tgid = 100000 + i / 50, .op = i % 50};

		for (int c = 0; c < ncpus; c++) {
			vals[c].bytes = 4096;
			vals[c].time_ns = 1000 + i;
			vals[c].lat_hist[3] = 1;
		}
		if (bpf_map_update_elem(fd, &k, vals, BPF_NOEXIST)) {
			int r = -errno;

			free(vals);
			return r;
		}
	}
	free(vals);
	return 0;
}

static int floor_run(unsigned keys, unsigned max_entries, int reps)
{
	int fd = bpf_map_create(BPF_MAP_TYPE_HASH, "dc_drainf", sizeof(struct dc_agg_key),
				sizeof(__u64), max_entries, NULL);
	__u64 v = 1;

	if (fd < 0) {
		fprintf(stderr, "drainbench: cannot create the map: %m\n");
		return 1;
	}
	for (int i = 0; i < reps; i++) {
		unsigned long long t0;
		size_t n = 0;
		bool batch;
		int e = 0;

		for (unsigned j = 0; j < keys && !e; j++) {
			struct dc_agg_key k = {
			    .cgroup_id = 1, .tgid = 100000 + j / 50, .op = j % 50};

			e = bpf_map_update_elem(fd, &k, &v, BPF_NOEXIST) ? -errno : 0;
		}
		t0 = now_us();
		if (!e)
			e = drain_hash(fd, sizeof(struct dc_agg_key), sizeof(v), false, 1,
				       max_entries, count_key, &n, &batch);
		t0 = now_us() - t0;
		if (e < 0 || n != keys) {
			fprintf(stderr, "drainbench: drained %zu keys of %u: %s\n", n, keys,
				strerror(e < 0 ? -e : EIO));
			close(fd);
			return 1;
		}
		printf("%u floor %u 0 %llu %d\n", keys, max_entries, t0, batch);
	}
	close(fd);
	return 0;
}

/* percpu-live: every key this process's; percpu-exited: no process's (above
 * any pid_max, kill() says ESRCH); else 50 keys a process, as before */
static uint32_t tgid_base = 100000;
static bool one_owner;

static uint32_t key_owner(const void *key)
{
	return ((const struct dc_agg_key *)key)->tgid;
}

/* The same keys and values written where the programs would put them: each
 * key its slot, every region (CPU) of the half being filled. */
static int fill_slots(struct slotmap *m, unsigned n)
{
	unsigned half = m->st->seq & 1;
	int r = slotmap_reach(m, n);

	if (r < 0)
		return r;
	for (unsigned i = 0; i < n; i++) {
		struct dc_agg_key k = {.cgroup_id = 1,
				       .tgid = one_owner ? tgid_base : tgid_base + i / 50,
				       .op = i % 50};
		__u32 slot = i;

		memcpy((struct dc_agg_key *)m->keys_mem + i, &k, sizeof(k));
		if (bpf_map_update_elem(bpf_map__fd(m->idx), &k, &slot, BPF_ANY))
			return -errno;
		for (unsigned g = 0; g < m->regions; g++) {
			struct dc_agg_val *v = slotmap_value(m, half, g, i);

			v->bytes = 4096;
			v->time_ns = 1000 + i;
			v->lat_hist[3] = 1;
		}
	}
	m->st->hi = n;
	return 0;
}

int main(int argc, char **argv)
{
	static const char *const layouts[] = {"percpu",	      "shared", "hash-percpu",
					      "hash-shared",  "floor",	"percpu-live",
					      "percpu-exited"};
	struct baseline_bpf *skel = NULL;
	struct winmap w = {.inner_fd = {-1, -1}};
	struct slotmap m = {.barrier_inner_fd = -1};
	struct sums s = {};
	unsigned keys, max_entries = 1;
	int reps, ncpus, r = 1, layout = -1;
	bool percpu, hash;

	for (int i = 0; argc == 4 && i < (int)(sizeof(layouts) / sizeof(*layouts)); i++)
		if (!strcmp(argv[2], layouts[i]))
			layout = i;
	if (argc != 4 || atoi(argv[1]) <= 0 || atoi(argv[3]) <= 0 || layout < 0) {
		fprintf(stderr,
			"usage: drainbench KEYS percpu|shared|hash-percpu|hash-shared|floor|"
			"percpu-live|percpu-exited REPS\n");
		return 2;
	}
	keys = (unsigned)atoi(argv[1]);
	percpu = strstr(argv[2], "percpu") != NULL;
	hash = !strncmp(argv[2], "hash-", 5);
	reps = atoi(argv[3]);
	ncpus = libbpf_num_possible_cpus();
	/* maps.max_keys an operator would set for this many keys: the next power of two */
	while (max_entries < keys)
		max_entries *= 2;
	if (!strcmp(argv[2], "floor"))
		return floor_run(keys, max_entries, reps);
	s.e = calloc(keys, sizeof(*s.e));
	skel = baseline_bpf__open();
	if (!s.e || !skel || ncpus <= 0)
		goto out;
	/* no program: only the window maps are wanted */
	for (struct bpf_program *p = bpf_object__next_program(skel->obj, NULL); p;
	     p = bpf_object__next_program(skel->obj, p))
		bpf_program__set_autoload(p, false);
	skel->rodata->drain_max = max_entries;
	skel->rodata->drain_regions = percpu ? (__u32)ncpus : 1;
	if (winmap_prepare(&w, skel->maps.drain_gen, skel->maps.drain_gen_clock, -1, "dc_drainb",
			   sizeof(struct dc_agg_key), sizeof(struct dc_agg_val), max_entries,
			   percpu, ncpus) ||
	    slotmap_prepare(&m, skel->obj, "drain", sizeof(struct dc_agg_key),
			    sizeof(struct dc_agg_val), max_entries, skel->rodata->drain_regions,
			    agg_val_touched)) {
		fprintf(stderr, "drainbench: cannot create the window maps: %m\n");
		goto out;
	}
	skel->rodata->drain_half = m.half;
	if (strstr(argv[2], "-live") || strstr(argv[2], "-exited")) {
		m.owner = key_owner; /* before install: it sizes the pid cache */
		one_owner = strstr(argv[2], "-live") != NULL;
		tgid_base = one_owner ? (uint32_t)getpid() : 0x7f000000u;
	}
	if (baseline_bpf__load(skel) || winmap_install(&w) || slotmap_install(&m)) {
		fprintf(stderr, "drainbench: cannot create the window maps: %m\n");
		goto out;
	}
	for (int i = 0; i < reps; i++) {
		unsigned long long flip_us, t0;
		bool batch = false;
		int e = hash ? fill(w.inner_fd[*w.seq & 1], keys, percpu ? ncpus : 1)
			     : fill_slots(&m, keys);

		if (e) {
			fprintf(stderr, "drainbench: cannot fill the map: %s\n", strerror(-e));
			goto out;
		}
		s.n = 0;
		t0 = now_us();
		e = hash ? winmap_flip_and_drain(&w, collect, &s, &batch, &flip_us)
			 : slotmap_flip_and_drain(&m, collect_slots, &s, &flip_us);
		t0 = now_us() - t0;
		if (e || s.n != keys) {
			fprintf(stderr, "drainbench: drained %zu keys of %u: %s\n", s.n, keys,
				strerror(-e));
			goto out;
		}
		printf("%u %s %u %llu %llu %d\n", keys, argv[2], max_entries, flip_us, t0 - flip_us,
		       batch);
	}
	r = 0;
out:
	winmap_close(&w);
	slotmap_close(&m);
	baseline_bpf__destroy(skel);
	free(s.e);
	return r;
}

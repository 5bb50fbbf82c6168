// SPDX-License-Identifier: Apache-2.0
/*
 * The agent's window drain, timed on a map of N keys: the agent's own
 * system-call window map type (struct dc_agg_key -> struct dc_agg_val,
 * per-CPU or shared hash behind a map-of-maps slot), closed and emptied by
 * the agent's own code (agent/winmap.c winmap_flip_and_drain ->
 * agent/drain.c drain_hash), each key's per-CPU values summed as the agent
 * does (agg_sum_add_val). The keys are written from user space, every CPU's
 * slot filled, before each repetition. Prints one line per repetition:
 *   "<keys> <percpu|shared> <max_entries> <flip us> <drain us> <batch 0|1>"
 * "floor" drains a shared hash of the same keys with 8-byte values (same
 * drain code, nothing folded, no flip): the kernel's own walk, whatever a
 * value holds; what any design keeping a per-window hash pays at least.
 * usage: drainbench KEYS percpu|shared|floor REPS
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

int main(int argc, char **argv)
{
	struct baseline_bpf *skel = NULL;
	struct winmap w = {.inner_fd = {-1, -1}};
	struct sums s = {};
	unsigned keys, max_entries = 1;
	int reps, ncpus, r = 1;
	bool percpu;

	if (argc != 4 || atoi(argv[1]) <= 0 || atoi(argv[3]) <= 0 ||
	    (strcmp(argv[2], "percpu") && strcmp(argv[2], "shared") && strcmp(argv[2], "floor"))) {
		fprintf(stderr, "usage: drainbench KEYS percpu|shared|floor REPS\n");
		return 2;
	}
	keys = (unsigned)atoi(argv[1]);
	percpu = !strcmp(argv[2], "percpu");
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
	/* no program: only the window map is wanted */
	for (struct bpf_program *p = bpf_object__next_program(skel->obj, NULL); p;
	     p = bpf_object__next_program(skel->obj, p))
		bpf_program__set_autoload(p, false);
	if (winmap_prepare(&w, skel->maps.drain_gen, "dc_drainb", sizeof(struct dc_agg_key),
			   sizeof(struct dc_agg_val), max_entries, percpu, ncpus) ||
	    baseline_bpf__load(skel) || winmap_install(&w)) {
		fprintf(stderr, "drainbench: cannot create the window maps: %m\n");
		goto out;
	}
	for (int i = 0; i < reps; i++) {
		unsigned long long flip_us, t0;
		bool batch;
		int e = fill(w.inner_fd[w.active], keys, percpu ? ncpus : 1);

		if (e) {
			fprintf(stderr, "drainbench: cannot fill the map: %s\n", strerror(-e));
			goto out;
		}
		s.n = 0;
		t0 = now_us();
		e = winmap_flip_and_drain(&w, collect, &s, &batch, &flip_us);
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
	baseline_bpf__destroy(skel);
	free(s.e);
	return r;
}

// SPDX-License-Identifier: Apache-2.0
#include <bpf/bpf.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "counters.h"
#include "fnagg.h"
#include "macro.h"

int fn_agg_prepare(struct fn_agg *a, struct bpf_map *agg_gen, struct bpf_map *clock, int clock_fd,
		   struct bpf_map *counters, const char *name, unsigned max_keys, bool percpu)
{
	memset(a, 0, sizeof(*a));
	/* closed by fn_agg_close() whatever happens next: never fd 0 */
	a->win.inner_fd[0] = a->win.inner_fd[1] = -1;
	a->counters = counters;
	a->ncpus = libbpf_num_possible_cpus();
	if (a->ncpus <= 0)
		return a->ncpus ? a->ncpus : -EINVAL;
	return winmap_prepare(&a->win, agg_gen, clock, clock_fd, name, sizeof(struct dc_fn_key),
			      sizeof(struct dc_fn_val), max_keys, percpu, a->ncpus);
}

int fn_agg_install(struct fn_agg *a)
{
	return winmap_install(&a->win);
}

static int collect(const void *key, const void *values, int ncpus, void *ctx)
{
	struct fn_agg *a = ctx;
	const struct dc_fn_key *k = key;
	struct dc_fn_entry *e;

	e = VEC_PUSH(a->entries, a->n, a->cap);
	if (!e)
		return -ENOMEM;
	e->cgroup_id = k->cgroup_id;
	e->tgid = k->tgid;
	e->func = k->func;
	for (int c = 0; c < ncpus; c++) {
		const struct dc_fn_val *v = (const struct dc_fn_val *)values + c;

		e->time_ns += v->time_ns;
		e->bytes += v->bytes;
		e->errors += v->errors;
		for (unsigned i = 0; i < DC_LAT_SLOTS; i++) {
			/* every call lands in one latency slot */
			e->count += v->lat_hist[i];
			e->lat[i] += v->lat_hist[i];
		}
	}
	return 0;
}

int fn_agg_drain(struct fn_agg *a, struct dc_fn_drain *res)
{
	unsigned long long flip_us;
	bool batch;
	int r;

	a->n = 0;
	r = winmap_flip_and_drain(&a->win, collect, a, &batch, &flip_us);
	if (r < 0)
		return r;
	res->entries = a->entries;
	res->n = a->n;
	return percpu_counters_delta(a->counters, DC_FN_CNT_MAX, a->ncpus, a->counters_prev,
				     res->counters);
}

void fn_agg_close(struct fn_agg *a)
{
	winmap_close(&a->win);
	free(a->entries);
	a->entries = NULL;
	a->n = a->cap = 0;
}

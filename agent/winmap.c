// SPDX-License-Identifier: Apache-2.0
#include <bpf/bpf.h>
#include <errno.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "winmap.h"

static unsigned long long now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long long)ts.tv_sec * 1000000ULL + (unsigned long long)ts.tv_nsec / 1000;
}

int winmap_prepare(struct winmap *w, struct bpf_map *outer, const char *name, size_t key_size,
		   size_t value_size, unsigned max_entries, bool percpu, int ncpus)
{
	enum bpf_map_type t = percpu ? BPF_MAP_TYPE_PERCPU_HASH : BPF_MAP_TYPE_HASH;
	char n[BPF_OBJ_NAME_LEN];

	*w = (struct winmap){.outer = outer,
			     .inner_fd = {-1, -1},
			     .key_size = key_size,
			     .value_size = value_size,
			     .percpu = percpu,
			     .ncpus = ncpus,
			     .max_entries = max_entries};
	for (int i = 0; i < 2; i++) {
		snprintf(n, sizeof(n), "%.12s_%c", name, i ? 'b' : 'a');
		w->inner_fd[i] =
		    bpf_map_create(t, n, (__u32)key_size, (__u32)value_size, max_entries, NULL);
		if (w->inner_fd[i] < 0)
			return -errno;
	}
	/* libbpf 1.1 cannot resize its own inner template (bpf_map__set_max_entries()
	 * dereferences the template's NULL obj): ours serves as the template */
	return bpf_map__set_inner_map_fd(outer, w->inner_fd[0]);
}

int winmap_install(struct winmap *w)
{
	__u32 zero = 0;

	w->active = 0;
	return bpf_map_update_elem(bpf_map__fd(w->outer), &zero, &w->inner_fd[0], BPF_ANY) ? -errno
											   : 0;
}

int winmap_flip_and_drain(struct winmap *w, drain_cb cb, void *ctx, bool *used_batch,
			  unsigned long long *flip_us)
{
	int next = 1 - w->active, r;
	unsigned long long t0 = now_us();
	__u32 zero = 0;

	if (bpf_map_update_elem(bpf_map__fd(w->outer), &zero, &w->inner_fd[next], BPF_ANY))
		return -errno;
	*flip_us = now_us() - t0;
	r = drain_hash(w->inner_fd[w->active], w->key_size, w->value_size, w->percpu, w->ncpus,
		       w->max_entries, cb, ctx, used_batch);
	w->active = next;
	return r < 0 ? r : 0;
}

void winmap_close(struct winmap *w)
{
	for (int i = 0; i < 2; i++)
		if (w->inner_fd[i] >= 0) {
			close(w->inner_fd[i]);
			w->inner_fd[i] = -1;
		}
}

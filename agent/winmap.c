// SPDX-License-Identifier: Apache-2.0
#include <bpf/bpf.h>
#include <errno.h>
#include <stdio.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "winmap.h"

static unsigned long long now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long long)ts.tv_sec * 1000000ULL + (unsigned long long)ts.tv_nsec / 1000;
}

int winmap_prepare(struct winmap *w, struct bpf_map *outer, struct bpf_map *clock, int clock_fd,
		   const char *name, size_t key_size, size_t value_size, unsigned max_entries,
		   bool percpu, int ncpus)
{
	enum bpf_map_type t = percpu ? BPF_MAP_TYPE_PERCPU_HASH : BPF_MAP_TYPE_HASH;
	char n[BPF_OBJ_NAME_LEN];

	*w = (struct winmap){.outer = outer,
			     .clock = clock,
			     .inner_fd = {-1, -1},
			     .key_size = key_size,
			     .value_size = value_size,
			     .percpu = percpu,
			     .ncpus = ncpus,
			     .max_entries = max_entries,
			     .shared = clock_fd >= 0};
	if (w->shared) {
		int r = winclock_share(clock_fd, clock);

		if (r < 0)
			return r;
	}
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
	long page = sysconf(_SC_PAGESIZE);
	void *p;

	if (w->seq)
		munmap(w->seq, w->seq_len);
	w->seq = NULL;
	w->seq_len = (size_t)(page > 0 ? page : 4096);
	p = mmap(NULL, w->seq_len, PROT_READ | PROT_WRITE, MAP_SHARED, bpf_map__fd(w->clock), 0);
	if (p == MAP_FAILED)
		return -errno;
	w->seq = p;
	if (!w->shared)
		__atomic_store_n(w->seq, 0, __ATOMIC_SEQ_CST);
	w->flipped = false;
	/* each update waits for a grace period: before the programs attach
	 * there is nothing to wait for, but the kernel waits all the same */
	for (__u32 i = 0; i < 2; i++)
		if (bpf_map_update_elem(bpf_map__fd(w->outer), &i, &w->inner_fd[i], BPF_ANY))
			return -errno;
	return 0;
}

void winmap_flip(struct winmap *w)
{
	uint32_t seq = __atomic_load_n(w->seq, __ATOMIC_RELAXED);

	w->closing = seq & 1;
	if (!w->shared)
		__atomic_store_n(w->seq, seq + 1, __ATOMIC_SEQ_CST);
	w->flipped = true;
}

int winmap_flip_and_drain(struct winmap *w, drain_cb cb, void *ctx, bool *used_batch,
			  unsigned long long *flip_us)
{
	unsigned long long t0;
	int r;

	if (!w->flipped) {
		/* nothing would raise the clock before the wait */
		if (w->shared)
			return -EINVAL;
		winmap_flip(w);
	}
	w->flipped = false;
	t0 = now_us();
	/* the closed slot updated with the map it holds: nothing changes but
	 * the wait, after which no program still writes it */
	if (bpf_map_update_elem(bpf_map__fd(w->outer), &w->closing, &w->inner_fd[w->closing],
				BPF_ANY))
		/* the programs went on to the other map: this one is drained
		 * two closes from now, summed with that window's */
		return -errno;
	*flip_us = now_us() - t0;
	r = drain_hash(w->inner_fd[w->closing], w->key_size, w->value_size, w->percpu, w->ncpus,
		       w->max_entries, cb, ctx, used_batch);
	return r < 0 ? r : 0;
}

int winclock_new(void)
{
	LIBBPF_OPTS(bpf_map_create_opts, o, .map_flags = BPF_F_MMAPABLE);
	int fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "dc_clock", sizeof(__u32),
				sizeof(struct dc_slot_state), 1, &o);

	return fd < 0 ? -errno : fd;
}

int winclock_share(int fd, struct bpf_map *map)
{
	struct bpf_map_info info = {};
	__u32 len = sizeof(info);

	/* libbpf 1.1's reuse takes the fd's definition over the object's
	 * without comparing them: a map declared otherwise would be read out
	 * of its bounds, or not mapped */
	if (bpf_obj_get_info_by_fd(fd, &info, &len))
		return -errno;
	if (info.type != bpf_map__type(map) || info.key_size != bpf_map__key_size(map) ||
	    info.value_size != bpf_map__value_size(map) ||
	    info.max_entries != bpf_map__max_entries(map) ||
	    info.map_flags != bpf_map__map_flags(map))
		return -EINVAL;
	return bpf_map__reuse_fd(map, fd);
}

void winmap_close(struct winmap *w)
{
	if (w->seq) {
		munmap(w->seq, w->seq_len);
		w->seq = NULL;
	}
	for (int i = 0; i < 2; i++)
		if (w->inner_fd[i] >= 0) {
			close(w->inner_fd[i]);
			w->inner_fd[i] = -1;
		}
}

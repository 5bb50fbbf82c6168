/* SPDX-License-Identifier: Apache-2.0 */
#ifndef DC_WINMAP_H
#define DC_WINMAP_H

#include <bpf/libbpf.h>
#include <stdbool.h>
#include <stddef.h>

#include "drain.h"

/*
 * A window map: the aggregation hash a probe family writes, behind the one
 * slot of a BPF_MAP_TYPE_ARRAY_OF_MAPS. The agent owns two inner maps and
 * closes a window by pointing the slot at the other one; the kernel's
 * map-of-maps update waits for an RCU grace period (maybe_wait_bpf_programs()),
 * so when it returns no program still writes the old map, which is then
 * drained with nothing in flight. Every increment lands in exactly one window.
 */
struct winmap {
	struct bpf_map *outer;
	int inner_fd[2];
	int active;
	size_t key_size, value_size;
	bool percpu;
	int ncpus;
	unsigned max_entries;
};

/* Before load: create both inner maps and make the first the outer map's template. */
int winmap_prepare(struct winmap *w, struct bpf_map *outer, const char *name, size_t key_size,
		   size_t value_size, unsigned max_entries, bool percpu, int ncpus);
/* After load: install the first inner map. */
int winmap_install(struct winmap *w);
/* Close the window and drain it through cb; *flip_us gets the switch time. */
int winmap_flip_and_drain(struct winmap *w, drain_cb cb, void *ctx, bool *used_batch,
			  unsigned long long *flip_us);
void winmap_close(struct winmap *w);

#endif

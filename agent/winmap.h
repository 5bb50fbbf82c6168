/* SPDX-License-Identifier: Apache-2.0 */
#ifndef DC_WINMAP_H
#define DC_WINMAP_H

#include <bpf/libbpf.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "drain.h"

/*
 * A window map: the aggregation hash a probe family writes, in one of the
 * two slots of a BPF_MAP_TYPE_ARRAY_OF_MAPS, the one the parity of a clock
 * (an array the agent maps) names (bpf/common.bpf.h, DC_WINDOW_MAP). The
 * agent owns both inner maps. A window closes when the clock is raised:
 * one store, so the close raises the clocks and the slot maps' seq from
 * one thread, and the layers' windows end at the same moment
 * (flipped by each family's own map-of-maps update on the drain threads,
 * the layers ended up to 8 ms apart on a busy node). An update of the
 * closed slot with the map it holds then waits for an RCU grace period
 * (maybe_wait_bpf_programs()): when it returns no program still writes the
 * closed map, which is drained with nothing in flight. Every increment
 * lands in exactly one window.
 */
struct winmap {
	struct bpf_map *outer;
	struct bpf_map *clock; /* DC_WINDOW_MAP's <outer>_clock */
	int inner_fd[2];
	uint32_t *seq; /* the clock, mapped; the window being filled writes slot seq & 1 */
	size_t seq_len;
	uint32_t closing; /* the slot the last flip closed */
	bool flipped;	  /* raised (winmap_flip), not drained yet */
	size_t key_size, value_size;
	bool percpu;
	int ncpus;
	unsigned max_entries;
};

/* Before load: create both inner maps and make the first the outer map's template. */
int winmap_prepare(struct winmap *w, struct bpf_map *outer, struct bpf_map *clock, const char *name,
		   size_t key_size, size_t value_size, unsigned max_entries, bool percpu,
		   int ncpus);
/* After load: install both inner maps, map the clock and start it at 0. */
int winmap_install(struct winmap *w);
/* Close the window: the programs' next runs write the other map. */
void winmap_flip(struct winmap *w);
/* Close the window (unless winmap_flip() did), wait out the programs still
 * writing the closed map, and drain it through cb; *flip_us gets the wait. */
int winmap_flip_and_drain(struct winmap *w, drain_cb cb, void *ctx, bool *used_batch,
			  unsigned long long *flip_us);
void winmap_close(struct winmap *w);

#endif

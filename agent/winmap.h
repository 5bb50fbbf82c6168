/* SPDX-License-Identifier: Apache-2.0 */
#ifndef DC_WINMAP_H
#define DC_WINMAP_H

#include <bpf/libbpf.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "datacrumbs/slotmap.h"
#include "drain.h"

/*
 * A window map: the aggregation hash a probe family writes, in one of the
 * two slots of a BPF_MAP_TYPE_ARRAY_OF_MAPS, the one the parity of a clock
 * (an array the agent maps) names (bpf/common.bpf.h, DC_WINDOW_MAP). The
 * agent owns both inner maps. A window closes when the clock is raised.
 * The families' clock is one map, shared with the system-call slot map's
 * seq (the manager's, given to winmap_prepare()): its one store ends every
 * layer's window at the same moment. Raised one clock after the other,
 * even from one thread, a preemption between two stores would put the
 * calls of that moment in one window in one layer and the next in another
 * (flipped by each family on its own drain thread, the layers ended up to
 * 8 ms apart on a busy node). An update of the closed slot with the map it
 * holds then waits for an RCU grace period (maybe_wait_bpf_programs()):
 * when it returns no program still writes the closed map, which is drained
 * with nothing in flight. Every increment lands in exactly one window.
 */
struct winmap {
	struct bpf_map *outer;
	struct bpf_map *clock; /* DC_WINDOW_MAP's <outer>_clock */
	int inner_fd[2];
	uint32_t *seq; /* the clock, mapped; the window being filled writes slot seq & 1 */
	size_t seq_len;
	uint32_t closing; /* the slot the last flip closed */
	bool flipped;	  /* raised (winmap_flip), not drained yet */
	bool shared;	  /* the clock is another's, who raises it */
	size_t key_size, value_size;
	bool percpu;
	int ncpus;
	unsigned max_entries;
};

/* Before load: create both inner maps and make the first the outer map's
 * template. clock_fd: the shared clock (an array of one struct
 * dc_slot_state) the clock map is to be, or -1 for a clock of its own. */
int winmap_prepare(struct winmap *w, struct bpf_map *outer, struct bpf_map *clock, int clock_fd,
		   const char *name, size_t key_size, size_t value_size, unsigned max_entries,
		   bool percpu, int ncpus);
/* After load: install both inner maps and map the clock; one of its own
 * starts at 0. */
int winmap_install(struct winmap *w);
/* Close the window: the programs' next runs write the other map. A shared
 * clock is not raised here: this only notes the slot it closes, and the
 * clock's owner raises it next. */
void winmap_flip(struct winmap *w);
/* Close the window (unless winmap_flip() did), wait out the programs still
 * writing the closed map, and drain it through cb; *flip_us gets the wait.
 * With a shared clock, winmap_flip() must have been called (-EINVAL). */
int winmap_flip_and_drain(struct winmap *w, drain_cb cb, void *ctx, bool *used_batch,
			  unsigned long long *flip_us);
void winmap_close(struct winmap *w);

/* The clock every family's windows share, as an fd (else -errno): an
 * array of one struct dc_slot_state, which the system-call slot map takes
 * as its state (slotmap_share_state()) and whose seq the window maps read
 * (winmap_prepare()). It outlives the families, so that a family started
 * again goes on with the others' windows. */
int winclock_new(void);
/* Before load: map is to be the clock fd (-EINVAL if declared otherwise). */
int winclock_share(int fd, struct bpf_map *map);

#endif

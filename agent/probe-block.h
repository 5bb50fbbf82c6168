/* SPDX-License-Identifier: Apache-2.0 */
#ifndef DC_PROBE_BLOCK_H
#define DC_PROBE_BLOCK_H

struct bpf_object;

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "blkvec.h"
#include "config.h"

struct probe_block;
struct winmap;

struct traces;
/* traces: the ring its requests' events go to (traces_share()), or NULL;
 * clock_fd: the windows' clock (winmap_prepare()), -1 for its own. */
int probe_block_new(const struct dc_config *cfg, struct traces *traces, int clock_fd,
		    struct probe_block **ret);
struct probe_block *probe_block_free(struct probe_block *p);
const char *probe_block_mechanism(const struct probe_block *p);
const char *probe_block_detail(const struct probe_block *p);

struct dc_blk_drain {
	struct dc_blk_entry *entries; /* owned by the probe, valid until the next drain */
	size_t n;
	struct dc_blk_entry overflow[DC_BLK_OP_MAX];
	uint64_t counters[DC_BLK_CNT_MAX];
	uint64_t recursion_misses; /* this window's, see progstats.h */
};

int probe_block_flip_and_drain(struct probe_block *p, struct dc_blk_drain *res);
/* Its window map, for the close's flip of every layer at once (manager.c). */
struct winmap *probe_block_winmap(struct probe_block *p);

/* At stop: requests still issued and not completed (counted, then forgotten). */
uint64_t probe_block_inflight_at_stop(struct probe_block *p);

/* The family's BPF object: its programs' run times and its maps' fill. */
struct bpf_object *probe_block_object(const struct probe_block *p);

#endif

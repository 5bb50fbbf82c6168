/* SPDX-License-Identifier: Apache-2.0 */
#ifndef DC_PROBE_UPROBE_H
#define DC_PROBE_UPROBE_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "datacrumbs/uprobe.h"

struct dc_up_func {
	char name[128];
	char category[64];
	char feature[200]; /* "<function>-<category>", the seeds' column name */
};

struct dc_up_entry {
	uint64_t cgroup_id;
	uint32_t tgid;
	uint32_t func;
	uint64_t count, time_ns, bytes, errors;
	uint64_t lat[DC_LAT_SLOTS];
};

struct probe_uprobe;

/* Attach to every function the configured libraries' patterns select.
 * On a bad library or pattern: -errno and the reason in err. */
int probe_uprobe_new(const struct dc_config *cfg, struct probe_uprobe **ret, char *err,
		     size_t errlen);
struct probe_uprobe *probe_uprobe_free(struct probe_uprobe *p);
const char *probe_uprobe_detail(const struct probe_uprobe *p);
const struct dc_up_func *probe_uprobe_func(const struct probe_uprobe *p, uint32_t i);

struct dc_up_drain {
	struct dc_up_entry *entries; /* owned by the probe, valid until the next drain */
	size_t n;
	uint64_t counters[DC_UP_CNT_MAX];
};

int probe_uprobe_flip_and_drain(struct probe_uprobe *p, struct dc_up_drain *res);

#endif

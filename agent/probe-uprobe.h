/* SPDX-License-Identifier: Apache-2.0 */
#ifndef DC_PROBE_UPROBE_H
#define DC_PROBE_UPROBE_H

struct bpf_object;
struct traces;

#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "fnagg.h"

struct dc_up_func {
	char name[128];
	char category[64];
	char feature[200]; /* "<function>-<category>", the seeds' column name */
};

struct probe_uprobe;

/* Attach to every function the configured libraries' patterns select.
 * On a bad library or pattern: -errno and the reason in err. */
/* traces: the ring its calls' events go to (traces_share()), or NULL.
 * clock_fd: the windows' clock (winmap_prepare()), -1 for its own.
 * plain_ok: the kernel never preempts a BPF program (preempt.h) and
 * maps.updates is not "atomic": with per-CPU maps, plain adds. */
int probe_uprobe_new(const struct dc_config *cfg, struct traces *traces, int clock_fd,
		     bool plain_ok, struct probe_uprobe **ret, char *err, size_t errlen);
struct probe_uprobe *probe_uprobe_free(struct probe_uprobe *p);
/* What probe_uprobe_new() would find wrong with cfg's libraries (a file
 * missing or not ELF, a pattern matching nothing, too many functions),
 * without attaching: -errno and why in err, else 0. */
int probe_uprobe_check(const struct dc_config *cfg, char *err, size_t errlen);
const char *probe_uprobe_detail(const struct probe_uprobe *p);
/* "uprobe_multi" (one link per binary and direction, kernel 6.6+) or
 * "uprobe" (a perf-event link per function and direction). */
const char *probe_uprobe_mechanism(const struct probe_uprobe *p);
const struct dc_up_func *probe_uprobe_func(const struct probe_uprobe *p, uint32_t i);

int probe_uprobe_flip_and_drain(struct probe_uprobe *p, struct dc_fn_drain *res);
/* Its window map, for the close's flip of every layer at once (manager.c). */
struct winmap *probe_uprobe_winmap(struct probe_uprobe *p);

/* The family's BPF object: its programs' run times and its maps' fill. */
struct bpf_object *probe_uprobe_object(const struct probe_uprobe *p);

#endif

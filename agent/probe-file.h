/* SPDX-License-Identifier: Apache-2.0 */
#ifndef DC_PROBE_FILE_H
#define DC_PROBE_FILE_H

#include <stdbool.h>
#include <stdint.h>

#include "config.h"
#include "filepath.h"
#include "filevec.h"

/*
 * The file layer's user side. Its BPF code runs inside the system-call
 * programs (bpf/file.bpf.h), so the syscall probe loads it: it calls
 * probe_file_prepare() or probe_file_disable() before loading its skeleton,
 * probe_file_install() after, and probe_file_start() once attached. The
 * manager drains it and names its files.
 */
struct probe_file;
struct syscall_bpf;

int probe_file_new(const struct dc_config *cfg, struct probe_file **ret);
struct probe_file *probe_file_free(struct probe_file *p);

/* Whether per-CPU file maps fit the configured map memory. */
bool probe_file_fits_percpu(const struct probe_file *p);
/* percpu: the layout the syscall maps use (one plain_updates flag serves both) */
/* direct: the programs read the file and inode with typed loads (the
 * dc_*_btf_dr programs), not probe-read copies */
int probe_file_prepare(struct probe_file *p, struct syscall_bpf *skel, bool percpu, bool plain,
		       bool direct);
void probe_file_disable(struct syscall_bpf *skel);
int probe_file_install(struct probe_file *p, struct syscall_bpf *skel);
/* Undo prepare/install after a failed load attempt. */
void probe_file_reset(struct probe_file *p);
int probe_file_start(struct probe_file *p, struct syscall_bpf *skel);
const char *probe_file_detail(const struct probe_file *p);
/* Appends " (why)" to the detail: why the reads are not the configured ones. */
void probe_file_note(struct probe_file *p, const char *why);

/* The path events' ring: readable when names are waiting. */
int probe_file_ring_fd(struct probe_file *p);
/* Take every waiting name into the table, tagged with the window being filled. */
int probe_file_consume(struct probe_file *p, uint64_t window);

struct dc_file_drain {
	/* sorted by (tgid, cgroup, dev, ino, igen); owned by the probe */
	struct dc_file_entry *entries;
	size_t n;
	struct dc_file_sum overflow; /* calls whose key did not fit, this window */
	uint64_t counters[DC_FILE_CNT_MAX];
	uint64_t names;			 /* path events received this window */
	uint64_t names_not_kept;	 /* names the table had no room for */
	uint64_t max_keys, slots_in_use; /* the slot map's size, and its slots held now */
	uint64_t slots_reclaimed, slots_reclaimed_exited; /* since the start */
};

/* Close the window, take the names it sent, drain it. */
int probe_file_flip_and_drain(struct probe_file *p, uint64_t window, struct dc_file_drain *res);
/* The file keys' window map, for slotmap_flip_together(). */
struct slotmap *probe_file_slotmap(struct probe_file *p);

/* The name of the file (dev, ino, igen) for the records of window; NULL
 * when unknown. */
const struct fname *probe_file_name(struct probe_file *p, uint32_t dev, uint64_t ino, uint32_t igen,
				    uint64_t window);

#endif

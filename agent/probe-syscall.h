/* SPDX-License-Identifier: Apache-2.0 */
#ifndef DC_PROBE_SYSCALL_H
#define DC_PROBE_SYSCALL_H

struct bpf_object;

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "featvec.h"

struct probe_syscall;

struct traces;

/* Open, size, load and attach, trying mechanisms from cheapest to most
 * portable. Returns -errno and logs why each mechanism was refused.
 * traces: where the programs' sampled traces go (traces_share(); the
 * caller's, which outlives the probe), NULL for none. clock_fd: the
 * windows' clock, the slot map's state (slotmap_share_state()), -1 for a
 * state of its own. */
int probe_syscall_new(const struct dc_config *cfg, struct traces *traces, int clock_fd,
		      struct probe_syscall **ret);
struct probe_syscall *probe_syscall_free(struct probe_syscall *p);

const char *probe_syscall_mechanism(const struct probe_syscall *p);
const char *probe_syscall_detail(const struct probe_syscall *p);
const char *probe_syscall_layout(const struct probe_syscall *p);
uint64_t probe_syscall_max_keys(const struct probe_syscall *p);
/* Slots of the window map in use, and given back since the start. */
/* Slots in use; given back since the start, and of these at the close
 * after their process exited. */
uint64_t probe_syscall_slots(const struct probe_syscall *p, uint64_t *reclaimed,
			     uint64_t *reclaimed_exited);
/* Whether counters use plain adds (per-CPU maps on a non-preemptible kernel):
 * the other probe families follow the same decision. */
bool probe_syscall_plain_updates(const struct probe_syscall *p);

/* The file layer, which runs inside the syscall programs; NULL when it is
 * off (configured so, or refused by the kernel: the detail says which). */
struct probe_file *probe_syscall_files(struct probe_syscall *p);
const char *probe_syscall_files_detail(const struct probe_syscall *p);

struct stacks;
/* NULL when stack profiles are off */
struct stacks *probe_syscall_stacks(struct probe_syscall *p);
/* The traces its programs write to: the caller's, NULL when off here
 * (configured so, or refused by the kernel with the file layer). */
struct traces *probe_syscall_traces(struct probe_syscall *p);

struct dc_drain_result {
	struct dc_agg_entry *entries; /* owned by the probe, valid until the next drain */
	size_t n;
	struct dc_agg_entry overflow[DC_OP_MAX]; /* this window's unattributed calls, by op */
	uint64_t counters[DC_CNT_MAX];		 /* this window's loss counters */
	uint64_t recursion_misses;		 /* this window\'s, see progstats.h */
	uint64_t flip_us, drain_us;
	bool used_batch;
};

/* Close the window in the kernel (switch maps, wait out running programs)
 * and collect everything the closed window counted. */
int probe_syscall_flip_and_drain(struct probe_syscall *p, struct dc_drain_result *res);
/* The window map, for slotmap_flip_together() (with the file layer's). */
struct slotmap *probe_syscall_slotmap(struct probe_syscall *p);

/* What the kernel recorded of a process when it last showed up in a window. */
struct dc_proc_info {
	char comm[DC_COMM_LEN + 1]; /* "" if unknown */
	char exe[DC_EXE_LEN + 1];   /* "" if unknown or no executable */
	uint32_t uid;
	/* CLOCK_BOOTTIME ns at its start, in whole clock ticks as /proc/PID/stat
	 * gives it (proc_start_floor); 0 if unknown */
	uint64_t start_ns;
	bool known; /* false: never recorded, or evicted (maps.max_procs) */
};

/* Fills info (zeroed when unknown); -ENOENT if the kernel has no record. */
int probe_syscall_proc(struct probe_syscall *p, uint32_t tgid, struct dc_proc_info *info);

/* The family's BPF object: its programs' run times and its maps' fill. */
struct bpf_object *probe_syscall_object(const struct probe_syscall *p);

#endif

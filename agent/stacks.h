/* SPDX-License-Identifier: Apache-2.0 */
#ifndef DC_STACKS_H
#define DC_STACKS_H

#include <stdbool.h>
#include <stdint.h>

#include "config.h"
#include "datacrumbs/ops.h"
#include "datacrumbs/stacks.h"
#include "symbolize.h"

/*
 * Stack-attributed I/O profiles, user side. The kernel half runs in the
 * system-call programs (bpf/stacks.bpf.h) and one program on sched_switch;
 * the syscall probe calls stacks_prepare() or stacks_disable() before
 * loading its skeleton, stacks_install() after. The manager flips and
 * drains the window's map with the other families and publishes one
 * stacks record per (process, window).
 */
struct stacks;
struct syscall_bpf;

/* One (process, operation, symbolized stack) of a window. Rows whose keys
 * differ only by ids that name the same frames are summed. */
struct stack_row {
	uint32_t tgid;
	uint64_t cgroup_id;
	uint16_t op;
	char *stack; /* collapsed: frames root to leaf, ';'-separated (docs/stacks.md) */
	uint64_t count, time_ns, bytes;
};

/* A user object some frame of a process could not be named in: the
 * consumer names "object+0xoffset" offline by its build id. */
struct stack_object {
	uint32_t tgid;
	uint64_t cgroup_id;
	char *name; /* the base name used in frames */
	char *path;
	char build_id[41];
};

struct stacks_drain {
	struct stack_row *rows; /* sorted by (tgid, cgroup_id, stack, op) */
	size_t n;
	struct stack_object *objs; /* sorted by (tgid, cgroup_id) */
	size_t n_objs;
	uint64_t keys;
	uint64_t counters[DC_STK_CNT_MAX];
	uint64_t unattributed_count, unattributed_time_ns, unattributed_bytes;
	uint64_t flip_us, drain_us, symbolize_us;
	uint64_t caller_fixups;	 /* frameless leaves' callers put back */
	uint64_t kallsyms_reads; /* kernel symbols read again (first drain, modules changed) */
	struct sym_stats sym;
};

int stacks_new(const struct dc_config *cfg, struct stacks **ret, char *err, size_t errlen);
struct stacks *stacks_free(struct stacks *s);

/* mech: 0 tp_btf, 1 raw_tp, 2 tracepoint: the switch program's variant. */
int stacks_prepare(struct stacks *s, struct syscall_bpf *skel, int mech);
void stacks_disable(struct syscall_bpf *skel);
int stacks_install(struct stacks *s);
/* Stop (or resume) capturing without reloading: the CPU budget's step.
 * Calls in flight when it changes finish under the policy they began with
 * or are simply not captured; nothing is half-written. */
int stacks_pause(struct stacks *s, bool paused);
/* The maps of a failed load attempt. */
void stacks_reset(struct stacks *s);

/* The ring of processes announced by the programs (epoll fd), and its
 * reader: each announced process has its mappings and objects read at
 * once (sym_note_pid), while it still runs. */
int stacks_ring_fd(struct stacks *s);
int stacks_consume(struct stacks *s);

/* Close the window: advance the generation, flip, drain, symbolize; clear
 * the generation no key can name any more. d stays valid until the next call. */
int stacks_flip_and_drain(struct stacks *s, struct stacks_drain *d);

#endif

/* SPDX-License-Identifier: Apache-2.0 */
#ifndef DC_TRACES_H
#define DC_TRACES_H

#include <stdbool.h>
#include <stdint.h>

#include "config.h"
#include "datacrumbs/trace.h"
#include "json.h"

/*
 * Sampled traces, user side. The kernel half runs in the system-call
 * programs (bpf/trace.bpf.h) and in the library, VFS and block programs
 * (bpf/tracering.bpf.h), which share one ring. The manager makes the
 * traces before it loads the families, which load side by side: the
 * syscall probe calls traces_prepare() or traces_disable() before loading
 * its skeleton, the others traces_share(); then the manager calls
 * traces_start(), reads the ring on a timer and at each window's end, and
 * seals one batch (one zstd frame) per window.
 */
struct traces;
struct syscall_bpf;
struct probe_file;
struct bpf_object;

/* Names the reader needs for an event: process name and file name. */
struct traces_resolver {
	/* "" when unknown */
	void (*comm)(void *opaque, uint32_t pid, char *out, size_t len);
	/* 0 when the file has no known name; *path valid until the next call */
	uint64_t (*file)(void *opaque, uint32_t dev, uint64_t ino, uint32_t igen,
			 const char **path);
	/* the name of a library function (DC_LAYER_LIB) by its index; NULL
	 * when unknown. The other layers' names are the agent's catalogues. */
	const char *(*lib_func)(void *opaque, uint32_t func);
	void *opaque;
};

/* host: the records' host name; NULL: cfg's, else the node's */
int traces_new(const struct dc_config *cfg, const char *host, struct traces **ret, char *err,
	       size_t errlen);
struct traces *traces_free(struct traces *t);

/* The system-call object's traces_share() and traces_on; 0: the maps could
 * not be made (traces_disable() done), 1: shared. */
int traces_prepare(struct traces *t, struct syscall_bpf *skel);
void traces_disable(struct syscall_bpf *skel);
/* After the families loaded: the ring's reader. -ENOENT: no object shared
 * the maps (nothing emits). */
int traces_start(struct traces *t);
/*
 * Before loading an object that emits events (tracering.bpf.h: the
 * system-call, library, VFS and block families): its ring, policy,
 * full-trace set and layer counters become t's. The first object to share
 * them creates them, as it declares them, the ring at the configured size
 * and the policy (the full-trace cgroups resolved) written before any
 * program loads: no family waits for another's load. Thread-safe.
 * Returns 1 when shared; 0 when t is NULL (traces off) or the maps could
 * not be made (logged once; every object then goes without), and those
 * maps are then not created: the caller sets its rodata traces_on to the
 * result. New traces (a reload of traces.*) make new maps: every family
 * sharing them is then reloaded too (the manager does).
 */
int traces_share(struct traces *t, struct bpf_object *obj);
/* A new policy (reload, a budget step): no program is reloaded. skip_gone:
 * full_cgroups whose cgroup is gone are left out (a finished job's, when
 * the budget restores the configured policy), not an error. */
int traces_set_policy(struct traces *t, const struct dc_config *cfg, bool skip_gone, char *err,
		      size_t errlen);
/* Whether cfg's sampling policy can be built here (its cgroups exist, its
 * slice fits its period), without applying it: a reload checks first. */
int traces_check_policy(const struct dc_config *cfg, char *err, size_t errlen);
/* Stop keeping events (paused) or keep them again under the policy in force. */
int traces_pause(struct traces *t, bool paused);

void traces_set_resolver(struct traces *t, const struct traces_resolver *r);
/* Event ids number a run's events: a family restarted at reload takes the
 * next id from the one it replaces. */
uint64_t traces_next_id(const struct traces *t);
void traces_continue_ids(struct traces *t, uint64_t next_id);
int traces_ring_fd(struct traces *t);
/* Read what the ring holds into the open batch. */
int traces_consume(struct traces *t);

struct traces_window {
	uint64_t events, meta_records, weight_sum; /* in the sealed batch */
	uint64_t raw_bytes, zstd_bytes;
	uint64_t unknown;  /* events the reader could not parse (other version) */
	uint64_t too_many; /* batches sealed early (traces.batch_max_mib) */
	uint64_t unsealed; /* events of batches the compression failed on: lost */
	/* the non-syscall layers' calls by outcome since the last read
	 * (traces_layers_read); the syscall layer's row stays 0 */
	uint64_t layers[DC_LAYER_MAX][DC_TR_OUTCOMES];
};

/* The layer counters' increase since the last call, into out. */
void traces_layers_read(struct traces *t, uint64_t out[DC_LAYER_MAX][DC_TR_OUTCOMES]);

/* Seal the window's batch into out (one zstd frame; empty when no event). */
int traces_seal(struct traces *t, struct dc_buf *out, struct traces_window *st);

/* A batch grew past its bound before the window ended: seal it now. */
bool traces_batch_full(const struct traces *t);

#endif

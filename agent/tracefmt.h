/* SPDX-License-Identifier: Apache-2.0 */
#ifndef DC_TRACEFMT_H
#define DC_TRACEFMT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "datacrumbs/trace.h"
#include "json.h"

/*
 * Sampled trace events as DFTracer / Chrome Trace Event NDJSON, batched so
 * that every batch is self-describing: the metadata a batch's events use
 * (host hash, file hashes, process names) precede them in the same batch.
 * Pure: no BPF, no I/O; the agent resolves names and hands them in.
 */

/* A small open-addressing set of 64-bit values (0 is never a member). */
struct u64set {
	uint64_t *slot;
	size_t cap, used;
};
/* true if v was added (it was not there); false if present or no memory */
bool u64set_add(struct u64set *s, uint64_t v);
bool u64set_has(const struct u64set *s, uint64_t v);
void u64set_clear(struct u64set *s);
void u64set_free(struct u64set *s);

struct trace_batch {
	struct dc_buf meta, events;
	struct u64set pids, fhashes;
	uint64_t n_events, n_meta;
	uint64_t weight_sum;
	bool host_done;
	char hhash_json[18]; /* the host's hash, quoted: the same in every event */
};

/* What the agent resolved for one event. */
struct trace_names {
	const char *op;	  /* "pwrite64" */
	const char *cat;  /* the event's "cat"; NULL: the layer's name */
	const char *comm; /* process name, NULL if unknown */
	uint64_t fhash;	  /* 0: no file, or its name is unknown */
	const char *path; /* the file's path when fhash != 0 */
};

struct trace_host {
	const char *name;
	uint64_t hhash; /* filepath_hash(name): same scheme as file hashes */
};

/* Whether the batch already named pid (the caller can skip resolving it). */
bool trace_batch_knows_pid(const struct trace_batch *b, uint32_t pid);

/* Append one event (and, first, the metadata it needs) to the batch.
 * realtime_off_ns: CLOCK_REALTIME - CLOCK_MONOTONIC, to put ts on the wall
 * clock so that traces of different nodes line up. */
void trace_batch_add(struct trace_batch *b, const struct trace_host *h, const struct dc_trace_ev *e,
		     const struct trace_names *n, int64_t realtime_off_ns, uint64_t id);

/* The batch as one zstd frame of NDJSON (metadata first) into out; the
 * batch is emptied. -ENOMEM, -EIO (zstd refused). */
int trace_batch_seal(struct trace_batch *b, int level, struct dc_buf *out, size_t *raw_len);
void trace_batch_free(struct trace_batch *b);

const char *trace_layer_name(unsigned layer);

#endif

/* SPDX-License-Identifier: Apache-2.0 */
#ifndef DC_SINK_H
#define DC_SINK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include "record.h"

typedef struct sd_event sd_event;

/*
 * Where records leave the agent. A sink takes records one at a time (each a
 * complete JSON line, so a message-per-record transport such as Kafka can
 * key and header it) and commits them at flush, once per window. A sink
 * must not block the event loop for long and must not drop silently: what
 * it cannot deliver yet it keeps (bounded) and counts.
 */
struct dc_sink;

struct dc_sink_ops {
	const char *name;
	int (*write)(struct dc_sink *s, enum dc_rec_type type, const struct dc_window *w,
		     const char *data, size_t len);
	int (*flush)(struct dc_sink *s);
	/* adds "<name>": {...} to the agent record (optional) */
	void (*report)(struct dc_sink *s, struct dc_json *j);
	/* the last delivery, at the agent's stop or before a reload replaces
	 * the sink: what it gives up is logged and counted in stats
	 * (dropped_records, dropped_bytes) (optional) */
	void (*close)(struct dc_sink *s);
	void (*free)(struct dc_sink *s);
};

struct dc_sink_stats {
	uint64_t records, bytes;  /* committed */
	uint64_t errors;	  /* failed commits (retried) */
	uint64_t pending_bytes;	  /* held for retry */
	uint64_t dropped_bytes;	  /* given up on: over the retry bound */
	uint64_t queue_full;	  /* hand-overs the transport's queue refused (retried) */
	uint64_t shed_records;	  /* records a full spool dropped, oldest first */
	uint64_t dropped_records; /* records given up on: refused for good, nowhere to go */
};

struct dc_sink {
	const struct dc_sink_ops *ops;
	struct dc_sink_stats stats;
};

static inline int sink_write(struct dc_sink *s, enum dc_rec_type type, const struct dc_window *w,
			     const char *data, size_t len)
{
	return s->ops->write(s, type, w, data, len);
}

static inline int sink_flush(struct dc_sink *s)
{
	return s->ops->flush(s);
}

static inline void sink_close(struct dc_sink *s)
{
	if (s && s->ops->close)
		s->ops->close(s);
}

static inline struct dc_sink *sink_free(struct dc_sink *s)
{
	if (s)
		s->ops->free(s);
	return NULL;
}

static inline void sink_report(struct dc_sink *s, struct dc_json *j)
{
	if (s->ops->report)
		s->ops->report(s, j);
}

/* JSON lines appended to path ("-" = standard output). Parent directories
 * are created. Records a failed write could not commit are retried at the
 * next flush, up to max_pending bytes. */
int sink_file_new(const char *path, size_t max_pending, struct dc_sink **ret);
/* The end of a record written in part, at the front of a carry, and the
 * file that holds the record's beginning. */
struct sink_tail {
	size_t len;
	struct stat st;
};
/* At a reload: a file sink's records it could not write yet (a full disk)
 * move to out, and their count is returned (0: none, or not a file sink);
 * the next file sink takes them first, to write them where it writes.
 * The end of a record written in part is tried in this file first, and
 * if that fails is carried as *tail, kept only by a sink on the same file. */
uint64_t sink_file_take_pending(struct dc_sink *s, struct dc_buf *out, struct sink_tail *tail);
/* Open the file sink's path again (logrotate moved the file away); a
 * failure keeps the file in use. 0 for a sink that is not a file's. */
int sink_file_reopen(struct dc_sink *s);
void sink_file_put_pending(struct dc_sink *s, struct dc_buf *in, uint64_t records,
			   const struct sink_tail *tail);

struct sink_trace_params {
	const char *dir;
	const char *host;
	uint64_t rotate_bytes, rotate_usec, max_bytes;
};

/* Trace batches (DC_REC_TRACE only) appended to rotating .pfw.zst files in
 * dir, bounded by deleting the oldest (sink-trace.c). */
int sink_trace_new(const struct sink_trace_params *p, struct dc_sink **ret);

struct sink_kafka_params {
	const char *brokers;
	const char *properties; /* "name=value" lines, applied after the defaults */
	/* properties' lines from secrets_file begin at secrets_at: a refused
	 * one is named by that file, its value never shown */
	size_t secrets_at;
	const char *secrets_file;
	const char *topic_features;
	const char *topic_agent;
	const char *topic_traces; /* NULL or "": traces are not published */
	const char *topic_stacks; /* NULL or "": stacks records are not published */
	bool key_cgroup;	  /* key features records by host/cgroup instead of host */
	const char *host;
	const char *run;
	const char *spool_dir;
	uint64_t spool_max_bytes;
	bool spool_fsync;
	uint64_t flush_timeout_ms;
	uint64_t start_timeout_ms;
	/* the topics are the running configuration's, already checked at its
	 * start (a reload's rollback): not checked again. One deleted since is
	 * what a running agent spools for, not a reason to stop */
	bool topics_checked;
	/* the brokers were down for the sink this one replaces: believed down
	 * until a delivery or librdkafka's statistics show one up */
	bool brokers_down;
};

/* Whether librdkafka takes these brokers and properties (after the agent's
 * defaults), without connecting: -EINVAL with its words in err. */
int sink_kafka_check(const char *brokers, const char *properties, size_t secrets_at,
		     const char *secrets_file, char *err, size_t errlen);

/* Before a Kafka sink is freed: its last deliveries (not with the brokers
 * down; waiting kafka.flush_timeout, at most max_flush_ms) and the segments only memory holds
 * written to the spool; what cannot be is lost, and counted in its stats.dropped_records, which the
 * caller can then still read. next_spool: the spool directory of the sink that follows at a reload
 * ("" when it publishes to no Kafka), NULL when the agent stops: undelivered segments left where
 * no later sink reads them are said so. No-op for other sinks. */
void sink_kafka_stop(struct dc_sink *s, uint64_t max_flush_ms, const char *next_spool);
/* For STATUS= and a reload: what an operator asks of Kafka first. */
struct sink_kafka_state {
	bool brokers_down;    /* librdkafka said all are, none seen up since */
	bool spool_failing;   /* windows wait in memory for the spool */
	uint64_t spool_bytes; /* on disk, not yet delivered */
	uint64_t held_bytes;  /* in memory only */
	size_t segments;      /* not yet delivered */
};
void sink_kafka_state(const struct dc_sink *s, struct sink_kafka_state *st);

/* A Kafka producer behind a write-ahead disk spool (sink-kafka.c). On a bad
 * property or an unknown topic: -EINVAL/-ENOENT with librdkafka's words in err. */
int sink_kafka_new(const struct sink_kafka_params *p, sd_event *event, struct dc_sink **ret,
		   char *err, size_t errlen);

#endif

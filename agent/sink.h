/* SPDX-License-Identifier: Apache-2.0 */
#ifndef DC_SINK_H
#define DC_SINK_H

#include <stddef.h>
#include <stdint.h>

#include "record.h"

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
	void (*free)(struct dc_sink *s);
};

struct dc_sink_stats {
	uint64_t records, bytes; /* committed */
	uint64_t errors;	 /* failed commits (retried) */
	uint64_t pending_bytes;	 /* held for retry */
	uint64_t dropped_bytes;	 /* given up on: over the retry bound */
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

static inline struct dc_sink *sink_free(struct dc_sink *s)
{
	if (s)
		s->ops->free(s);
	return NULL;
}

/* JSON lines appended to path ("-" = standard output). Parent directories
 * are created. Records a failed write could not commit are retried at the
 * next flush, up to max_pending bytes. */
int sink_file_new(const char *path, size_t max_pending, struct dc_sink **ret);

#endif

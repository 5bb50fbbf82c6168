/* SPDX-License-Identifier: Apache-2.0 */
#ifndef DC_SEGMENT_H
#define DC_SEGMENT_H

#include <stddef.h>
#include <stdint.h>

#include "json.h"

/*
 * A spool segment: the records of one window (one kind), as one file.
 *
 *   header   magic "DCSPOOL1", version, kind, seq, record count, raw and
 *            compressed lengths, CRC-32 of the compressed body, host and
 *            run id of the agent that wrote it, then a CRC-32 of the header
 *   body     one zstd frame (with its own content checksum) holding
 *            records framed as [u32 len][u32 type][u64 window][len bytes]
 *
 * All integers little-endian. Host and run travel with the records so a
 * segment replayed by a later run is published under its own identity.
 * Pure: encoding and verification work on buffers; spool.c does the files.
 */
#define DC_SEG_MAGIC	"DCSPOOL1"
#define DC_SEG_VERSION	1
#define DC_SEG_HOST_MAX 255
#define DC_SEG_RUN_MAX	63

enum dc_seg_kind {
	DC_SEG_FEATURES = 0, /* feature vectors and agent records: shed last */
	DC_SEG_TRACES = 1,   /* sampled traces: shed first when the spool is full */
	DC_SEG_KIND_MAX,
};

struct dc_seg_meta {
	uint32_t kind;
	uint64_t seq;
	uint64_t n_records;
	char host[DC_SEG_HOST_MAX + 1];
	char run[DC_SEG_RUN_MAX + 1];
};

struct dc_seg_rec {
	uint32_t type;
	uint64_t window;
	const char *data;
	uint32_t len;
};

/* Append one record to a raw (uncompressed) body. */
void seg_raw_add(struct dc_buf *raw, uint32_t type, uint64_t window, const char *data,
		 uint32_t len);
/* seg_raw_add() for a body that lives on: the record whole or not at all,
 * -ENOMEM leaving the body as it was (and appendable) */
int seg_raw_append(struct dc_buf *raw, uint32_t type, uint64_t window, const char *data,
		   uint32_t len);
/* Iterate a raw body: returns 1 with *rec filled, 0 at the end, -EBADMSG if malformed. */
int seg_raw_next(const char *raw, size_t raw_len, size_t *off, struct dc_seg_rec *rec);

/* Header + compressed body into out (replacing its contents). -errno. */
int seg_encode(const struct dc_seg_meta *meta, const char *raw, size_t raw_len, int level,
	       struct dc_buf *out);
/* Verify and decompress a whole segment file image. On failure returns
 * -EBADMSG (or -ENOMEM) and says what is wrong in err. */
int seg_decode(const char *img, size_t len, struct dc_seg_meta *meta, struct dc_buf *raw, char *err,
	       size_t errlen);

#endif

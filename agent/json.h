/* SPDX-License-Identifier: Apache-2.0 */
#ifndef DC_JSON_H
#define DC_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* A growable byte buffer; on allocation failure it latches ENOMEM in err
 * and further appends do nothing, so callers check once at the end. */
struct dc_buf {
	char *data;
	size_t len, cap;
	int err;
};

void buf_reset(struct dc_buf *b);
void buf_free(struct dc_buf *b);
/* The slow path of buf_grow: reallocates; -ENOMEM (and err latched). */
int buf_grow_slow(struct dc_buf *b, size_t extra);

/* Inline: the trace and record encoders append a few bytes per field, and a
 * call per append was a third of the instructions of a trace event
 * (bench/tracefmt_bench under callgrind). */

/* Make room for extra more bytes after len; -ENOMEM (and err latched) if not. */
static inline int buf_grow(struct dc_buf *b, size_t extra)
{
	if (!b->err && extra <= b->cap - b->len)
		return 0;
	return buf_grow_slow(b, extra);
}

static inline void buf_put(struct dc_buf *b, const void *p, size_t n)
{
	/* nothing, from an empty buffer perhaps (p NULL): memcpy's nonnull
	 * declaration makes that undefined even for 0 bytes */
	if (!n || buf_grow(b, n) < 0)
		return;
	memcpy(b->data + b->len, p, n);
	b->len += n;
}

static inline void buf_putc(struct dc_buf *b, char c)
{
	if (buf_grow(b, 1) < 0)
		return;
	b->data[b->len++] = c;
}
/* Decimal, without printf (the record and trace encoders' numbers). */
void buf_put_u64(struct dc_buf *b, uint64_t v);
void buf_put_i64(struct dc_buf *b, int64_t v);
void buf_printf(struct dc_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/*
 * Minimal streaming JSON writer: it places the commas, escapes strings and
 * always produces valid UTF-8 (invalid bytes in comm or path strings, which
 * the kernel does not police, become U+FFFD).
 */
#define JSON_MAX_DEPTH 16
struct dc_json {
	struct dc_buf *b;
	int depth;
	bool first[JSON_MAX_DEPTH];
};

void json_init(struct dc_json *j, struct dc_buf *b);
void json_obj_begin(struct dc_json *j);
void json_obj_end(struct dc_json *j);
void json_arr_begin(struct dc_json *j);
void json_arr_end(struct dc_json *j);
void json_key(struct dc_json *j, const char *k);
void json_str(struct dc_json *j, const char *s);
void json_strn(struct dc_json *j, const char *s, size_t n);
void json_u64(struct dc_json *j, uint64_t v);
void json_i64(struct dc_json *j, int64_t v);
void json_double(struct dc_json *j, double v);
void json_bool(struct dc_json *j, bool v);
void json_null(struct dc_json *j);

/* Escape s (n bytes) as a JSON string literal, quotes included. */
void json_escape(struct dc_buf *b, const char *s, size_t n);

#endif

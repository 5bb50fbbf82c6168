// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"

int buf_grow_slow(struct dc_buf *b, size_t extra)
{
	size_t want;
	char *p;

	if (b->err)
		return -ENOMEM;
	if (b->len + extra <= b->cap)
		return 0;
	want = b->cap ? b->cap : 4096;
	while (want < b->len + extra)
		want *= 2;
	p = realloc(b->data, want);
	if (!p) {
		b->err = ENOMEM;
		return -ENOMEM;
	}
	b->data = p;
	b->cap = want;
	return 0;
}

void buf_reset(struct dc_buf *b)
{
	b->len = 0;
	b->err = 0;
}

void buf_free(struct dc_buf *b)
{
	free(b->data);
	*b = (struct dc_buf){};
}

void buf_printf(struct dc_buf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	/* one pass where the text fits in what is left (nearly always) */
	if (buf_grow(b, 64) < 0)
		return;
	va_start(ap, fmt);
	n = vsnprintf(b->data + b->len, b->cap - b->len, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n >= b->cap - b->len) {
		if (buf_grow(b, (size_t)n + 1))
			return;
		va_start(ap, fmt);
		vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
		va_end(ap);
	}
	b->len += (size_t)n;
}

/* Decimal without printf: a feature record holds a few hundred numbers
 * (histograms), and printf was four fifths of its cost. */
static const char dec_pairs[201] = "00010203040506070809"
				   "10111213141516171819"
				   "20212223242526272829"
				   "30313233343536373839"
				   "40414243444546474849"
				   "50515253545556575859"
				   "60616263646566676869"
				   "70717273747576777879"
				   "80818283848586878889"
				   "90919293949596979899";

/* Digits of v (1 to 20), from its bit length (1233 / 4096 is about log10
 * 2, then one compare): the digits are then written in place, back to
 * front, with no copy of a variable length. */
static inline unsigned dec_len(uint64_t v)
{
	static const uint64_t pow10[20] = {0,
					   10ULL,
					   100ULL,
					   1000ULL,
					   10000ULL,
					   100000ULL,
					   1000000ULL,
					   10000000ULL,
					   100000000ULL,
					   1000000000ULL,
					   10000000000ULL,
					   100000000000ULL,
					   1000000000000ULL,
					   10000000000000ULL,
					   100000000000000ULL,
					   1000000000000000ULL,
					   10000000000000000ULL,
					   100000000000000000ULL,
					   1000000000000000000ULL,
					   10000000000000000000ULL};
	unsigned t = (unsigned)(64 - __builtin_clzll(v | 1)) * 1233 >> 12;

	return t + 1 - (v < pow10[t]);
}

static inline void put_pair(char *p, unsigned d)
{
	memcpy(p, dec_pairs + 2 * d, 2);
}

/* Eight digits, zero-padded, ending at end: 32-bit arithmetic whose two
 * halves do not wait on each other (a trace event's time stamp has 16
 * digits: one step of 64-bit division instead of eight dependent ones). */
static inline void put8(char *end, uint32_t v)
{
	uint32_t hi = v / 10000, lo = v % 10000;

	put_pair(end - 2, lo % 100);
	put_pair(end - 4, lo / 100);
	put_pair(end - 6, hi % 100);
	put_pair(end - 8, hi / 100);
}

void buf_put_u64(struct dc_buf *b, uint64_t v)
{
	unsigned n = dec_len(v);
	char *p;
	uint32_t w;

	if (buf_grow(b, n) < 0)
		return;
	p = b->data + b->len + n;
	b->len += n;
	while (v >= 100000000) {
		put8(p, (uint32_t)(v % 100000000));
		v /= 100000000;
		p -= 8;
	}
	w = (uint32_t)v;
	while (w >= 100) {
		p -= 2;
		put_pair(p, w % 100);
		w /= 100;
	}
	if (w >= 10)
		put_pair(p - 2, w);
	else
		p[-1] = (char)('0' + w);
}

void buf_put_i64(struct dc_buf *b, int64_t v)
{
	if (v < 0) {
		buf_putc(b, '-');
		buf_put_u64(b, (uint64_t)0 - (uint64_t)v);
	} else
		buf_put_u64(b, (uint64_t)v);
}

/* Length of the valid UTF-8 sequence at s (1..4), or 0 if invalid. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
	unsigned char c = s[0];
	size_t len;
	uint32_t cp;

	if (c < 0x80)
		return 1;
	if (c >= 0xC2 && c <= 0xDF)
		len = 2, cp = c & 0x1F;
	else if (c >= 0xE0 && c <= 0xEF)
		len = 3, cp = c & 0x0F;
	else if (c >= 0xF0 && c <= 0xF4)
		len = 4, cp = c & 0x07;
	else
		return 0;
	if (len > n)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xC0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3F);
	}
	/* overlong forms, surrogates and values past U+10FFFF are invalid */
	if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10FFFF)) ||
	    (cp >= 0xD800 && cp <= 0xDFFF))
		return 0;
	return len;
}

void json_escape(struct dc_buf *b, const char *str, size_t n)
{
	const unsigned char *s = (const unsigned char *)str;

	buf_putc(b, '"');
	for (size_t i = 0; i < n;) {
		unsigned char c = s[i];
		size_t l, run;

		/* printable ASCII other than the two that need a backslash goes
		 * out in one piece: keys and most names are nothing else */
		for (run = 0; i + run < n && s[i + run] >= 0x20 && s[i + run] < 0x7F &&
			      s[i + run] != '"' && s[i + run] != '\\';
		     run++)
			;
		if (run) {
			buf_put(b, s + i, run);
			i += run;
			continue;
		}
		switch (c) {
		case '"':
			buf_put(b, "\\\"", 2);
			i++;
			continue;
		case '\\':
			buf_put(b, "\\\\", 2);
			i++;
			continue;
		case '\n':
			buf_put(b, "\\n", 2);
			i++;
			continue;
		case '\r':
			buf_put(b, "\\r", 2);
			i++;
			continue;
		case '\t':
			buf_put(b, "\\t", 2);
			i++;
			continue;
		}
		if (c < 0x20 || c == 0x7F) {
			buf_printf(b, "\\u%04x", c);
			i++;
			continue;
		}
		l = utf8_len(s + i, n - i);
		if (!l) {
			buf_put(b, "\\ufffd", 6);
			i++;
			continue;
		}
		buf_put(b, s + i, l);
		i += l;
	}
	buf_putc(b, '"');
}

void json_init(struct dc_json *j, struct dc_buf *b)
{
	j->b = b;
	j->depth = 0;
	j->first[0] = true;
}

/* A value is about to be written at the current level. */
static void json_value(struct dc_json *j)
{
	if (!j->first[j->depth])
		buf_putc(j->b, ',');
	j->first[j->depth] = false;
}

static void json_open(struct dc_json *j, char c)
{
	json_value(j);
	buf_putc(j->b, c);
	if (j->depth + 1 < JSON_MAX_DEPTH)
		j->depth++;
	j->first[j->depth] = true;
}

static void json_close(struct dc_json *j, char c)
{
	buf_putc(j->b, c);
	if (j->depth > 0)
		j->depth--;
}

void json_obj_begin(struct dc_json *j)
{
	json_open(j, '{');
}

void json_obj_end(struct dc_json *j)
{
	json_close(j, '}');
}

void json_arr_begin(struct dc_json *j)
{
	json_open(j, '[');
}

void json_arr_end(struct dc_json *j)
{
	json_close(j, ']');
}

void json_key(struct dc_json *j, const char *k)
{
	json_value(j);
	json_escape(j->b, k, strlen(k));
	buf_putc(j->b, ':');
	/* the value that follows needs no comma of its own */
	j->first[j->depth] = true;
}

void json_strn(struct dc_json *j, const char *s, size_t n)
{
	json_value(j);
	json_escape(j->b, s, n);
}

void json_str(struct dc_json *j, const char *s)
{
	json_strn(j, s, strlen(s));
}

void json_u64(struct dc_json *j, uint64_t v)
{
	json_value(j);
	buf_put_u64(j->b, v);
}

void json_i64(struct dc_json *j, int64_t v)
{
	json_value(j);
	buf_put_i64(j->b, v);
}

void json_double(struct dc_json *j, double v)
{
	json_value(j);
	/* JSON has no NaN or infinity */
	if (!isfinite(v))
		buf_put(j->b, "null", 4);
	else
		buf_printf(j->b, "%.9g", v);
}

void json_bool(struct dc_json *j, bool v)
{
	json_value(j);
	buf_put(j->b, v ? "true" : "false", v ? 4 : 5);
}

void json_null(struct dc_json *j)
{
	json_value(j);
	buf_put(j->b, "null", 4);
}

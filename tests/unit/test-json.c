// SPDX-License-Identifier: Apache-2.0
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "json.h"
#include "tap.h"

static const char *esc(struct dc_buf *b, const char *s, size_t n)
{
	buf_reset(b);
	json_escape(b, s, n);
	buf_putc(b, 0);
	return b->data;
}

static const char *dec(struct dc_buf *b, uint64_t v)
{
	buf_reset(b);
	buf_put_u64(b, v);
	buf_putc(b, 0);
	return b->data;
}

/* buf_put_u64 against printf at every digit count's edges (its length comes
 * from the bit length, its digits eight at a time) and at random values of
 * every bit length; one line for all, naming the first difference. */
static void check_decimal(struct dc_buf *b)
{
	char want[24], what[64] = "";
	uint64_t x = 0x9e3779b97f4a7c15ULL, p = 1;
	int n = 0;

	for (int d = 0; d < 20 && !what[0]; d++, p *= 10)
		for (int k = -1; k <= 1; k++) {
			uint64_t v = p + (uint64_t)(int64_t)k;

			snprintf(want, sizeof(want), "%" PRIu64, v);
			n++;
			if (strcmp(dec(b, v), want)) {
				snprintf(what, sizeof(what), "%s gave %s", want, b->data);
				break;
			}
		}
	for (int i = 0; i < 64 * 64 && !what[0]; i++) {
		uint64_t v;

		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		v = x >> (i % 64);
		snprintf(want, sizeof(want), "%" PRIu64, v);
		n++;
		if (strcmp(dec(b, v), want))
			snprintf(what, sizeof(what), "%s gave %s", want, b->data);
	}
	snprintf(want, sizeof(want), "%" PRIu64, UINT64_MAX);
	n++;
	if (!what[0] && strcmp(dec(b, UINT64_MAX), want))
		snprintf(what, sizeof(what), "%s gave %s", want, b->data);
	CHECK(!what[0], "decimals as printf writes them, %d values: %s", n,
	      what[0] ? what : "all equal");
}

int main(void)
{
	struct dc_buf b = {};
	struct dc_json j;

	CHECK_STR(esc(&b, "dd", 2), "\"dd\"", "plain");
	CHECK_STR(esc(&b, "a\"b", 3), "\"a\\\"b\"", "quote");
	CHECK_STR(esc(&b, "a\\b", 3), "\"a\\\\b\"", "backslash");
	CHECK_STR(esc(&b, "a\nb\tc\r", 6), "\"a\\nb\\tc\\r\"", "newline, tab, CR");
	CHECK_STR(esc(&b, "\x01\x1f\x7f", 3), "\"\\u0001\\u001f\\u007f\"", "control bytes");
	CHECK_STR(esc(&b, "a\0b", 3), "\"a\\u0000b\"", "embedded NUL");
	CHECK_STR(esc(&b, "caf\xc3\xa9", 5), "\"caf\xc3\xa9\"", "valid UTF-8 kept");
	CHECK_STR(esc(&b, "\xe2\x82\xac", 3), "\"\xe2\x82\xac\"", "3-byte UTF-8 kept");
	CHECK_STR(esc(&b, "\xf0\x9f\x92\xbe", 4), "\"\xf0\x9f\x92\xbe\"", "4-byte UTF-8 kept");
	CHECK_STR(esc(&b, "x\xffy", 3), "\"x\\ufffdy\"", "invalid byte replaced");
	CHECK_STR(esc(&b, "\xc3", 1), "\"\\ufffd\"", "truncated sequence replaced");
	CHECK_STR(esc(&b, "\xc0\xaf", 2), "\"\\ufffd\\ufffd\"", "overlong form replaced");
	CHECK_STR(esc(&b, "\xed\xa0\x80", 3), "\"\\ufffd\\ufffd\\ufffd\"", "surrogate replaced");

	check_decimal(&b);
	buf_reset(&b);
	buf_put(&b, "x=", 2);
	buf_put_i64(&b, INT64_MIN);
	buf_putc(&b, 0);
	CHECK_STR(b.data, "x=-9223372036854775808", "the most negative, appended");

	buf_reset(&b);
	json_init(&j, &b);
	json_obj_begin(&j);
	json_key(&j, "a");
	json_u64(&j, 18446744073709551615ULL);
	json_key(&j, "b");
	json_arr_begin(&j);
	json_u64(&j, 1);
	json_i64(&j, -2);
	json_double(&j, 0.5);
	json_arr_end(&j);
	json_key(&j, "c");
	json_obj_begin(&j);
	json_obj_end(&j);
	json_key(&j, "d");
	json_double(&j, 1.0 / 0.0);
	json_key(&j, "e");
	json_bool(&j, true);
	json_obj_end(&j);
	buf_putc(&b, 0);
	CHECK_STR(b.data,
		  "{\"a\":18446744073709551615,\"b\":[1,-2,0.5],\"c\":{},\"d\":null,\"e\":true}",
		  "nested structure, commas, non-finite as null");
	buf_free(&b);
	return tap_done();
}

// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "tap.h"
#include "tracefmt.h"

static size_t count(const char *s, size_t n, const char *needle)
{
	size_t c = 0, l = strlen(needle);

	for (size_t i = 0; i + l <= n; i++)
		if (!memcmp(s + i, needle, l))
			c++;
	return c;
}

int main(void)
{
	struct trace_host h = {.name = "node\"1", .hhash = 0xabcdef};
	struct trace_batch b = {};
	struct dc_buf z = {};
	struct dc_trace_ev e = {
	    .version = DC_TRACE_VERSION,
	    .layer = DC_LAYER_SYSCALL,
	    .pid = 42,
	    .tid = 43,
	    .ts_ns = 1000000,
	    .dur_ns = 1234,
	    .fd = 3,
	    .size = 4096,
	    .ret = 4096,
	    .offset = 8192,
	    .weight = 10,
	    .flags = DC_TEV_FILE | DC_TEV_OFFSET,
	};
	struct trace_names n = {.op = "pwrite64", .comm = "w\nk", .fhash = 0x1234, .path = "/a\"b"};
	struct u64set s = {};
	char *raw;
	size_t raw_len = 0, got;
	const char *fh, *x;

	/* the set */
	CHECK(u64set_add(&s, 7) && !u64set_add(&s, 7), "a value joins once");
	for (uint64_t v = 1; v < 1000; v++)
		u64set_add(&s, v * 977);
	CHECK(u64set_has(&s, 500 * 977) && !u64set_has(&s, 3), "membership after growing");
	CHECK(!u64set_add(&s, 0), "0 is never a member");
	u64set_free(&s);

	trace_batch_add(&b, &h, &e, &n, 1700000000000000000LL, 1);
	e.ret = -9;
	e.fd = -1;
	e.flags = 0;
	n.fhash = 0;
	trace_batch_add(&b, &h, &e, &n, 1700000000000000000LL, 2);
	CHECK_U64(b.n_events, 2, "two events");
	CHECK_U64(b.n_meta, 3, "host, process and file named once each");
	CHECK(trace_batch_knows_pid(&b, 42), "the batch knows its process");
	CHECK(strstr(b.events.data, "\"ts\":1700000000001000.000,") != NULL,
	      "ts on the wall clock, in microseconds, the nanoseconds as decimals");
	CHECK(strstr(b.events.data, "\"dur\":1.234,") != NULL, "dur keeps the nanoseconds");
	CHECK(strstr(b.events.data, "\"fhash\":\"0000000000001234\"") != NULL, "file hash");
	CHECK(strstr(b.events.data, "\"offset\":8192") != NULL, "offset of a data call");
	CHECK(strstr(b.events.data, "\"ret\":-9,") != NULL, "negative return value");
	CHECK(count(b.events.data, b.events.len, "\"fd\"") == 1, "no fd where the call has none");
	CHECK(strstr(b.meta.data, "\"name\":\"node\\\"1\"") != NULL, "host name escaped");
	CHECK(strstr(b.meta.data, "\"name\":\"w\\nk\"") != NULL, "process name escaped");
	CHECK(strstr(b.meta.data, "\"name\":\"/a\\\"b\"") != NULL, "path escaped");

	CHECK(trace_batch_seal(&b, 3, &z, &raw_len) == 0, "sealed");
	CHECK(b.n_events == 0 && b.events.len == 0 && !trace_batch_knows_pid(&b, 42),
	      "the batch is empty again");
	got = ZSTD_getFrameContentSize(z.data, z.len);
	CHECK(got == raw_len, "one frame, its size recorded (%zu)", got);
	raw = malloc(raw_len + 1);
	CHECK(ZSTD_decompress(raw, raw_len, z.data, z.len) == raw_len, "the frame decodes");
	raw[raw_len] = 0;
	fh = strstr(raw, "\"name\":\"FH\"");
	x = strstr(raw, "\"ph\":\"X\"");
	CHECK(fh && x && fh < x, "metadata precede the events in the frame");
	CHECK(count(raw, raw_len, "\n") == 5, "five lines: 3 metadata, 2 events");
	free(raw);

	/* the other layers: a library function named by a binary's symbol
	 * (escaped), a block request with its device and queue time */
	e = (struct dc_trace_ev){.version = DC_TRACE_VERSION,
				 .layer = DC_LAYER_LIB,
				 .pid = 42,
				 .tid = 43,
				 .ts_ns = 1000123,
				 .dur_ns = 5000,
				 .fd = -1,
				 .weight = 1,
				 .flags = DC_TEV_FULL};
	n = (struct trace_names){.op = "odd\"name"};
	trace_batch_add(&b, &h, &e, &n, 1700000000000000000LL, 3);
	e.layer = DC_LAYER_BLOCK;
	e.dev = 7u << 20 | 3;
	e.offset = 4096;
	e.size = 65536;
	e.queue_us = 12;
	e.flags = DC_TEV_FULL | DC_TEV_OFFSET | DC_TEV_DEV;
	n.op = "write";
	trace_batch_add(&b, &h, &e, &n, 1700000000000000000LL, 4);
	CHECK(strstr(b.events.data, "\"name\":\"odd\\\"name\",\"cat\":\"lib\"") != NULL,
	      "a library function's name is escaped, its layer is lib");
	CHECK(strstr(b.events.data, "\"ts\":1700000000001000.123,") != NULL,
	      "sub-microsecond start kept");
	CHECK(
	    strstr(
		b.events.data,
		"\"cat\":\"block\",\"pid\":42,\"tid\":43,\"ts\":1700000000001000.123,\"dur\":5.000,"
		"\"ph\":\"X\"") != NULL,
	    "a block request: its submitter's pid and tid, its issue time and duration");
	CHECK(strstr(b.events.data, "\"offset\":4096,\"dev\":\"7:3\",\"queue_us\":12,") != NULL,
	      "a block request's device and queue time");

	/* a batch whose buffer failed to grow: refused, and emptied, so that
	 * the next seal works and holds only its own events */
	b.events.err = ENOMEM;
	CHECK(trace_batch_seal(&b, 3, &z, &raw_len) == -ENOMEM, "a failed batch is refused");
	CHECK(b.n_events == 0 && !b.events.err && !b.events.len, "and emptied");
	trace_batch_add(&b, &h, &e, &n, 1700000000000000000LL, 5);
	CHECK(b.n_events == 1 && trace_batch_seal(&b, 3, &z, &raw_len) == 0 && z.len > 0,
	      "the next batch seals, with its own event only");
	trace_batch_free(&b);
	buf_free(&z);
	return tap_done();
}

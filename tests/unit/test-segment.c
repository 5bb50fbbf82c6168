// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdlib.h>
#include <zlib.h>

#include "segment.h"
#include "tap.h"

static struct dc_seg_meta meta(void)
{
	struct dc_seg_meta m = {.kind = DC_SEG_FEATURES, .seq = 42, .n_records = 3};

	strcpy(m.host, "node-7");
	strcpy(m.run, "0b3c1d7e-0000-4000-8000-000000000001");
	return m;
}

int main(void)
{
	struct dc_buf raw = {}, img = {}, back = {};
	struct dc_seg_meta m = meta(), got;
	struct dc_seg_rec rec;
	char err[256], big[5000];
	size_t off = 0;
	int r, n = 0;

	memset(big, 'x', sizeof(big));
	seg_raw_add(&raw, 0, 7, "{\"a\":1}\n", 8);
	seg_raw_add(&raw, 1, 7, big, sizeof(big));
	seg_raw_add(&raw, 0, 8, "", 0);
	CHECK(seg_encode(&m, raw.data, raw.len, 3, &img) == 0, "encode");
	CHECK(img.len < raw.len, "zstd made it smaller (%zu < %zu)", img.len, raw.len);
	r = seg_decode(img.data, img.len, &got, &back, err, sizeof(err));
	CHECK(r == 0, "decode (%s)", r ? err : "");
	CHECK(got.seq == 42 && got.kind == DC_SEG_FEATURES && got.n_records == 3,
	      "meta round-trips");
	CHECK_STR(got.host, "node-7", "host travels with the segment");
	CHECK_STR(got.run, m.run, "run id travels with the segment");
	CHECK(back.len == raw.len && !memcmp(back.data, raw.data, raw.len), "records round-trip");
	while (seg_raw_next(back.data, back.len, &off, &rec) > 0) {
		n++;
		if (n == 1)
			CHECK(rec.type == 0 && rec.window == 7 && rec.len == 8 &&
				  !memcmp(rec.data, "{\"a\":1}\n", 8),
			      "first record");
		if (n == 2)
			CHECK(rec.type == 1 && rec.len == sizeof(big), "large record");
		if (n == 3)
			CHECK(rec.window == 8 && rec.len == 0, "empty record");
	}
	CHECK(n == 3, "three records iterated");

	/* every truncation is detected, never misread */
	for (size_t cut = 0; cut < img.len; cut += 7) {
		r = seg_decode(img.data, cut, &got, &back, err, sizeof(err));
		if (r != -EBADMSG || !strstr(err, "truncated")) {
			CHECK(0, "truncation at %zu not reported as truncated: %d %s", cut, r, err);
			break;
		}
	}
	CHECK(1, "every truncation reported as truncated");
	/* every single-byte corruption is detected */
	for (size_t i = 0; i < img.len; i++) {
		img.data[i] ^= 0x5a;
		r = seg_decode(img.data, img.len, &got, &back, err, sizeof(err));
		img.data[i] ^= 0x5a;
		if (r != -EBADMSG) {
			CHECK(0, "corruption of byte %zu not detected", i);
			break;
		}
	}
	CHECK(1, "every flipped byte detected");
	r = seg_decode(img.data, img.len, &got, &back, err, sizeof(err));
	CHECK(r == 0, "the intact image still decodes");
	buf_put(&img, "zz", 2);
	r = seg_decode(img.data, img.len, &got, &back, err, sizeof(err));
	CHECK(r == -EBADMSG && strstr(err, "trailing"), "trailing garbage: %s", err);
	r = seg_decode("NOTASPOOLSEGMENT-NOTASPOOLSEGMENT-NOTASPOOLSEGMENT-NOTASPOOL", 60, &got,
		       &back, err, sizeof(err));
	CHECK(r == -EBADMSG && strstr(err, "magic"), "foreign file: %s", err);
	/* short and foreign: not a segment, not a truncated one */
	r = seg_decode("hello\n", 6, &got, &back, err, sizeof(err));
	CHECK(r == -EBADMSG && strstr(err, "magic"), "a short foreign file: %s", err);
	r = seg_decode(DC_SEG_MAGIC, 5, &got, &back, err, sizeof(err));
	CHECK(r == -EBADMSG && strstr(err, "truncated"), "the magic's first bytes alone: %s", err);
	/* a header whose record length disagrees with the frame's, its own
	 * checksum made right (a crafted file): refused before the length is
	 * allocated (it was, 3 GiB, the frame's 5 KiB then failing) */
	img.len -= 2;
	{
		size_t hl = strlen(m.host), rl = strlen(m.run), hdr = 56 + hl + rl + 4;
		uint64_t claim = 3ULL << 30;
		uLong c;

		for (int i = 0; i < 8; i++)
			img.data[32 + i] = (char)(claim >> (8 * i));
		c = crc32(crc32(0L, Z_NULL, 0), (const Bytef *)img.data, (uInt)(hdr - 4));
		for (int i = 0; i < 4; i++)
			img.data[hdr - 4 + i] = (char)(c >> (8 * i));
	}
	r = seg_decode(img.data, img.len, &got, &back, err, sizeof(err));
	CHECK(r == -EBADMSG && strstr(err, "the frame holds"),
	      "a record length the frame does not hold: %s", err);
	CHECK(back.cap < (1u << 30), "... and not allocated (%zu bytes)", back.cap);
	/* framing that lies about its length */
	CHECK(seg_raw_next("\xff\xff\xff\x0f\0\0\0\0\0\0\0\0\0\0\0\0", 16, &(size_t){0}, &rec) ==
		  -EBADMSG,
	      "record length past the end is refused");
	/* an append that cannot get its room (the latched error stands for
	 * a failed realloc): nothing of the record, the body still whole and
	 * taking records after it */
	buf_reset(&raw);
	CHECK(seg_raw_append(&raw, 0, 1, "one", 3) == 0 && raw.len == 19, "an append (%zu)",
	      raw.len);
	raw.err = ENOMEM;
	CHECK(seg_raw_append(&raw, 0, 1, "two", 3) == -ENOMEM && raw.len == 19 && !raw.err,
	      "an append without room: -ENOMEM, no header left alone (%zu)", raw.len);
	CHECK(seg_raw_append(&raw, 0, 1, "three", 5) == 0, "... and the next one taken");
	{
		size_t at = 0;
		int whole = 0;

		while (seg_raw_next(raw.data, raw.len, &at, &rec) > 0)
			whole++;
		CHECK(whole == 2 && at == raw.len, "... the body frames two whole records (%d)",
		      whole);
	}
	buf_free(&raw);
	buf_free(&img);
	buf_free(&back);
	return tap_done();
}

// SPDX-License-Identifier: Apache-2.0
/*
 * libFuzzer target of the spool segment reader (agent/segment.c), which
 * reads, at every start, whatever an earlier run or a full disk left in the
 * spool directory: arbitrary bytes as a segment file; the same bytes made
 * into a header that passes the first checks (magic, version, a known kind,
 * host and run lengths in range, the compressed length the rest of the
 * bytes) with both checksums right, so that the search reaches the record
 * length, the decompression and the record framing behind them; the bytes
 * as a raw body, encoded and decoded again.
 *
 * Besides the sanitizers, it checks what the reader promises: a refused
 * segment returns -EBADMSG and says why; an accepted one has its host and
 * run terminated and as many records as its header says; a body that frames
 * whole records comes back from the round trip byte for byte.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "segment.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* the header's layout (agent/segment.c): fixed part, host, run, CRC */
#define FIXED_HDR 56
/* record lengths the made header keeps to (a frame's content size can
 * still say more: tests/fuzz/meson.build gives the allocation room) */
#define RAW_MAX (1u << 20)

static uint32_t crc(const uint8_t *p, size_t n)
{
	return (uint32_t)crc32(crc32(0L, Z_NULL, 0), p, (uInt)n);
}

static void put_u32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static void put_u64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint32_t get_u32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t get_u64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static void decode(const uint8_t *img, size_t len)
{
	struct dc_seg_meta meta;
	struct dc_buf raw = {};
	struct dc_seg_rec rec;
	char err[256] = "";
	uint64_t n = 0;
	size_t off = 0;
	int r;

	r = seg_decode((const char *)img, len, &meta, &raw, err, sizeof(err));
	if (r == -EBADMSG) {
		if (!err[0])
			abort(); /* refused without a reason */
	} else if (r == 0) {
		if (!memchr(meta.host, 0, sizeof(meta.host)) ||
		    !memchr(meta.run, 0, sizeof(meta.run)) || meta.kind >= DC_SEG_KIND_MAX)
			abort();
		while (seg_raw_next(raw.data, raw.len, &off, &rec) > 0)
			n++;
		if (off != raw.len || n != meta.n_records)
			abort();
	} else if (r != -ENOMEM) {
		abort();
	}
	buf_free(&raw);
}

/* the bytes with a header that passes the first checks and both checksums
 * right, the body being whatever follows the header */
static void decode_checksummed(const uint8_t *data, size_t size)
{
	size_t hl, rl, hdr;
	uint8_t *img;

	if (size < FIXED_HDR)
		return;
	hl = (data[52] | data[53] << 8) % (DC_SEG_HOST_MAX + 1);
	rl = (data[54] | data[55] << 8) % (DC_SEG_RUN_MAX + 1);
	hdr = FIXED_HDR + hl + rl + 4;
	if (size < hdr)
		return;
	img = malloc(size);
	if (!img)
		return;
	memcpy(img, data, size);
	memcpy(img, DC_SEG_MAGIC, 8);
	put_u32(img + 8, DC_SEG_VERSION);
	put_u32(img + 12, get_u32(img + 12) % DC_SEG_KIND_MAX);
	img[52] = (uint8_t)hl, img[53] = (uint8_t)(hl >> 8);
	img[54] = (uint8_t)rl, img[55] = (uint8_t)(rl >> 8);
	if (get_u64(img + 32) > RAW_MAX)
		put_u64(img + 32, get_u64(img + 32) % (RAW_MAX + 1));
	put_u64(img + 40, size - hdr);
	put_u32(img + 48, crc(img + hdr, size - hdr));
	put_u32(img + hdr - 4, crc(img, hdr - 4));
	decode(img, size);
	free(img);
}

/* the bytes as a raw body: if they frame whole records, encoded and read
 * back unchanged */
static void round_trip(const uint8_t *data, size_t size)
{
	struct dc_seg_meta meta = {.kind = DC_SEG_FEATURES, .seq = 7}, got;
	struct dc_buf seg = {}, raw = {};
	struct dc_seg_rec rec;
	char err[256];
	size_t off = 0;
	int r;

	while ((r = seg_raw_next((const char *)data, size, &off, &rec)) > 0)
		meta.n_records++;
	if (r < 0)
		return;
	strcpy(meta.host, "node-1");
	strcpy(meta.run, "run-1");
	if (seg_encode(&meta, (const char *)data, size, 1, &seg) == 0) {
		if (seg_decode(seg.data, seg.len, &got, &raw, err, sizeof(err)) ||
		    raw.len != size || (size && memcmp(raw.data, data, size)) ||
		    got.n_records != meta.n_records || got.seq != meta.seq ||
		    strcmp(got.host, meta.host) || strcmp(got.run, meta.run))
			abort();
	}
	buf_free(&seg);
	buf_free(&raw);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	decode(data, size);
	decode_checksummed(data, size);
	round_trip(data, size);
	return 0;
}

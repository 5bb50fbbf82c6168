// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <zlib.h>
#include <zstd.h>

#include "segment.h"

#define FIXED_HDR 56 /* bytes before host and run */

static void put_u16(char *p, uint16_t v)
{
	p[0] = (char)(v & 0xff);
	p[1] = (char)(v >> 8);
}

static void put_u32(char *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (char)(v >> (8 * i));
}

static void put_u64(char *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (char)(v >> (8 * i));
}

static uint16_t get_u16(const char *p)
{
	return (uint16_t)((uint8_t)p[0] | (uint8_t)p[1] << 8);
}

static uint32_t get_u32(const char *p)
{
	uint32_t v = 0;

	for (int i = 3; i >= 0; i--)
		v = v << 8 | (uint8_t)p[i];
	return v;
}

static uint64_t get_u64(const char *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = v << 8 | (uint8_t)p[i];
	return v;
}

static uint32_t crc(const char *p, size_t n)
{
	uLong c = crc32(0L, Z_NULL, 0);

	/* zlib takes uInt lengths; feed large bodies in pieces */
	while (n) {
		uInt chunk = n > 0x40000000u ? 0x40000000u : (uInt)n;

		c = crc32(c, (const Bytef *)p, chunk);
		p += chunk;
		n -= chunk;
	}
	return (uint32_t)c;
}

void seg_raw_add(struct dc_buf *raw, uint32_t type, uint64_t window, const char *data, uint32_t len)
{
	char h[16];

	put_u32(h, len);
	put_u32(h + 4, type);
	put_u64(h + 8, window);
	buf_put(raw, h, sizeof(h));
	buf_put(raw, data, len);
}

int seg_raw_append(struct dc_buf *raw, uint32_t type, uint64_t window, const char *data,
		   uint32_t len)
{
	/* room for the header and the data at once: a header without its
	 * data would frame every record after it wrong, the whole segment
	 * then set aside as malformed */
	if (buf_grow(raw, 16 + (size_t)len) < 0) {
		/* the buffer is as it was, whole records only: later ones
		 * may still fit */
		raw->err = 0;
		return -ENOMEM;
	}
	seg_raw_add(raw, type, window, data, len);
	return 0;
}

int seg_raw_next(const char *raw, size_t raw_len, size_t *off, struct dc_seg_rec *rec)
{
	uint32_t len;

	if (*off == raw_len)
		return 0;
	if (raw_len - *off < 16)
		return -EBADMSG;
	len = get_u32(raw + *off);
	if (raw_len - *off - 16 < len)
		return -EBADMSG;
	rec->len = len;
	rec->type = get_u32(raw + *off + 4);
	rec->window = get_u64(raw + *off + 8);
	rec->data = raw + *off + 16;
	*off += 16 + (size_t)len;
	return 1;
}

int seg_encode(const struct dc_seg_meta *meta, const char *raw, size_t raw_len, int level,
	       struct dc_buf *out)
{
	size_t hl = strlen(meta->host), rl = strlen(meta->run), hdr, bound, n;
	ZSTD_CCtx *cc;
	char *p;

	if (hl > DC_SEG_HOST_MAX || rl > DC_SEG_RUN_MAX)
		return -ENAMETOOLONG;
	hdr = FIXED_HDR + hl + rl + 4;
	bound = ZSTD_compressBound(raw_len);
	buf_reset(out);
	/* room for the worst case, then compress in place after the header */
	if (buf_grow(out, hdr + bound))
		return -ENOMEM;
	p = out->data;
	cc = ZSTD_createCCtx();
	if (!cc)
		return -ENOMEM;
	ZSTD_CCtx_setParameter(cc, ZSTD_c_compressionLevel, level);
	ZSTD_CCtx_setParameter(cc, ZSTD_c_checksumFlag, 1);
	n = ZSTD_compress2(cc, p + hdr, bound, raw, raw_len);
	ZSTD_freeCCtx(cc);
	if (ZSTD_isError(n))
		return -EIO;

	memcpy(p, DC_SEG_MAGIC, 8);
	put_u32(p + 8, DC_SEG_VERSION);
	put_u32(p + 12, meta->kind);
	put_u64(p + 16, meta->seq);
	put_u64(p + 24, meta->n_records);
	put_u64(p + 32, raw_len);
	put_u64(p + 40, n);
	put_u32(p + 48, crc(p + hdr, n));
	put_u16(p + 52, (uint16_t)hl);
	put_u16(p + 54, (uint16_t)rl);
	memcpy(p + FIXED_HDR, meta->host, hl);
	memcpy(p + FIXED_HDR + hl, meta->run, rl);
	put_u32(p + FIXED_HDR + hl + rl, crc(p, FIXED_HDR + hl + rl));
	out->len = hdr + n;
	return 0;
}

static int bad(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int bad(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -EBADMSG;
}

int seg_decode(const char *img, size_t len, struct dc_seg_meta *meta, struct dc_buf *raw, char *err,
	       size_t errlen)
{
	uint64_t raw_len, comp_len, n = 0;
	unsigned long long fcs;
	size_t hl, rl, hdr, off = 0, got;
	struct dc_seg_rec rec;
	int r;

	/* the magic before the length: "hello\n" is no segment, not a
	 * truncated one */
	if (len && memcmp(img, DC_SEG_MAGIC, len < 8 ? len : 8))
		return bad(err, errlen, "not a datacrumbs spool segment (bad magic)");
	if (len < FIXED_HDR)
		return bad(err, errlen, "truncated: %zu bytes, shorter than a header", len);
	if (get_u32(img + 8) != DC_SEG_VERSION)
		return bad(err, errlen, "segment version %u, this agent reads %u", get_u32(img + 8),
			   DC_SEG_VERSION);
	hl = get_u16(img + 52);
	rl = get_u16(img + 54);
	if (hl > DC_SEG_HOST_MAX || rl > DC_SEG_RUN_MAX)
		return bad(err, errlen, "corrupt header (host or run length)");
	hdr = FIXED_HDR + hl + rl + 4;
	if (len < hdr)
		return bad(err, errlen, "truncated: %zu bytes, header needs %zu", len, hdr);
	if (get_u32(img + hdr - 4) != crc(img, hdr - 4))
		return bad(err, errlen, "corrupt header (checksum mismatch)");
	raw_len = get_u64(img + 32);
	comp_len = get_u64(img + 40);
	if (len - hdr < comp_len)
		return bad(err, errlen, "truncated: %zu of %llu bytes", len,
			   (unsigned long long)(hdr + comp_len));
	if (len - hdr > comp_len)
		return bad(err, errlen, "%zu bytes of trailing garbage",
			   (size_t)(len - hdr - comp_len));
	if (get_u32(img + 48) != crc(img + hdr, comp_len))
		return bad(err, errlen, "corrupt body (checksum mismatch)");
	if (raw_len > (1ULL << 32))
		return bad(err, errlen, "corrupt header (record bytes %llu)",
			   (unsigned long long)raw_len);
	/* the frame says what it holds (the agent's encoder writes it): the
	 * header's length is allocated below only if the two agree */
	fcs = ZSTD_getFrameContentSize(img + hdr, comp_len);
	if (fcs == ZSTD_CONTENTSIZE_ERROR)
		return bad(err, errlen, "body is not a zstd frame");
	if (fcs != ZSTD_CONTENTSIZE_UNKNOWN && fcs != raw_len)
		return bad(err, errlen, "corrupt header (record bytes %llu, the frame holds %llu)",
			   (unsigned long long)raw_len, (unsigned long long)fcs);

	meta->kind = get_u32(img + 12);
	meta->seq = get_u64(img + 16);
	meta->n_records = get_u64(img + 24);
	memcpy(meta->host, img + FIXED_HDR, hl);
	meta->host[hl] = 0;
	memcpy(meta->run, img + FIXED_HDR + hl, rl);
	meta->run[rl] = 0;
	if (meta->kind >= DC_SEG_KIND_MAX)
		return bad(err, errlen, "unknown segment kind %u", meta->kind);

	buf_reset(raw);
	if (buf_grow(raw, raw_len + 1))
		return -ENOMEM;
	got = ZSTD_decompress(raw->data, raw_len, img + hdr, comp_len);
	if (ZSTD_isError(got) || got != raw_len)
		return bad(err, errlen, "body does not decompress: %s",
			   ZSTD_isError(got) ? ZSTD_getErrorName(got) : "wrong length");
	raw->len = raw_len;
	while ((r = seg_raw_next(raw->data, raw->len, &off, &rec)) > 0)
		n++;
	if (r < 0)
		return bad(err, errlen, "malformed record framing at byte %zu", off);
	if (n != meta->n_records)
		return bad(err, errlen, "%llu records, header says %llu", (unsigned long long)n,
			   (unsigned long long)meta->n_records);
	return 0;
}

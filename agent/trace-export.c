// SPDX-License-Identifier: Apache-2.0
/*
 * datacrumbs-trace: turn local trace files (.pfw.zst, NDJSON in zstd
 * frames) into one Chrome trace JSON document that Perfetto and
 * chrome://tracing open: {"traceEvents":[...],"displayTimeUnit":"ns"}.
 *
 *   datacrumbs-trace export [-o OUT] FILE...
 *
 * Lines are copied as they are (each is one event object), each parsed
 * first: a line that is not a JSON object, or a file that is not a zstd
 * stream, is an error naming the file and the line, and nothing is written
 * for that file past it. A frame's events are written only once zstd has
 * checked the frame whole (its content checksum): a damaged frame puts no
 * garbage in the output, it is named and left out with the rest of its
 * file.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "flame.h"

struct out {
	FILE *f;
	unsigned long long events;
	bool first;
};

struct line {
	char *data;
	size_t len, cap;
	unsigned long long no;
};

static int emit(struct out *o, const struct line *l, const char *file)
{
	size_t s = 0, e = l->len;

	while (s < e && (l->data[s] == ' ' || l->data[s] == '\t' || l->data[s] == '\r'))
		s++;
	while (e > s && (l->data[e - 1] == ' ' || l->data[e - 1] == '\r'))
		e--;
	if (s == e)
		return 0;
	{
		struct fj v = {0};
		char err[128] = "";
		int r = 0;
		bool obj;

		/* raw control bytes (a NUL among them) are no JSON, which the
		 * reader here would let pass; a tab or CR is whitespace */
		for (size_t i = s; i < e && !r; i++)
			if ((unsigned char)l->data[i] < 0x20 && l->data[i] != '\t' &&
			    l->data[i] != '\r') {
				snprintf(err, sizeof(err), "control byte 0x%02x at column %zu",
					 (unsigned char)l->data[i], i + 1);
				r = -EINVAL;
			}
		if (!r)
			r = fj_parse(l->data + s, e - s, &v, err, sizeof(err));
		obj = r >= 0 && v.type == FJ_OBJ;

		if (r >= 0)
			fj_free(&v);
		if (!obj) {
			fprintf(stderr,
				"datacrumbs-trace: %s: line %llu is not a JSON object%s%s%s\n",
				file, l->no, err[0] ? " (" : "", err, err[0] ? ")" : "");
			return -EINVAL;
		}
	}
	if (!o->first)
		fputs(",\n", o->f);
	o->first = false;
	fwrite(l->data + s, 1, e - s, o->f);
	o->events++;
	return 0;
}

static int add_byte(struct line *l, char c)
{
	if (l->len == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 4096;
		char *p = realloc(l->data, cap);

		if (!p)
			return -ENOMEM;
		l->data = p;
		l->cap = cap;
	}
	l->data[l->len++] = c;
	return 0;
}

/* The lines of one verified frame; a line may go on into the next frame. */
static int frame_lines(struct out *o, struct line *l, const char *data, size_t n, const char *path)
{
	int r = 0;

	for (size_t i = 0; !r && i < n; i++) {
		if (data[i] != '\n') {
			r = add_byte(l, data[i]);
			continue;
		}
		r = emit(o, l, path);
		l->len = 0;
		l->no++;
	}
	return r;
}

static int export_file(struct out *o, const char *path)
{
	FILE *f = fopen(path, "rb");
	ZSTD_DStream *ds = ZSTD_createDStream();
	size_t in_cap = ZSTD_DStreamInSize(), out_cap = ZSTD_DStreamOutSize(), n, last = 0;
	char *in = malloc(in_cap);
	struct line frame = {0}, l = {.no = 1};
	/* where the frame being read starts, for the message if it is damaged */
	unsigned long long frames = 0, base = 0, frame_at = 0;
	int r = 0;

	if (!f) {
		r = -errno;
		fprintf(stderr, "datacrumbs-trace: %s: %s\n", path, strerror(-r));
		goto done;
	}
	if (!ds || !in) {
		r = -ENOMEM;
		goto done;
	}
	ZSTD_initDStream(ds);
	while (!r && (n = fread(in, 1, in_cap, f)) > 0) {
		ZSTD_inBuffer zi = {in, n, 0};

		while (!r && zi.pos < zi.size) {
			ZSTD_outBuffer zo;

			if (frame.cap - frame.len < out_cap) {
				/* doubling: a frame of a GiB is not copied per 128 KiB */
				size_t cap = frame.cap * 2 > frame.len + out_cap
						 ? frame.cap * 2
						 : frame.len + out_cap;
				char *p = realloc(frame.data, cap);

				if (!p) {
					r = -ENOMEM;
					break;
				}
				frame.data = p;
				frame.cap = cap;
			}
			zo = (ZSTD_outBuffer){frame.data + frame.len, out_cap, 0};
			last = ZSTD_decompressStream(ds, &zo, &zi);
			if (ZSTD_isError(last)) {
				if (!frames && !frame.len)
					fprintf(stderr,
						"datacrumbs-trace: %s: not a zstd stream (%s)\n",
						path, ZSTD_getErrorName(last));
				else
					fprintf(
					    stderr,
					    "datacrumbs-trace: %s: frame %llu, from byte %llu, is "
					    "damaged (%s): its events and the rest of the file "
					    "left out\n",
					    path, frames + 1, frame_at, ZSTD_getErrorName(last));
				r = -EINVAL;
				break;
			}
			frame.len += zo.pos;
			if (last == 0) {
				/* the frame is whole and its checksum matched */
				r = frame_lines(o, &l, frame.data, frame.len, path);
				frame.len = 0;
				frames++;
				frame_at = base + zi.pos;
			}
		}
		base += n;
	}
	if (!r && ferror(f)) {
		r = errno ? -errno : -EIO;
		fprintf(stderr, "datacrumbs-trace: %s: %s\n", path, strerror(-r));
	}
	/* a file cut in the middle of a frame (agent killed while writing) */
	if (!r && last != 0) {
		fprintf(stderr,
			"datacrumbs-trace: %s: ends inside a zstd frame; its last events "
			"are incomplete and left out\n",
			path);
		r = 1;
	} else if (!r && l.len)
		r = emit(o, &l, path);
done:
	if (f)
		fclose(f);
	ZSTD_freeDStream(ds);
	free(in);
	free(frame.data);
	free(l.data);
	return r;
}

static int usage(FILE *f)
{
	fputs("usage: datacrumbs-trace export [-o OUT.json] FILE.pfw.zst...\n"
	      "Merges datacrumbs trace files into one Chrome trace JSON (Perfetto,\n"
	      "chrome://tracing). OUT defaults to standard output.\n",
	      f);
	return f == stdout ? 0 : 2;
}

int main(int argc, char **argv)
{
	struct out o = {.f = stdout, .first = true};
	const char *outpath = NULL;
	int i = 2, failed = 0;

	if (argc >= 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")))
		return usage(stdout);
	if (argc < 3 || strcmp(argv[1], "export"))
		return usage(stderr);
	if (!strcmp(argv[2], "-o")) {
		if (argc < 5)
			return usage(stderr);
		outpath = argv[3];
		i = 4;
	}
	if (outpath) {
		o.f = fopen(outpath, "w");
		if (!o.f) {
			fprintf(stderr, "datacrumbs-trace: %s: %s\n", outpath, strerror(errno));
			return 1;
		}
	}
	fputs("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n", o.f);
	for (; i < argc; i++)
		if (export_file(&o, argv[i]) < 0)
			failed++;
	fputs("\n]}\n", o.f);
	if (fclose(o.f) != 0) {
		fprintf(stderr, "datacrumbs-trace: cannot write the output: %s\n", strerror(errno));
		return 1;
	}
	fprintf(stderr, "datacrumbs-trace: %llu records%s\n", o.events,
		failed ? ", some files had errors (above)" : "");
	return failed ? 1 : 0;
}

// SPDX-License-Identifier: Apache-2.0
/*
 * datacrumbs-trace: turn local trace files (.pfw.zst, NDJSON in zstd
 * frames) into one Chrome trace JSON document that Perfetto and
 * chrome://tracing open: {"traceEvents":[...],"displayTimeUnit":"ns"}.
 *
 *   datacrumbs-trace export [-o OUT] FILE...
 *
 * Lines are copied as they are (each is one event object); a line that is
 * not an object, or a file that is not a zstd stream, is an error naming
 * the file and the line, and nothing is written for that file past it.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

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
	if (l->data[s] != '{' || l->data[e - 1] != '}') {
		fprintf(stderr, "datacrumbs-trace: %s: line %llu is not a JSON object\n", file,
			l->no);
		return -EINVAL;
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

static int export_file(struct out *o, const char *path)
{
	FILE *f = fopen(path, "rb");
	ZSTD_DStream *ds = ZSTD_createDStream();
	size_t in_cap = ZSTD_DStreamInSize(), out_cap = ZSTD_DStreamOutSize(), n, last = 0;
	char *in = malloc(in_cap), *out = malloc(out_cap);
	struct line l = {.no = 1};
	int r = 0;

	if (!f) {
		fprintf(stderr, "datacrumbs-trace: %s: %s\n", path, strerror(errno));
		r = -errno;
		goto done;
	}
	if (!ds || !in || !out) {
		r = -ENOMEM;
		goto done;
	}
	ZSTD_initDStream(ds);
	while (!r && (n = fread(in, 1, in_cap, f)) > 0) {
		ZSTD_inBuffer zi = {in, n, 0};

		while (!r && zi.pos < zi.size) {
			ZSTD_outBuffer zo = {out, out_cap, 0};

			last = ZSTD_decompressStream(ds, &zo, &zi);
			if (ZSTD_isError(last)) {
				fprintf(stderr, "datacrumbs-trace: %s: not a zstd stream (%s)\n",
					path, ZSTD_getErrorName(last));
				r = -EINVAL;
				break;
			}
			for (size_t i = 0; !r && i < zo.pos; i++) {
				if (out[i] != '\n') {
					r = add_byte(&l, out[i]);
					continue;
				}
				r = emit(o, &l, path);
				l.len = 0;
				l.no++;
			}
		}
	}
	if (!r && ferror(f)) {
		fprintf(stderr, "datacrumbs-trace: %s: read error\n", path);
		r = -EIO;
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
	free(out);
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

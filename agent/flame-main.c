// SPDX-License-Identifier: Apache-2.0
/*
 * datacrumbs-flame: merge stack profiles across windows, processes and
 * nodes into one call tree; write it as collapsed stacks and as a
 * self-contained SVG flame graph (docs/stacks.md).
 *
 *   datacrumbs-flame merge  [options] FILE...   stacks records (.jsonl) or collapsed stacks
 *   datacrumbs-flame layers [options] FILE...   sampled traces (.pfw.zst, or NDJSON):
 *                                               spans nested by time containment
 *
 * Options: -o FILE (collapsed stacks; "-" standard output, the default
 * when no --svg), --svg FILE, --weight time|count|bytes, --title TEXT,
 * --width PIXELS, --group none|comm|pid|job|host (a root frame per group),
 * and filters: --job TEXT (any member of a record's job, or its cgroup),
 * --pid N, --comm NAME, --op NAME, --host NAME, --from T, --to T (Unix
 * seconds; a window or span overlapping [from, to] is kept).
 */
#include <errno.h>
#include <math.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "flame.h"

struct opts {
	const char *out, *svg, *title, *job, *comm, *op, *host, *group;
	long pid;
	double from, to; /* Unix seconds; to < 0: open */
	enum flame_weight weight;
	unsigned width;
};

static void usage(FILE *f)
{
	fputs("usage: datacrumbs-flame merge|layers [-o FILE] [--svg FILE] [--weight "
	      "time|count|bytes]\n"
	      "         [--title TEXT] [--width PX] [--group none|comm|pid|job|host]\n"
	      "         [--job TEXT] [--pid N] [--comm NAME] [--op NAME] [--host NAME]\n"
	      "         [--from UNIX_S] [--to UNIX_S] FILE...\n",
	      f);
}

/* Whole file (zstd frames decoded when it starts with the zstd magic). */
/* A file's text, decompressed if it is zstd frames. A read error (a
 * directory) is one; a damaged frame is an error; a last frame cut short
 * (the agent killed while writing) is left out with a warning, the frames
 * before it kept, as datacrumbs-trace does. */
static int read_file(const char *path, struct dc_buf *out)
{
	FILE *f = strcmp(path, "-") ? fopen(path, "rb") : stdin;
	struct dc_buf raw = {};
	char chunk[65536];
	size_t n;
	int r = 0;

	if (!f)
		return -errno;
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
		buf_put(&raw, chunk, n);
	if (ferror(f))
		r = errno ? -errno : -EIO;
	if (f != stdin)
		fclose(f);
	if (!r && raw.err)
		r = -ENOMEM;
	if (r < 0) {
		buf_free(&raw);
		return r;
	}
	if (raw.len >= 4 && (unsigned char)raw.data[0] == 0x28 &&
	    (unsigned char)raw.data[1] == 0xb5 && (unsigned char)raw.data[2] == 0x2f &&
	    (unsigned char)raw.data[3] == 0xfd) {
		ZSTD_DStream *z = ZSTD_createDStream();
		ZSTD_inBuffer in = {raw.data, raw.len, 0};
		size_t ret = 0, whole = 0; /* out's length at the last frame's end */

		if (!z) {
			buf_free(&raw);
			return -ENOMEM;
		}
		while (in.pos < in.size) {
			ZSTD_outBuffer o = {chunk, sizeof(chunk), 0};

			ret = ZSTD_decompressStream(z, &o, &in);
			if (ZSTD_isError(ret)) {
				fprintf(stderr, "datacrumbs-flame: %s: %s\n", path,
					ZSTD_getErrorName(ret));
				r = -EINVAL;
				break;
			}
			buf_put(out, chunk, o.pos);
			if (ret == 0)
				whole = out->len;
		}
		if (!r && out->err)
			r = -ENOMEM;
		if (r < 0)
			buf_free(out);
		if (!r && ret != 0) {
			fprintf(stderr,
				"datacrumbs-flame: %s: ends inside a zstd frame; its last records "
				"are incomplete and left out\n",
				path);
			out->len = whole;
		}
		ZSTD_freeDStream(z);
		buf_free(&raw);
		return r;
	}
	*out = raw;
	return 0;
}

static bool job_matches(const struct fj *rec, const char *want)
{
	const struct fj *job = fj_get(rec, "job");
	const char *cg = fj_str(fj_get(rec, "cgroup"));

	if (cg && strstr(cg, want))
		return true;
	for (size_t i = 0; job && job->type == FJ_OBJ && i < job->n; i++)
		if (fj_str(&job->kids[i]) && !strcmp(job->kids[i].str, want))
			return true;
	return false;
}

static const char *job_name(const struct fj *rec)
{
	static const char *const pref[] = {"slurm_job", "flux_job", "pod",
					   "container", "unit",	    "slice"};
	const struct fj *job = fj_get(rec, "job");

	for (size_t i = 0; i < sizeof(pref) / sizeof(pref[0]); i++)
		if (fj_str(fj_get(job, pref[i])))
			return fj_str(fj_get(job, pref[i]));
	return "[no job]";
}

static bool window_in(const struct opts *o, const struct fj *rec)
{
	uint64_t s = 0, e = 0;

	fj_u64(fj_get(rec, "ts_start"), &s);
	fj_u64(fj_get(rec, "ts_end"), &e);
	if (o->from > 0 && (double)e / 1e6 < o->from)
		return false;
	if (o->to >= 0 && (double)s / 1e6 > o->to)
		return false;
	return true;
}

/* One stacks record into the tree; other record types are skipped. */
static int add_record(const struct opts *o, struct flame_tree *t, const struct fj *rec,
		      uint64_t *rows)
{
	const struct fj *st = fj_get(rec, "stacks");
	const char *type = fj_str(fj_get(rec, "type"));
	uint64_t pid = 0;
	char root[320] = "";

	if (!type || strcmp(type, "stacks") || !st || st->type != FJ_ARR)
		return 0;
	fj_u64(fj_get(rec, "pid"), &pid);
	if (o->pid >= 0 && pid != (uint64_t)o->pid)
		return 0;
	if (o->comm &&
	    (!fj_str(fj_get(rec, "comm")) || strcmp(fj_str(fj_get(rec, "comm")), o->comm)))
		return 0;
	if (o->host &&
	    (!fj_str(fj_get(rec, "host")) || strcmp(fj_str(fj_get(rec, "host")), o->host)))
		return 0;
	if (o->job && !job_matches(rec, o->job))
		return 0;
	if (!window_in(o, rec))
		return 0;
	if (!strcmp(o->group, "comm"))
		snprintf(root, sizeof(root), "%s;",
			 fj_str(fj_get(rec, "comm")) ? fj_str(fj_get(rec, "comm")) : "?");
	else if (!strcmp(o->group, "pid"))
		snprintf(root, sizeof(root), "%s %llu;",
			 fj_str(fj_get(rec, "comm")) ? fj_str(fj_get(rec, "comm")) : "?",
			 (unsigned long long)pid);
	else if (!strcmp(o->group, "job"))
		snprintf(root, sizeof(root), "%s;", job_name(rec));
	else if (!strcmp(o->group, "host"))
		snprintf(root, sizeof(root), "%s;",
			 fj_str(fj_get(rec, "host")) ? fj_str(fj_get(rec, "host")) : "?");
	for (char *p = root; *p && p[1]; p++)
		if (*p == ';' || (unsigned char)*p < 0x20)
			*p = ':'; /* a root frame is one frame */
	for (size_t i = 0; i < st->n; i++) {
		const struct fj *s = &st->kids[i];
		const char *stack = fj_str(fj_get(s, "stack")), *op = fj_str(fj_get(s, "op"));
		uint64_t c = 0, tm = 0, b = 0;
		char *full;
		int r;

		if (!stack || !fj_u64(fj_get(s, "count"), &c) ||
		    !fj_u64(fj_get(s, "time_ns"), &tm) || !fj_u64(fj_get(s, "bytes"), &b))
			return -EINVAL;
		if (o->op && (!op || strcmp(op, o->op)))
			continue;
		full = malloc(strlen(root) + strlen(stack) + 1);
		if (!full)
			return -ENOMEM;
		strcpy(full, root);
		strcat(full, stack);
		r = flame_add(t, full, c, tm, b);
		free(full);
		if (r < 0)
			return r;
		(*rows)++;
	}
	return 0;
}

static int merge_file(const struct opts *o, struct flame_tree *t, const char *path)
{
	struct dc_buf text = {};
	struct flame_tree ft;
	uint64_t rows = 0, lineno = 0;
	int r = read_file(path, &text);

	if (r < 0) {
		fprintf(stderr, "datacrumbs-flame: %s: %s\n", path, strerror(-r));
		return r;
	}
	/* each file is its own tree first, merged as a whole: the same merge
	 * that joins profiles from many nodes */
	flame_init(&ft);
	for (size_t off = 0; off < text.len && !r;) {
		size_t len = 0;
		char err[256] = "", *line;

		while (off + len < text.len && text.data[off + len] != '\n')
			len++;
		lineno++;
		/* the parsers read C strings: a NUL would end the line early
		 * (and the JSON reader, told the length, read past the copy) */
		if ((line = memchr(text.data + off, 0, len))) {
			fprintf(stderr, "datacrumbs-flame: %s:%llu: a NUL byte at column %zu\n",
				path, (unsigned long long)lineno,
				(size_t)(line - (text.data + off)) + 1);
			r = -EINVAL;
			break;
		}
		line = strndup(text.data + off, len);
		off += len + 1;
		if (!line) {
			r = -ENOMEM;
			break;
		}
		{
			const char *p = line;

			while (*p == ' ' || *p == '\t' || *p == '\r')
				p++;
			if (!*p || *p == '#')
				;
			else if (*p == '{') {
				struct fj rec;

				r = fj_parse(line, len, &rec, err, sizeof(err));
				if (!r) {
					r = add_record(o, &ft, &rec, &rows);
					if (r == -EINVAL)
						snprintf(err, sizeof(err),
							 "a stacks entry lacks stack, count, "
							 "time_ns or bytes");
					else if (r == -E2BIG)
						snprintf(err, sizeof(err),
							 "a stack of more than %d frames",
							 FLAME_DEPTH_MAX);
					fj_free(&rec);
				}
			} else {
				r = flame_add_collapsed(&ft, line, err, sizeof(err));
				rows += !r;
			}
		}
		free(line);
		if (r < 0)
			fprintf(stderr, "datacrumbs-flame: %s:%llu: %s\n", path,
				(unsigned long long)lineno, err[0] ? err : strerror(-r));
	}
	if (!r)
		r = flame_merge(t, &ft);
	flame_free(&ft);
	buf_free(&text);
	return r;
}

/* The sampled traces' complete events as spans of the multi-level view. */
static int layers_file(const struct opts *o, struct flame_span **sp, size_t *n, size_t *cap,
		       const char *path, char ***names, size_t *nnames)
{
	struct dc_buf text = {};
	uint64_t lineno = 0;
	int r = read_file(path, &text);

	if (r < 0) {
		fprintf(stderr, "datacrumbs-flame: %s: %s\n", path, strerror(-r));
		return r;
	}
	for (size_t off = 0; off < text.len && !r;) {
		size_t len = 0;
		struct fj ev;
		char err[256] = "";

		while (off + len < text.len && text.data[off + len] != '\n')
			len++;
		lineno++;
		if (!len) {
			off++;
			continue;
		}
		r = fj_parse(text.data + off, len, &ev, err, sizeof(err));
		off += len + 1;
		if (r < 0) {
			fprintf(stderr, "datacrumbs-flame: %s:%llu: %s\n", path,
				(unsigned long long)lineno, err);
			break;
		}
		{
			const char *ph = fj_str(fj_get(&ev, "ph")),
				   *name = fj_str(fj_get(&ev, "name")),
				   *cat = fj_str(fj_get(&ev, "cat"));
			uint64_t ts, dur, pid = 0, tid = 0, size = 0;

			if (ph && !strcmp(ph, "M") && name && !strcmp(name, "process_name") &&
			    !strcmp(o->group, "comm")) {
				/* pid -> process name, for the root frame */
				const char *c = fj_str(fj_get(fj_get(&ev, "args"), "name"));
				char **nn = realloc(*names, (*nnames + 1) * sizeof(*nn));

				fj_u64(fj_get(&ev, "pid"), &pid);
				if (c && nn) {
					*names = nn;
					if (asprintf(&nn[*nnames], "%llu\t%s",
						     (unsigned long long)pid, c) > 0)
						(*nnames)++;
				}
			}
			if (ph && !strcmp(ph, "X") && name && cat &&
			    fj_us_ns(fj_get(&ev, "ts"), &ts) &&
			    fj_us_ns(fj_get(&ev, "dur"), &dur) &&
			    fj_u64(fj_get(&ev, "pid"), &pid) && fj_u64(fj_get(&ev, "tid"), &tid)) {
				bool keep = (o->pid < 0 || pid == (uint64_t)o->pid) &&
					    (!o->op || !strcmp(o->op, name)) &&
					    (o->from <= 0 || (ts + dur) / 1e9 >= o->from) &&
					    (o->to < 0 || ts / 1e9 <= o->to);
				struct flame_span *s;

				fj_u64(fj_get(fj_get(&ev, "args"), "size"), &size);
				if (keep) {
					if (*n == *cap) {
						size_t c2 = *cap ? *cap * 2 : 1024;
						struct flame_span *p2 =
						    realloc(*sp, c2 * sizeof(*p2));

						if (!p2) {
							fj_free(&ev);
							r = -ENOMEM;
							break;
						}
						*sp = p2;
						*cap = c2;
					}
					s = &(*sp)[(*n)++];
					*s = (struct flame_span){.pid = (uint32_t)pid,
								 .tid = (uint32_t)tid,
								 .ts_ns = ts,
								 .dur_ns = dur,
								 .layer = strdup(cat),
								 .name = strdup(name),
								 .bytes = size};
				}
			}
		}
		fj_free(&ev);
	}
	buf_free(&text);
	return r;
}

static int write_out(const char *path, const struct dc_buf *b)
{
	FILE *f = strcmp(path, "-") ? fopen(path, "w") : stdout;

	if (!f) {
		fprintf(stderr, "datacrumbs-flame: %s: %s\n", path, strerror(errno));
		return -errno;
	}
	/* an empty result has no buffer, which fwrite() may not be handed */
	if ((b->len && fwrite(b->data, 1, b->len, f) != b->len) ||
	    (f != stdout ? fclose(f) : fflush(f))) {
		fprintf(stderr, "datacrumbs-flame: %s: write failed\n", path);
		return -EIO;
	}
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {{"output", required_argument, NULL, 'o'},
					   {"svg", required_argument, NULL, 's'},
					   {"weight", required_argument, NULL, 'w'},
					   {"title", required_argument, NULL, 't'},
					   {"width", required_argument, NULL, 'W'},
					   {"group", required_argument, NULL, 'g'},
					   {"job", required_argument, NULL, 'j'},
					   {"pid", required_argument, NULL, 'p'},
					   {"comm", required_argument, NULL, 'c'},
					   {"op", required_argument, NULL, 'O'},
					   {"host", required_argument, NULL, 'H'},
					   {"from", required_argument, NULL, 'F'},
					   {"to", required_argument, NULL, 'T'},
					   {"help", no_argument, NULL, 'h'},
					   {NULL, 0, NULL, 0}};
	struct opts o = {.pid = -1, .to = -1, .group = "none", .weight = FLAME_TIME};
	struct flame_tree t;
	struct dc_buf b = {};
	const char *cmd;
	bool layers;
	int c, r = 0;

	if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	cmd = argv[1];
	if (strcmp(cmd, "merge") && strcmp(cmd, "layers")) {
		fprintf(stderr, "datacrumbs-flame: unknown command '%s' (merge, layers)\n", cmd);
		return 2;
	}
	layers = !strcmp(cmd, "layers");
	optind = 2;
	while ((c = getopt_long(argc, argv, "o:h", lo, NULL)) != -1) {
		char *e = NULL;

		switch (c) {
		case 'o':
			o.out = optarg;
			break;
		case 's':
			o.svg = optarg;
			break;
		case 'w':
			if (flame_weight_parse(optarg, &o.weight) < 0) {
				fprintf(stderr,
					"datacrumbs-flame: --weight: '%s' is not time, count or "
					"bytes\n",
					optarg);
				return 2;
			}
			break;
		case 't':
			o.title = optarg;
			break;
		case 'W':
			o.width = (unsigned)strtoul(optarg, &e, 10);
			if (*e || o.width < 200 || o.width > 100000) {
				fprintf(
				    stderr,
				    "datacrumbs-flame: --width: 200 to 100000 pixels, not '%s'\n",
				    optarg);
				return 2;
			}
			break;
		case 'g':
			if (strcmp(optarg, "none") && strcmp(optarg, "comm") &&
			    strcmp(optarg, "pid") && strcmp(optarg, "job") &&
			    strcmp(optarg, "host")) {
				fprintf(stderr,
					"datacrumbs-flame: --group: '%s' is not none, comm, pid, "
					"job or host\n",
					optarg);
				return 2;
			}
			o.group = optarg;
			break;
		case 'j':
			o.job = optarg;
			break;
		case 'p':
			errno = 0;
			o.pid = strtol(optarg, &e, 10);
			if (e == optarg || *e || errno || o.pid < 0) {
				fprintf(stderr,
					"datacrumbs-flame: --pid: '%s' is not a process id\n",
					optarg);
				return 2;
			}
			break;
		case 'c':
			o.comm = optarg;
			break;
		case 'O':
			o.op = optarg;
			break;
		case 'H':
			o.host = optarg;
			break;
		case 'F':
		case 'T': {
			double v = strtod(optarg, &e);

			if (e == optarg || *e || !isfinite(v) || v < 0) {
				fprintf(stderr,
					"datacrumbs-flame: --%s: '%s' is not Unix seconds\n",
					c == 'F' ? "from" : "to", optarg);
				return 2;
			}
			if (c == 'F')
				o.from = v;
			else
				o.to = v;
			break;
		}
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind >= argc) {
		fprintf(stderr, "datacrumbs-flame: no input file\n");
		usage(stderr);
		return 2;
	}
	if (o.to >= 0 && o.to < o.from) {
		fprintf(stderr, "datacrumbs-flame: --to is before --from\n");
		return 2;
	}
	if (!o.out && !o.svg)
		o.out = "-";
	flame_init(&t);
	if (!layers) {
		for (int i = optind; i < argc && !r; i++)
			r = merge_file(&o, &t, argv[i]);
	} else {
		struct flame_span *sp = NULL;
		size_t n = 0, cap = 0, nnames = 0;
		char **names = NULL;

		for (int i = optind; i < argc && !r; i++)
			r = layers_file(&o, &sp, &n, &cap, argv[i], &names, &nnames);
		for (size_t i = 0; !r && i < n; i++)
			for (size_t k = 0; k < nnames; k++) {
				char *tab = strchr(names[k], '\t');

				if (tab && strtoul(names[k], NULL, 10) == sp[i].pid)
					sp[i].root = tab + 1;
			}
		if (!r) {
			r = flame_nest(sp, n, &t);
			/* no -E2BIG: a span is one frame, 64 levels at most */
			if (r < 0)
				fprintf(stderr, "datacrumbs-flame: the spans' call tree: %s\n",
					strerror(-r));
		}
		for (size_t i = 0; i < n; i++) {
			free((char *)sp[i].layer);
			free((char *)sp[i].name);
		}
		free(sp);
		for (size_t k = 0; k < nnames; k++)
			free(names[k]);
		free(names);
	}
	if (!r && o.out) {
		flame_collapse(&t, &b);
		r = b.err ? -ENOMEM : write_out(o.out, &b);
	}
	if (!r && o.svg) {
		struct flame_svg_opts so = {.title = o.title, .weight = o.weight, .width = o.width};

		buf_reset(&b);
		flame_svg(&t, &so, &b);
		r = b.err ? -ENOMEM : write_out(o.svg, &b);
	}
	buf_free(&b);
	flame_free(&t);
	return r ? 1 : 0;
}

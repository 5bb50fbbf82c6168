// SPDX-License-Identifier: Apache-2.0
/*
 * libFuzzer target of what datacrumbs-flame and datacrumbs-trace read from
 * files a user hands them (agent/flame.c): each line of the input as a JSON
 * record (fj_parse, then the accessors the tools call) or as a collapsed
 * stack (flame_add_collapsed); the tree then collapsed, read back and drawn
 * as SVG; and the input as a string the agent's JSON writer escapes.
 *
 * Besides the sanitizers, it checks what the readers promise: a refused
 * line says why; a tree's collapsed text reads back to the same tree;
 * whatever the agent's writer escapes, the tools' reader parses.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "flame.h"
#include "json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const keys[] = {"type",  "stacks", "stack", "count", "time_ns",
				   "bytes", "ts",     "dur",   "args",	"name"};

static void walk(const struct fj *v, int depth)
{
	uint64_t u;
	double d;

	(void)fj_str(v);
	(void)fj_u64(v, &u);
	(void)fj_double(v, &d);
	(void)fj_us_ns(v, &u);
	if (v->type == FJ_OBJ)
		for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
			(void)fj_get(v, keys[i]);
	if ((v->type == FJ_ARR || v->type == FJ_OBJ) && depth < 8)
		for (size_t i = 0; i < v->n; i++)
			walk(&v->kids[i], depth + 1);
}

/* t's collapsed text read back into a new tree, collapsed into out */
static void reread(const struct flame_tree *t, struct dc_buf *in, struct dc_buf *out)
{
	struct flame_tree back;
	char err[256];

	buf_reset(in);
	flame_collapse(t, in);
	buf_putc(in, 0);
	flame_init(&back);
	for (char *line = in->data, *nl; line && *line; line = nl) {
		nl = strchr(line, '\n');
		if (nl)
			*nl++ = 0;
		if (flame_add_collapsed(&back, line, err, sizeof(err)))
			abort(); /* the tool's own output refused */
		if (nl)
			nl[-1] = '\n';
	}
	buf_reset(out);
	flame_collapse(&back, out);
	buf_putc(out, 0);
	flame_free(&back);
}

/* a tree's collapsed text reads back to the same tree (frames lose their
 * trailing spaces as they are added: flame_add) */
static void collapse_round_trip(const struct flame_tree *t)
{
	struct dc_buf a = {}, b = {}, svg = {};
	struct flame_svg_opts o = {.title = "fuzz", .weight = FLAME_TIME};

	reread(t, &a, &b);
	if (strcmp(a.data, b.data))
		abort();
	flame_svg(t, &o, &svg);
	buf_free(&a);
	buf_free(&b);
	buf_free(&svg);
}

/* valid UTF-8 without NUL: what json_escape keeps as it is */
static bool plain_utf8(const uint8_t *s, size_t n)
{
	for (size_t i = 0; i < n;) {
		uint32_t c = s[i], need, cp;

		if (!c)
			return false;
		if (c < 0x80) {
			i++;
			continue;
		}
		need = c >= 0xf0 ? 3 : c >= 0xe0 ? 2 : c >= 0xc0 ? 1 : 0;
		if (!need || c > 0xf4 || n - i <= need)
			return false;
		cp = c & (0x3fu >> need);
		for (uint32_t k = 1; k <= need; k++) {
			if ((s[i + k] & 0xc0) != 0x80)
				return false;
			cp = cp << 6 | (s[i + k] & 0x3f);
		}
		if ((need == 1 && cp < 0x80) || (need == 2 && cp < 0x800) ||
		    (need == 3 && cp < 0x10000) || cp > 0x10ffff || (cp >= 0xd800 && cp < 0xe000))
			return false;
		i += need + 1;
	}
	return true;
}

/* the agent's writer's string, read by the tools' reader: the same text
 * where the writer keeps it as it is */
static void escaped_parses(const uint8_t *data, size_t size)
{
	struct dc_buf b = {};
	char err[256];
	struct fj v;

	json_escape(&b, (const char *)data, size); /* quotes included */
	if (!b.err) {
		if (fj_parse(b.data, b.len, &v, err, sizeof(err)) || v.type != FJ_STR)
			abort();
		if (plain_utf8(data, size) && (strlen(v.str) != size || memcmp(v.str, data, size)))
			abort();
		fj_free(&v);
	}
	buf_free(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct flame_tree t;

	flame_init(&t);
	/* lines as the tools cut them, NUL bytes kept (the JSON reader is
	 * told the length; the tools refuse such a line before the other) */
	for (size_t off = 0; off < size;) {
		const uint8_t *nl = memchr(data + off, '\n', size - off);
		size_t len = nl ? (size_t)(nl - (data + off)) : size - off;
		char err[256] = "", *line = malloc(len + 1);
		struct fj v;
		int r;

		if (!line)
			break;
		memcpy(line, data + off, len);
		line[len] = 0;
		off += len + 1;
		if (line[0] == '{') {
			r = fj_parse(line, len, &v, err, sizeof(err));
			if (!r) {
				walk(&v, 0);
				fj_free(&v);
			}
		} else {
			r = flame_add_collapsed(&t, line, err, sizeof(err));
		}
		if ((r == -EINVAL || r == -E2BIG) && !err[0])
			abort(); /* refused without a reason */
		free(line);
	}
	collapse_round_trip(&t);
	flame_free(&t);
	escaped_parses(data, size);
	return 0;
}

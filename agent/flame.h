/* SPDX-License-Identifier: Apache-2.0 */
#ifndef DC_FLAME_H
#define DC_FLAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "json.h"

/*
 * Call trees of stack profiles, the pure half of datacrumbs-flame: merge
 * collapsed stacks into one tree (every node sums the count, time and
 * bytes of the stacks through it, as a statistical profiler's merge of
 * trees from many sources does), write the tree back as collapsed stacks
 * and as a self-contained SVG flame graph; and nest sampled trace spans of
 * several layers into stacks by time containment.
 */
struct flame_node {
	char *name;
	uint64_t count, time_ns, bytes; /* through this node: itself and below */
	struct flame_node **kids;	/* sorted by name */
	size_t n, cap;
};

struct flame_tree {
	struct flame_node root;
};

void flame_init(struct flame_tree *t);
void flame_free(struct flame_tree *t);
/* Frames a stack may have. The tree is walked recursively (merge, collapse,
 * SVG, free): a collapsed file of one 200,000-frame stack overflowed the
 * tool's stack. The agent's stacks hold a few hundred frames at most (127
 * a side in a BPF stack map; perf records 127 by default). 4096 leaves
 * room in a 1 MiB stack (512 KiB measured enough for the optimised build,
 * 2 MiB for the sanitizers' build), where 16384 overflowed; the default is
 * 8 MiB. */
#define FLAME_DEPTH_MAX 4096

/* stack: frames root first, ';'-separated; a frame's trailing spaces are
 * not part of it, and frames left empty are skipped.
 * -E2BIG, the tree untouched, for more than FLAME_DEPTH_MAX frames. */
int flame_add(struct flame_tree *t, const char *stack, uint64_t count, uint64_t time_ns,
	      uint64_t bytes);
/* dst += src, node by node. */
int flame_merge(struct flame_tree *dst, const struct flame_tree *src);

/* One line per path with a value of its own (self = node - its children):
 * "frame;frame;... time_ns count bytes", in name order. */
void flame_collapse(const struct flame_tree *t, struct dc_buf *out);
/* One collapsed line: "stack time_ns count bytes", or "stack value" (the
 * flamegraph.pl form: the value is taken as time_ns, count 1, bytes 0).
 * 0; -EINVAL or -E2BIG with err set; -ENOMEM. */
int flame_add_collapsed(struct flame_tree *t, const char *line, char *err, size_t errlen);

enum flame_weight { FLAME_TIME, FLAME_COUNT, FLAME_BYTES };
int flame_weight_parse(const char *s, enum flame_weight *w);

/* Layers by the frame's text (docs/stacks.md): colours in the SVG. */
enum flame_layer {
	FL_USER,
	FL_MARKER, /* "[...]": syscall, on-cpu, lost */
	FL_KERNEL, /* "..._[k]" */
	FL_LIB,	   /* "lib:" and the layers of the multi-level view below */
	FL_SYSCALL,
	FL_VFS,
	FL_FS,
	FL_BLOCK,
	FL_PAGECACHE,
	FL_MAX,
};
enum flame_layer flame_layer_of(const char *frame);

/* Text for XML character data and attribute values: & < > " ' escaped,
 * control characters and invalid UTF-8 replaced by U+FFFD. */
void flame_xml_escape(struct dc_buf *b, const char *s);

struct flame_svg_opts {
	const char *title;
	enum flame_weight weight;
	unsigned width; /* pixels; 0: 1200 */
};
/* A self-contained SVG (inline script: search and zoom, no external
 * reference). Nothing is drawn for an empty tree but the title. */
void flame_svg(const struct flame_tree *t, const struct flame_svg_opts *o, struct dc_buf *out);

/* One span of a sampled trace, for the multi-level view. */
struct flame_span {
	uint32_t pid, tid;
	uint64_t ts_ns, dur_ns;
	const char *layer; /* "lib", "syscall", "vfs", "fs", "block", ... */
	const char *name;
	uint64_t bytes;
	const char *root; /* NULL, or the frame put first (process name) */
};
/*
 * Nest spans by time containment within each (pid, tid): a span's parent is
 * the innermost span of the same thread that encloses it (start and end
 * inside the parent's); a "block" span is never a parent (a thread's
 * requests are concurrent). Each span adds its self time (its duration
 * minus its children's) to the stack root;...;layer:name, with count 1 and
 * its bytes. Siblings that overlap (concurrent requests) have the overlap
 * counted once, in the earlier one: a frame's time is wall time, never more
 * than its parent's. Sorts spans in place.
 */
int flame_nest(struct flame_span *spans, size_t n, struct flame_tree *t);

/* A minimal JSON reader for the records this tool reads. */
enum fj_type { FJ_NULL, FJ_BOOL, FJ_NUM, FJ_STR, FJ_ARR, FJ_OBJ };
struct fj {
	enum fj_type type;
	char *str; /* FJ_STR: decoded; FJ_NUM: the literal */
	bool b;
	struct fj *kids; /* FJ_ARR, FJ_OBJ */
	char **keys;	 /* FJ_OBJ */
	size_t n;
};
int fj_parse(const char *text, size_t len, struct fj *out, char *err, size_t errlen);
void fj_free(struct fj *v);
const struct fj *fj_get(const struct fj *obj, const char *key);
const char *fj_str(const struct fj *v); /* NULL unless a string */
bool fj_u64(const struct fj *v, uint64_t *out);
bool fj_double(const struct fj *v, double *out);
/* A time in microseconds (ts, dur) as nanoseconds, the literal's decimals
 * read exactly. */
bool fj_us_ns(const struct fj *v, uint64_t *out);

#endif

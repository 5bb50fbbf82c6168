// SPDX-License-Identifier: Apache-2.0
/* The pure half of datacrumbs-flame: tree merge, collapse, SVG escaping,
 * nesting by time containment, the JSON reader. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "flame.h"
#include "tap.h"

static char *collapsed(const struct flame_tree *t)
{
	struct dc_buf b = {};

	flame_collapse(t, &b);
	buf_putc(&b, 0);
	return b.data;
}

static void test_add_collapse(void)
{
	struct flame_tree t;
	char *s;

	flame_init(&t);
	flame_add(&t, "main;writer_a;pwrite;[syscall] pwrite64;[on-cpu]", 3, 300, 3000);
	flame_add(&t, "main;writer_b;pwrite;[syscall] pwrite64;[on-cpu]", 1, 100, 1000);
	flame_add(&t, "main;writer_a;pwrite;[syscall] pwrite64;[on-cpu]", 1, 50, 500);
	/* a stack that ends inside another: main keeps a value of its own */
	flame_add(&t, "main", 2, 20, 0);
	CHECK_U64(t.root.count, 7, "root sums every stack's count");
	CHECK_U64(t.root.time_ns, 470, "root sums time");
	CHECK_U64(t.root.n, 1, "one root frame");
	CHECK_U64(t.root.kids[0]->n, 2, "main has two children");
	CHECK_U64(t.root.kids[0]->kids[0]->bytes, 3500, "writer_a sums its two adds");
	s = collapsed(&t);
	CHECK_STR(s,
		  "main 20 2 0\n"
		  "main;writer_a;pwrite;[syscall] pwrite64;[on-cpu] 350 4 3500\n"
		  "main;writer_b;pwrite;[syscall] pwrite64;[on-cpu] 100 1 1000\n",
		  "collapse: self values per path, in name order");
	free(s);
	flame_free(&t);
}

static void test_merge(void)
{
	struct flame_tree a, b, ab, m;
	const char *sa[] = {"x;y;z", "x;y", "x;q", "w"};
	const char *sb[] = {"x;y;z", "w;v", "k"};
	char *s1, *s2;

	flame_init(&a);
	flame_init(&b);
	flame_init(&ab);
	flame_init(&m);
	for (unsigned i = 0; i < 4; i++) {
		flame_add(&a, sa[i], i + 1, 10 * (i + 1), 100 * i);
		flame_add(&ab, sa[i], i + 1, 10 * (i + 1), 100 * i);
	}
	for (unsigned i = 0; i < 3; i++) {
		flame_add(&b, sb[i], 2 * i + 1, 7 * i, 3 * i);
		flame_add(&ab, sb[i], 2 * i + 1, 7 * i, 3 * i);
	}
	flame_merge(&m, &a);
	flame_merge(&m, &b);
	s1 = collapsed(&m);
	s2 = collapsed(&ab);
	CHECK_STR(s1, s2, "merge(A, B) equals the tree of A's and B's stacks added together");
	CHECK_U64(m.root.count, ab.root.count, "merged root count");
	free(s1);
	free(s2);
	/* merging into itself-like copies doubles every node */
	flame_merge(&m, &ab);
	CHECK_U64(m.root.time_ns, 2 * ab.root.time_ns, "merging a copy doubles time");
	flame_free(&a);
	flame_free(&b);
	flame_free(&ab);
	flame_free(&m);
}

static void test_parse_collapsed(void)
{
	struct flame_tree t;
	char err[256] = "", *s;

	flame_init(&t);
	CHECK(flame_add_collapsed(&t, "a;b c;d 10 2 30\n", err, sizeof(err)) == 0,
	      "three-number line (frames may hold spaces)");
	CHECK(flame_add_collapsed(&t, "a;e 5", err, sizeof(err)) == 0, "flamegraph.pl line");
	CHECK(flame_add_collapsed(&t, "", err, sizeof(err)) == 0, "empty line ignored");
	CHECK(flame_add_collapsed(&t, "a;b 1 2", err, sizeof(err)) == -EINVAL,
	      "two numbers refused");
	CHECK(strstr(err, "not a collapsed stack") != NULL, "error says why: %s", err);
	CHECK(flame_add_collapsed(&t, "just words", err, sizeof(err)) == -EINVAL,
	      "no number refused");
	s = collapsed(&t);
	CHECK_STR(s, "a;b c;d 10 2 30\na;e 5 1 0\n", "round trip through collapse");
	free(s);
	flame_free(&t);
}

static void test_escape(void)
{
	struct dc_buf b = {};
	struct flame_tree t;
	struct flame_svg_opts o = {.title = "t<&>", .weight = FLAME_TIME};

	flame_xml_escape(&b, "a<b>&\"c'</title><script>alert(1)</script>\x01\xff\xc3\xa9");
	buf_putc(&b, 0);
	CHECK_STR(b.data,
		  "a&lt;b&gt;&amp;&quot;c&#39;&lt;/title&gt;&lt;script&gt;alert(1)&lt;/script&gt;"
		  "\xef\xbf\xbd\xef\xbf\xbd\xc3\xa9",
		  "markup escaped, control and invalid bytes replaced, UTF-8 kept");
	buf_free(&b);

	flame_init(&t);
	flame_add(&t, "</text></g><script>alert('x')</script>;&amp;;]]>", 1, 1000, 0);
	flame_svg(&t, &o, &b);
	buf_putc(&b, 0);
	CHECK(strstr(b.data, "<script>alert") == NULL, "hostile name cannot open a script element");
	CHECK(strstr(b.data, "&lt;/text&gt;&lt;/g&gt;&lt;script&gt;") != NULL,
	      "hostile name is text in the SVG");
	CHECK(strstr(b.data, "&amp;amp<") != NULL, "an entity in a name is escaped again");
	CHECK(strstr(b.data, "t&lt;&amp;&gt;") != NULL, "title escaped");
	/* one script element only: ours, whose CDATA no name can close */
	{
		const char *p = strstr(b.data, "]]>");
		int n = 0;

		for (const char *q = b.data; (q = strstr(q, "<script")); q++)
			n++;
		CHECK(n == 1, "exactly one script element (%d)", n);
		CHECK(p && p < strstr(b.data, "</script>") + 9, "the only ]]> is the script's own");
		CHECK(strstr(p + 3, "]]>") == NULL, "no ]]> from a name");
	}
	buf_free(&b);
	flame_free(&t);
}

static void test_svg_layout(void)
{
	struct flame_tree t;
	struct dc_buf b = {};
	struct flame_svg_opts o = {.weight = FLAME_BYTES, .width = 1000};
	int frames = 0;

	flame_init(&t);
	flame_add(&t, "main;writer_a;[syscall] pwrite64;vfs_write_[k]", 3, 10, 3000);
	flame_add(&t, "main;writer_b;[syscall] pwrite64;vfs_write_[k]", 1, 10, 1000);
	flame_svg(&t, &o, &b);
	buf_putc(&b, 0);
	for (const char *q = b.data; (q = strstr(q, "<g class=\"f\"")); q++)
		frames++;
	CHECK(frames == 7, "one group per node (%d)", frames);
	/* widths by bytes: writer_a 3/4 of 980 px, writer_b 1/4 */
	CHECK(strstr(b.data, "data-w=\"735.0000\"") != NULL, "writer_a is 735 px wide");
	CHECK(strstr(b.data, "data-w=\"245.0000\"") != NULL, "writer_b is 245 px wide");
	CHECK(strstr(b.data, "width=\"1000\" height=\"128\"") != NULL, "4 levels: 64 + 64 px");
	CHECK(strstr(b.data, "http://") == strstr(b.data, "http://www.w3.org/2000/svg") &&
		  strstr(strstr(b.data, "http://") + 1, "http") == NULL,
	      "self-contained: no reference but the SVG namespace");
	buf_free(&b);
	flame_free(&t);
}

static void test_layers(void)
{
	CHECK(flame_layer_of("vfs_write_[k]") == FL_KERNEL, "_[k] is kernel");
	CHECK(flame_layer_of("[syscall] write") == FL_MARKER, "[..] is a marker");
	CHECK(flame_layer_of("block:write") == FL_BLOCK, "block: prefix");
	CHECK(flame_layer_of("writer_a") == FL_USER, "plain is user");
}

static void test_nest(void)
{
	/* one write: library call [0,100) > syscall [10,90) > vfs [20,80) >
	 * ext4 [25,60) > block request [30,50); a second syscall [95,99) in
	 * the library call; another thread's syscall overlapping in time */
	struct flame_span s[] = {
	    {1, 1, 30, 20, "block", "write", 4096, "app"},
	    {1, 1, 0, 100, "lib", "fwrite", 4096, "app"},
	    {1, 1, 20, 60, "vfs", "vfs_write", 4096, "app"},
	    {1, 1, 10, 80, "syscall", "write", 4096, "app"},
	    {1, 1, 25, 35, "fs", "ext4_file_write_iter", 4096, "app"},
	    {1, 1, 95, 4, "syscall", "fsync", 0, "app"},
	    {1, 2, 5, 50, "syscall", "read", 10, "app"},
	};
	struct flame_tree t;
	char *c;

	flame_init(&t);
	CHECK(flame_nest(s, sizeof(s) / sizeof(s[0]), &t) == 0, "nest");
	c = collapsed(&t);
	CHECK_STR(
	    c,
	    "app;lib:fwrite 16 1 4096\n"
	    "app;lib:fwrite;syscall:fsync 4 1 0\n"
	    "app;lib:fwrite;syscall:write 20 1 4096\n"
	    "app;lib:fwrite;syscall:write;vfs:vfs_write 25 1 4096\n"
	    "app;lib:fwrite;syscall:write;vfs:vfs_write;fs:ext4_file_write_iter 15 1 4096\n"
	    "app;lib:fwrite;syscall:write;vfs:vfs_write;fs:ext4_file_write_iter;block:write 20 1 "
	    "4096\n"
	    "app;syscall:read 50 1 10\n",
	    "spans nest by containment; self times add up to each root's duration");
	CHECK_U64(t.root.time_ns, 150, "total time = the two threads' outermost spans");
	free(c);
	flame_free(&t);

	/* overlapping, not contained: siblings, not parent and child */
	{
		struct flame_span o[] = {{1, 1, 0, 10, "syscall", "a", 0, NULL},
					 {1, 1, 5, 10, "syscall", "b", 0, NULL}};

		flame_init(&t);
		flame_nest(o, 2, &t);
		c = collapsed(&t);
		CHECK_STR(c, "syscall:a 10 1 0\nsyscall:b 5 1 0\n",
			  "overlap is not containment; the overlap is counted once");
		free(c);
		flame_free(&t);
	}
	/* concurrent block requests of one thread under one VFS call: none is
	 * the other's parent, and together they count their union, so the
	 * parent's time is never outgrown */
	{
		struct flame_span o[] = {{1, 1, 0, 100, "vfs", "f", 0, NULL},
					 {1, 1, 10, 30, "block", "write", 1, NULL},
					 {1, 1, 10, 50, "block", "write", 2, NULL},
					 {1, 1, 50, 40, "block", "write", 4, NULL}};

		flame_init(&t);
		flame_nest(o, 4, &t);
		c = collapsed(&t);
		CHECK_STR(c, "vfs:f 20 1 0\nvfs:f;block:write 80 3 7\n",
			  "block requests are leaves; their overlap counted once");
		CHECK_U64(t.root.time_ns, 100, "the parent's duration, not more");
		free(c);
		flame_free(&t);
	}
}

static void test_json(void)
{
	const char *txt = "{\"type\":\"stacks\",\"pid\":42,\"job\":{\"unit\":\"x.service\"},"
			  "\"stacks\":[{\"stack\":\"a;\\u00e9\\n\\ud83d\\ude00\",\"count\":3}],"
			  "\"f\":-1.5e3,\"t\":true,\"n\":null}";
	struct fj v;
	char err[128] = "";
	uint64_t u;
	double d;

	CHECK(fj_parse(txt, strlen(txt), &v, err, sizeof(err)) == 0, "parse a record (%s)", err);
	CHECK_STR(fj_str(fj_get(&v, "type")), "stacks", "string member");
	CHECK(fj_u64(fj_get(&v, "pid"), &u) && u == 42, "integer member");
	CHECK_STR(fj_str(fj_get(fj_get(&v, "job"), "unit")), "x.service", "nested object");
	CHECK_STR(fj_str(fj_get(&fj_get(&v, "stacks")->kids[0], "stack")),
		  "a;\xc3\xa9\n\xf0\x9f\x98\x80", "escapes and surrogate pairs decoded");
	CHECK(fj_double(fj_get(&v, "f"), &d) && d == -1500, "float");
	CHECK(!fj_u64(fj_get(&v, "f"), &u), "a negative float is no u64");
	fj_free(&v);
	CHECK(fj_parse("{\"a\":1", 6, &v, err, sizeof(err)) < 0, "truncated object refused: %s",
	      err);
	CHECK(fj_parse("{\"a\":1} x", 9, &v, err, sizeof(err)) < 0, "trailing text refused: %s",
	      err);
	CHECK(fj_parse("[\"abc", 5, &v, err, sizeof(err)) < 0, "unterminated string: %s", err);
}

int main(void)
{
	test_add_collapse();
	test_merge();
	test_parse_collapsed();
	test_escape();
	test_svg_layout();
	test_layers();
	test_nest();
	test_json();
	return tap_done();
}

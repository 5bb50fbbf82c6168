// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "flame.h"
#include "macro.h"

void flame_init(struct flame_tree *t)
{
	memset(t, 0, sizeof(*t));
}

static void node_free(struct flame_node *n)
{
	for (size_t i = 0; i < n->n; i++) {
		node_free(n->kids[i]);
		free(n->kids[i]);
	}
	free(n->kids);
	free(n->name);
}

void flame_free(struct flame_tree *t)
{
	node_free(&t->root);
	flame_init(t);
}

/* The child named name[0..len), inserted in order if absent. */
static struct flame_node *child(struct flame_node *p, const char *name, size_t len)
{
	size_t lo = 0, hi = p->n;
	struct flame_node *c;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int d = strncmp(p->kids[mid]->name, name, len);

		if (!d && p->kids[mid]->name[len])
			d = 1;
		if (!d)
			return p->kids[mid];
		if (d < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (p->n == p->cap) {
		size_t cap = p->cap ? p->cap * 2 : 4;
		struct flame_node **k = realloc(p->kids, cap * sizeof(*k));

		if (!k)
			return NULL;
		p->kids = k;
		p->cap = cap;
	}
	c = calloc(1, sizeof(*c));
	if (!c || !(c->name = strndup(name, len))) {
		free(c);
		return NULL;
	}
	memmove(p->kids + lo + 1, p->kids + lo, (p->n - lo) * sizeof(*p->kids));
	p->kids[lo] = c;
	p->n++;
	return c;
}

/* a + b, held at 2^64 - 1: a wrapped sum would draw a frame wider than the
 * graph and write a value the tool could not read back */
static uint64_t sat_add(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

static void node_add(struct flame_node *n, uint64_t count, uint64_t time_ns, uint64_t bytes)
{
	n->count = sat_add(n->count, count);
	n->time_ns = sat_add(n->time_ns, time_ns);
	n->bytes = sat_add(n->bytes, bytes);
}

/* A frame's length without its trailing spaces: a collapsed line's last
 * frame cannot keep them (they read as the space before the numbers), so
 * no frame does, and a tree's collapsed text reads back to the same tree
 * (tests/fuzz/fuzz-flame.c found " ;  ; 1" losing a frame a reading). */
static size_t frame_len(const char *p)
{
	size_t len = strcspn(p, ";");

	while (len && p[len - 1] == ' ')
		len--;
	return len;
}

int flame_add(struct flame_tree *t, const char *stack, uint64_t count, uint64_t time_ns,
	      uint64_t bytes)
{
	struct flame_node *n = &t->root;
	_cleanup_free_ char *clean = NULL;
	size_t frames = 0;

	/* a control character (a record's "\n" decoded) would cut or bend
	 * the collapsed output's lines: as ':', one frame still */
	for (const char *p = stack; *p; p++)
		if ((unsigned char)*p < 0x20) {
			clean = strdup(stack);
			if (!clean)
				return -ENOMEM;
			for (char *q = clean; *q; q++)
				if ((unsigned char)*q < 0x20)
					*q = ':';
			stack = clean;
			break;
		}
	for (const char *p = stack; *p;) {
		size_t len = frame_len(p);

		frames += len > 0;
		p += strcspn(p, ";");
		p += *p == ';';
	}
	if (frames > FLAME_DEPTH_MAX)
		return -E2BIG;
	node_add(n, count, time_ns, bytes);
	for (const char *p = stack; *p;) {
		size_t len = frame_len(p);

		if (len) {
			n = child(n, p, len);
			if (!n)
				return -ENOMEM;
			node_add(n, count, time_ns, bytes);
		}
		p += strcspn(p, ";");
		p += *p == ';';
	}
	return 0;
}

static int merge_node(struct flame_node *dst, const struct flame_node *src)
{
	node_add(dst, src->count, src->time_ns, src->bytes);
	for (size_t i = 0; i < src->n; i++) {
		struct flame_node *c = child(dst, src->kids[i]->name, strlen(src->kids[i]->name));

		if (!c || merge_node(c, src->kids[i]) < 0)
			return -ENOMEM;
	}
	return 0;
}

int flame_merge(struct flame_tree *dst, const struct flame_tree *src)
{
	return merge_node(&dst->root, &src->root);
}

static void collapse_node(const struct flame_node *n, struct dc_buf *path, struct dc_buf *out)
{
	uint64_t c = 0, tm = 0, b = 0;
	size_t mark = path->len;

	/* self = node - children, 0 where a held (saturated) node is less */
	for (size_t i = 0; i < n->n; i++) {
		c = sat_add(c, n->kids[i]->count);
		tm = sat_add(tm, n->kids[i]->time_ns);
		b = sat_add(b, n->kids[i]->bytes);
	}
	c = n->count > c ? n->count - c : 0;
	tm = n->time_ns > tm ? n->time_ns - tm : 0;
	b = n->bytes > b ? n->bytes - b : 0;
	if (path->len && (c || tm || b)) {
		buf_put(out, path->data, path->len);
		buf_printf(out, " %llu %llu %llu\n", (unsigned long long)tm, (unsigned long long)c,
			   (unsigned long long)b);
	}
	for (size_t i = 0; i < n->n; i++) {
		if (path->len)
			buf_putc(path, ';');
		buf_put(path, n->kids[i]->name, strlen(n->kids[i]->name));
		collapse_node(n->kids[i], path, out);
		path->len = mark;
	}
}

void flame_collapse(const struct flame_tree *t, struct dc_buf *out)
{
	struct dc_buf path = {};

	collapse_node(&t->root, &path, out);
	buf_free(&path);
}

static bool parse_u64(const char *s, size_t n, uint64_t *v)
{
	uint64_t x = 0;

	if (!n)
		return false;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9' || x > UINT64_MAX / 10 ||
		    (x == UINT64_MAX / 10 && (uint64_t)(s[i] - '0') > UINT64_MAX % 10))
			return false;
		x = x * 10 + (uint64_t)(s[i] - '0');
	}
	*v = x;
	return true;
}

int flame_add_collapsed(struct flame_tree *t, const char *line, char *err, size_t errlen)
{
	size_t len = strcspn(line, "\r\n"), end = len;
	uint64_t v[3];
	int nv = 0;
	char *stack;
	int r;

	while (end && line[end - 1] == ' ')
		end--;
	if (!end)
		return 0;
	/* up to three numbers from the end: time count bytes, or one value */
	while (nv < 3) {
		size_t s = end;

		while (s && line[s - 1] != ' ')
			s--;
		if (!s || !parse_u64(line + s, end - s, &v[nv]))
			break;
		nv++;
		end = s - 1;
		while (end && line[end - 1] == ' ')
			end--;
	}
	if (nv != 1 && nv != 3) {
		snprintf(err, errlen,
			 "not a collapsed stack (\"frame;frame;... time_ns count bytes\" or "
			 "\"frame;frame;... value\"): %.80s",
			 line);
		return -EINVAL;
	}
	stack = strndup(line, end);
	if (!stack)
		return -ENOMEM;
	/* numbers were read from the end: v[0] is the last */
	r = nv == 3 ? flame_add(t, stack, v[1], v[2], v[0]) : flame_add(t, stack, 1, v[0], 0);
	free(stack);
	if (r == -E2BIG)
		snprintf(err, errlen, "a stack of more than %d frames", FLAME_DEPTH_MAX);
	return r;
}

int flame_weight_parse(const char *s, enum flame_weight *w)
{
	if (!strcmp(s, "time"))
		*w = FLAME_TIME;
	else if (!strcmp(s, "count"))
		*w = FLAME_COUNT;
	else if (!strcmp(s, "bytes"))
		*w = FLAME_BYTES;
	else
		return -EINVAL;
	return 0;
}

enum flame_layer flame_layer_of(const char *f)
{
	static const struct {
		const char *prefix;
		enum flame_layer l;
	} pre[] = {{"lib:", FL_LIB},	 {"syscall:", FL_SYSCALL}, {"vfs:", FL_VFS},
		   {"fs:", FL_FS},	 {"block:", FL_BLOCK},	   {"pagecache:", FL_PAGECACHE},
		   {"io_uring:", FL_FS}, {"function:", FL_LIB},	   {"bio:", FL_BLOCK}};
	size_t n = strlen(f);

	if (f[0] == '[')
		return FL_MARKER;
	if (n > 4 && !strcmp(f + n - 4, "_[k]"))
		return FL_KERNEL;
	for (size_t i = 0; i < sizeof(pre) / sizeof(pre[0]); i++)
		if (!strncmp(f, pre[i].prefix, strlen(pre[i].prefix)))
			return pre[i].l;
	return FL_USER;
}

/* Length of the valid UTF-8 sequence at s, 0 if invalid. */
static size_t utf8_len(const unsigned char *s)
{
	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		return (s[1] & 0xc0) == 0x80 ? 2 : 0;
	if (s[0] >= 0xe0 && s[0] <= 0xef) {
		if ((s[1] & 0xc0) != 0x80 || (s[2] & 0xc0) != 0x80)
			return 0;
		if ((s[0] == 0xe0 && s[1] < 0xa0) || (s[0] == 0xed && s[1] > 0x9f))
			return 0; /* overlong, surrogates */
		return 3;
	}
	if (s[0] >= 0xf0 && s[0] <= 0xf4) {
		if ((s[1] & 0xc0) != 0x80 || (s[2] & 0xc0) != 0x80 || (s[3] & 0xc0) != 0x80)
			return 0;
		if ((s[0] == 0xf0 && s[1] < 0x90) || (s[0] == 0xf4 && s[1] > 0x8f))
			return 0;
		return 4;
	}
	return 0;
}

void flame_xml_escape(struct dc_buf *b, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	while (*p) {
		size_t n;

		switch (*p) {
		case '&':
			buf_put(b, "&amp;", 5);
			p++;
			continue;
		case '<':
			buf_put(b, "&lt;", 4);
			p++;
			continue;
		case '>':
			buf_put(b, "&gt;", 4);
			p++;
			continue;
		case '"':
			buf_put(b, "&quot;", 6);
			p++;
			continue;
		case '\'':
			buf_put(b, "&#39;", 5);
			p++;
			continue;
		}
		/* XML 1.0 allows no C0 control but tab, LF, CR; we keep none */
		if (*p < 0x20 || *p == 0x7f) {
			buf_put(b, "\xef\xbf\xbd", 3);
			p++;
			continue;
		}
		n = utf8_len(p);
		if (!n) {
			buf_put(b, "\xef\xbf\xbd", 3);
			p++;
			continue;
		}
		buf_put(b, p, n);
		p += n;
	}
}

static uint32_t name_hash(const char *s)
{
	uint32_t h = 2166136261u;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 16777619u;
	return h;
}

/* A colour per layer, varied by name so neighbours stand apart. */
static void colour(const char *name, char out[32])
{
	static const int base[FL_MAX][3] = {
	    [FL_USER] = {225, 110, 40},	      [FL_MARKER] = {160, 160, 170},
	    [FL_KERNEL] = {230, 170, 50},     [FL_LIB] = {90, 190, 90},
	    [FL_SYSCALL] = {170, 120, 220},   [FL_VFS] = {220, 210, 70},
	    [FL_FS] = {70, 190, 200},	      [FL_BLOCK] = {90, 130, 230},
	    [FL_PAGECACHE] = {230, 130, 180},
	};
	enum flame_layer l = flame_layer_of(name);
	uint32_t h = name_hash(name);
	int v = (int)(h % 50) - 25, c[3];

	for (int i = 0; i < 3; i++) {
		c[i] = base[l][i] + (i == 1 ? v : v / 2);
		c[i] = c[i] < 0 ? 0 : c[i] > 255 ? 255 : c[i];
	}
	snprintf(out, 32, "rgb(%d,%d,%d)", c[0], c[1], c[2]);
}

static uint64_t weight(const struct flame_node *n, enum flame_weight w)
{
	return w == FLAME_COUNT ? n->count : w == FLAME_BYTES ? n->bytes : n->time_ns;
}

#define FRAME_H	   16
#define TOP_PAD	   40
#define BOTTOM_PAD 24
#define SIDE_PAD   10
#define CHAR_W	   7.0 /* 12px monospace-ish: labels are cut to the box */

static unsigned depth_of(const struct flame_node *n)
{
	unsigned d = 0;

	for (size_t i = 0; i < n->n; i++) {
		unsigned k = depth_of(n->kids[i]);

		if (k > d)
			d = k;
	}
	return d + 1;
}

struct svg_ctx {
	struct dc_buf *b;
	enum flame_weight w;
	double total, width;
	unsigned height;
};

static void value_text(struct dc_buf *b, const struct flame_node *n)
{
	buf_printf(b, " (time %.3f ms, %llu calls, %llu bytes)", (double)n->time_ns / 1e6,
		   (unsigned long long)n->count, (unsigned long long)n->bytes);
}

static void svg_node(struct svg_ctx *c, const struct flame_node *n, double x, unsigned depth)
{
	/* never wider than the graph (the cast of the text's width below is
	 * undefined for a huge one) */
	double share = c->total ? (double)weight(n, c->w) / c->total : 0;
	double wpx = (share > 1 ? 1 : share) * c->width;
	double y = c->height - BOTTOM_PAD - (double)(depth + 1) * FRAME_H;
	double cx = x;
	char col[32];

	if (wpx < 0.1)
		return; /* thinner than a tenth of a pixel: not drawn */
	colour(n->name, col);
	buf_printf(c->b, "<g class=\"f\" data-x=\"%.4f\" data-w=\"%.4f\" data-d=\"%u\"><title>",
		   x - SIDE_PAD, wpx, depth);
	flame_xml_escape(c->b, n->name);
	value_text(c->b, n);
	buf_printf(c->b,
		   "</title><rect x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%d\" fill=\"%s\" "
		   "rx=\"2\"/><text x=\"%.2f\" y=\"%.1f\">",
		   x, y, wpx, FRAME_H - 1, col, x + 3, y + 11.5);
	{
		/* the label cut to the box (whole UTF-8 characters), "..." when cut */
		size_t fit = wpx > 3 * CHAR_W ? (size_t)((wpx - 6) / CHAR_W) : 0;
		size_t len = strlen(n->name);

		if (fit >= len)
			flame_xml_escape(c->b, n->name);
		else if (fit > 2) {
			size_t cut = fit - 2;
			char *s;

			while (cut && ((unsigned char)n->name[cut] & 0xc0) == 0x80)
				cut--;
			s = strndup(n->name, cut);
			if (s) {
				flame_xml_escape(c->b, s);
				buf_put(c->b, "..", 2);
				free(s);
			}
		}
	}
	buf_put(c->b, "</text></g>\n", 12);
	for (size_t i = 0; i < n->n; i++) {
		svg_node(c, n->kids[i], cx, depth + 1);
		cx += c->total ? (double)weight(n->kids[i], c->w) / c->total * c->width : 0;
	}
}

/* Search (a regular expression over frame names, also from #search=...)
 * and zoom (click a frame; click the background or "Reset zoom" to undo).
 * Names are read from the DOM, never pasted into the script. */
static const char svg_script[] =
    "<script type=\"text/ecmascript\"><![CDATA[\n"
    "var W=0,frames=[],matched=document.getElementById('matched');\n"
    "function fname(g){var t=g.getElementsByTagName('title')[0].textContent;"
    "return t.replace(/ \\(time [^)]*\\)$/,'');}\n"
    "function label(g,w){var n=fname(g),f=Math.floor((w-6)/7),t=g.getElementsByTagName('text')[0];"
    "t.textContent=w<21?'':(f>=n.length?n:n.substring(0,f-2)+'..');}\n"
    "function init(){W=parseFloat(document.documentElement.getAttribute('data-width'));"
    "frames=Array.prototype.slice.call(document.getElementsByClassName('f'));"
    "frames.forEach(function(g){g.onclick=function(e){zoom(g);e.stopPropagation();};});"
    "var "
    "h=decodeURIComponent(location.hash||'');if(h.indexOf('#search=')==0)search(h.substring(8));}\n"
    "function place(g,x,w){var "
    "r=g.getElementsByTagName('rect')[0],t=g.getElementsByTagName('text')[0];"
    "r.setAttribute('x',x+10);r.setAttribute('width',w);t.setAttribute('x',x+13);label(g,w);"
    "g.style.display=w<0.1?'none':'';}\n"
    "function zoom(z){var "
    "zx=parseFloat(z.dataset.x),zw=parseFloat(z.dataset.w),zd=parseInt(z.dataset.d);"
    "frames.forEach(function(g){var "
    "x=parseFloat(g.dataset.x),w=parseFloat(g.dataset.w),d=parseInt(g.dataset.d);"
    "if(d<zd){if(x<=zx+1e-6&&x+w>=zx+zw-1e-6)place(g,0,W);else g.style.display='none';return;}"
    "if(x+1e-6<zx||x+w>zx+zw+1e-6){g.style.display='none';return;}"
    "place(g,(x-zx)/zw*W,w/zw*W);});}\n"
    "function "
    "unzoom(){frames.forEach(function(g){place(g,parseFloat(g.dataset.x),parseFloat(g.dataset.w));}"
    ");}\n"
    "function search(re){var r;try{r=new RegExp(re);}catch(e){matched.textContent='bad "
    "expression';return;}"
    "var tot=0,spans=[];frames.forEach(function(g){var rect=g.getElementsByTagName('rect')[0];"
    "if(!rect.dataset.fill)rect.dataset.fill=rect.getAttribute('fill');"
    "if(re!==''&&r.test(fname(g))){rect.setAttribute('fill','rgb(230,0,230)');"
    "spans.push([parseFloat(g.dataset.x),parseFloat(g.dataset.w)]);}"
    "else rect.setAttribute('fill',rect.dataset.fill);});"
    /* nested matches count once: sum the union of the matched spans */
    "spans.sort(function(a,b){return a[0]-b[0];});var end=-1;spans.forEach(function(s){"
    "var a=Math.max(s[0],end),b=s[0]+s[1];if(b>a){tot+=b-a;end=b;}});"
    "matched.textContent=re===''?'':'Matched: '+(100*tot/W).toFixed(1)+'%';}\n"
    "function ask(){var re=prompt('Search frames (regular "
    "expression)','');if(re!==null)search(re);}\n"
    "]]></script>\n";

void flame_svg(const struct flame_tree *t, const struct flame_svg_opts *o, struct dc_buf *b)
{
	unsigned width = o->width ? o->width : 1200;
	unsigned depth = t->root.n ? depth_of(&t->root) - 1 : 0;
	struct svg_ctx c = {.b = b,
			    .w = o->weight,
			    .total = (double)weight(&t->root, o->weight),
			    .width = width - 2 * SIDE_PAD,
			    .height = TOP_PAD + BOTTOM_PAD + (depth ? depth : 1) * FRAME_H};
	static const char *const wname[] = {"time", "calls", "bytes"};
	double x = SIDE_PAD;

	buf_printf(b,
		   "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"yes\"?>\n"
		   "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"%u\" "
		   "height=\"%u\" viewBox=\"0 0 %u %u\" data-width=\"%.2f\" onload=\"init()\">\n",
		   width, c.height, width, c.height, c.width);
	buf_printf(b, "<style>text{font-family:monospace;font-size:12px;fill:#000}"
		      ".f:hover rect{stroke:#000;stroke-width:0.5}.f{cursor:pointer}"
		      ".ui{cursor:pointer;fill:#333}</style>\n");
	buf_put(b, svg_script, sizeof(svg_script) - 1);
	buf_printf(b,
		   "<rect x=\"0\" y=\"0\" width=\"%u\" height=\"%u\" fill=\"#f8f8f4\" "
		   "onclick=\"unzoom()\"/>\n",
		   width, c.height);
	buf_printf(b, "<text x=\"%u\" y=\"20\" text-anchor=\"middle\" style=\"font-size:15px\">",
		   width / 2);
	flame_xml_escape(b, o->title ? o->title : "I/O flame graph");
	buf_printf(b, " &#8212; width is %s</text>\n", wname[o->weight]);
	buf_printf(b,
		   "<text class=\"ui\" x=\"%d\" y=\"20\" onclick=\"unzoom()\">Reset zoom</text>\n"
		   "<text class=\"ui\" x=\"%u\" y=\"20\" text-anchor=\"end\" "
		   "onclick=\"ask()\">Search</text>\n"
		   "<text id=\"matched\" x=\"%u\" y=\"%u\" text-anchor=\"end\"></text>\n",
		   SIDE_PAD, width - SIDE_PAD, width - SIDE_PAD, c.height - 6);
	for (size_t i = 0; i < t->root.n; i++) {
		svg_node(&c, t->root.kids[i], x, 0);
		x += c.total ? (double)weight(t->root.kids[i], o->weight) / c.total * c.width : 0;
	}
	buf_put(b, "</svg>\n", 7);
}

static int span_cmp(const void *a, const void *b)
{
	const struct flame_span *x = a, *y = b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	if (x->ts_ns != y->ts_ns)
		return x->ts_ns < y->ts_ns ? -1 : 1;
	/* the enclosing span first when two start together */
	return x->dur_ns > y->dur_ns ? -1 : x->dur_ns < y->dur_ns;
}

#define NEST_MAX 64 /* deeper nesting is flattened into the 64th level */

/* A block request is never the parent of another: requests of one thread
 * are concurrent, and one issued with another that outlives it is not
 * inside it. */
static bool span_leaf(const struct flame_span *s)
{
	return !strcmp(s->layer, "block");
}

/* s as (part of) one frame: ';' as ':' (flame_add does the control
 * characters, for every stack) */
static void put_frame(struct dc_buf *b, const char *s)
{
	for (; *s; s++)
		buf_putc(b, *s == ';' ? ':' : *s);
}

int flame_nest(struct flame_span *s, size_t n, struct flame_tree *t)
{
	size_t open[NEST_MAX];
	/* per open level: its counted start, and its children's counted time;
	 * per level: where the last closed span of the current parent ended */
	uint64_t start[NEST_MAX], child_ns[NEST_MAX], sib_end[NEST_MAX + 1] = {0};
	struct dc_buf path = {};
	int depth = 0, r = 0;

	qsort_safe(s, n, sizeof(*s), span_cmp);
	for (size_t i = 0; i <= n && !r; i++) {
		/* close the open spans that end before this one starts (or all,
		 * at a new thread or the end), emitting each with its self time */
		while (depth > 0) {
			const struct flame_span *top = &s[open[depth - 1]];
			bool same = i < n && s[i].pid == top->pid && s[i].tid == top->tid;
			uint64_t end = top->ts_ns + top->dur_ns,
				 counted = end > start[depth - 1] ? end - start[depth - 1] : 0;

			if (same && s[i].ts_ns + s[i].dur_ns <= end && depth < NEST_MAX &&
			    !span_leaf(top))
				break;
			path.len = 0;
			if (top->root) {
				put_frame(&path, top->root);
				buf_putc(&path, ';');
			}
			/* a name's own ';' would make it frames of its own,
			 * thousands of them from one event */
			for (int d = 0; d < depth; d++) {
				const struct flame_span *e = &s[open[d]];

				if (d)
					buf_putc(&path, ';');
				put_frame(&path, e->layer);
				buf_putc(&path, ':');
				put_frame(&path, e->name);
			}
			if (path.err) {
				r = -ENOMEM;
				break;
			}
			buf_putc(&path, 0);
			r = flame_add(t, path.data, 1,
				      counted > child_ns[depth - 1] ? counted - child_ns[depth - 1]
								    : 0,
				      top->bytes);
			depth--;
			if (end > sib_end[depth])
				sib_end[depth] = end;
			if (depth > 0)
				child_ns[depth - 1] += counted;
		}
		if (i == n || r)
			break;
		if (!depth && (i == 0 || s[i].pid != s[i - 1].pid || s[i].tid != s[i - 1].tid))
			sib_end[0] = 0;
		/* time overlapping an earlier sibling (concurrent block requests)
		 * is counted once, so that children never outgrow their parent */
		open[depth] = i;
		start[depth] = s[i].ts_ns > sib_end[depth] ? s[i].ts_ns : sib_end[depth];
		child_ns[depth] = 0;
		sib_end[depth + 1] = 0;
		depth++;
	}
	buf_free(&path);
	return r;
}

/* --- a minimal JSON reader --- */

struct fjp {
	const char *s, *end;
	char *err;
	size_t errlen;
	int depth;
};

static void ws(struct fjp *p)
{
	while (p->s < p->end && (*p->s == ' ' || *p->s == '\t' || *p->s == '\n' || *p->s == '\r'))
		p->s++;
}

static int fail(struct fjp *p, const char *what)
{
	snprintf(p->err, p->errlen, "%s", what);
	return -EINVAL;
}

static void put_utf8(struct dc_buf *b, uint32_t c)
{
	if (c < 0x80)
		buf_putc(b, (char)c);
	else if (c < 0x800) {
		buf_putc(b, (char)(0xc0 | c >> 6));
		buf_putc(b, (char)(0x80 | (c & 0x3f)));
	} else if (c < 0x10000) {
		buf_putc(b, (char)(0xe0 | c >> 12));
		buf_putc(b, (char)(0x80 | ((c >> 6) & 0x3f)));
		buf_putc(b, (char)(0x80 | (c & 0x3f)));
	} else {
		buf_putc(b, (char)(0xf0 | c >> 18));
		buf_putc(b, (char)(0x80 | ((c >> 12) & 0x3f)));
		buf_putc(b, (char)(0x80 | ((c >> 6) & 0x3f)));
		buf_putc(b, (char)(0x80 | (c & 0x3f)));
	}
}

static int hex4(struct fjp *p, uint32_t *v)
{
	*v = 0;
	if (p->end - p->s < 4)
		return fail(p, "short \\u escape");
	for (int i = 0; i < 4; i++) {
		char c = *p->s++;

		*v = *v * 16 + (uint32_t)(c >= '0' && c <= '9'	 ? c - '0'
					  : c >= 'a' && c <= 'f' ? c - 'a' + 10
					  : c >= 'A' && c <= 'F' ? c - 'A' + 10
								 : 99);
		if (*v > 0xffff)
			return fail(p, "bad \\u escape");
	}
	return 0;
}

static int pstring(struct fjp *p, char **out)
{
	struct dc_buf b = {};

	p->s++; /* the quote */
	while (p->s < p->end && *p->s != '"') {
		char c = *p->s++;

		if (c != '\\') {
			buf_putc(&b, c);
			continue;
		}
		if (p->s >= p->end)
			break;
		c = *p->s++;
		switch (c) {
		case 'n':
			buf_putc(&b, '\n');
			break;
		case 't':
			buf_putc(&b, '\t');
			break;
		case 'r':
			buf_putc(&b, '\r');
			break;
		case 'b':
			buf_putc(&b, '\b');
			break;
		case 'f':
			buf_putc(&b, '\f');
			break;
		case 'u': {
			uint32_t v, lo;

			if (hex4(p, &v) < 0) {
				buf_free(&b);
				return -EINVAL;
			}
			if (v >= 0xd800 && v < 0xdc00 && p->end - p->s >= 6 && p->s[0] == '\\' &&
			    p->s[1] == 'u') {
				p->s += 2;
				if (hex4(p, &lo) < 0) {
					buf_free(&b);
					return -EINVAL;
				}
				if (lo >= 0xdc00 && lo < 0xe000) {
					v = 0x10000 + ((v - 0xd800) << 10) + (lo - 0xdc00);
				} else {
					/* no pair: the high half alone, then the
					 * escape after it as itself (\ud800\u0041
					 * read as U+2441 before) */
					put_utf8(&b, 0xfffd);
					v = lo;
				}
			}
			/* a surrogate alone is no character (and invalid UTF-8) */
			if (v >= 0xd800 && v < 0xe000)
				v = 0xfffd;
			put_utf8(&b, v ? v : 0xfffd); /* no NUL inside our strings */
			break;
		}
		default:
			buf_putc(&b, c);
		}
	}
	if (p->s >= p->end) {
		buf_free(&b);
		return fail(p, "unterminated string");
	}
	p->s++;
	buf_putc(&b, 0);
	if (b.err) {
		buf_free(&b);
		return -ENOMEM;
	}
	*out = b.data;
	return 0;
}

static int pvalue(struct fjp *p, struct fj *v);

static int grow(struct fj *v, size_t *cap, bool keys)
{
	if (v->n < *cap)
		return 0;
	*cap = *cap ? *cap * 2 : 8;
	{
		struct fj *k = realloc(v->kids, *cap * sizeof(*k));

		if (!k)
			return -ENOMEM;
		v->kids = k;
	}
	if (keys) {
		char **k = realloc(v->keys, *cap * sizeof(*k));

		if (!k)
			return -ENOMEM;
		v->keys = k;
	}
	return 0;
}

static int pvalue(struct fjp *p, struct fj *v)
{
	size_t cap = 0;
	int r;

	memset(v, 0, sizeof(*v));
	ws(p);
	if (p->s >= p->end)
		return fail(p, "unexpected end");
	if (++p->depth > 64)
		return fail(p, "nested too deep");
	switch (*p->s) {
	case '{':
	case '[': {
		bool obj = *p->s == '{';
		char close = obj ? '}' : ']';

		v->type = obj ? FJ_OBJ : FJ_ARR;
		p->s++;
		ws(p);
		if (p->s < p->end && *p->s == close) {
			p->s++;
			break;
		}
		for (;;) {
			char *key = NULL;

			ws(p);
			if (obj) {
				if (p->s >= p->end || *p->s != '"')
					return fail(p, "object key expected");
				r = pstring(p, &key);
				if (r < 0)
					return r;
				ws(p);
				if (p->s >= p->end || *p->s != ':') {
					free(key);
					return fail(p, "':' expected");
				}
				p->s++;
			}
			if (grow(v, &cap, obj) < 0) {
				free(key);
				return -ENOMEM;
			}
			if (obj)
				v->keys[v->n] = key;
			r = pvalue(p, &v->kids[v->n]);
			v->n++;
			if (r < 0)
				return r;
			ws(p);
			if (p->s < p->end && *p->s == ',') {
				p->s++;
				continue;
			}
			if (p->s < p->end && *p->s == close) {
				p->s++;
				break;
			}
			return fail(p, "',' or end of container expected");
		}
		break;
	}
	case '"':
		v->type = FJ_STR;
		r = pstring(p, &v->str);
		if (r < 0)
			return r;
		break;
	case 't':
	case 'f':
	case 'n': {
		static const char *const lit[] = {"true", "false", "null"};
		int i = *p->s == 't' ? 0 : *p->s == 'f' ? 1 : 2;
		size_t l = strlen(lit[i]);

		if ((size_t)(p->end - p->s) < l || strncmp(p->s, lit[i], l))
			return fail(p, "bad literal");
		p->s += l;
		v->type = i == 2 ? FJ_NULL : FJ_BOOL;
		v->b = i == 0;
		break;
	}
	default: {
		const char *st = p->s;

		while (p->s < p->end && strchr("+-0123456789.eE", *p->s))
			p->s++;
		if (p->s == st)
			return fail(p, "unexpected character");
		v->type = FJ_NUM;
		v->str = strndup(st, (size_t)(p->s - st));
		if (!v->str)
			return -ENOMEM;
	}
	}
	p->depth--;
	return 0;
}

int fj_parse(const char *text, size_t len, struct fj *out, char *err, size_t errlen)
{
	struct fjp p = {.s = text, .end = text + len, .err = err, .errlen = errlen};
	int r = pvalue(&p, out);

	if (!r) {
		ws(&p);
		if (p.s != p.end)
			r = fail(&p, "trailing characters");
	}
	if (r < 0)
		fj_free(out);
	return r;
}

void fj_free(struct fj *v)
{
	for (size_t i = 0; i < v->n; i++) {
		fj_free(&v->kids[i]);
		if (v->keys)
			free(v->keys[i]);
	}
	free(v->kids);
	free(v->keys);
	free(v->str);
	memset(v, 0, sizeof(*v));
}

const struct fj *fj_get(const struct fj *o, const char *key)
{
	if (!o || o->type != FJ_OBJ)
		return NULL;
	for (size_t i = 0; i < o->n; i++)
		if (!strcmp(o->keys[i], key))
			return &o->kids[i];
	return NULL;
}

const char *fj_str(const struct fj *v)
{
	return v && v->type == FJ_STR ? v->str : NULL;
}

bool fj_u64(const struct fj *v, uint64_t *out)
{
	return v && v->type == FJ_NUM && parse_u64(v->str, strlen(v->str), out);
}

bool fj_us_ns(const struct fj *v, uint64_t *out)
{
	const char *s;
	uint64_t ns = 0;
	int frac = -1, digits = 0;
	double d;

	if (!v || v->type != FJ_NUM)
		return false;
	/* digits, and up to three decimals, exactly: a double holds a
	 * wall-clock microsecond count to about 0.25 µs only */
	for (s = v->str; *s; s++) {
		if (*s == '.' && frac < 0) {
			frac = 0;
			continue;
		}
		if (*s < '0' || *s > '9' || frac >= 3 || ns > UINT64_MAX / 10 - 10)
			break;
		ns = ns * 10 + (uint64_t)(*s - '0');
		digits++;
		if (frac >= 0)
			frac++;
	}
	if (!*s && digits) {
		for (int i = frac < 0 ? 0 : frac; i < 3; i++) {
			if (ns > UINT64_MAX / 10)
				return false; /* past 2^64 ns: no time of ours */
			ns *= 10;
		}
		*out = ns;
		return true;
	}
	/* an exponent, or more decimals: a double, whose conversion is
	 * undefined past 2^64 (8.9e61 came from the fuzzer) */
	if (!fj_double(v, &d) || !(d >= 0) || d * 1000 + 0.5 >= 18446744073709551616.0)
		return false;
	*out = (uint64_t)(d * 1000 + 0.5);
	return true;
}

bool fj_double(const struct fj *v, double *out)
{
	char *e;

	if (!v || v->type != FJ_NUM)
		return false;
	*out = strtod(v->str, &e);
	return *e == 0;
}

// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "tracefmt.h"

#define BATCH_KEEP_BYTES (2u << 20)

static size_t hash_slot(uint64_t v, size_t cap)
{
	return (size_t)((v * 0x9E3779B97F4A7C15ULL) >> 20) & (cap - 1);
}

static bool set_put(uint64_t *slot, size_t cap, uint64_t v)
{
	for (size_t i = hash_slot(v, cap);; i = (i + 1) & (cap - 1)) {
		if (slot[i] == v)
			return false;
		if (!slot[i]) {
			slot[i] = v;
			return true;
		}
	}
}

bool u64set_add(struct u64set *s, uint64_t v)
{
	if (!v)
		return false;
	if ((s->used + 1) * 2 > s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 64;
		uint64_t *n = calloc(cap, sizeof(*n));

		if (!n)
			return false;
		for (size_t i = 0; i < s->cap; i++)
			if (s->slot[i])
				set_put(n, cap, s->slot[i]);
		free(s->slot);
		s->slot = n;
		s->cap = cap;
	}
	if (!set_put(s->slot, s->cap, v))
		return false;
	s->used++;
	return true;
}

bool u64set_has(const struct u64set *s, uint64_t v)
{
	if (!v || !s->cap)
		return false;
	for (size_t i = hash_slot(v, s->cap);; i = (i + 1) & (s->cap - 1)) {
		if (s->slot[i] == v)
			return true;
		if (!s->slot[i])
			return false;
	}
}

void u64set_clear(struct u64set *s)
{
	if (s->slot)
		memset(s->slot, 0, s->cap * sizeof(*s->slot));
	s->used = 0;
}

void u64set_free(struct u64set *s)
{
	free(s->slot);
	*s = (struct u64set){};
}

const char *trace_layer_name(unsigned layer)
{
	switch (layer) {
	case DC_LAYER_SYSCALL:
		return "syscall";
	case DC_LAYER_LIB:
		return "lib";
	case DC_LAYER_VFS:
		return "vfs";
	case DC_LAYER_BLOCK:
		return "block";
	default:
		return "unknown";
	}
}

/* a 64-bit hash as a quoted string of 16 hex digits, built on the stack:
 * one append, not one per character */
static void hex16_json(char out[18], uint64_t v)
{
	static const char hex[] = "0123456789abcdef";

	out[0] = '"';
	for (int i = 0; i < 16; i++)
		out[16 - i] = hex[(v >> (i * 4)) & 15];
	out[17] = '"';
}

static void put_hex16(struct dc_buf *b, uint64_t v)
{
	char s[18];

	hex16_json(s, v);
	buf_put(b, s, sizeof(s));
}

#define LIT(b, s) buf_put((b), (s), sizeof(s) - 1)

/* "dur" in microseconds with the nanoseconds as decimals: Chrome's unit,
 * without the rounding of sub-microsecond calls to 0. */
static void put_us3(struct dc_buf *b, uint64_t ns)
{
	char frac[4] = {(char)('0' + ns / 100 % 10), (char)('0' + ns / 10 % 10),
			(char)('0' + ns % 10), 0};

	buf_put_u64(b, ns / 1000);
	buf_putc(b, '.');
	buf_put(b, frac, 3);
}

/* {"name":<name>,"cat":"dftracer","ph":"M","args":{ ... }}: DFTracer's
 * metadata records; the caller writes the args between open and close. */
static void meta_open(struct trace_batch *b, struct dc_json *j, const char *name)
{
	json_init(j, &b->meta);
	json_obj_begin(j);
	json_key(j, "name");
	json_str(j, name);
	json_key(j, "cat");
	json_str(j, "dftracer");
	json_key(j, "ph");
	json_str(j, "M");
	json_key(j, "args");
	json_obj_begin(j);
}

/* a hash written raw (not through dc_json): the next key needs its comma */
static void meta_hash(struct trace_batch *b, struct dc_json *j, const char *key, uint64_t h)
{
	json_key(j, key);
	put_hex16(&b->meta, h);
	j->first[j->depth] = false;
}

static void meta_close(struct trace_batch *b, struct dc_json *j)
{
	json_obj_end(j);
	json_obj_end(j);
	buf_putc(&b->meta, '\n');
	b->n_meta++;
}

static void meta_host(struct trace_batch *b, const struct trace_host *h)
{
	struct dc_json j;

	meta_open(b, &j, "HH");
	json_key(&j, "name");
	json_str(&j, h->name);
	meta_hash(b, &j, "value", h->hhash);
	meta_close(b, &j);
}

static void meta_file(struct trace_batch *b, const struct trace_host *h, uint64_t fhash,
		      const char *path)
{
	struct dc_json j;

	meta_open(b, &j, "FH");
	meta_hash(b, &j, "hhash", h->hhash);
	json_key(&j, "name");
	json_str(&j, path);
	meta_hash(b, &j, "value", fhash);
	meta_close(b, &j);
}

static void meta_process(struct trace_batch *b, uint32_t pid, const char *comm)
{
	struct dc_json j;

	json_init(&j, &b->meta);
	json_obj_begin(&j);
	json_key(&j, "name");
	json_str(&j, "process_name");
	json_key(&j, "ph");
	json_str(&j, "M");
	json_key(&j, "pid");
	json_u64(&j, pid);
	json_key(&j, "args");
	json_obj_begin(&j);
	json_key(&j, "name");
	json_str(&j, comm);
	json_obj_end(&j);
	json_obj_end(&j);
	buf_putc(&b->meta, '\n');
	b->n_meta++;
}

bool trace_batch_knows_pid(const struct trace_batch *b, uint32_t pid)
{
	return u64set_has(&b->pids, (uint64_t)pid + 1);
}

void trace_batch_add(struct trace_batch *b, const struct trace_host *h, const struct dc_trace_ev *e,
		     const struct trace_names *n, int64_t realtime_off_ns, uint64_t id)
{
	struct dc_buf *o = &b->events;
	uint64_t ts = (uint64_t)((int64_t)e->ts_ns + realtime_off_ns);

	if (!b->host_done) {
		meta_host(b, h);
		hex16_json(b->hhash_json, h->hhash);
		b->host_done = true;
	}
	if (u64set_add(&b->pids, (uint64_t)e->pid + 1) && n->comm)
		meta_process(b, e->pid, n->comm);
	if (n->fhash && n->path && u64set_add(&b->fhashes, n->fhash))
		meta_file(b, h, n->fhash, n->path);

	LIT(o, "{\"id\":");
	buf_put_u64(o, id);
	LIT(o, ",\"name\":");
	/* library functions are named by the binary's symbols: escaped; the
	 * other layers' names are ours */
	if (e->layer == DC_LAYER_LIB) {
		json_escape(o, n->op, strlen(n->op));
	} else {
		buf_putc(o, '"');
		buf_put(o, n->op, strlen(n->op));
		buf_putc(o, '"');
	}
	LIT(o, ",\"cat\":\"");
	{
		const char *cat = n->cat ? n->cat : trace_layer_name(e->layer);

		buf_put(o, cat, strlen(cat));
	}
	LIT(o, "\",\"pid\":");
	buf_put_u64(o, e->pid);
	LIT(o, ",\"tid\":");
	buf_put_u64(o, e->tid);
	/* nanoseconds as decimals, as dur: the multi-level view nests spans
	 * by time containment, which whole microseconds would break */
	LIT(o, ",\"ts\":");
	put_us3(o, ts);
	LIT(o, ",\"dur\":");
	put_us3(o, e->dur_ns);
	LIT(o, ",\"ph\":\"X\",\"args\":{\"hhash\":");
	buf_put(o, b->hhash_json, sizeof(b->hhash_json));
	if (n->fhash) {
		LIT(o, ",\"fhash\":");
		put_hex16(o, n->fhash);
	}
	if (e->fd >= 0) {
		LIT(o, ",\"fd\":");
		buf_put_i64(o, e->fd);
	}
	LIT(o, ",\"size\":");
	buf_put_u64(o, e->size);
	if (e->flags & DC_TEV_OFFSET) {
		LIT(o, ",\"offset\":");
		buf_put_u64(o, e->offset);
	}
	if (e->flags & DC_TEV_DEV) {
		/* major:minor, as /proc/partitions and lsblk name the device */
		LIT(o, ",\"dev\":\"");
		buf_put_u64(o, e->dev >> 20);
		buf_putc(o, ':');
		buf_put_u64(o, e->dev & 0xfffff);
		buf_putc(o, '"');
		LIT(o, ",\"queue_us\":");
		buf_put_u64(o, e->queue_us);
	}
	LIT(o, ",\"ret\":");
	buf_put_i64(o, e->ret);
	LIT(o, ",\"weight\":");
	buf_put_u64(o, e->weight);
	LIT(o, ",\"cpu\":");
	buf_put_u64(o, e->cpu);
	LIT(o, ",\"cgroup_id\":");
	buf_put_u64(o, e->cgroup_id);
	if (e->flags & DC_TEV_SLOW)
		LIT(o, ",\"slow\":true");
	if (e->flags & DC_TEV_FULL)
		LIT(o, ",\"full\":true");
	LIT(o, "}}\n");
	b->n_events++;
	b->weight_sum += e->weight;
}

int trace_batch_seal(struct trace_batch *b, int level, struct dc_buf *out, size_t *raw_len)
{
	size_t raw = b->meta.len + b->events.len, bound = ZSTD_compressBound(raw), n;
	ZSTD_inBuffer in;
	ZSTD_outBuffer zo;
	ZSTD_CCtx *cc;
	int r = 0;

	*raw_len = raw;
	buf_reset(out);
	/* whatever fails, the batch is emptied below: a buffer's error is
	 * latched until its reset, and a batch kept would fail every seal
	 * after, and count its events again in each */
	if (b->meta.err || b->events.err || buf_grow(out, bound) < 0) {
		r = -ENOMEM;
		goto reset;
	}
	cc = ZSTD_createCCtx();
	if (!cc) {
		r = -ENOMEM;
		goto reset;
	}
	ZSTD_CCtx_setParameter(cc, ZSTD_c_compressionLevel, level);
	ZSTD_CCtx_setParameter(cc, ZSTD_c_checksumFlag, 1);
	ZSTD_CCtx_setPledgedSrcSize(cc, raw);
	zo = (ZSTD_outBuffer){out->data, out->cap, 0};
	/* metadata, then events: one frame, so one decompression gives both in order */
	in = (ZSTD_inBuffer){b->meta.data, b->meta.len, 0};
	n = ZSTD_compressStream2(cc, &zo, &in, ZSTD_e_continue);
	if (!ZSTD_isError(n)) {
		in = (ZSTD_inBuffer){b->events.data, b->events.len, 0};
		n = ZSTD_compressStream2(cc, &zo, &in, ZSTD_e_end);
	}
	if (ZSTD_isError(n) || n != 0)
		r = -EIO;
	else
		out->len = zo.pos;
	ZSTD_freeCCtx(cc);
reset:
	/* a burst's buffers go back to the system, not into the agent's RSS
	 * for the rest of its life */
	if (b->events.cap > BATCH_KEEP_BYTES)
		buf_free(&b->events);
	if (b->meta.cap > BATCH_KEEP_BYTES)
		buf_free(&b->meta);
	buf_reset(&b->meta);
	buf_reset(&b->events);
	u64set_clear(&b->pids);
	u64set_clear(&b->fhashes);
	b->n_events = b->n_meta = b->weight_sum = 0;
	b->host_done = false;
	return r;
}

void trace_batch_free(struct trace_batch *b)
{
	buf_free(&b->meta);
	buf_free(&b->events);
	u64set_free(&b->pids);
	u64set_free(&b->fhashes);
}

// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "filepath.h"

int filepath_join(const char *comps, size_t len, bool truncated, char *out, size_t outlen)
{
	size_t starts[4096], n = 0, o = 0;

	if (!outlen)
		return -ENAMETOOLONG;
	out[0] = 0;
	/* the kernel's buffer may end without a NUL when it was cut short */
	for (size_t i = 0; i < len && n < sizeof(starts) / sizeof(starts[0]);) {
		const char *z = memchr(comps + i, 0, len - i);
		size_t l = z ? (size_t)(z - (comps + i)) : len - i;

		if (l)
			starts[n++] = i;
		i += l + 1;
	}
	if (truncated) {
		if (outlen < 4)
			return -ENAMETOOLONG;
		memcpy(out, "...", 4);
		o = 3;
	}
	if (!n) {
		if (o + 2 > outlen)
			return -ENAMETOOLONG;
		out[o++] = '/';
		out[o] = 0;
		return (int)o;
	}
	while (n--) {
		const char *c = comps + starts[n];
		size_t l = strnlen(c, len - starts[n]);

		if (o + 1 + l + 1 > outlen) {
			out[o] = 0;
			return -ENAMETOOLONG;
		}
		out[o++] = '/';
		memcpy(out + o, c, l);
		o += l;
	}
	out[o] = 0;
	return (int)o;
}

uint64_t filepath_hash(const char *path)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	for (const unsigned char *p = (const unsigned char *)path; *p; p++) {
		h ^= *p;
		h *= 0x100000001b3ULL;
	}
	return h;
}

void filepath_hash_hex(uint64_t h, char out[17])
{
	snprintf(out, 17, "%016" PRIx64, h);
}

/* the generation too: a loop that creates and deletes files on ext4 gives
 * each the same inode number, and thousands of names in one chain */
static size_t slot_of(const struct fname_table *t, uint32_t dev, uint64_t ino, uint32_t igen)
{
	uint64_t k =
	    (ino ^ ((uint64_t)dev << 40) ^ dev ^ ((uint64_t)igen << 20)) * 0x9E3779B97F4A7C15ULL;

	return (size_t)(k >> 17) & (t->cap - 1);
}

/* The first empty slot of the key's probe sequence (the table is never
 * full: at most half). */
static size_t free_slot(const struct fname_table *t, uint32_t dev, uint64_t ino, uint32_t igen)
{
	size_t s = slot_of(t, dev, ino, igen);

	while (t->slots[s].path)
		s = (s + 1) & (t->cap - 1);
	return s;
}

void fname_table_init(struct fname_table *t, size_t max)
{
	*t = (struct fname_table){.max = max ? max : 1};
}

void fname_table_free(struct fname_table *t)
{
	for (size_t i = 0; i < t->cap; i++)
		free(t->slots[i].path);
	free(t->slots);
	*t = (struct fname_table){.max = t->max};
}

static struct fname *find(struct fname_table *t, uint32_t dev, uint64_t ino, uint32_t igen)
{
	if (!t->cap)
		return NULL;
	for (size_t i = slot_of(t, dev, ino, igen), k = 0; k < t->cap;
	     i = (i + 1) & (t->cap - 1), k++) {
		struct fname *f = &t->slots[i];

		if (!f->path)
			return NULL;
		if (f->dev == dev && f->ino == ino && f->igen == igen)
			return f;
	}
	return NULL;
}

/* Rehash into cap slots, keeping entries used at or after keep_from. */
static int rehash(struct fname_table *t, size_t cap, uint64_t keep_from)
{
	struct fname *old = t->slots;
	size_t ocap = t->cap;

	t->slots = calloc(cap, sizeof(*t->slots));
	if (!t->slots) {
		t->slots = old;
		return -ENOMEM;
	}
	t->cap = cap;
	t->used = 0;
	for (size_t i = 0; i < ocap; i++) {
		struct fname *f = &old[i];

		if (!f->path)
			continue;
		if (f->last_window < keep_from) {
			free(f->path);
			continue;
		}
		t->slots[free_slot(t, f->dev, f->ino, f->igen)] = *f;
		t->used++;
	}
	free(old);
	return 0;
}

int fname_put(struct fname_table *t, uint32_t dev, uint64_t ino, uint32_t igen, const char *path,
	      bool truncated, uint64_t window)
{
	struct fname *f = find(t, dev, ino, igen);
	char *copy = strdup(path);

	if (!copy)
		return -ENOMEM;
	if (f) {
		free(f->path);
		f->path = copy;
		f->truncated = truncated;
		f->hash = filepath_hash(path);
		f->last_window = window;
		return 0;
	}
	/* at the bound or half full: forget names unused for two windows first */
	if (t->cap && (t->used + 1 > t->max || (t->used + 1) * 2 > t->cap)) {
		int r = rehash(t, t->cap, window > 1 ? window - 1 : 0);

		if (r < 0) {
			free(copy);
			return r;
		}
	}
	if (t->used + 1 > t->max) {
		free(copy);
		return -ENOSPC;
	}
	/* at most half full, so probes stay short */
	if ((t->used + 1) * 2 > t->cap) {
		int r = rehash(t, t->cap ? t->cap * 2 : 64, 0);

		if (r < 0) {
			free(copy);
			return r;
		}
	}
	t->slots[free_slot(t, dev, ino, igen)] = (struct fname){.dev = dev,
								.ino = ino,
								.igen = igen,
								.truncated = truncated,
								.hash = filepath_hash(path),
								.last_window = window,
								.path = copy};
	t->used++;
	return 0;
}

const struct fname *fname_get(struct fname_table *t, uint32_t dev, uint64_t ino, uint32_t igen,
			      uint64_t window)
{
	struct fname *f = find(t, dev, ino, igen);

	if (f && f->last_window < window)
		f->last_window = window;
	return f;
}

bool fhash_first(struct fhash_seen *s, uint64_t h)
{
	uint64_t *w = &s->slot[fhash_set(h) * FHASH_SEEN_WAYS];
	int i;

	/* 0 marks an empty way; a path hashing to 0 is published every time */
	for (i = 0; i < FHASH_SEEN_WAYS - 1 && !(w[i] == h && h); i++)
		;
	/* most recent first: h moves to way 0, the ways before it down one
	 * (not found: the last way, the least recent, is displaced) */
	bool found = w[i] == h && h;

	memmove(w + 1, w, (size_t)i * sizeof(*w));
	w[0] = h;
	return !found;
}

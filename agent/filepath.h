/* SPDX-License-Identifier: Apache-2.0 */
#ifndef DC_FILEPATH_H
#define DC_FILEPATH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * File names for the file layer (bpf/file.bpf.c). The kernel sends each
 * path as its components leaf first ("c\0b\0a\0" for /a/b/c); the agent
 * turns that into the path and its 64-bit hash, and keeps a table from the
 * file's identity (device, inode, generation) to its name for the records of the
 * windows that use it. Pure: no I/O, unit-tested.
 */

/* Build "/a/b/c" into out from leaf-first components; a truncated walk
 * (deeper than the kernel's limit) starts with "...". Returns the length, or
 * -ENAMETOOLONG when out is too small (out then holds a prefix). */
int filepath_join(const char *comps, size_t len, bool truncated, char *out, size_t outlen);

/* FNV-1a, 64 bits, of the path bytes: the "fhash" of records and traces.
 * Stable across hosts and runs, so one file has one hash on every node. */
uint64_t filepath_hash(const char *path);

/* "0123456789abcdef": JSON numbers above 2^53 lose bits in most readers */
void filepath_hash_hex(uint64_t h, char out[17]);

struct fname {
	uint64_t ino;
	uint32_t dev;
	uint32_t igen; /* the inode's generation: a reused inode number is another file */
	bool truncated;
	uint64_t hash;
	uint64_t last_window; /* the last window whose records used or named it */
	char *path;
};

/*
 * (device, inode, generation) -> name. Open addressing; before growing, forgets names
 * not used in the last two windows: the kernel names a file again in every
 * window it is used in, so a forgotten name comes back when needed.
 */
struct fname_table {
	struct fname *slots;
	size_t cap, used;
	size_t max; /* never more entries than this; beyond, a name is not kept */
};

void fname_table_init(struct fname_table *t, size_t max);
void fname_table_free(struct fname_table *t);
/* Insert or replace; -ENOMEM, or -ENOSPC at max */
int fname_put(struct fname_table *t, uint32_t dev, uint64_t ino, uint32_t igen, const char *path,
	      bool truncated, uint64_t window);
/* NULL when unknown; marks the entry used in window */
const struct fname *fname_get(struct fname_table *t, uint32_t dev, uint64_t ino, uint32_t igen,
			      uint64_t window);

/* Hashes already published this run: sets of FHASH_SEEN_WAYS, the least
 * recently offered way displaced, so a name is published again only when
 * its set has seen that many others since (a direct-mapped table of the
 * same size republished two hot files sharing a slot at every turn:
 * among 300 files, even odds of such a pair). A dictionary consumer
 * absorbs a repeat. */
#define FHASH_SEEN_SLOTS 65536
#define FHASH_SEEN_WAYS	 4
struct fhash_seen {
	uint64_t slot[FHASH_SEEN_SLOTS];
};
/* the set h falls in */
static inline size_t fhash_set(uint64_t h)
{
	return (size_t)((h * 0x9E3779B97F4A7C15ULL) >> 50);
}
/* true the first time h is offered (and after h was displaced) */
bool fhash_first(struct fhash_seen *s, uint64_t h);

#endif

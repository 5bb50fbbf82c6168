/* SPDX-License-Identifier: Apache-2.0 */
#ifndef DC_SPOOL_H
#define DC_SPOOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "json.h"

/*
 * The disk spool: a directory of segment files "<seq>.seg", seq increasing
 * across runs, so replay order is file-name order. A segment is written to
 * a temporary name, optionally fsynced, and renamed: a crash leaves either
 * the whole segment or a ".tmp" that the next start deletes, never a torn
 * segment under a final name. A segment that fails verification is renamed
 * to "<seq>.seg.bad" (set aside, not deleted: an operator may want it).
 */
struct spool;

struct spool_entry {
	uint64_t seq;
	uint64_t bytes;
};

int spool_open(const char *dir, bool fsync, struct spool **ret);
struct spool *spool_free(struct spool *s);
const char *spool_dir(const struct spool *s);

/* Segments found at open, in seq order (owned by the spool). */
const struct spool_entry *spool_existing(const struct spool *s, size_t *n);
/* Sequence numbers stay below this: a name above it is not taken for a
 * segment, so that the next one never wraps around to an older name. */
#define SPOOL_SEQ_MAX (UINT64_MAX / 2)
/* Entries named like a segment that are none (a directory, a sign, a
 * number above SPOOL_SEQ_MAX), left alone at open. */
size_t spool_skipped(const struct spool *s);
/* errno of the check at open that the agent can write the directory, or 0 */
int spool_unwritable(const struct spool *s);
uint64_t spool_next_seq(struct spool *s);

/* A directory removed while open is made again at its path by the next
 * write (refused, -EPERM, if what is then at the path is not the agent's
 * alone); how many times that happened. */
unsigned spool_recreated(const struct spool *s);
/* Whether the directory held open has been removed (until a write makes it
 * again): the files of its segments went with it. */
bool spool_gone(const struct spool *s);
int spool_write(struct spool *s, uint64_t seq, const char *data, size_t len);
/* A segment file's bytes into out; -EINVAL if its name holds something
 * other than a regular file. */
int spool_read(struct spool *s, uint64_t seq, struct dc_buf *out);
int spool_remove(struct spool *s, uint64_t seq);
int spool_set_aside(struct spool *s, uint64_t seq);
void spool_path(const struct spool *s, uint64_t seq, char *out, size_t len);

#endif

// SPDX-License-Identifier: Apache-2.0
#include <bpf/bpf.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "drain.h"
#include "macro.h"

/* Keys per batch call: bounds the value buffer (keys x CPUs x value size). */
#define DRAIN_CHUNK 1024

static int drain_iterate(int fd, size_t ksz, size_t vstride, int ncpus, drain_cb cb, void *ctx)
{
	_cleanup_free_ void *key = malloc(ksz), *next = malloc(ksz);
	_cleanup_free_ void *val = malloc(vstride * (size_t)ncpus);
	int n = 0, r;

	if (!key || !next || !val)
		return -ENOMEM;
	/* nothing writes the map any more, so walking then deleting is safe */
	r = bpf_map_get_next_key(fd, NULL, next);
	while (!r) {
		memcpy(key, next, ksz);
		if (!bpf_map_lookup_elem(fd, key, val)) {
			r = cb(key, val, ncpus, ctx);
			if (r < 0)
				return r;
			n++;
		}
		r = bpf_map_get_next_key(fd, key, next);
		bpf_map_delete_elem(fd, key);
	}
	if (errno != ENOENT)
		return -errno;
	return n;
}

int drain_hash(int fd, size_t ksz, size_t vsz, bool percpu, int ncpus, size_t max_entries,
	       drain_cb cb, void *ctx, bool *used_batch)
{
	size_t vstride = percpu ? (vsz + 7) / 8 * 8 : vsz;
	size_t chunk = max_entries < DRAIN_CHUNK ? max_entries : DRAIN_CHUNK;
	int cpus = percpu ? ncpus : 1;
	_cleanup_free_ void *keys = NULL, *vals = NULL;
	__u64 in = 0, out = 0;
	bool first = true;
	int n = 0;

	LIBBPF_OPTS(bpf_map_batch_opts, opts);

	if (chunk == 0)
		chunk = 1;
	keys = malloc(ksz * chunk);
	vals = malloc(vstride * (size_t)cpus * chunk);
	if (!keys || !vals)
		return -ENOMEM;
	*used_batch = true;
	for (;;) {
		__u32 count = (__u32)chunk;
		int r = bpf_map_lookup_and_delete_batch(fd, first ? NULL : &in, &out, keys, vals,
							&count, &opts);
		int err = r < 0 ? -errno : 0;

		for (__u32 i = 0; i < count; i++) {
			int c = cb((char *)keys + i * ksz,
				   (char *)vals + i * vstride * (size_t)cpus, cpus, ctx);
			if (c < 0)
				return c;
			n++;
		}
		if (err == -ENOENT)
			return n;
		if (err == -ENOSPC && count == 0) {
			/* one hash bucket holds more keys than a chunk: grow and retry */
			void *k2, *v2;

			chunk *= 2;
			k2 = realloc(keys, ksz * chunk);
			if (!k2)
				return -ENOMEM;
			keys = k2;
			v2 = realloc(vals, vstride * (size_t)cpus * chunk);
			if (!v2)
				return -ENOMEM;
			vals = v2;
			continue;
		}
		if (err && first && count == 0 &&
		    (err == -EINVAL || err == -ENOTSUP || err == -EOPNOTSUPP)) {
			*used_batch = false;
			return drain_iterate(fd, ksz, vstride, cpus, cb, ctx);
		}
		if (err)
			return err;
		in = out;
		first = false;
	}
}

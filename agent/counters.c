// SPDX-License-Identifier: Apache-2.0
#include <bpf/bpf.h>
#include <errno.h>
#include <stdlib.h>

#include "counters.h"
#include "macro.h"

int percpu_counters_delta(struct bpf_map *map, unsigned n, int ncpus, uint64_t *prev, uint64_t *out)
{
	_cleanup_free_ __u64 *vals = calloc((size_t)ncpus, sizeof(__u64));
	int fd = bpf_map__fd(map);

	if (!vals)
		return -ENOMEM;
	for (__u32 i = 0; i < n; i++) {
		uint64_t sum = 0;

		if (bpf_map_lookup_elem(fd, &i, vals)) {
			out[i] = 0;
			continue;
		}
		for (int c = 0; c < ncpus; c++)
			sum += vals[c];
		out[i] = sum - prev[i];
		prev[i] = sum;
	}
	return 0;
}

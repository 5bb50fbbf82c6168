// SPDX-License-Identifier: Apache-2.0
/*
 * The agent's user-space cost per kept trace event: trace_batch_add() for
 * N events (64 processes, each on its own file, system-call layer) sealed
 * into a zstd frame every 8192 events, as agent/traces.c does per window.
 * The event path is most of the agent's own CPU under the default
 * configuration (traces kept 1 in 100): run it under
 * `valgrind --tool=callgrind` for instruction counts that do not move with
 * the machine's noise.
 *
 *   tracefmt_bench [EVENTS [ZSTD_LEVEL]]   prints "EVENTS NS_TOTAL NS_PER_EVENT BYTES"
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "clock.h"
#include "json.h"
#include "tracefmt.h"

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 200000;
	int level = argc > 2 ? atoi(argv[2]) : 3;
	struct trace_host h = {"bench-host", 0x1234567890abcdefULL};
	struct trace_batch b = {};
	struct dc_buf out = {};
	unsigned long long bytes = 0;
	long long t0;

	t0 = now_ns();
	for (long i = 0; i < n; i++) {
		uint32_t pid = 1000 + (uint32_t)(i % 64);
		struct dc_trace_ev e = {
		    .version = DC_TRACE_VERSION,
		    .layer = DC_LAYER_SYSCALL,
		    .op = 18,
		    .cpu = (uint16_t)(i & 1),
		    .flags = DC_TEV_FILE,
		    .pid = pid,
		    .tid = pid,
		    .ts_ns = 1000000000ULL + (uint64_t)i * 1170,
		    .dur_ns = 480 + (uint64_t)(i % 97),
		    .cgroup_id = 4242,
		    .ino = 77000 + pid,
		    .dev = 8 << 20 | 1,
		    .fd = 3,
		    .offset = (uint64_t)(i / 64) * 4096,
		    .size = 4096,
		    .ret = 4096,
		    .weight = 100,
		};
		struct trace_names nm = {"pwrite64", NULL, "bench-proc",
					 0x9e3779b97f4a7c15ULL ^ pid, "/dev/shm/bench/file"};
		size_t raw;

		trace_batch_add(&b, &h, &e, &nm, 1700000000LL * 1000000000LL, (uint64_t)i);
		if ((i + 1) % 8192 == 0 || i + 1 == n) {
			buf_reset(&out);
			if (trace_batch_seal(&b, level, &out, &raw) < 0) {
				fprintf(stderr, "tracefmt_bench: seal failed\n");
				return 1;
			}
			bytes += out.len;
		}
	}
	t0 = now_ns() - t0;
	printf("%ld %lld %.1f %llu\n", n, t0, (double)t0 / (double)n, bytes);
	trace_batch_free(&b);
	buf_free(&out);
	return 0;
}

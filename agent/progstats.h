/* SPDX-License-Identifier: Apache-2.0 */
#ifndef DC_PROGSTATS_H
#define DC_PROGSTATS_H

#include <bpf/libbpf.h>
#include <stdint.h>

/*
 * Events the kernel did not run a program for: a tracing program is skipped
 * when the same program is already running on that CPU (an interrupt's
 * block completion arriving while the program runs for another request in
 * task context, for instance). The kernel counts these per program
 * (bpf_prog_info.recursion_misses, 5.12+); the agent publishes them, since
 * they are calls or requests it did not see.
 */
uint64_t progs_recursion_misses(struct bpf_object *obj);

#endif

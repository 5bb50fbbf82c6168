/* SPDX-License-Identifier: Apache-2.0 */
#ifndef DC_COMMON_BPF_H
#define DC_COMMON_BPF_H

/*
 * Every shared counter is bumped with an atomic add, per-CPU maps included:
 * tracing programs run with migration disabled but stay preemptible on
 * CONFIG_PREEMPTION kernels, so two threads of one process on one CPU can
 * interleave a plain read-modify-write and lose an increment. The counts are
 * promised exact, so the lock prefix is paid (measured in bench/).
 */
#define dc_add(p, v) __sync_fetch_and_add((p), (v))

#define DC_SEC_LICENSE char LICENSE[] SEC("license") = "GPL"

#endif

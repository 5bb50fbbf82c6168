/* SPDX-License-Identifier: Apache-2.0 */
#ifndef DC_COMMON_BPF_H
#define DC_COMMON_BPF_H

/*
 * Counter updates. A per-CPU value is only written by programs on its CPU,
 * but tracing programs run with migration disabled, not preemption: on a
 * preemptible kernel (full, lazy, RT) two threads of one process on one CPU
 * can interleave a plain read-modify-write and lose an increment. There, and
 * for shared maps, the lock prefix is paid. On "none" and "voluntary"
 * kernels a BPF program has no preemption point and plain adds are exact;
 * the agent sets plain_updates from the detected model (agent/preempt.h).
 * The flag is .rodata: the verifier drops the branch not taken.
 */
extern const volatile bool plain_updates;
#define dc_add(p, v)                                    \
	do {                                            \
		if (plain_updates)                      \
			*(p) += (v);                    \
		else                                    \
			__sync_fetch_and_add((p), (v)); \
	} while (0)

#define DC_SEC_LICENSE char LICENSE[] SEC("license") = "GPL"

#endif

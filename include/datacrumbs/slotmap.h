/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A slot map: per-window aggregation whose values the agent reads in place.
 *
 * A hash maps each key to a slot, once for the key's life (not per window);
 * the values live in an mmap-able array, two halves (the window being
 * filled and the one being drained), each with one region per CPU (per-CPU
 * layout) or one shared region. Closing a window flips the half in `seq`
 * and waits for an RCU grace period; draining reads the idle half from
 * memory, in slot order, and zeroes what it read. No per-window hash walk:
 * that walk alone costs ~300 ns per key in the kernel whatever the value
 * size (bench/drainbench floor), which is what kept 100,000 keys from
 * draining in 20 ms.
 *
 * The values are half x NAME_half + slot x regions + region, each half
 * starting on a page: the slots in use are a prefix of each half, and the
 * agent maps no more than those prefixes (its RSS follows the keys, not
 * maps.max_keys), reading each in memory order.
 *
 * Slots the agent gives back (keys idle for two windows, or of processes
 * that exited; agent/slotmap.c explains why that is safe) go to a ring in
 * an mmap-able array that it fills by plain stores, with no system call
 * per slot; programs take them by compare-and-swap on free_head. Positions
 * run over twice the ring's size (NAME_max), so that a full ring is told
 * from an empty one. A program that took a slot and lost the race to
 * insert its key gives it back through a queue map, taken from next.
 * Shared by bpf/slotmap.bpf.h and agent/slotmap.c.
 */
#ifndef DATACRUMBS_SLOTMAP_H
#define DATACRUMBS_SLOTMAP_H

#ifndef __bpf__
#include <linux/types.h>
#endif

struct dc_slot_state {
	__u32 seq; /* window number: bit 0 is the half of the values being filled */
	__u32 hi;  /* slots handed out from the never-used range so far (may pass max) */
	/* Raised by the agent once keys it deleted from the index are past a
	 * grace period: a hint taken under an older gen may name a slot whose
	 * key is gone (agent/slotmap.c, "Hints"). */
	__u32 gen;
	__u32 free_head; /* ring position programs take the next slot from */
	__u32 free_tail; /* ring position the agent puts the next slot at */
	__u32 pad;
};

/*
 * A program's memory of where a key lives, kept where the program keeps
 * per-thread state anyway (the system-call stash in task storage): valid
 * while gen is the map's and tag is the caller's. The caller guarantees that
 * a (thread, tag) pair names one key as long as its hints are kept: it
 * clears them when anything else in the key changes (the cgroup).
 */
struct dc_slot_hint {
	__u32 gen;
	__u32 slot;
	__u32 tag; /* 0: empty */
};

#define DC_SLOT_NONE 0xFFFFFFFFu

#endif

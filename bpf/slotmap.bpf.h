/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Slot maps (include/datacrumbs/slotmap.h): a per-window aggregation the
 * agent drains by reading memory, not by walking a hash.
 *
 * DC_SLOT_MAP(name, key_t, val_t) declares the maps and name_value(key),
 * which returns the key's value in the window being filled (zeroed on its
 * first use), or NULL when no slot is left: the caller counts that.
 *
 * A key keeps its slot across windows, so the common call is one hash
 * lookup and one array lookup, as many as the per-window hash it replaces.
 * A new key takes a slot from the queue of slots the agent freed, else the
 * next never-used one; its key is written before it is published in the
 * index, so that whoever finds the slot finds its key. Two CPUs inserting
 * the same key: the loser gives its slot back and uses the winner's.
 *
 * Per-CPU layout: each CPU writes its own region, so the plain adds of
 * common.bpf.h stay exact where the kernel does not preempt BPF programs.
 */
#ifndef DC_SLOTMAP_BPF_H
#define DC_SLOTMAP_BPF_H

#include "datacrumbs/slotmap.h"

#define DC_SLOT_MAP(name, key_t, val_t)                                                      \
	const volatile __u32 name##_max = 1;	 /* slots, set before load */                \
	const volatile __u32 name##_regions = 1; /* 1 shared, else one per CPU */            \
	const volatile __u32 name##_half = 1;	 /* elements per half of the values */       \
	struct {                                                                             \
		__uint(type, BPF_MAP_TYPE_HASH);                                             \
		__uint(max_entries, 1);                                                      \
		__type(key, key_t);                                                          \
		__type(value, __u32);                                                        \
	} name##_idx SEC(".maps");                                                           \
	struct {                                                                             \
		__uint(type, BPF_MAP_TYPE_ARRAY);                                            \
		__uint(map_flags, BPF_F_MMAPABLE);                                           \
		__uint(max_entries, 1);                                                      \
		__type(key, __u32);                                                          \
		__type(value, key_t);                                                        \
	} name##_keys SEC(".maps");                                                          \
	struct {                                                                             \
		__uint(type, BPF_MAP_TYPE_ARRAY);                                            \
		__uint(map_flags, BPF_F_MMAPABLE);                                           \
		__uint(max_entries, 1);                                                      \
		__type(key, __u32);                                                          \
		__type(value, val_t);                                                        \
	} name##_vals SEC(".maps");                                                          \
	struct {                                                                             \
		__uint(type, BPF_MAP_TYPE_QUEUE);                                            \
		__uint(max_entries, 1);                                                      \
		__type(value, __u32);                                                        \
	} name##_free SEC(".maps");                                                          \
	struct {                                                                             \
		__uint(type, BPF_MAP_TYPE_ARRAY);                                            \
		__uint(map_flags, BPF_F_MMAPABLE);                                           \
		__uint(max_entries, 1);                                                      \
		__type(key, __u32);                                                          \
		__type(value, struct dc_slot_state);                                         \
	} name##_state SEC(".maps");                                                         \
	/* never read by a program: the agent updates it to wait for a grace                 \
	 * period (a map-of-maps update does, maybe_wait_bpf_programs()) */                  \
	struct name##_barrier_inner {                                                        \
		__uint(type, BPF_MAP_TYPE_ARRAY);                                            \
		__uint(max_entries, 1);                                                      \
		__type(key, __u32);                                                          \
		__type(value, __u32);                                                        \
	};                                                                                   \
	struct {                                                                             \
		__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);                                    \
		__uint(max_entries, 1);                                                      \
		__type(key, __u32);                                                          \
		__array(values, struct name##_barrier_inner);                                \
	} name##_barrier SEC(".maps");                                                       \
                                                                                             \
	static __always_inline __attribute__((unused))                                       \
	__u32 name##_alloc(struct dc_slot_state *st, const key_t *key)                       \
	{                                                                                    \
		__u32 s, *sp;                                                                \
		key_t *k;                                                                    \
                                                                                             \
		if (bpf_map_pop_elem(&name##_free, &s)) {                                    \
			/* check first: failed takes must not run hi around */               \
			if (*(volatile __u32 *)&st->hi >= name##_max)                        \
				return DC_SLOT_NONE;                                         \
			s = __sync_fetch_and_add(&st->hi, 1);                                \
			if (s >= name##_max)                                                 \
				return DC_SLOT_NONE;                                         \
		}                                                                            \
		k = bpf_map_lookup_elem(&name##_keys, &s);                                   \
		if (!k)                                                                      \
			return DC_SLOT_NONE;                                                 \
		*k = *key;                                                                   \
		if (!bpf_map_update_elem(&name##_idx, key, &s, BPF_NOEXIST))                 \
			return s;                                                            \
		bpf_map_push_elem(&name##_free, &s, 0);                                      \
		sp = bpf_map_lookup_elem(&name##_idx, key);                                  \
		return sp ? *sp : DC_SLOT_NONE;                                              \
	}                                                                                    \
                                                                                             \
	static __always_inline __attribute__((unused)) val_t *name##_value(const key_t *key) \
	{                                                                                    \
		__u32 zero = 0, s, *sp, i;                                                   \
		struct dc_slot_state *st = bpf_map_lookup_elem(&name##_state, &zero);        \
                                                                                             \
		if (!st)                                                                     \
			return NULL;                                                         \
		sp = bpf_map_lookup_elem(&name##_idx, key);                                  \
		s = sp ? *sp : name##_alloc(st, key);                                        \
		if (s >= name##_max)                                                         \
			return NULL;                                                         \
		i = (*(volatile __u32 *)&st->seq & 1) * name##_half + s * name##_regions;    \
		if (name##_regions > 1)                                                      \
			i += bpf_get_smp_processor_id();                                     \
		return bpf_map_lookup_elem(&name##_vals, &i);                                \
	}

#endif

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
 * A new key takes a slot from the ring of slots the agent freed (one
 * compare-and-swap), else from the queue of slots programs gave back, else
 * the next never-used one; its key is written before it is published in
 * the index, so that whoever finds the slot finds its key. Two CPUs
 * inserting the same key: the loser gives its slot back (to the queue) and
 * uses the winner's.
 *
 * Per-CPU layout: each CPU writes its own region, so the plain adds of
 * common.bpf.h stay exact where the kernel does not preempt BPF programs.
 */
#ifndef DC_SLOTMAP_BPF_H
#define DC_SLOTMAP_BPF_H

#include "datacrumbs/slotmap.h"

/* No seeding: a plain index entry is its slot alone. */
#define DC_SLOT_NO_SEED(key, ix) ((void)0)

#define DC_SLOT_MAP(name, key_t, val_t) DC_SLOT_MAP_IDX(name, key_t, val_t, __u32, DC_SLOT_NO_SEED)

/*
 * The same with an index entry of type idx_t, whose first member is the
 * __u32 slot: what a key needs across windows (a file's last position)
 * rides in the entry the program looks up anyway, one hash lookup instead
 * of two. seed(key, idx_t *) fills a new entry before it is published.
 */
#define DC_SLOT_MAP_IDX(name, key_t, val_t, idx_t, seed)                                     \
	const volatile __u32 name##_max = 1;	 /* slots, set before load */                \
	const volatile __u32 name##_regions = 1; /* 1 shared, else one per CPU */            \
	const volatile __u32 name##_half = 1;	 /* elements per half of the values */       \
	struct {                                                                             \
		__uint(type, BPF_MAP_TYPE_HASH);                                             \
		__uint(max_entries, 1);                                                      \
		__type(key, key_t);                                                          \
		__type(value, idx_t);                                                        \
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
		__uint(type, BPF_MAP_TYPE_ARRAY);                                            \
		__uint(map_flags, BPF_F_MMAPABLE);                                           \
		__uint(max_entries, 1);                                                      \
		__type(key, __u32);                                                          \
		__type(value, __u64); /* an array element is 8 bytes anyway */               \
	} name##_ring SEC(".maps");                                                          \
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
	/* a slot from the agent's ring: 0, or -1 when it looks empty or another             \
	 * CPU took the same one first (rare: the caller falls back to the                   \
	 * queue and the never-used range; the slot stays for the next) */                   \
	static __always_inline                                                               \
	    __attribute__((unused)) int name##_ring_take(struct dc_slot_state *st, __u32 *s) \
	{                                                                                    \
		__u32 h = *(volatile __u32 *)&st->free_head;                                 \
		__u32 t = *(volatile __u32 *)&st->free_tail;                                 \
		__u32 ix;                                                                    \
		__u64 *v;                                                                    \
                                                                                             \
		if (h == t || h >= 2 * name##_max)                                           \
			return -1;                                                           \
		/* fully ordered: the entry is read after the tail that                      \
		 * published it */                                                           \
		if (__sync_val_compare_and_swap(&st->free_head, h,                           \
						h + 1 == 2 * name##_max ? 0 : h + 1) != h)   \
			return -1;                                                           \
		ix = h % name##_max;                                                         \
		v = bpf_map_lookup_elem(&name##_ring, &ix);                                  \
		if (!v)                                                                      \
			return -1;                                                           \
		*s = (__u32)*v;                                                              \
		return 0;                                                                    \
	}                                                                                    \
                                                                                             \
	/* the key's index entry, with a slot taken for it; NULL: none left */               \
	static __always_inline __attribute__((unused))                                       \
	idx_t *name##_alloc(struct dc_slot_state *st, const key_t *key)                      \
	{                                                                                    \
		idx_t init;                                                                  \
		__u32 s;                                                                     \
		key_t *k;                                                                    \
                                                                                             \
		if (name##_ring_take(st, &s) && bpf_map_pop_elem(&name##_free, &s)) {        \
			/* check first: failed takes must not run hi around */               \
			if (*(volatile __u32 *)&st->hi >= name##_max)                        \
				return NULL;                                                 \
			s = __sync_fetch_and_add(&st->hi, 1);                                \
			if (s >= name##_max)                                                 \
				return NULL;                                                 \
		}                                                                            \
		k = bpf_map_lookup_elem(&name##_keys, &s);                                   \
		if (!k)                                                                      \
			return NULL;                                                         \
		*k = *key;                                                                   \
		__builtin_memset(&init, 0, sizeof(init));                                    \
		*(__u32 *)&init = s;                                                         \
		seed(key, &init);                                                            \
		if (bpf_map_update_elem(&name##_idx, key, &init, BPF_NOEXIST))               \
			bpf_map_push_elem(&name##_free, &s, 0);                              \
		return bpf_map_lookup_elem(&name##_idx, key);                                \
	}                                                                                    \
                                                                                             \
	/* the key's index entry, found or made */                                           \
	static __always_inline __attribute__((unused))                                       \
	idx_t *name##_find(struct dc_slot_state *st, const key_t *key)                       \
	{                                                                                    \
		idx_t *ix = bpf_map_lookup_elem(&name##_idx, key);                           \
                                                                                             \
		return ix ? ix : name##_alloc(st, key);                                      \
	}                                                                                    \
                                                                                             \
	/* slot s's value in the half of window seq, on this CPU's region */                 \
	static __always_inline __attribute__((unused)) val_t *name##_at(__u32 s, __u32 seq)  \
	{                                                                                    \
		__u32 i;                                                                     \
                                                                                             \
		if (s >= name##_max)                                                         \
			return NULL;                                                         \
		i = (seq & 1) * name##_half + s * name##_regions;                            \
		if (name##_regions > 1) {                                                    \
			__u32 cpu = bpf_get_smp_processor_id();                              \
                                                                                             \
			/* never another slot's region (regions: the highest CPU id + 1) */  \
			if (cpu >= name##_regions)                                           \
				return NULL;                                                 \
			i += cpu;                                                            \
		}                                                                            \
		return bpf_map_lookup_elem(&name##_vals, &i);                                \
	}                                                                                    \
                                                                                             \
	/* *ixp: the key's index entry (shared by every CPU; lives as long as                \
	 * the key keeps its slot); *seqp: the window the value belongs to */                \
	static __always_inline __attribute__((unused))                                       \
	val_t *name##_value_ix(const key_t *key, idx_t **ixp, __u32 *seqp)                   \
	{                                                                                    \
		__u32 zero = 0;                                                              \
		struct dc_slot_state *st = bpf_map_lookup_elem(&name##_state, &zero);        \
		idx_t *ix;                                                                   \
                                                                                             \
		if (!st)                                                                     \
			return NULL;                                                         \
		ix = name##_find(st, key);                                                   \
		if (!ix)                                                                     \
			return NULL;                                                         \
		*ixp = ix;                                                                   \
		*seqp = *(volatile __u32 *)&st->seq;                                         \
		return name##_at(*(__u32 *)ix, *seqp);                                       \
	}                                                                                    \
                                                                                             \
	/* The same through a hint (struct dc_slot_hint): a valid one skips the              \
	 * index lookup, an invalid one is refreshed from it. gen is read before             \
	 * the lookup, so a slot found just before its key was deleted is                    \
	 * remembered under a gen the agent has raised since. */                             \
	static __always_inline __attribute__((unused))                                       \
	val_t *name##_value_hint(const key_t *key, __u32 tag, struct dc_slot_hint *h)        \
	{                                                                                    \
		__u32 zero = 0, gen;                                                         \
		struct dc_slot_state *st = bpf_map_lookup_elem(&name##_state, &zero);        \
		idx_t *ix;                                                                   \
                                                                                             \
		if (!st)                                                                     \
			return NULL;                                                         \
		gen = *(volatile __u32 *)&st->gen;                                           \
		if (h->tag != tag || h->gen != gen) {                                        \
			ix = name##_find(st, key);                                           \
			if (!ix)                                                             \
				return NULL;                                                 \
			h->gen = gen;                                                        \
			h->slot = *(__u32 *)ix;                                              \
			h->tag = tag;                                                        \
		}                                                                            \
		return name##_at(h->slot, *(volatile __u32 *)&st->seq);                      \
	}                                                                                    \
                                                                                             \
	static __always_inline __attribute__((unused)) val_t *name##_value(const key_t *key) \
	{                                                                                    \
		idx_t *ix;                                                                   \
		__u32 seq;                                                                   \
                                                                                             \
		return name##_value_ix(key, &ix, &seq);                                      \
	}

#endif

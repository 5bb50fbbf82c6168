/* SPDX-License-Identifier: Apache-2.0 */
#ifndef DC_SLOTMAP_H
#define DC_SLOTMAP_H

#include <bpf/libbpf.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "datacrumbs/slotmap.h"
#include "drain.h"

/*
 * The agent's side of a slot map (include/datacrumbs/slotmap.h,
 * bpf/slotmap.bpf.h): the values are mapped into the agent, and a window is
 * closed by flipping the half the programs fill, waiting for a grace
 * period, then reading the idle half in slot order.
 *
 * Slots are given back within one close, when their key was idle at
 * idle_reclaim consecutive drains and in the window closing, or its
 * process has exited (owner below): the key leaves the index before the
 * flip; after the flip's grace period no program can find it there, and
 * the map's gen is raised, which retires the slot hints programs took
 * before (struct dc_slot_hint); after a second grace period no program can
 * still hold the slot, and once the drain has read both halves of it the
 * slot goes to the free ring (include/datacrumbs/slotmap.h). A key that
 * comes back later gets a new slot; if it came back in the same window,
 * both slots carry it, and the caller merges the two (featvec_merge()).
 */
#define PID_MEMO_BITS	     12
#define SLOTMAP_KEY_MAX	     128 /* bytes of a key (the agent reads one on its stack) */
#define SLOTMAP_IDLE_DEFAULT 2
struct pid_memo {
	uint32_t tgid, seq; /* the window whose close asked */
	bool gone;
};

struct slotmap {
	struct bpf_map *idx, *keys, *vals, *ring, *freeq, *state, *barrier;
	int barrier_inner_fd;
	unsigned max, regions;
	unsigned half; /* elements per half of the values (NAME_half in the programs) */
	size_t ksz, vsz;
	void *keys_mem, *vals_mem[2]; /* the values: each half's used prefix */
	uint64_t *ring_mem;	      /* slots given back (include/datacrumbs/slotmap.h) */
	size_t keys_len, vals_len, state_len, ring_len;
	unsigned vals_slots; /* slots the values mapping covers (a prefix) */
	struct dc_slot_state *st;
	uint8_t *meta;	   /* per slot: state and windows idle (agent/slotmap.c) */
	uint32_t *pending; /* out of the index at this close, free at its end */
	unsigned n_pending;
	const void **touched_vals; /* per region and half, for the drain callback */
	/* drains that found nothing in the slot before the one whose close
	 * gives it back, if the window being closed counted nothing either:
	 * with 2 (the default) a key holds its slot for the window it was last
	 * used in and three more; with 0, one more. Lower suits keys that come
	 * and go (files: a data loader opens thousands a second, each read
	 * once); a key that comes back after its slot went takes a new one,
	 * for the price of an index insert */
	unsigned idle_reclaim;
	bool (*touched)(const void *value);
	/* since the start: slots given back, and keys found in two slots */
	uint64_t reclaimed;
	/* if set, called with each key about to leave the index, and its
	 * slot, to keep what the key carries across windows; not for a key
	 * whose process has exited (owner): it cannot come back */
	void (*park)(void *ctx, const void *key, uint32_t slot);
	/* if set, called before the parked keys leave the index: park may
	 * batch what it keeps, as long as it is kept by then */
	void (*park_flush)(void *ctx);
	void *park_ctx;
	/* if set: the process a key belongs to (its tgid), so that the slots
	 * of a process that has exited go back at the next close instead of
	 * after two idle drains (a node starting hundreds of short processes
	 * a second fills the map with the dead otherwise); the agent must see
	 * the kernel's pids (the initial pid namespace), else this is unused */
	uint32_t (*owner)(const void *key);
	struct pid_memo *memo;	    /* kill()'s answers at this close, by tgid */
	bool flipped;		    /* by slotmap_flip_together(), not drained yet */
	bool shared_state;	    /* the windows' clock (slotmap_share_state()) */
	uint32_t flip_seq;	    /* the seq it flipped from */
	unsigned long long flip_t0; /* when (us), for flip_us */
	uint64_t reclaimed_exited;  /* of reclaimed: at the close after the exit */
};

/* Before load: find NAME_{idx,keys,vals,ring,free,state,barrier} in obj and
 * size them for max slots of regions regions (1 shared, else one per CPU).
 * touched() says whether a value holds anything (zeroed = untouched). The
 * caller sets the object's NAME_max and NAME_regions rodata to the same,
 * and NAME_half to m->half. */
int slotmap_prepare(struct slotmap *m, struct bpf_object *obj, const char *name, size_t ksz,
		    size_t vsz, unsigned max, unsigned regions, bool (*touched)(const void *));
/* Before load, after slotmap_prepare(): the state is fd's (an array of one
 * struct dc_slot_state that outlives the map), whose seq the other layers'
 * window maps read as their clock (winmap.h); its window number goes on
 * from whatever it was. */
int slotmap_share_state(struct slotmap *m, int fd);
/* After load: map the keys, values and state into the agent. */
int slotmap_install(struct slotmap *m);
/* A key that counted anything in the window: its value in each of the n
 * regions (CPUs) that counted, read in place (zeroed once cb returns). */
typedef int (*slot_cb)(const void *key, const void *const *vals, unsigned n, void *ctx);

/* Close the window and hand each key that has anything to cb; *flip_us
 * gets the flip and wait. Keys of exited processes (m->owner) leave the
 * index before the flip, their last values read by this drain. A map that
 * slotmap_flip_together() flipped is drained only. */
int slotmap_flip_and_drain(struct slotmap *m, slot_cb cb, void *ctx, unsigned long long *flip_us);
/* Flip maps that one program run writes together, in the order that run
 * reads their windows (their seq): each map's slots to give back leave
 * its index first, then the flips follow one another within nanoseconds,
 * so that a call lands in the same window in all of them (the file layer's
 * keys and the system-call layer's: a process's access and ops agree per
 * window) but for one whose program runs during those few stores. Each is
 * drained afterwards, by slotmap_flip_and_drain(), on any thread. */
void slotmap_flip_together(struct slotmap *const *maps, size_t n);
/* Map the values of slots [0, slots) at least (the drain does it as slots
 * are handed out; bench/drainbench, which writes values itself, too). */
int slotmap_reach(struct slotmap *m, unsigned slots);
/* The value of slot in one half and region (mapped by slotmap_reach()). */
void *slotmap_value(const struct slotmap *m, unsigned half, unsigned region, unsigned slot);
/* Slots in use (handed out and not given back). */
unsigned slotmap_used(const struct slotmap *m);
void slotmap_close(struct slotmap *m);

#endif

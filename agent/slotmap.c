// SPDX-License-Identifier: Apache-2.0
#include <bpf/bpf.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "macro.h"
#include "fs-util.h"
#include "slotmap.h"
#include "winmap.h"

/* meta[s]: the slot's state in the low two bits, windows idle above them */
enum { SLOT_FREE = 0, SLOT_LIVE = 1, SLOT_HELD = 2 };
#define META(state, idle) ((uint8_t)((state) | (idle) << 2))
#define IDLE_MAX	  63

static unsigned long long now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long long)ts.tv_sec * 1000000ULL + (unsigned long long)ts.tv_nsec / 1000;
}

static size_t stride(size_t sz)
{
	return (sz + 7) / 8 * 8; /* an array map's element size */
}

static size_t page_round(size_t n)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);

	return (n + pg - 1) / pg * pg;
}

static struct bpf_map *find(struct bpf_object *obj, const char *name, const char *part)
{
	char n[128];

	snprintf(n, sizeof(n), "%s_%s", name, part);
	return bpf_object__find_map_by_name(obj, n);
}

int slotmap_prepare(struct slotmap *m, struct bpf_object *obj, const char *name, size_t ksz,
		    size_t vsz, unsigned max, unsigned regions, bool (*touched)(const void *))
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE), el = stride(vsz), per_page;
	uint64_t half;
	int r;

	*m = (struct slotmap){.barrier_inner_fd = -1,
			      .max = max,
			      .regions = regions,
			      .ksz = ksz,
			      .vsz = vsz,
			      .idle_reclaim = SLOTMAP_IDLE_DEFAULT,
			      .touched = touched};
	m->idx = find(obj, name, "idx");
	m->keys = find(obj, name, "keys");
	m->vals = find(obj, name, "vals");
	m->ring = find(obj, name, "ring");
	m->freeq = find(obj, name, "free");
	m->state = find(obj, name, "state");
	m->barrier = find(obj, name, "barrier");
	if (!m->idx || !m->keys || !m->vals || !m->ring || !m->freeq || !m->state || !m->barrier)
		return -ENOENT;
	/* each half starts on a page, so that the agent maps its used prefix
	 * on its own: a half is a whole number of elements and of pages */
	per_page = 1;
	while ((per_page * el) % pg)
		per_page++;
	half = ((uint64_t)regions * max + per_page - 1) / per_page * per_page;
	/* the programs index the values with 32 bits */
	if (!max || !regions || 2 * half > UINT32_MAX || ksz > SLOTMAP_KEY_MAX)
		return -E2BIG;
	m->half = (unsigned)half;
	r = bpf_map__set_max_entries(m->idx, max);
	if (!r)
		r = bpf_map__set_max_entries(m->keys, max);
	if (!r)
		r = bpf_map__set_max_entries(m->vals, (__u32)(2 * half));
	if (!r)
		r = bpf_map__set_max_entries(m->ring, max);
	if (!r)
		r = bpf_map__set_max_entries(m->freeq, max);
	if (r)
		return r;
	m->barrier_inner_fd =
	    bpf_map_create(BPF_MAP_TYPE_ARRAY, "dc_barrier", sizeof(__u32), sizeof(__u32), 1, NULL);
	if (m->barrier_inner_fd < 0)
		return -errno;
	return bpf_map__set_inner_map_fd(m->barrier, m->barrier_inner_fd);
}

static void *map_mem(struct bpf_map *map, size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, bpf_map__fd(map), 0);

	return p == MAP_FAILED ? NULL : p;
}

/* Bytes of one half that hold slots [0, slots). */
static size_t slots_bytes(const struct slotmap *m, unsigned slots)
{
	return (size_t)slots * m->regions * stride(m->vsz);
}

static void unmap_vals(struct slotmap *m)
{
	for (int h = 0; h < 2; h++)
		if (m->vals_mem[h])
			munmap(m->vals_mem[h], m->vals_len);
	m->vals_mem[0] = m->vals_mem[1] = NULL;
	m->vals_len = 0;
	m->vals_slots = 0;
}

int slotmap_reach(struct slotmap *m, unsigned slots)
{
	size_t len, half_len = (size_t)m->half * stride(m->vsz);
	void *p[2];

	if (slots > m->max)
		slots = m->max;
	if (slots <= m->vals_slots && m->vals_mem[0])
		return 0;
	/* a mapping shows in the agent's RSS whole (the kernel maps every page
	 * at once): grow it by doubling, never past the half */
	if (slots < 2 * m->vals_slots)
		slots = 2 * m->vals_slots < m->max ? 2 * m->vals_slots : m->max;
	len = page_round(slots_bytes(m, slots));
	if (len > half_len)
		len = half_len;
	for (int h = 0; h < 2; h++) {
		p[h] = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, bpf_map__fd(m->vals),
			    (off_t)(h * half_len));
		if (p[h] == MAP_FAILED) {
			int r = -errno;

			if (h)
				munmap(p[0], len);
			return r;
		}
	}
	unmap_vals(m);
	m->vals_mem[0] = p[0];
	m->vals_mem[1] = p[1];
	m->vals_len = len;
	m->vals_slots = (unsigned)(len / slots_bytes(m, 1));
	if (m->vals_slots > m->max)
		m->vals_slots = m->max;
	return 0;
}

void *slotmap_value(const struct slotmap *m, unsigned half, unsigned region, unsigned slot)
{
	return (char *)m->vals_mem[half] + ((size_t)slot * m->regions + region) * stride(m->vsz);
}

int slotmap_share_state(struct slotmap *m, int fd)
{
	m->shared_state = true;
	return winclock_share(fd, m->state);
}

int slotmap_install(struct slotmap *m)
{
	__u32 zero = 0;

	m->keys_len = page_round(stride(m->ksz) * m->max);
	m->state_len = page_round(sizeof(struct dc_slot_state));
	m->keys_mem = map_mem(m->keys, m->keys_len);
	m->ring_len = page_round(sizeof(*m->ring_mem) * m->max);
	m->ring_mem = map_mem(m->ring, m->ring_len);
	m->st = map_mem(m->state, m->state_len);
	m->meta = calloc(m->max, 1);
	m->pending = calloc(m->max, sizeof(*m->pending));
	m->memo = m->owner ? calloc(1u << PID_MEMO_BITS, sizeof(*m->memo)) : NULL;
	/* both halves of a slot given back at a close */
	m->touched_vals = calloc(2 * (size_t)m->regions, sizeof(*m->touched_vals));
	if (!m->keys_mem || !m->ring_mem || !m->st || slotmap_reach(m, 64) < 0)
		return -errno;
	/* a shared state outlives the maps it described (a restart of the
	 * family, whose old object is freed before this one loads: no program
	 * takes slots of the old maps meanwhile): all but the window number
	 * start afresh, as the other layers read that as their clock */
	m->st->hi = m->st->gen = m->st->free_head = m->st->free_tail = 0;
	if (!m->meta || !m->pending || !m->touched_vals || (m->owner && !m->memo))
		return -ENOMEM;
	return bpf_map_update_elem(bpf_map__fd(m->barrier), &zero, &m->barrier_inner_fd, BPF_ANY)
		   ? -errno
		   : 0;
}

/* Out of the index, in batches; a key already gone stops a batch where it
 * stands, and the rest go on. */
static void delete_keys(struct slotmap *m, const void *keys, __u32 n)
{
	int fd = bpf_map__fd(m->idx);

	while (n) {
		__u32 count = n;

		if (!bpf_map_delete_batch(fd, keys, &count, NULL))
			return;
		if (errno != ENOENT) {
			/* a batch refused before it began (out of memory for its copy
			 * of the keys) leaves count as it was, all n, as if they
			 * had gone: a slot given back under a key still in the
			 * index would count that key's calls as the next
			 * owner's. One by one from the key that stopped it (all
			 * of them if count was not written): a key already gone
			 * is harmless, one a program made again since is not. */
			for (__u32 i = count < n ? count : 0; i < n; i++)
				bpf_map_delete_elem(fd, (const char *)keys + i * m->ksz);
			return;
		}
		count++; /* the key that stopped it */
		if (count >= n)
			return;
		keys = (const char *)keys + count * m->ksz;
		n -= count;
	}
}

/* Does tgid name no process any more? A zombie still does (kill() finds
 * it): its slots go by idleness. */
static bool pid_gone(uint32_t tgid)
{
	return tgid && kill((pid_t)tgid, 0) && errno == ESRCH;
}

/* Out of the index, in batches (struct give_back), onto the pending list. */
struct give_back {
	char batch[256 * 32];
	unsigned per, n;
};

/* what the keys carry is kept before they leave the index, where a program
 * could otherwise meet a returning key before its state is parked */
static void give_back_batch(struct slotmap *m, struct give_back *g)
{
	if (m->park_flush)
		m->park_flush(m->park_ctx);
	delete_keys(m, g->batch, g->n);
}

/* key: slot s's key, as read once by the caller */
static void give_back_slot(struct slotmap *m, struct give_back *g, unsigned s, bool exited,
			   const void *key)
{
	char *k = g->batch + (size_t)g->n * m->ksz;

	memcpy(k, key, m->ksz);
	if (m->park && !exited)
		m->park(m->park_ctx, k, s);
	if (++g->n == g->per) {
		give_back_batch(m, g);
		g->n = 0;
	}
	m->meta[s] = META(SLOT_HELD, 0);
	m->pending[m->n_pending++] = s;
	m->reclaimed++;
}

static bool half_touched(const struct slotmap *m, unsigned half, unsigned s)
{
	for (unsigned g = 0; g < m->regions; g++)
		if (m->touched(slotmap_value(m, half, g, s)))
			return true;
	return false;
}

/* Whether the index maps key to slot s. */
static bool index_names(const struct slotmap *m, unsigned s, const void *key)
{
	uint32_t v[64];

	if (bpf_map__value_size(m->idx) > sizeof(v))
		return false;
	return !bpf_map_lookup_elem(bpf_map__fd(m->idx), key, v) && v[0] == s;
}

/*
 * Before the flip: the slots to give back at this close leave the index.
 * A slot whose process has exited goes at once, its last calls being in
 * the half about to be drained, which needs no index (one kill() per
 * process and close, m->memo); one idle at the last idle_reclaim drains
 * goes unless it counted since (a peek at the half being filled, racing
 * the programs: a hint, no more). A slot the programs took in this window
 * is still FREE here (the drain marks it LIVE): one with values in the
 * half being filled is in use, and goes too if its process has exited,
 * or a process that starts and exits within a window would hold its
 * slots through the next (a node starting hundreds a second ran out).
 */
static void choose_and_delete(struct slotmap *m, unsigned hi, uint32_t seq)
{
	struct give_back g = {.per = sizeof(g.batch) / m->ksz};
	bool owners = m->owner && sees_kernel_pids();
	unsigned half = seq & 1;

	for (unsigned s = 0; s < hi; s++) {
		uint8_t state = m->meta[s] & 3;
		char key[SLOTMAP_KEY_MAX];
		struct pid_memo *pm;
		uint32_t tgid;

		if (state == SLOT_HELD ||
		    (state == SLOT_FREE && !(owners && half_touched(m, half, s))))
			continue;
		/* a slot taken in this window: its key read after its values
		 * (the program wrote the key first; an arm64 agent could see
		 * the values before it without this) */
		if (state == SLOT_FREE)
			__atomic_thread_fence(__ATOMIC_ACQUIRE);
		/* read once: the owner, the index check and the give-back all
		 * see the same key */
		memcpy(key, (char *)m->keys_mem + s * stride(m->ksz), m->ksz);
		/* the dead first: an idle key of an exited process is not
		 * parked (m->park), it cannot come back */
		if (owners) {
			/* a process's keys are rarely next to each other: the cache
			 * is large enough that a node's processes are asked about once */
			tgid = m->owner(key);
			pm = &m->memo[(tgid * 2654435761u) >> (32 - PID_MEMO_BITS)];
			if (pm->tgid != tgid || pm->seq != seq) {
				pm->tgid = tgid;
				pm->seq = seq;
				pm->gone = pid_gone(tgid);
			}
			/* a slot taken in this window, given back only if the
			 * index says it is this key's: a key read stale would
			 * leave the live one's entry naming a freed slot */
			if (pm->gone && (state == SLOT_LIVE || index_names(m, s, key))) {
				give_back_slot(m, &g, s, true, key);
				m->reclaimed_exited++;
				continue;
			}
		}
		if (state == SLOT_LIVE && (m->meta[s] >> 2) >= m->idle_reclaim &&
		    !half_touched(m, half, s))
			give_back_slot(m, &g, s, false, key);
	}
	if (g.n)
		give_back_batch(m, &g);
}

/* Wait until no BPF program that started before is still running: a
 * map-of-maps update waits for them (maybe_wait_bpf_programs()). */
static int grace_period(struct slotmap *m)
{
	__u32 zero = 0;

	return bpf_map_update_elem(bpf_map__fd(m->barrier), &zero, &m->barrier_inner_fd, BPF_ANY)
		   ? -errno
		   : 0;
}

/*
 * A close: the slots given back (above) are out of the index; the flip's
 * grace period ends every lookup that could still find them; raising gen
 * then retires the hints taken before (a program reads gen before its
 * lookup, so none takes a fresh hint to them); a second grace period ends
 * the programs that used such a hint. They wrote the half being filled
 * now, so the drain reads that half too for these slots, and they are
 * free before the next window starts. Raising gen without the first wait
 * would not do: a program could read the new gen, then find a key a
 * moment before its delete, and keep a hint that outlives it.
 */
/* The slots to give back leave the index; the flip itself is apart. */
static void flip_prepare(struct slotmap *m)
{
	unsigned hi;

	m->flip_t0 = now_us();
	m->flip_seq = __atomic_load_n(&m->st->seq, __ATOMIC_RELAXED);
	hi = __atomic_load_n(&m->st->hi, __ATOMIC_ACQUIRE);
	if (hi > m->max)
		hi = m->max;
	if (slotmap_reach(m, hi) >= 0)
		choose_and_delete(m, hi, m->flip_seq);
	m->flipped = true;
}

static void flip_store(struct slotmap *m)
{
	__atomic_store_n(&m->st->seq, m->flip_seq + 1, __ATOMIC_SEQ_CST);
}

void slotmap_flip_together(struct slotmap *const *maps, size_t n)
{
	for (size_t i = 0; i < n; i++)
		flip_prepare(maps[i]);
	for (size_t i = 0; i < n; i++)
		flip_store(maps[i]);
}

int slotmap_flip_and_drain(struct slotmap *m, slot_cb cb, void *ctx, unsigned long long *flip_us)
{
	size_t vs = stride(m->vsz);
	unsigned long long t0;
	uint32_t seq, half;
	int r;
	unsigned hi;

	if (!m->flipped) {
		/* the window maps reading the seq would not know their slot */
		if (m->shared_state)
			return -EINVAL;
		flip_prepare(m);
		flip_store(m);
		t0 = m->flip_t0;
	} else {
		/* flipped on another thread before this call: flip_us is the
		 * wait from here, within the caller's own time (drain_us is
		 * its time less flip_us); the give-back before the flip ran
		 * on the main thread, part of its close */
		t0 = now_us();
	}
	m->flipped = false;
	seq = m->flip_seq;
	half = seq & 1;
	/* a program that read the old half runs under RCU: once this returns,
	 * none is left (the same wait a window map's flip relies on) */
	r = grace_period(m);
	if (!r && m->n_pending) {
		__atomic_fetch_add(&m->st->gen, 1, __ATOMIC_SEQ_CST);
		r = grace_period(m);
	}
	if (r)
		/* the programs went on to the other half: this one is read two
		 * closes from now, summed with that window's (the update of an
		 * array of maps' slot with a map it already holds allocates
		 * nothing: not seen to fail) */
		return r;
	*flip_us = now_us() - t0;
	hi = __atomic_load_n(&m->st->hi, __ATOMIC_ACQUIRE);
	if (hi > m->max)
		hi = m->max;
	r = slotmap_reach(m, hi);
	if (r < 0)
		return r;
	for (unsigned s = 0; s < hi; s++) {
		uint8_t state = m->meta[s] & 3, idle = m->meta[s] >> 2;
		unsigned n = 0;

		for (unsigned h = 0; h < (state == SLOT_HELD ? 2u : 1u); h++) {
			char *base = slotmap_value(m, half ^ h, 0, s);

			for (unsigned g = 0; g < m->regions; g++) {
				char *v = base + (size_t)g * vs;

				if (m->touched(v))
					m->touched_vals[n++] = v;
			}
		}
		if (!n) {
			if (state == SLOT_LIVE && idle < IDLE_MAX)
				idle++;
			m->meta[s] = META(state, idle);
			continue;
		}
		if (!r)
			r = cb((char *)m->keys_mem + s * stride(m->ksz), m->touched_vals, n, ctx);
		for (unsigned i = 0; i < n; i++)
			memset((void *)m->touched_vals[i], 0, m->vsz);
		/* a slot handed out from the ring or the queue shows up here first */
		m->meta[s] = META(state == SLOT_FREE ? SLOT_LIVE : state, 0);
	}
	if (m->n_pending) {
		/* the agent alone moves the tail; at most max slots are ever in
		 * the ring, so it never catches up with the head from behind */
		uint32_t t = __atomic_load_n(&m->st->free_tail, __ATOMIC_RELAXED);

		for (unsigned i = 0; i < m->n_pending; i++) {
			m->ring_mem[t % m->max] = m->pending[i];
			m->meta[m->pending[i]] = META(SLOT_FREE, 0);
			t = t + 1 == 2 * m->max ? 0 : t + 1;
		}
		__atomic_store_n(&m->st->free_tail, t, __ATOMIC_RELEASE);
		m->n_pending = 0;
	}
	return r;
}

unsigned slotmap_used(const struct slotmap *m)
{
	unsigned n = 0;
	unsigned hi = m->st ? __atomic_load_n(&m->st->hi, __ATOMIC_RELAXED) : 0;

	if (hi > m->max)
		hi = m->max;
	for (unsigned s = 0; s < hi; s++)
		n += (m->meta[s] & 3) != SLOT_FREE;
	return n;
}

void slotmap_close(struct slotmap *m)
{
	if (m->keys_mem)
		munmap(m->keys_mem, m->keys_len);
	if (m->ring_mem)
		munmap(m->ring_mem, m->ring_len);
	unmap_vals(m);
	if (m->st)
		munmap(m->st, m->state_len);
	if (m->barrier_inner_fd >= 0)
		close(m->barrier_inner_fd);
	free(m->meta);
	free(m->pending);
	free(m->memo);
	free(m->touched_vals);
	*m = (struct slotmap){.barrier_inner_fd = -1};
}

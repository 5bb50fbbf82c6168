/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Log2 histogram slotting, one definition for the BPF programs and the
 * agent, so that the unit tests exercise the very code the kernel runs.
 *
 * Slot 0 holds the value 0; slot i >= 1 holds [2^(i-1), 2^i). That is the
 * bit length of the value: a value v is in the slot whose exclusive upper
 * bound is the smallest power of two above v. Values past the last slot are
 * clamped into it (the slot's documented bound is then "and above").
 */
#ifndef DATACRUMBS_HIST_H
#define DATACRUMBS_HIST_H

#ifndef __bpf__
#include <linux/types.h>
#endif

/* Branch-free bit length: no loop, so the verifier sees a fixed cost. */
static inline __attribute__((always_inline)) __u32 dc_bit_length(__u64 v)
{
	__u32 r, s;

	if (!v)
		return 0;
	s = (v > 0xFFFFFFFFULL) << 5;
	v >>= s;
	r = s;
	s = (v > 0xFFFF) << 4;
	v >>= s;
	r |= s;
	s = (v > 0xFF) << 3;
	v >>= s;
	r |= s;
	s = (v > 0xF) << 2;
	v >>= s;
	r |= s;
	s = (v > 0x3) << 1;
	v >>= s;
	r |= s;
	r |= (__u32)(v >> 1);
	return r + 1;
}

static inline __attribute__((always_inline)) __u32 dc_hist_slot(__u64 v, __u32 nslots)
{
	__u32 s = dc_bit_length(v);

	return s < nslots ? s : nslots - 1;
}

#endif

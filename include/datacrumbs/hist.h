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

/*
 * Bit length without a comparison: the highest set bit smeared down, then
 * the ones counted (SWAR). BPF has no set-on-condition instruction, so
 * each comparison would be a branch, and the verifier walks every path
 * with the slot known exactly, none pruning another: six comparisons here
 * were most of the system-call exit's verification (docs/benchmarks.md,
 * "The exit's verification"; bench/verifier_lines.py).
 */
static inline __attribute__((always_inline)) __u32 dc_bit_length(__u64 v)
{
	v |= v >> 1;
	v |= v >> 2;
	v |= v >> 4;
	v |= v >> 8;
	v |= v >> 16;
	v |= v >> 32;
	v -= (v >> 1) & 0x5555555555555555ULL;
	v = (v & 0x3333333333333333ULL) + ((v >> 2) & 0x3333333333333333ULL);
	v = (v + (v >> 4)) & 0x0F0F0F0F0F0F0F0FULL;
	return (__u32)((v * 0x0101010101010101ULL) >> 56);
}

static inline __attribute__((always_inline)) __u32 dc_hist_slot(__u64 v, __u32 nslots)
{
	__u32 s = dc_bit_length(v);

	return s < nslots ? s : nslots - 1;
}

#endif

/* SPDX-License-Identifier: Apache-2.0 */
#ifndef DC_AGENT_HIST_H
#define DC_AGENT_HIST_H

#include <stdint.h>

#include "datacrumbs/hist.h"

/* Bounds of slot i: [lo, hi). Slot 0 is the single value 0. */
uint64_t hist_slot_lo(unsigned i);
uint64_t hist_slot_hi(unsigned i);

/*
 * Estimate the q-quantile (0 <= q <= 1) of the values counted in a log2
 * histogram: locate the slot holding rank q * total, then interpolate
 * linearly inside that slot's [lo, hi). The error is bounded by the slot
 * width (a factor of two). Returns 0 for an empty histogram.
 */
double hist_quantile(const uint64_t *slots, unsigned n, double q);

/* Index of the last non-zero slot + 1 (0 if all empty): the published length. */
unsigned hist_used(const uint64_t *slots, unsigned n);

#endif

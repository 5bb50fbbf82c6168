// SPDX-License-Identifier: Apache-2.0
#include <math.h>

#include "datacrumbs/syscall.h"
#include "hist.h"
#include "tap.h"

int main(void)
{
	uint64_t h[DC_LAT_SLOTS] = {};

	/* slotting: bit length, the same inline code the BPF programs run */
	CHECK_U64(dc_hist_slot(0, 40), 0, "slot(0)");
	CHECK_U64(dc_hist_slot(1, 40), 1, "slot(1)");
	CHECK_U64(dc_hist_slot(2, 40), 2, "slot(2)");
	CHECK_U64(dc_hist_slot(3, 40), 2, "slot(3)");
	CHECK_U64(dc_hist_slot(4, 40), 3, "slot(4)");
	CHECK_U64(dc_hist_slot(4095, 40), 12, "slot(4095)");
	CHECK_U64(dc_hist_slot(4096, 40), 13, "slot(4096)");
	CHECK_U64(dc_hist_slot(0xFFFFFFFFULL, 40), 32, "slot(2^32-1)");
	CHECK_U64(dc_hist_slot(0x100000000ULL, 40), 33, "slot(2^32)");
	CHECK_U64(dc_hist_slot(~0ULL, 40), 39, "slot(max) clamps to the last slot");
	CHECK_U64(dc_hist_slot(~0ULL, 34), 33, "size slot(max) clamps");
	/* every power of two and its neighbours, against the bit length
	 * counted one shift at a time */
	{
		unsigned bad = 0;

		for (int b = 0; b < 64; b++)
			for (int d = -1; d <= 1; d++) {
				uint64_t v = (1ULL << b) + (uint64_t)(int64_t)d;
				unsigned want = 0;

				for (uint64_t x = v; x; x >>= 1)
					want++;
				bad += dc_bit_length(v) != want;
			}
		CHECK(bad == 0, "bit length of 2^b - 1, 2^b, 2^b + 1 for b < 64: %u wrong", bad);
	}
	for (uint64_t v = 1; v < (1ULL << 20); v = v * 3 + 1) {
		unsigned s = dc_hist_slot(v, 64);

		CHECK(hist_slot_lo(s) <= v && v < hist_slot_hi(s), "%llu in [lo, hi) of slot %u",
		      (unsigned long long)v, s);
	}

	/* quantiles */
	CHECK(hist_quantile(h, DC_LAT_SLOTS, 0.5) == 0, "empty histogram gives 0");
	h[0] = 10;
	CHECK(hist_quantile(h, DC_LAT_SLOTS, 0.99) == 0, "all zeros gives 0");
	h[0] = 0;
	h[11] = 100; /* [1024, 2048) */
	CHECK(fabs(hist_quantile(h, DC_LAT_SLOTS, 0.5) - 1536) < 1e-9,
	      "p50 of one slot is its midpoint (%g)", hist_quantile(h, DC_LAT_SLOTS, 0.5));
	CHECK(fabs(hist_quantile(h, DC_LAT_SLOTS, 0.9) - (1024 + 0.9 * 1024)) < 1e-9,
	      "p90 interpolates");
	h[21] = 100; /* [2^20, 2^21) */
	CHECK(hist_quantile(h, DC_LAT_SLOTS, 0.25) < 2048, "p25 in the low slot");
	CHECK(hist_quantile(h, DC_LAT_SLOTS, 0.75) >= (1 << 20), "p75 in the high slot");
	CHECK(fabs(hist_quantile(h, DC_LAT_SLOTS, 1.0) - (1 << 21)) < 1e-9,
	      "p100 is the top bound");
	CHECK(hist_quantile(h, DC_LAT_SLOTS, 0.5) <= hist_quantile(h, DC_LAT_SLOTS, 0.9) &&
		  hist_quantile(h, DC_LAT_SLOTS, 0.9) <= hist_quantile(h, DC_LAT_SLOTS, 0.99),
	      "quantiles are monotonic");
	CHECK_U64(hist_used(h, DC_LAT_SLOTS), 22,
		  "published length stops at the last non-zero slot");
	return tap_done();
}

// SPDX-License-Identifier: Apache-2.0
#include "hist.h"

uint64_t hist_slot_lo(unsigned i)
{
	return i == 0 ? 0 : 1ULL << (i - 1);
}

uint64_t hist_slot_hi(unsigned i)
{
	return i == 0 ? 0 : 1ULL << i;
}

double hist_quantile(const uint64_t *slots, unsigned n, double q)
{
	uint64_t total = 0, cum = 0;
	double rank;

	for (unsigned i = 0; i < n; i++)
		total += slots[i];
	if (!total)
		return 0;
	if (q < 0)
		q = 0;
	if (q > 1)
		q = 1;
	rank = q * (double)total;
	for (unsigned i = 0; i < n; i++) {
		double f;

		if (!slots[i])
			continue;
		if ((double)(cum + slots[i]) >= rank) {
			if (i == 0)
				return 0;
			f = (rank - (double)cum) / (double)slots[i];
			return (double)hist_slot_lo(i) +
			       f * (double)(hist_slot_hi(i) - hist_slot_lo(i));
		}
		cum += slots[i];
	}
	return (double)hist_slot_hi(n - 1);
}

unsigned hist_used(const uint64_t *slots, unsigned n)
{
	while (n > 0 && !slots[n - 1])
		n--;
	return n;
}

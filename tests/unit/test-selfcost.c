// SPDX-License-Identifier: Apache-2.0
/* The layers' run-time estimate (selfcost_est_price): the price of a
 * window's runs from a sample, and from the mean of earlier samples where
 * the sample saw few or none of them. */
#include <stdio.h>

#include "selfcost.h"
#include "tap.h"

/* a sample of `sampled` runs at ns_each, for a window of `runs` */
static uint64_t window(struct selfcost_est *e, uint64_t sampled, uint64_t ns_each, uint64_t runs,
		       bool *estimated)
{
	uint64_t run_ns = sampled ? runs * ns_each : 0;

	return selfcost_est_price(e, sampled, sampled * ns_each, runs, run_ns, estimated);
}

int main(void)
{
	struct selfcost_est e = {};
	bool est;
	uint64_t p;

	/* a full sample is the window's price, and the mean */
	p = window(&e, 10000, 300, 100000, &est);
	CHECK(p == 30000000 && !est, "a full sample prices the window: %llu",
	      (unsigned long long)p);
	/* a window whose sample saw none of its runs: the mean */
	p = window(&e, 0, 0, 50000, &est);
	CHECK(p == 15000000 && est, "no runs sampled: the mean's price %llu",
	      (unsigned long long)p);
	/* a burst's cold edge: 40 runs at 2 us, of 500,000 */
	p = window(&e, 40, 2000, 500000, &est);
	CHECK(est && p < 500000ULL * 400, "a few cold runs weigh in the mean: %llu ns, not %llu",
	      (unsigned long long)p, 500000ULL * 2000);

	/* the level changed (selfcost_forget): the same cold edge, first
	 * sample since, is still priced at the mean; before, the mean started
	 * again and the 40 runs priced the whole window, a second of CPU */
	e = (struct selfcost_est){};
	window(&e, 10000, 300, 100000, &est);
	e.stale = true;
	p = window(&e, 40, 2000, 500000, &est);
	CHECK(est && p < 500000ULL * 400,
	      "after a change, a few cold runs are priced at the earlier mean: %llu ns",
	      (unsigned long long)p);
	CHECK(e.stale, "and the mean stays stale");
	/* a window with no run sampled after a change: the earlier mean,
	 * not nothing */
	p = window(&e, 0, 0, 1000, &est);
	CHECK(est && p > 0, "no runs sampled after a change: priced (%llu ns)",
	      (unsigned long long)p);
	/* the first full sample after a change replaces the mean: runs cost
	 * 100 ns now, and a window sampling none is priced at that */
	p = window(&e, 5000, 100, 50000, &est);
	CHECK(p == 5000000 && !est && !e.stale, "a full sample after a change is the price: %llu",
	      (unsigned long long)p);
	p = window(&e, 0, 0, 1000, &est);
	CHECK(p == 100000 && est, "and the mean is of it alone: %llu", (unsigned long long)p);

	/* nothing ever timed: a small sample is all there is */
	e = (struct selfcost_est){.stale = true};
	p = window(&e, 40, 2000, 500000, &est);
	CHECK(p == 500000ULL * 2000 && !est, "no earlier sample: the sample's own price %llu",
	      (unsigned long long)p);
	e = (struct selfcost_est){};
	p = window(&e, 0, 0, 1000, &est);
	CHECK(p == 0 && !est, "nothing timed, nothing sampled: no price");
	return tap_done();
}

// SPDX-License-Identifier: Apache-2.0
#include <stdlib.h>

#include "budget.h"
#include "tap.h"

/* CHECK_U64 evaluates its argument twice: run() once */
#define LEVEL(expr, want, what)                \
	do {                                   \
		unsigned _l = (expr);          \
		CHECK_U64(_l, (want), (what)); \
	} while (0)

static const uint64_t S = 1000000000ull; /* one second in ns */

/* n one-second windows at share of one core; returns the last level */
static unsigned run(struct dc_budget *b, int n, double share)
{
	unsigned l = b->level;

	for (int i = 0; i < n; i++)
		l = budget_window(b, S, (uint64_t)(share * S));
	return l;
}

int main(void)
{
	struct dc_budget_params p = {.cpu = 0.01, .period_sec = 10, .recover_below = 0.5};
	struct dc_budget *b = calloc(1, sizeof(*b));
	unsigned l;

	budget_init(b, &p);
	LEVEL(run(b, 30, 0.009), DC_BUDGET_FULL, "under the limit: full detail");
	budget_init(b, &p);
	LEVEL(run(b, 9, 0.011), DC_BUDGET_FULL,
	      "over for less than a period, allowance not spent: no step yet");
	LEVEL(run(b, 1, 0.011), DC_BUDGET_TRACES_REDUCED,
	      "over on average over a full period: first step, sparser traces");
	CHECK(budget_average(b) == 0, "a new level starts a new measurement");

	/* the allowance of a period (0.1 core-s) spent in two windows */
	l = run(b, 1, 0.06);
	CHECK_U64(l, DC_BUDGET_TRACES_REDUCED, "one window at 6% has not spent the period's 0.1 s");
	l = run(b, 1, 0.06);
	CHECK_U64(l, DC_BUDGET_TRACES_OFF, "the period's allowance spent: next step at once");
	LEVEL(run(b, 4, 0.03), DC_BUDGET_STACKS_OFF, "then the stack captures");
	LEVEL(run(b, 4, 0.03), DC_BUDGET_LIBRARIES_OFF, "then the uprobes");
	LEVEL(run(b, 4, 0.03), DC_BUDGET_VFS_OFF, "then the function-level file-system probes");
	LEVEL(run(b, 30, 0.03), DC_BUDGET_VFS_OFF, "nothing left: stays at the floor");
	CHECK(b->at_floor, "and says it is over budget at the floor");

	LEVEL(run(b, 10, 0.006), DC_BUDGET_VFS_OFF,
	      "under the limit but not under half of it: no step back");
	CHECK(!b->at_floor, "no longer over");
	LEVEL(run(b, 1, 0.0), DC_BUDGET_VFS_OFF, "the last period's average 0.54%: not yet");
	LEVEL(run(b, 1, 0.0), DC_BUDGET_LIBRARIES_OFF,
	      "the last period's average under half the limit: one step back, in reverse order");
	/* that level cannot hold: the next step back must wait longer */
	LEVEL(run(b, 5, 0.02), DC_BUDGET_LIBRARIES_OFF, "its period's allowance not yet spent");
	LEVEL(run(b, 1, 0.02), DC_BUDGET_VFS_OFF, "the recovered level goes over: back down");
	CHECK_U64(b->hold_ns, 20 * S, "a flip-flop doubles the hold before the next step back");
	LEVEL(run(b, 19, 0.001), DC_BUDGET_VFS_OFF, "held for 19 s of the 20");
	LEVEL(run(b, 1, 0.001), DC_BUDGET_LIBRARIES_OFF, "then steps back");
	LEVEL(run(b, 20, 0.001), DC_BUDGET_STACKS_OFF,
	      "a step back that held two periods resets the hold to one period");
	CHECK_U64(b->hold_ns, 10 * S, "hold reset");
	LEVEL(run(b, 10, 0.001), DC_BUDGET_TRACES_OFF, "and on, in reverse");
	LEVEL(run(b, 10, 0.001), DC_BUDGET_TRACES_REDUCED, "through every step");
	LEVEL(run(b, 10, 0.001), DC_BUDGET_FULL, "to full detail");

	/* under the limit, not under recover_below: a trial step back after
	 * ten holds; one that goes over doubles the hold, and the wait */
	budget_init(b, &p);
	LEVEL(run(b, 4, 0.03), DC_BUDGET_TRACES_REDUCED, "over: a step");
	LEVEL(run(b, 99, 0.006), DC_BUDGET_TRACES_REDUCED,
	      "0.6% of a 1% budget for 99 s (ten periods less one window): held");
	LEVEL(run(b, 1, 0.006), DC_BUDGET_FULL, "at ten periods: a trial step back");
	CHECK(b->trial, "said to be a trial");
	LEVEL(run(b, 4, 0.03), DC_BUDGET_TRACES_REDUCED, "the trial goes over: back down");
	CHECK(!b->trial && b->hold_ns == 20 * S, "the hold doubled (%llu s)",
	      (unsigned long long)(b->hold_ns / S));
	LEVEL(run(b, 199, 0.006), DC_BUDGET_TRACES_REDUCED, "the next trial waits ten holds");
	LEVEL(run(b, 1, 0.006), DC_BUDGET_FULL, "then comes");
	LEVEL(run(b, 30, 0.006), DC_BUDGET_FULL, "and holds under the limit");
	/* at the floor, time over the budget does not count towards a trial */
	budget_init(b, &p);
	budget_set_applicable(b, 1u << DC_BUDGET_VFS_OFF);
	LEVEL(run(b, 200, 0.03), DC_BUDGET_VFS_OFF, "over for 200 s, at the floor");
	LEVEL(run(b, 50, 0.006), DC_BUDGET_VFS_OFF,
	      "then under the limit for 50 s: no trial yet (the 200 s over do not count)");
	LEVEL(run(b, 60, 0.006), DC_BUDGET_FULL, "a trial once ten periods under have passed");

	/* steps with nothing to switch off are skipped both ways */
	budget_init(b, &p);
	budget_set_applicable(b, 1u << DC_BUDGET_VFS_OFF);
	LEVEL(run(b, 10, 0.02), DC_BUDGET_VFS_OFF,
	      "no traces, no libraries: the first step is the VFS layer");
	LEVEL(run(b, 10, 0.001), DC_BUDGET_FULL, "and back to full in one step");

	/* a sliding period: an old burst leaves the average */
	budget_init(b, &p);
	run(b, 5, 0.018); /* 0.09 core-s: under the allowance */
	LEVEL(run(b, 5, 0.0), DC_BUDGET_FULL, "burst then idle: average 0.9%, under");
	LEVEL(run(b, 5, 0.0), DC_BUDGET_FULL, "the burst has left the period");
	CHECK(budget_average(b) < 0.0001, "average over the last period only: %g",
	      budget_average(b));

	/* no budget: never moves */
	p.cpu = 0;
	budget_init(b, &p);
	LEVEL(run(b, 100, 0.5), DC_BUDGET_FULL, "cpu = 0 disables the budget");
	CHECK_STR(budget_level_name(DC_BUDGET_LIBRARIES_OFF), "libraries_off", "level names");
	CHECK_STR(budget_level_name(DC_BUDGET_STACKS_OFF), "stacks_off", "level names");
	/* windows longer than the period: judged on their own span's allowance */
	p.cpu = 0.01;
	budget_init(b, &p);
	for (int i = 0; i < 5; i++)
		l = budget_window(b, 15 * S, (uint64_t)(0.008 * 15 * S));
	CHECK_U64(l, DC_BUDGET_FULL, "15 s windows at 0.8% of a 1% budget (10 s period): no step");
	l = budget_window(b, 15 * S, (uint64_t)(0.011 * 15 * S));
	CHECK_U64(l, DC_BUDGET_TRACES_REDUCED, "one at 1.1%: over, a step");
	for (int i = 0; i < 8; i++)
		l = budget_window(b, 15 * S, (uint64_t)(0.004 * 15 * S));
	CHECK_U64(l, DC_BUDGET_FULL, "then at 0.4%: back, and it stays");
	/* a period of more windows than the ring has slots: an hour of 0.1 s
	 * windows at 1.1% of a 1% budget is over the limit only once the
	 * hour's allowance is spent (3,273 s in), not after 6,000 windows */
	p.period_sec = 3600;
	budget_init(b, &p);
	for (int i = 0; i < 30000 && l == DC_BUDGET_FULL; i++)
		l = budget_window(b, S / 10, (uint64_t)(0.011 * S / 10));
	CHECK_U64(l, DC_BUDGET_FULL, "an hour's period of 0.1 s windows: no step after 3,000 s");
	for (int i = 0; i < 3000 && l == DC_BUDGET_FULL; i++)
		l = budget_window(b, S / 10, (uint64_t)(0.011 * S / 10));
	CHECK_U64(l, DC_BUDGET_TRACES_REDUCED, "the step once the hour's allowance is spent");
	/* and the windows leave the shared slots as the hour moves on: two
	 * hours under the limit, then over it, judged on the last hour */
	budget_init(b, &p);
	l = DC_BUDGET_FULL;
	for (int i = 0; i < 72000 && l == DC_BUDGET_FULL; i++)
		l = budget_window(b, S / 10, (uint64_t)(0.009 * S / 10));
	CHECK_U64(l, DC_BUDGET_FULL, "two hours of 0.1 s windows at 0.9%: no step");
	for (int i = 0; i < 17500 && l == DC_BUDGET_FULL; i++)
		l = budget_window(b, S / 10, (uint64_t)(0.011 * S / 10));
	CHECK_U64(l, DC_BUDGET_FULL, "then 1,750 s at 1.1%: the hour's average still under 1%");
	for (int i = 0; i < 1000 && l == DC_BUDGET_FULL; i++)
		l = budget_window(b, S / 10, (uint64_t)(0.011 * S / 10));
	CHECK_U64(l, DC_BUDGET_TRACES_REDUCED, "past half the hour at 1.1%: over, a step");
	free(b);
	return tap_done();
}

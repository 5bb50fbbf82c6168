// SPDX-License-Identifier: Apache-2.0
#include <string.h>

#include "budget.h"

/* A level that could not hold after a step back makes the next step back
 * wait twice as long, up to this many periods. */
#define HOLD_MAX_PERIODS 64

static const char *const level_names[DC_BUDGET_LEVELS] = {
    [DC_BUDGET_FULL] = "full",
    [DC_BUDGET_TRACES_REDUCED] = "traces_reduced",
    [DC_BUDGET_TRACES_OFF] = "traces_off",
    [DC_BUDGET_STACKS_OFF] = "stacks_off",
    [DC_BUDGET_LIBRARIES_OFF] = "libraries_off",
    [DC_BUDGET_VFS_OFF] = "vfs_off",
};

const char *budget_level_name(unsigned level)
{
	return level < DC_BUDGET_LEVELS ? level_names[level] : "unknown";
}

static uint64_t period_ns(const struct dc_budget *b)
{
	return (uint64_t)(b->p.period_sec * 1e9);
}

void budget_init(struct dc_budget *b, const struct dc_budget_params *p)
{
	memset(b, 0, sizeof(*b));
	b->p = *p;
	b->hold_ns = period_ns(b);
	b->applicable = (1u << DC_BUDGET_LEVELS) - 2; /* every step but "full" */
}

void budget_set_applicable(struct dc_budget *b, unsigned mask)
{
	b->applicable = mask & ((1u << DC_BUDGET_LEVELS) - 2);
}

double budget_average(const struct dc_budget *b)
{
	return b->span_ns ? (double)b->cost_ns / (double)b->span_ns : 0;
}

static void forget(struct dc_budget *b)
{
	b->head = b->n = 0;
	b->span_ns = b->cost_ns = 0;
}

static void push(struct dc_budget *b, uint64_t window_ns, uint64_t cost_ns)
{
	/* a slot holds consecutive windows up to a 3000th of the period: a
	 * period of more windows than the ring has slots (an hour of 0.1 s
	 * windows) is still a period, not the last 6000 windows; two
	 * neighbouring slots hold more than a slot's span, so a full ring
	 * spans more than a period */
	uint64_t slot_ns = period_ns(b) / (DC_BUDGET_RING / 2);
	unsigned tail;

	/* the oldest leave once the rest still cover a period */
	while (b->n && (b->n == DC_BUDGET_RING ||
			b->span_ns - b->ring[b->head].window_ns + window_ns >= period_ns(b))) {
		b->span_ns -= b->ring[b->head].window_ns;
		b->cost_ns -= b->ring[b->head].cost_ns;
		b->head = (b->head + 1) % DC_BUDGET_RING;
		b->n--;
	}
	b->span_ns += window_ns;
	b->cost_ns += cost_ns;
	tail = (b->head + b->n + DC_BUDGET_RING - 1) % DC_BUDGET_RING;
	if (b->n && b->ring[tail].window_ns + window_ns <= slot_ns) {
		b->ring[tail].window_ns += window_ns;
		b->ring[tail].cost_ns += cost_ns;
		return;
	}
	tail = (b->head + b->n) % DC_BUDGET_RING;
	b->ring[tail].window_ns = window_ns;
	b->ring[tail].cost_ns = cost_ns;
	b->n++;
}

static unsigned change(struct dc_budget *b, unsigned level)
{
	bool back = level < b->level;

	if (!back && b->recovered_last && b->since_change_ns < 2 * period_ns(b) &&
	    b->hold_ns < period_ns(b) * HOLD_MAX_PERIODS)
		b->hold_ns *= 2;
	b->recovered_last = back;
	b->trial = false;
	b->under_ns = 0;
	b->level = level;
	b->since_change_ns = 0;
	forget(b);
	return level;
}

unsigned budget_window(struct dc_budget *b, uint64_t window_ns, uint64_t cost_ns)
{
	uint64_t period = period_ns(b);
	double limit = b->p.cpu;
	bool full, quiet;

	if (limit <= 0 || !period)
		return b->level;
	push(b, window_ns, cost_ns);
	b->since_change_ns += window_ns;
	full = b->span_ns >= period || b->n == DC_BUDGET_RING;
	b->judged = budget_average(b);
	/* a step back that held for two periods has earned the short hold */
	if (b->recovered_last && b->since_change_ns >= 2 * period)
		b->hold_ns = period;
	/* Over: a period measured above the limit, or the period's whole
	 * allowance already spent (its average cannot come back under it:
	 * waiting the period out would only cost more). The ring may span
	 * more than a period (windows longer than it, or not dividing it):
	 * its allowance is then its span's. */
	if ((full && budget_average(b) > limit) ||
	    (double)b->cost_ns > limit * (double)(b->span_ns > period ? b->span_ns : period)) {
		for (unsigned l = b->level + 1; l < DC_BUDGET_LEVELS; l++)
			if (b->applicable & (1u << l)) {
				b->at_floor = false;
				return change(b, l);
			}
		/* a trial counts time under the limit, not over it */
		b->under_ns = 0;
		b->at_floor = true;
		return b->level;
	}
	b->at_floor = false;
	b->under_ns += window_ns;
	quiet = budget_average(b) < limit * b->p.recover_below;
	/* Under the limit but not quiet: a trial step back after
	 * DC_BUDGET_TRIAL_HOLDS holds. What was given up cannot be measured
	 * while off, and a burst that is over would otherwise keep it off for
	 * good; a failed trial costs at most a period (or one window longer
	 * than it) over the limit. */
	if (b->level && full && b->since_change_ns >= b->hold_ns &&
	    (quiet ||
	     b->under_ns >= DC_BUDGET_TRIAL_HOLDS * (b->hold_ns > period ? b->hold_ns : period))) {
		unsigned l = b->level - 1;

		while (l > DC_BUDGET_FULL && !(b->applicable & (1u << l)))
			l--;
		change(b, l);
		b->trial = !quiet;
		return l;
	}
	return b->level;
}

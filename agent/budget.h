/* SPDX-License-Identifier: Apache-2.0 */
#ifndef DC_BUDGET_H
#define DC_BUDGET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * The CPU budget: what the agent may cost (kernel programs plus user space,
 * as a fraction of one core, averaged over a period) and the ordered ways
 * it gives up detail to stay within it. Pure: the manager feeds it each
 * window's cost and applies the level it asks for.
 */
enum dc_budget_level {
	DC_BUDGET_FULL = 0,	  /* everything configured runs */
	DC_BUDGET_TRACES_REDUCED, /* trace sampling ten times sparser, no full-trace workloads */
	DC_BUDGET_TRACES_OFF,	  /* no trace events (calls still counted in the windows) */
	DC_BUDGET_STACKS_OFF,	  /* no stack captures (calls still counted in the windows) */
	DC_BUDGET_LIBRARIES_OFF,  /* uprobes detached */
	DC_BUDGET_VFS_OFF,	  /* function-level file-system probes detached */
	DC_BUDGET_LEVELS,
};

/* A reduced level not over the limit for this many holds (periods, or
 * the doubled holds after trials that went over), though not under
 * recover_below, tries a step back */
#define DC_BUDGET_TRIAL_HOLDS 10

/* slots of the period's ring: a window each, or consecutive short windows
 * together (agent/budget.c push()), so that any period fits */
#define DC_BUDGET_RING 6000

struct dc_budget_params {
	double cpu;	      /* fraction of one core; 0 = no budget */
	double period_sec;    /* averaging period */
	double recover_below; /* step back when under this fraction of cpu */
};

struct dc_budget {
	struct dc_budget_params p;
	unsigned level;
	unsigned applicable; /* bit per level: that step has something to switch off */
	/* the windows since the last change of level, up to one period: each
	 * level is judged on its own cost, not its predecessor's */
	struct {
		uint64_t window_ns, cost_ns;
	} ring[DC_BUDGET_RING];
	unsigned head, n;
	uint64_t span_ns, cost_ns; /* sums over the ring */
	uint64_t hold_ns;	   /* time at a level before stepping back */
	uint64_t since_change_ns;
	bool recovered_last; /* the last change was a step back */
	bool trial;	     /* and a trial: under the limit, not under recover_below */
	uint64_t under_ns;   /* at this level, not over the limit since */
	bool at_floor;	     /* over budget with nothing left to switch off */
	double judged;	     /* the average the last window was judged on */
};

void budget_init(struct dc_budget *b, const struct dc_budget_params *p);
/* Which levels would switch something off, as (1 << level) bits: a step
 * with nothing to do is skipped, not waited out. */
void budget_set_applicable(struct dc_budget *b, unsigned mask);
/* One window's length and the agent's cost in it; returns the level to run
 * at from now on (the same, one applicable step down, or one back). */
unsigned budget_window(struct dc_budget *b, uint64_t window_ns, uint64_t cost_ns);
/* Average fraction of one core over the last period at this level. */
double budget_average(const struct dc_budget *b);
const char *budget_level_name(unsigned level);

#endif

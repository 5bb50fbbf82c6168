/* SPDX-License-Identifier: Apache-2.0 */
#ifndef DC_SELFCOST_H
#define DC_SELFCOST_H

#include <bpf/libbpf.h>
#include <stdbool.h>
#include <stdint.h>

#include "json.h"

/*
 * What the agent costs the node and how full its kernel state is, measured
 * every window: each layer's BPF program runs (counted by the programs
 * themselves, bpf/common.bpf.h) and run time (the kernel's per-program
 * statistics, switched on through the stats fd, not the global sysctl),
 * per layer the kernel and user CPU it took, the fill of its maps and ring
 * buffers.
 */
struct selfcost;

/* One probe family in one window. */
struct selfcost_layer {
	const char *name;
	struct bpf_object *obj; /* NULL: the layer is off */
	uint64_t user_ns;	/* agent thread CPU that drained it */
};

/* map_scan_sec: how often hash maps are walked to count their entries
 * (a walk costs a system call per entry); 0: never. duty: the share of
 * each window the statistics are on (1: always). While on, the kernel
 * reads the clock twice around every BPF program run on the node: about
 * 185 ns per system call on this VM's paravirtual clock (two programs),
 * a third of the agent's cost per call. Sampled, a layer's run time is
 * the sample's time per run times the runs its programs counted, and each
 * program's runs and time are its share of the sample's. */
int selfcost_new(bool bpf_stats, double duty, double map_scan_sec, struct selfcost **ret);
struct selfcost *selfcost_free(struct selfcost *s);
/* Take over old's last readings of the programs, so that a replacement
 * (self.* reloaded) counts the programs from then, not from their load. */
void selfcost_adopt(struct selfcost *s, struct selfcost *old);

/*
 * A layer's time per run in the samples so far, each sample's time and
 * runs halved at the next one that timed any: for the windows whose sample
 * saw none (or few) of the layer's runs. A layer that runs in bursts (block
 * I/O at a job's checkpoints, a library called at its start) would
 * otherwise be costed only in the windows where a burst met the sample,
 * and the budget would not see it. Weighted by runs, so a sample of three
 * runs moves it little.
 *
 * Stale: what a run costs may have changed (the programs loaded again, the
 * budget's level, the trace policy). The mean still prices the windows
 * until a sample of at least SELFCOST_MIN_SAMPLED_RUNS replaces it; before,
 * the mean started again, and the first sample after a change, often a
 * burst's cold edge, was the price of the whole window's runs.
 */
struct selfcost_est {
	double ns, runs;
	bool stale;
};

/* A sample with fewer of a layer's runs prices them at the mean */
#define SELFCOST_MIN_SAMPLED_RUNS 100

/* A layer's run time in a window: sampled runs took sampled_ns (folded into
 * e), the layer ran runs times, run_ns is the sample scaled to them (0 for
 * none). Returns run_ns, or the mean's price (*estimated) where the sample
 * saw no runs or fewer than SELFCOST_MIN_SAMPLED_RUNS. Pure. */
uint64_t selfcost_est_price(struct selfcost_est *e, uint64_t sampled, uint64_t sampled_ns,
			    uint64_t runs, uint64_t run_ns, bool *estimated);

/* The layers' means are of the programs as they ran: stale when the
 * budget switches detail or a reload changes the trace policy (trace
 * sampling changes what a run costs). */
void selfcost_forget(struct selfcost *s);

/* Read the counters of every program of the layers, the kernel's and the
 * programs' own count of their runs (bpf/common.bpf.h): the account of the
 * window that ended at now_ns (CLOCK_MONOTONIC). Called at the window's
 * flip, so that the counts end where the window's calls do, not a drain (a
 * grace period, busy threads) later: read after the drain, a steady
 * writer's runs per call varied by 4% from window to window. */
void selfcost_flip(struct selfcost *s, const struct selfcost_layer *layers, size_t n,
		   uint64_t window_ns, uint64_t now_ns);
/* Complete the window's account after the drain: the layers as given to
 * selfcost_flip, now with the CPU each drain took; the fill of their maps
 * and rings. */
void selfcost_window(struct selfcost *s, const struct selfcost_layer *layers, size_t n);

/* Sampling: how long after a window starts to switch the statistics off
 * (0: not sampling), and the switches (the manager's timer calls off, the
 * window start calls on; each is a no-op when not sampling). */
uint64_t selfcost_stats_on_for(const struct selfcost *s, uint64_t window_ns);
/* A sample shorter than this is too short to be worth two switches (about
 * 1 ms of CPU for the pair, the kernel patching every BPF call site): the
 * statistics then stay on. */
#define SELFCOST_MIN_SAMPLE_NS 50000000ULL
void selfcost_stats_keep_on(struct selfcost *s, uint64_t now_ns);
/* Windows long enough again (a reload's interval): sampled again. */
void selfcost_stats_resume(struct selfcost *s, uint64_t now_ns);
void selfcost_stats_on(struct selfcost *s, uint64_t now_ns);
void selfcost_stats_off(struct selfcost *s, uint64_t now_ns);

/* The last window's run time of every program, in ns. */
uint64_t selfcost_bpf_ns(const struct selfcost *s);
/* "fd", "sysctl" (someone else turned the statistics on node-wide) or why
 * there are none: run times then read 0 and only user CPU is measured. */
const char *selfcost_bpf_stats(const struct selfcost *s);

/* "layers", "programs", "rings" and, in a window that walked them, "map_fill". */
void selfcost_json(const struct selfcost *s, struct dc_json *j);

#endif

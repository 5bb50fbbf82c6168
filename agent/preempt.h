/* SPDX-License-Identifier: Apache-2.0 */
#ifndef DC_PREEMPT_H
#define DC_PREEMPT_H

/*
 * The kernel's preemption model decides whether the BPF programs may update
 * per-CPU aggregation values with plain adds. Tracing programs run with
 * migration disabled but are preemptible when the kernel is (full, lazy, RT):
 * another thread of the same process could then interleave a plain
 * read-modify-write on the same per-CPU value and lose an increment, so
 * those kernels get atomic adds. With "none" or "voluntary" a BPF program
 * has no preemption point and plain adds are exact (~25 ns cheaper per call
 * here, bench/). Unknown means atomic.
 */
enum dc_preempt {
	DC_PREEMPT_UNKNOWN = 0,
	DC_PREEMPT_NONE,
	DC_PREEMPT_VOLUNTARY,
	DC_PREEMPT_FULL,
	DC_PREEMPT_LAZY,
	DC_PREEMPT_RT,
};

const char *preempt_name(enum dc_preempt p);

/*
 * Pure: decide from what the kernel says about itself. Any input may be
 * NULL (unreadable). In order of authority: debugfs sched/preempt (the live
 * mode of a PREEMPT_DYNAMIC kernel), preempt= on the command line, the
 * build flavour in uname -v, and for a dynamic build its Kconfig default.
 * *why gets a static string naming the source used.
 */
enum dc_preempt preempt_parse(const char *debugfs, const char *uname_version, const char *config,
			      const char *cmdline, const char **why);

/* Reads the inputs above from this machine. */
enum dc_preempt preempt_detect(const char **why);

static inline int preempt_allows_plain_updates(enum dc_preempt p)
{
	return p == DC_PREEMPT_NONE || p == DC_PREEMPT_VOLUNTARY;
}

#endif

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Types shared by bpf/filter.bpf.h and agent/filter.c: the process filters
 * (filter.* in the configuration) every probe family applies in the kernel
 * before it counts anything.
 */
#ifndef DATACRUMBS_FILTER_H
#define DATACRUMBS_FILTER_H

#ifndef __bpf__
#include <linux/types.h>
#endif

/* A filter map's value: which lists its key is on (both when an operator
 * lists it twice: the exclusion wins). */
#define DC_FILTER_INCLUDE 1
#define DC_FILTER_EXCLUDE 2

/*
 * cgroup levels a subtree match can look at: the root is level 0. 16 holds
 * the deepest layouts in use (Slurm's .../slurmstepd.scope/job_N/step_N/
 * user/task_N is level 6) with room; each level that has a listed cgroup
 * costs one helper call and one lookup per event, the others nothing.
 */
#define DC_FILTER_LEVELS 16

/* The .rodata word saying which lists are non-empty: the INCLUDE and
 * EXCLUDE bits of each key, at these shifts. Zero: no filter. */
#define DC_FILTER_CGROUPS_SHIFT 0
#define DC_FILTER_UIDS_SHIFT	2
#define DC_FILTER_COMMS_SHIFT	4

/* the kernel's TASK_COMM_LEN: 15 bytes and the NUL */
#define DC_FILTER_COMM_LEN 16

/* The comm map's key: zero-padded, as the kernel keeps task->comm. */
struct dc_filter_comm {
	char comm[DC_FILTER_COMM_LEN];
};

#endif

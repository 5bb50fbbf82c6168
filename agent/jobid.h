/* SPDX-License-Identifier: Apache-2.0 */
#ifndef DC_JOBID_H
#define DC_JOBID_H

#include <stdbool.h>

/*
 * Job identity read from a cgroup v2 path (below the cgroup2 root): the
 * systemd unit and slice, a container, a Kubernetes pod, a Slurm or a Flux
 * job, as those managers lay out their cgroups (docs/records.md lists the
 * layouts). Pure: a string in, fields out. A field is set only when a path
 * component matches a known layout exactly, so an unfamiliar or hostile
 * path gives empty fields, never a guess. Where a layout nests (a container
 * in a container), the innermost match wins.
 *
 * Sizes are the largest valid value of each kind; a component that would
 * not fit is not that kind, so nothing is ever truncated.
 */
#define DC_JOBID_UNIT_MAX      255 /* systemd's UNIT_NAME_MAX (256) less the NUL */
#define DC_JOBID_CONTAINER_MAX 64  /* docker, containerd, CRI-O, podman: 64 hex digits */
#define DC_JOBID_POD_MAX       36  /* a UUID; static pods use 32 hex digits */
#define DC_JOBID_SLURM_MAX     10  /* Slurm job ids are 32-bit */
#define DC_JOBID_FLUX_MAX      12  /* "f" and up to 11 base58 digits of a 64-bit id */

struct dc_jobid {
	char unit[DC_JOBID_UNIT_MAX + 1];	    /* innermost *.service or *.scope */
	char slice[DC_JOBID_UNIT_MAX + 1];	    /* innermost *.slice */
	char container[DC_JOBID_CONTAINER_MAX + 1]; /* full id, lowercase hex */
	char pod[DC_JOBID_POD_MAX + 1];		    /* pod UID, dashes restored */
	char slurm_job[DC_JOBID_SLURM_MAX + 1];	    /* decimal */
	char flux_job[DC_JOBID_FLUX_MAX + 1];	    /* F58, ASCII "f" prefix */
};

/* Every member "" when not found; path NULL is an empty path. */
void jobid_parse(const char *path, struct dc_jobid *out);
bool jobid_empty(const struct dc_jobid *j);

#endif

/* SPDX-License-Identifier: Apache-2.0 */
#ifndef DC_FS_UTIL_H
#define DC_FS_UTIL_H

#include <stdbool.h>

/* mkdir -p for the directories above path, and path itself when self. */
int mkdir_parents(const char *path, bool self);

/* -ENOTDIR, with at naming it, if a directory above path exists as
 * something else (output.path = "/proc/version/x"): what mkdir_parents()
 * would fail on at the start, told by --check-config. */
int path_blocked(const char *path, char *at, size_t atlen);

/* Classic tracepoints are found through tracefs, which not every system
 * mounts (tp_btf and raw_tp do not need it): mount it where libbpf looks. */
int tracefs_ensure(void);
/* Where the tracepoint event directories are ("group/event" below it). */
const char *tracefs_events_dir(void);

/* One more than the highest possible CPU id, from a cpulist such as
 * /sys/devices/system/cpu/possible ("0-3,8-11" gives 12): what a table
 * indexed by bpf_get_smp_processor_id() needs, while the number of CPUs
 * (8 there) sizes a per-CPU map's values. -EINVAL if unreadable. */
int cpu_id_bound(const char *cpulist_path);
/* The regions a per-CPU slot map needs on this machine: cpu_id_bound() of
 * the possible mask, and never fewer than ncpus (the possible CPUs'
 * count), which is what an unreadable mask leaves. */
int possible_cpu_ids(int ncpus);

/* Are the pids the programs record (the initial namespace's) the ones
 * kill() and /proc take? Not in a nested pid namespace, where a kernel pid
 * names another process or none. */
bool sees_kernel_pids(void);

#endif

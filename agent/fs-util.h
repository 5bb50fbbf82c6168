/* SPDX-License-Identifier: Apache-2.0 */
#ifndef DC_FS_UTIL_H
#define DC_FS_UTIL_H

#include <stdbool.h>

/* mkdir -p for the directories above path, and path itself when self. */
int mkdir_parents(const char *path, bool self);

/* Classic tracepoints are found through tracefs, which not every system
 * mounts (tp_btf and raw_tp do not need it): mount it where libbpf looks. */
int tracefs_ensure(void);
/* Where the tracepoint event directories are ("group/event" below it). */
const char *tracefs_events_dir(void);

#endif

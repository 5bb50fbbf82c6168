/* SPDX-License-Identifier: Apache-2.0 */
#ifndef DC_FS_UTIL_H
#define DC_FS_UTIL_H

#include <stdbool.h>

/* mkdir -p for the directories above path, and path itself when self. */
int mkdir_parents(const char *path, bool self);

#endif

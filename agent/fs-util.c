// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>

#include "fs-util.h"

int mkdir_parents(const char *path, bool self)
{
	char tmp[PATH_MAX];
	size_t len = strlen(path);

	if (len + 1 >= sizeof(tmp))
		return -ENAMETOOLONG;
	memcpy(tmp, path, len + 1);
	if (self && len && tmp[len - 1] != '/') {
		/* a trailing slash makes the loop below create path itself */
		tmp[len] = '/';
		tmp[len + 1] = 0;
	}
	for (char *p = tmp + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = 0;
		if (mkdir(tmp, 0750) < 0 && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	return 0;
}

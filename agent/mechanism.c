// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "log.h"
#include "mechanism.h"

int mech_find(const char *const *names, int n, const char *name)
{
	for (int i = 0; i < n; i++)
		if (!strcmp(names[i], name))
			return i;
	return -1;
}

int mech_choose(const char *family, const char *const *names, int first, int last,
		mech_attempt_fn attempt, mech_undo_fn undo, void *ctx, char *detail, size_t len,
		size_t *off)
{
	int r = -ENOENT;

	for (int m = first; m <= last; m++) {
		r = attempt(ctx, m);
		if (!r) {
			log_info("%s probes attached with %s", family, names[m]);
			return m;
		}
		undo(ctx);
		log_notice(
		    "%s probes: %s refused by this kernel (%s)%s", family, names[m], strerror(-r),
		    m < last && r != -EPERM && r != -EACCES ? ", trying the next mechanism" : "");
		*off += (size_t)snprintf(detail + *off, len - *off, "%s%s refused: %s",
					 *off ? "; " : "", names[m], strerror(-r));
		if (*off >= len)
			*off = len - 1;
	}
	return r;
}

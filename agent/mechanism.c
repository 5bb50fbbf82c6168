// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

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

void mech_release_image(const void *data, size_t size)
{
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t start = ((uintptr_t)data + page - 1) & ~(page - 1);
	uintptr_t end = ((uintptr_t)data + size) & ~(page - 1);

	/* whole pages only: the ends share pages with other read-only data */
	if (end > start && madvise((void *)start, end - start, MADV_DONTNEED) < 0)
		log_debug("Cannot release the BPF object's pages: %m");
}

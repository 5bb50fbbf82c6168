// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdio.h>
#include <sys/resource.h>
#include <unistd.h>

#include "selfstat.h"

int selfstat_read(struct dc_selfstat *s)
{
	struct rusage ru;
	unsigned long size, resident, shared;
	FILE *f;
	int n;

	if (getrusage(RUSAGE_SELF, &ru) < 0)
		return -errno;
	s->user_us = (uint64_t)ru.ru_utime.tv_sec * 1000000 + (uint64_t)ru.ru_utime.tv_usec;
	s->sys_us = (uint64_t)ru.ru_stime.tv_sec * 1000000 + (uint64_t)ru.ru_stime.tv_usec;
	/* current RSS, not ru_maxrss (the peak) */
	f = fopen("/proc/self/statm", "re");
	if (!f)
		return -errno;
	n = fscanf(f, "%lu %lu %lu", &size, &resident, &shared);
	fclose(f);
	if (n != 3)
		return -EIO;
	s->rss_kib = (uint64_t)resident * (uint64_t)sysconf(_SC_PAGESIZE) / 1024;
	s->rss_shared_kib = (uint64_t)shared * (uint64_t)sysconf(_SC_PAGESIZE) / 1024;
	return 0;
}

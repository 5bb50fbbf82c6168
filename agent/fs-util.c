// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fs-util.h"
#include "log.h"
#include "macro.h"

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

int path_blocked(const char *path, char *at, size_t atlen)
{
	char tmp[PATH_MAX];
	size_t len = strlen(path);
	struct stat st;

	if (len + 1 >= sizeof(tmp))
		return -ENAMETOOLONG;
	memcpy(tmp, path, len + 1);
	for (char *p = tmp + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = 0;
		if (stat(tmp, &st) < 0) {
			/* missing from here on: made when needed; anything else
			 * (a directory root may not search) the start tells */
			return 0;
		}
		if (!S_ISDIR(st.st_mode)) {
			snprintf(at, atlen, "%s", tmp);
			return -ENOTDIR;
		}
		*p = '/';
	}
	return 0;
}

int tracefs_ensure(void)
{
	/* the families start in parallel threads: one mount, not two stacked */
	static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	int r = 0;

	pthread_mutex_lock(&lock);
	if (access("/sys/kernel/tracing/events", F_OK) == 0 ||
	    access("/sys/kernel/debug/tracing/events", F_OK) == 0)
		goto out;
	if (mount("tracefs", "/sys/kernel/tracing", "tracefs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
		  NULL) < 0) {
		r = log_debug_errno(-errno, "Cannot mount tracefs on /sys/kernel/tracing: %m");
		goto out;
	}
	log_info("Mounted tracefs on /sys/kernel/tracing for the tracepoint mechanism");
out:
	pthread_mutex_unlock(&lock);
	return r;
}

int cpu_id_bound(const char *cpulist_path)
{
	_cleanup_fclose_ FILE *f = fopen(cpulist_path, "re");
	long hi = -1, a, b;
	int c;

	if (!f)
		return -errno;
	for (;;) {
		if (fscanf(f, "%ld", &a) != 1)
			break;
		b = a;
		c = fgetc(f);
		if (c == '-') {
			if (fscanf(f, "%ld", &b) != 1)
				return -EINVAL;
			c = fgetc(f);
		}
		if (a < 0 || b < a || b > 1 << 20)
			return -EINVAL;
		if (b > hi)
			hi = b;
		if (c != ',')
			break;
	}
	return hi < 0 ? -EINVAL : (int)hi + 1;
}

int possible_cpu_ids(int ncpus)
{
	int ids = cpu_id_bound("/sys/devices/system/cpu/possible");

	return ids > ncpus ? ids : ncpus;
}

const char *tracefs_events_dir(void)
{
	return access("/sys/kernel/tracing/events", F_OK) == 0 ? "/sys/kernel/tracing/events"
							       : "/sys/kernel/debug/tracing/events";
}

bool sees_kernel_pids(void)
{
	static int known = -1;
	_cleanup_fclose_ FILE *f = NULL;
	char line[256];

	if (known >= 0)
		return known;
	known = 0;
	f = fopen("/proc/self/status", "re");
	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, "NSpid:", 6)) {
			/* one pid: the initial namespace; more: nested */
			known = !strchr(line + 7, '\t') && !strchr(line + 7, ' ');
			break;
		}
	return known;
}

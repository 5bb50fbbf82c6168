// SPDX-License-Identifier: Apache-2.0
/* Reading what the running kernel says about itself; the deciding is pure
 * (preempt.c) and unit-tested. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <zlib.h>

#include "macro.h"
#include "preempt.h"

static char *read_small(const char *path)
{
	char *buf = NULL;
	size_t cap = 0;
	FILE *f = fopen(path, "re");
	ssize_t n;

	if (!f)
		return NULL;
	n = getdelim(&buf, &cap, 0, f);
	fclose(f);
	if (n < 0) {
		free(buf);
		return NULL;
	}
	return buf;
}

/* /proc/config.gz (CONFIG_IKCONFIG_PROC), else /boot/config-$(uname -r). */
static char *read_kconfig(const char *release)
{
	char path[512], *buf = NULL;
	size_t len = 0, cap = 0;
	gzFile gz;

	gz = gzopen("/proc/config.gz", "rb");
	if (gz) {
		for (;;) {
			int n;

			if (cap - len < 65536) {
				char *nb = realloc(buf, cap + 262144);

				if (!nb)
					break;
				buf = nb;
				cap += 262144;
			}
			n = gzread(gz, buf + len, (unsigned)(cap - len - 1));
			if (n <= 0)
				break;
			len += (size_t)n;
		}
		gzclose(gz);
		if (buf) {
			buf[len] = 0;
			return buf;
		}
	}
	snprintf(path, sizeof(path), "/boot/config-%s", release);
	return read_small(path);
}

enum dc_preempt preempt_detect(const char **why)
{
	_cleanup_free_ char *debugfs = read_small("/sys/kernel/debug/sched/preempt");
	_cleanup_free_ char *cmdline = read_small("/proc/cmdline");
	_cleanup_free_ char *config = NULL;
	struct utsname u;

	if (uname(&u) < 0)
		return preempt_parse(debugfs, NULL, NULL, cmdline, why);
	if (!debugfs)
		config = read_kconfig(u.release);
	return preempt_parse(debugfs, u.version, config, cmdline, why);
}

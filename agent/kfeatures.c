// SPDX-License-Identifier: Apache-2.0
/* Reading what the running kernel says about itself; the deciding is pure
 * (preempt.c) and unit-tested. */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>
#include <zlib.h>

#include "kbtf.h"
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

/* sysfs hands out a binary attribute a page or so per read */
static ssize_t pread_full(int fd, void *buf, size_t len, off_t off)
{
	size_t got = 0;

	while (got < len) {
		ssize_t n = pread(fd, (char *)buf + got, len - got, off + (off_t)got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		if (n == 0)
			break;
		got += (size_t)n;
	}
	return (ssize_t)got;
}

int kernel_btf_has_strings(const char *const *names, size_t count)
{
	_cleanup_close_ int fd = open("/sys/kernel/btf/vmlinux", O_RDONLY | O_CLOEXEC);
	_cleanup_free_ char *strs = NULL;
	struct btf_header h;
	struct stat sb;
	uint64_t off;
	uint32_t slen;
	ssize_t n;

	if (fd < 0 || fstat(fd, &sb))
		return -errno;
	n = pread_full(fd, &h, sizeof(h), 0);
	if (n != (ssize_t)sizeof(h))
		return n < 0 ? -errno : -EIO;
	/* the string section alone: 2 of the 5.5 MB on 6.18 */
	if (btf_strings_at(&h, (uint64_t)sb.st_size, &off, &slen))
		return -EINVAL;
	strs = malloc(slen ? slen : 1);
	if (!strs)
		return -ENOMEM;
	n = pread_full(fd, strs, slen, (off_t)off);
	if (n != (ssize_t)slen)
		return n < 0 ? -errno : -EIO;
	for (size_t i = 0; i < count; i++)
		if (!btf_strings_have(strs, slen, names[i]))
			return 0;
	return 1;
}

int kernel_btf_has_string(const char *name)
{
	return kernel_btf_has_strings(&name, 1);
}

int kernel_has_symbol(const char *name)
{
	_cleanup_fclose_ FILE *f = fopen("/proc/kallsyms", "re");
	char line[1024];

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f))
		if (kallsyms_line_names(line, name))
			return 1;
	return ferror(f) ? -EIO : 0;
}

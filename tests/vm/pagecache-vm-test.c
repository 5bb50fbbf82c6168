// SPDX-License-Identifier: Apache-2.0
/*
 * The page-cache family on a stock distribution kernel, through the agent's
 * own probe_pagecache_new(): the tp_btf programs read the task and the
 * folio by plain loads, which only that kernel's verifier can accept or
 * refuse, and the classic tracepoints are their fallback. A child writes a
 * new file of N pages on ramfs, whose pages enter and leave the cache by
 * the generic filemap code where the tracepoints are (tmpfs has its own
 * path), then unlinks it: one window must count N pages added and N
 * removed for the child.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "probe-pagecache.h"
#include "vm-test.h"

#define N    64
#define DIR  "/tmp/dc-vm-ramfs"
#define FILE DIR "/f"

/* the child's whole life: N order-0 pages in, then out */
static int write_and_unlink(void)
{
	static char page[4096];
	int fd = open(FILE, O_CREAT | O_TRUNC | O_WRONLY, 0600);

	if (fd < 0)
		return 1;
	memset(page, 'p', sizeof(page));
	for (int i = 0; i < N; i++)
		if (write(fd, page, sizeof(page)) != (ssize_t)sizeof(page))
			return 1;
	return close(fd) || unlink(FILE);
}

int pagecache_vm_run(const char *mech)
{
	static struct dc_config cfg;
	struct probe_pagecache *p = NULL;
	struct dc_pc_drain d = {};
	uint64_t added = 0, removed = 0;
	char name[64];
	int r, status = -1, ok;
	pid_t pid;

	snprintf(name, sizeof(name), "pagecache/%s", mech);
	mkdir(DIR, 0700);
	if (mount("ramfs", DIR, "ramfs", 0, NULL)) {
		printf("VMTEST %s FAIL mount ramfs on %s: %m\n", name, DIR);
		return 1;
	}
	config_defaults(&cfg);
	snprintf(cfg.pagecache_mechanism, sizeof(cfg.pagecache_mechanism), "%s", mech);
	r = probe_pagecache_new(&cfg, -1, &p);
	if (r < 0) {
		printf("VMTEST %s FAIL attach: %s\n", name, strerror(-r));
		umount(DIR);
		return 1;
	}
	r = probe_pagecache_flip_and_drain(p, &d);
	if (r < 0) {
		printf("VMTEST %s FAIL first drain: %s\n", name, strerror(-r));
		probe_pagecache_free(p);
		umount(DIR);
		return 1;
	}
	pid = vm_child(write_and_unlink, &status);
	if (pid < 0) {
		printf("VMTEST %s FAIL fork/wait: %m\n", name);
		probe_pagecache_free(p);
		umount(DIR);
		return 1;
	}
	r = probe_pagecache_flip_and_drain(p, &d);
	for (size_t i = 0; !r && i < d.n; i++)
		if (d.entries[i].tgid == (uint32_t)pid) {
			added += d.entries[i].v.added_pages;
			removed += d.entries[i].v.removed_pages;
		}
	ok = !r && status == 0 && added == N && removed == N;
	printf("VMTEST %s %s added=%llu removed=%llu (want %d, %d), child status %d, drain %s, "
	       "mechanism %s [%s]\n",
	       name, ok ? "PASS" : "FAIL", (unsigned long long)added, (unsigned long long)removed,
	       N, N, status, r < 0 ? strerror(-r) : "ok", probe_pagecache_mechanism(p),
	       probe_pagecache_detail(p));
	probe_pagecache_free(p);
	umount(DIR);
	return !ok;
}

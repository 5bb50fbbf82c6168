/* SPDX-License-Identifier: Apache-2.0 */
#ifndef DC_VM_TEST_H
#define DC_VM_TEST_H

#include <stdio.h>
#include <sys/mount.h>
#include <sys/reboot.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* As the VM's /init: the file systems libbpf and the probes read, no
 * memlock limit (kernels before 5.11 charge BPF maps there), and output
 * unbuffered so that a hung guest still shows how far it got. */
static inline void vm_init(void)
{
	struct rlimit rl = {RLIM_INFINITY, RLIM_INFINITY};

	if (getpid() == 1) {
		mkdir("/proc", 0755);
		mkdir("/sys", 0755);
		mkdir("/tmp", 01777);
		mount("proc", "/proc", "proc", 0, NULL);
		mount("sysfs", "/sys", "sysfs", 0, NULL);
		mount("tmpfs", "/tmp", "tmpfs", 0, NULL);
		mount("debugfs", "/sys/kernel/debug", "debugfs", 0, NULL);
		mount("tracefs", "/sys/kernel/tracing", "tracefs", 0, NULL);
	}
	setrlimit(RLIMIT_MEMLOCK, &rl);
	setvbuf(stdout, NULL, _IONBF, 0);
}

/* fn run in a child process and waited for: the child's pid (*status its
 * wait status), or -1. The agent's code leaves its own process out
 * (filter.exclude_self), so the calls a test counts are a child's. */
static inline pid_t vm_child(int (*fn)(void), int *status)
{
	pid_t pid = fork();

	if (pid == 0)
		_exit(fn());
	if (pid < 0 || waitpid(pid, status, 0) != pid)
		return -1;
	return pid;
}

/* The last line the harness looks for, then power off (as /init). */
static inline void vm_done(int failed)
{
	printf("VMTEST DONE %s\n", failed ? "FAIL" : "PASS");
	if (getpid() == 1) {
		sync();
		reboot(RB_POWER_OFF);
	}
}

/*
 * The probe families the VM test proves on a stock kernel, each a run()
 * that prints "VMTEST <name> PASS|FAIL ..." lines and returns nonzero on
 * failure. vfs-vm-test.c is the VM's /init and calls them in turn.
 */

/* The system-call programs with the file layer compiled in (files_on),
 * loaded and attached by the agent's own probe_syscall_new() with
 * mechanism mech (tp_btf, raw_tp or tracepoint) and entry stash stash
 * (auto: task storage here, or hash). */
int syscall_vm_run(const char *mech, const char *stash);

/* The same programs with the file layer off (probes.files.enable false):
 * they load without the file layer's maps. */
int syscall_vm_run_nofiles(void);

/* 32-bit system calls (int 0x80 from a 64-bit child) counted in
 * DC_CNT_COMPAT alone, none taken for the 64-bit call of its number. */
int syscall_vm_compat(void);

/* The library layer's auto mechanism through probe_uprobe_new(): on a
 * kernel before 6.6, refused uprobe_multi, then perf-event uprobes. */
int uprobe_vm_run(void);

/* The page-cache family through probe_pagecache_new() with mechanism mech
 * (tp_btf or tracepoint): the pages a child brings into the cache on ramfs
 * and drops, counted exactly. */
int pagecache_vm_run(const char *mech);

/* The block family through probe_block_new() with mechanism mech (tp_btf
 * or raw_tp) on null_blk (its module and configfs from the kernel package,
 * in /modules): a child's direct reads counted exactly, as requests of its
 * own on that device. */
int block_vm_run(const char *mech);
int block_vm_writeback(const char *mech);

#endif

/* SPDX-License-Identifier: Apache-2.0 */
#ifndef DC_VM_TEST_H
#define DC_VM_TEST_H

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

/* The library layer's auto mechanism through probe_uprobe_new(): on a
 * kernel before 6.6, refused uprobe_multi, then perf-event uprobes. */
int uprobe_vm_run(void);

#endif

// SPDX-License-Identifier: Apache-2.0
/*
 * The library layer on a stock distribution kernel: Debian 12's 6.1 has no
 * multi-uprobe links (6.6), so "auto" must be refused uprobe_multi there
 * and fall back to a perf-event uprobe per function, through the agent's
 * own probe_uprobe_new(). The probed "library" is this binary (the VM's
 * /init, static, with its symbol table): a child calls one of its
 * functions a known number of times, and one window must hold exactly
 * those calls and the bytes they returned.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include "config.h"
#include "preempt.h"
#include "probe-uprobe.h"
#include "vm-test.h"

#define N     100
#define BYTES 10

/* The agent sends systemd notifications (libsystemd, not linked into this
 * static binary); no service manager listens in the VM. */
int sd_notify(int unset_environment, const char *state);
int sd_notify(int unset_environment, const char *state)
{
	(void)unset_environment;
	(void)state;
	return 0;
}

int dc_vm_probed(int x);
__attribute__((noinline, used)) int dc_vm_probed(int x)
{
	/* keeps the call and its return value real */
	__asm__ volatile("" : "+r"(x) : : "memory");
	return x;
}

static int (*volatile probed)(int) = dc_vm_probed;

/* the child's whole life: N calls */
static int call_probed(void)
{
	for (int i = 0; i < N; i++)
		probed(BYTES);
	return 0;
}

/* multi-uprobe links came in 6.6: what auto must take on this kernel */
static const char *expected_mechanism(void)
{
	struct utsname u;
	int major = 0, minor = 0;

	if (uname(&u) || sscanf(u.release, "%d.%d", &major, &minor) != 2)
		return "?";
	return major > 6 || (major == 6 && minor >= 6) ? "uprobe_multi" : "uprobe";
}

int uprobe_vm_run(void)
{
	const char *name = "libraries/auto";
	static struct dc_config cfg;
	struct probe_uprobe *p = NULL;
	struct dc_fn_drain d = {};
	uint64_t count = 0, bytes = 0;
	char err[512], self[256];
	const char *why;
	int r, status = -1, ok;
	ssize_t n;
	pid_t pid;

	config_defaults(&cfg);
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0) {
		printf("VMTEST %s FAIL readlink /proc/self/exe: %m\n", name);
		return 1;
	}
	self[n] = '\0';
	cfg.n_libs = 1;
	snprintf(cfg.libs[0].path, sizeof(cfg.libs[0].path), "%s", self);
	snprintf(cfg.libs[0].category, sizeof(cfg.libs[0].category), "vm");
	snprintf(cfg.libs[0].functions, sizeof(cfg.libs[0].functions), "dc_vm_probed");
	snprintf(cfg.libs[0].bytes, sizeof(cfg.libs[0].bytes), "dc_vm_probed");
	/* plain adds where the agent would use them (this kernel's model) */
	r = probe_uprobe_new(&cfg, NULL, -1, preempt_allows_plain_updates(preempt_detect(&why)), &p,
			     err, sizeof(err));
	if (r < 0) {
		printf("VMTEST %s FAIL attach: %s (%s)\n", name, err, strerror(-r));
		return 1;
	}
	if (strcmp(probe_uprobe_mechanism(p), expected_mechanism())) {
		printf("VMTEST %s FAIL mechanism %s, want %s [%s]\n", name,
		       probe_uprobe_mechanism(p), expected_mechanism(), probe_uprobe_detail(p));
		probe_uprobe_free(p);
		return 1;
	}
	r = probe_uprobe_flip_and_drain(p, &d);
	if (r < 0) {
		printf("VMTEST %s FAIL first drain: %s\n", name, strerror(-r));
		probe_uprobe_free(p);
		return 1;
	}
	pid = vm_child(call_probed, &status);
	if (pid < 0) {
		printf("VMTEST %s FAIL fork/wait: %m\n", name);
		probe_uprobe_free(p);
		return 1;
	}
	r = probe_uprobe_flip_and_drain(p, &d);
	for (size_t i = 0; !r && i < d.n; i++)
		if (d.entries[i].tgid == (uint32_t)pid && d.entries[i].func == 0) {
			count += d.entries[i].count;
			bytes += d.entries[i].bytes;
		}
	ok = !r && status == 0 && count == N && bytes == (uint64_t)N * BYTES;
	printf("VMTEST %s %s dc_vm_probed=%llu/%llu (want %d/%d), mechanism %s [%s]\n", name,
	       ok ? "PASS" : "FAIL", (unsigned long long)count, (unsigned long long)bytes, N,
	       N * BYTES, probe_uprobe_mechanism(p), probe_uprobe_detail(p));
	probe_uprobe_free(p);
	return !ok;
}

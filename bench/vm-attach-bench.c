// SPDX-License-Identifier: Apache-2.0
/*
 * Attach and detach times of the probe mechanisms this project's
 * development kernel refuses (fentry, kprobes), against the tracepoints
 * that stand in for them, in one boot of Debian's stock kernel under qemu
 * (bench/run-vm-attach-bench.sh). The VM's /init, statically linked; the
 * agent's own code attaches (agent/probe-vfs.c, agent/probe-syscall.c):
 *   vfs/<set>/<mechanism>   the VFS layer's default categories, and every
 *                           category, on fentry, kprobe and tracepoint
 *   syscall/<mechanism>     the system-call programs with the file layer,
 *                           on tp_btf, raw_tp and tracepoint
 * ROUNDS rounds, the mechanisms' order rotated every round; medians, and
 * each mechanism's attach time over its layer's first one (fentry,
 * tp_btf) measured in the same rounds. Times under TCG emulation are many
 * times a real machine's: the ratios are the figures to read. Prints
 * "VMTEST ..." lines (run-vm-test.sh shows those), then "VMTEST DONE PASS"
 * when fentry, kprobes and the three system-call mechanisms attached in
 * every round, and powers the VM off.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>

#include "config.h"
#include "probe-syscall.h"
#include "traces.h"
#include "probe-vfs.h"
#include "vm-test.h"

#define ROUNDS 5
#define MAXM   3

static const char every_category[] = "vfs,ext4,xfs,nfs,fuse,iomap,file_cache,page_cache,bio";

struct series {
	const char *name, *mech[MAXM];
	double attach[MAXM][ROUNDS], detach[MAXM][ROUNDS];
	char detail[MAXM][256];
	int failed[MAXM];
};

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double median(const double *v, int n)
{
	double s[ROUNDS];

	memcpy(s, v, sizeof(double) * (size_t)n);
	qsort(s, (size_t)n, sizeof(double), cmp);
	return n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

/* One attach and detach of the VFS layer; nonzero if it did not attach
 * with mech. */
static int vfs_once(const char *categories, const char *mech, double *att, double *det,
		    char *detail, size_t len)
{
	struct probe_vfs_opts o = {.mechanism = mech,
				   .categories = categories,
				   .max_keys = 1024,
				   .percpu = true,
				   .clock_fd = -1};
	struct probe_vfs *p = NULL;
	double t0 = now_ms(), t1;
	int r = probe_vfs_new(&o, &p, detail, len);

	t1 = now_ms();
	if (r >= 0 && strcmp(probe_vfs_mechanism(p), mech))
		r = -1;
	if (p) {
		/* what attached; the list of functions this kernel lacks is long */
		char *cut;

		snprintf(detail, len, "%s", probe_vfs_detail(p));
		cut = strstr(detail, ", not in this kernel");
		if (cut)
			*cut = '\0';
	}
	probe_vfs_free(p);
	*att = t1 - t0;
	*det = now_ms() - t1;
	return r < 0;
}

static int syscall_once(const char *mech, double *att, double *det, char *detail, size_t len)
{
	struct probe_syscall *p = NULL;
	struct traces *tr = NULL;
	struct dc_config cfg;
	double t0, t1;
	int r;

	config_defaults(&cfg);
	if (config_set(&cfg, "probes.syscall.mechanism", mech, detail, len) < 0 ||
	    (cfg.traces_enable && traces_new(&cfg, "vm", &tr, detail, len) < 0))
		return 1;
	t0 = now_ms();
	r = probe_syscall_new(&cfg, tr, -1, &p);
	t1 = now_ms();
	if (r >= 0 && strcmp(probe_syscall_mechanism(p), mech))
		r = -1;
	snprintf(detail, len, "%s", r < 0 ? "refused" : probe_syscall_mechanism(p));
	probe_syscall_free(p);
	traces_free(tr);
	*att = t1 - t0;
	*det = now_ms() - t1;
	return r < 0;
}

static void report(struct series *s, int nm)
{
	double base = median(s->attach[0], ROUNDS);

	for (int m = 0; m < nm; m++) {
		double a = median(s->attach[m], ROUNDS), d = median(s->detach[m], ROUNDS);

		if (s->failed[m]) {
			printf("VMTEST attach %s/%s: not attached in every round [%s]\n", s->name,
			       s->mech[m], s->detail[m]);
			continue;
		}
		printf("VMTEST attach %s/%s: attach %.1f ms, detach %.1f ms, attach %.2fx %s's "
		       "[%s]\n",
		       s->name, s->mech[m], a, d, !s->failed[0] && base > 0 ? a / base : 0.0,
		       s->mech[0], s->detail[m]);
	}
}

int main(void)
{
	struct series vfs_default = {.name = "vfs/default",
				     .mech = {"fentry", "kprobe", "tracepoint"}},
		      vfs_every = {.name = "vfs/every", .mech = {"fentry", "kprobe", "tracepoint"}},
		      sys = {.name = "syscall", .mech = {"tp_btf", "raw_tp", "tracepoint"}};
	struct utsname u;
	int failed;

	vm_init();
	uname(&u);
	printf("VMTEST attach bench: kernel %s, %d rounds, medians\n", u.release, ROUNDS);
	for (int r = 0; r < ROUNDS; r++)
		for (int i = 0; i < MAXM; i++) {
			int m = (i + r) % MAXM; /* rotated: no mechanism always first */

			vfs_default.failed[m] |=
			    vfs_once(NULL, vfs_default.mech[m], &vfs_default.attach[m][r],
				     &vfs_default.detach[m][r], vfs_default.detail[m],
				     sizeof(vfs_default.detail[m]));
			vfs_every.failed[m] |=
			    vfs_once(every_category, vfs_every.mech[m], &vfs_every.attach[m][r],
				     &vfs_every.detach[m][r], vfs_every.detail[m],
				     sizeof(vfs_every.detail[m]));
			sys.failed[m] |=
			    syscall_once(sys.mech[m], &sys.attach[m][r], &sys.detach[m][r],
					 sys.detail[m], sizeof(sys.detail[m]));
		}
	report(&vfs_default, MAXM);
	report(&vfs_every, MAXM);
	report(&sys, MAXM);
	/* what the bench is for: fentry and kprobes, and the system-call
	 * programs on every mechanism (the VFS layer's tracepoints depend on
	 * the file systems built into the kernel, reported either way) */
	failed = vfs_default.failed[0] | vfs_default.failed[1] | vfs_every.failed[0] |
		 vfs_every.failed[1] | sys.failed[0] | sys.failed[1] | sys.failed[2];
	vm_done(failed);
	return failed;
}

// SPDX-License-Identifier: Apache-2.0
/*
 * The VFS probes' fentry and kprobe paths, checked inside a VM booting a
 * stock distribution kernel (this project's development kernel refuses
 * both). Statically linked, it is the VM's /init: mounts what libbpf needs,
 * then for each mechanism attaches the VFS probes (agent/probe-vfs.c, the
 * agent's own code), makes an exactly known set of calls, drains one window
 * and compares; the same calls' trace events, written by the VFS programs
 * into the system-call object's ring (every call kept as slow), must be
 * there one for one. Prints "VMTEST <mechanism> PASS|FAIL ..." lines, then
 * "VMTEST DONE", and powers the VM off. The same boot then proves the
 * system-call programs with the file layer (syscall-vm-test.c), the
 * library layer's fallback to perf-event uprobes (uprobe-vm-test.c) and the
 * page-cache family by both its mechanisms (pagecache-vm-test.c) and the
 * block family on null_blk (block-vm-test.c): one boot,
 * because a boot under TCG is most of the test's time.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zstd.h>

#include "config.h"
#include "datacrumbs/vfs.h"
#include "preempt.h"
#include "probe-syscall.h"
#include "probe-vfs.h"
#include "traces.h"
#include "vm-test.h"

#define N     100
#define SZ    4096
#define IRQ_N 200

static void sum(const struct dc_fn_drain *d, uint32_t func, uint64_t *count, uint64_t *bytes)
{
	*count = *bytes = 0;
	for (size_t i = 0; i < d->n; i++)
		if (d->entries[i].tgid == (uint32_t)getpid() && d->entries[i].func == func) {
			*count += d->entries[i].count;
			*bytes += d->entries[i].bytes;
		}
}

static size_t count_str(const char *s, size_t len, const char *what)
{
	size_t n = 0, w = strlen(what);

	for (size_t i = 0; i + w <= len; i++)
		if (!memcmp(s + i, what, w))
			n++;
	return n;
}

/* The trace events the ring holds, as one batch's NDJSON (NULL when they
 * cannot be read): the system-call object's ring, shared with the VFS
 * programs, where every call is "slow" under the policy set below. */
static char *trace_text(struct traces *t, size_t *len)
{
	struct dc_buf z = {};
	struct traces_window st;
	char *raw = NULL;

	*len = 0;
	if (traces_consume(t) >= 0 && traces_seal(t, &z, &st) >= 0 && z.len) {
		*len = ZSTD_getFrameContentSize(z.data, z.len);
		raw = malloc(*len + 1);
		if (raw && ZSTD_decompress(raw, *len, z.data, z.len) != *len) {
			free(raw);
			raw = NULL;
		}
	}
	buf_free(&z);
	return raw;
}

/* This process's events of one VFS function; -1 without events. */
static long vfs_events(const char *raw, size_t len, const char *name)
{
	char what[128];

	if (!raw)
		return -1;
	snprintf(what, sizeof(what), "\"name\":\"%s\",\"cat\":\"vfs\",\"pid\":%d,", name,
		 (int)getpid());
	return (long)count_str(raw, len, what);
}

static int run(const char *mech)
{
	const char *why;
	/* plain adds where the agent would use them (this kernel's model) */
	struct probe_vfs_opts o = {.clock_fd = -1,
				   .mechanism = mech,
				   .max_keys = 1024,
				   .percpu = true,
				   .plain_updates =
				       preempt_allows_plain_updates(preempt_detect(&why))};
	uint64_t wc, wb, rc, rb, oc, ob, lc[DC_LAYER_MAX][DC_TR_OUTCOMES];
	struct dc_fn_drain d = {};
	struct probe_vfs *p = NULL;
	struct probe_syscall *sys = NULL;
	struct traces *t = NULL;
	struct dc_config cfg;
	static char buf[SZ];
	char detail[512];
	char *text;
	size_t text_len;
	long ew, er;
	int fd, r, ok;

	/* the trace events of the VFS programs on this mechanism: the ring is
	 * the system-call object's; every call at least 1 ns long is kept */
	config_defaults(&cfg);
	if (config_set(&cfg, "traces.sampling.slow_ms", "0.000001", detail, sizeof(detail)) < 0 ||
	    traces_new(&cfg, "vm", &t, detail, sizeof(detail)) < 0 ||
	    probe_syscall_new(&cfg, t, -1, &sys) < 0 || probe_syscall_traces(sys) != t) {
		printf("VMTEST %s FAIL no trace ring: %s\n", mech, detail);
		return 1;
	}
	o.traces = t;
	r = probe_vfs_new(&o, &p, detail, sizeof(detail));
	if (r < 0) {
		printf("VMTEST %s FAIL attach: %s\n", mech, detail);
		return 1;
	}
	r = traces_start(t);
	if (r < 0) {
		printf("VMTEST %s FAIL trace reader: %s\n", mech, strerror(-r));
		return 1;
	}
	if (strcmp(probe_vfs_mechanism(p), mech)) {
		printf("VMTEST %s FAIL got mechanism %s\n", mech, probe_vfs_mechanism(p));
		return 1;
	}
	/* attaching reads sysfs files, which the probes attached first see:
	 * close that window, then make nothing but the measured calls before
	 * the next drain (no printf) */
	probe_vfs_flip_and_drain(p, &d);
	free(trace_text(t, &text_len)); /* and the attach's events */
	traces_layers_read(t, lc);
	fd = open("/tmp/vfs-test", O_CREAT | O_RDWR | O_TRUNC, 0600);
	for (int i = 0; i < N; i++)
		if (write(fd, buf, SZ) != SZ)
			break;
	lseek(fd, 0, SEEK_SET);
	for (int i = 0; i < N; i++)
		if (read(fd, buf, SZ) != SZ)
			break;
	close(fd);
	r = probe_vfs_flip_and_drain(p, &d);
	traces_layers_read(t, lc);
	text = trace_text(t, &text_len);
	ew = vfs_events(text, text_len, "vfs_write");
	er = vfs_events(text, text_len, "vfs_read");
	free(text);
	sum(&d, DC_VFS_vfs_write, &wc, &wb);
	sum(&d, DC_VFS_vfs_read, &rc, &rb);
	sum(&d, DC_VFS_vfs_open, &oc, &ob);
	ok = !r && wc == N && wb == (uint64_t)N * SZ && rc == N && rb == (uint64_t)N * SZ &&
	     oc == 1 && ew == N && er == N && lc[DC_LAYER_VFS][DC_TR_KEPT] >= 2 * N + 1 &&
	     !lc[DC_LAYER_VFS][DC_TR_DROPPED];
	printf("VMTEST %s %s vfs_write=%llu/%llu vfs_read=%llu/%llu vfs_open=%llu (want %d/%d, "
	       "%d/%d, 1) trace events vfs_write=%ld vfs_read=%ld (want %d, %d), layer kept=%llu "
	       "dropped=%llu [%s]\n",
	       mech, ok ? "PASS" : "FAIL", (unsigned long long)wc, (unsigned long long)wb,
	       (unsigned long long)rc, (unsigned long long)rb, (unsigned long long)oc, N, N * SZ, N,
	       N * SZ, ew, er, N, N, (unsigned long long)lc[DC_LAYER_VFS][DC_TR_KEPT],
	       (unsigned long long)lc[DC_LAYER_VFS][DC_TR_DROPPED], probe_vfs_detail(p));
	if (!ok)
		for (size_t i = 0; i < d.n; i++)
			printf(
			    "VMTEST %s   entry tgid=%u func=%s count=%llu bytes=%llu errors=%llu\n",
			    mech, d.entries[i].tgid, probe_vfs_func_name(d.entries[i].func),
			    (unsigned long long)d.entries[i].count,
			    (unsigned long long)d.entries[i].bytes,
			    (unsigned long long)d.entries[i].errors);
	probe_vfs_free(p);
	probe_syscall_free(sys);
	traces_free(t);
	return !ok;
}

/* a page shared with the children: the spinners run while it is 0 */
static volatile int *stop_spin;

/* pinned to one CPU, busy in user space: what a completion interrupt
 * on that CPU finds running */
static int spin_on(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	sched_setaffinity(0, sizeof(set), &set);
	while (!*stop_spin)
		;
	return 0;
}

static char irq_dev[64]; /* the device the run at hand reads */

/* IRQ_N direct reads of irq_dev */
static int irq_reads(void)
{
	void *buf;
	int fd = open(irq_dev, O_RDONLY | O_DIRECT);

	if (fd < 0 || posix_memalign(&buf, SZ, SZ)) {
		printf("VMTEST vfs-irq   cannot open %s: %m\n", irq_dev);
		return 1;
	}
	for (int i = 0; i < IRQ_N; i++)
		if (pread(fd, buf, SZ, (off_t)i * SZ) != SZ) {
			printf("VMTEST vfs-irq   read %d of %s: %m\n", i, irq_dev);
			return 1;
		}
	return close(fd) != 0;
}

static int write_attr(const char *dir, const char *name, const char *val)
{
	char path[256];
	int fd, ok;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_WRONLY);
	if (fd < 0)
		return -errno;
	ok = write(fd, val, strlen(val)) == (ssize_t)strlen(val);
	close(fd);
	return ok ? 0 : -EIO;
}

/* A null_blk device named name (configfs; null_blk is loaded by the block
 * case before) completing requests by irqmode: "2", from a timer in a
 * hardirq 1 ms after submission; "0", at once in the submitter's
 * context. Its path in path. */
static int null_device(const char *name, const char *irqmode, char *path, size_t pathlen,
		       char *detail, size_t len)
{
	char dir[128], idx[16] = "", f[192];
	int fd, r;

	snprintf(dir, sizeof(dir), "/sys/kernel/config/nullb/%s", name);
	mkdir("/sys/kernel/config", 0755);
	if (access("/sys/kernel/config/nullb", F_OK))
		mount("configfs", "/sys/kernel/config", "configfs", 0, NULL);
	if (mkdir(dir, 0755) && errno != EEXIST) {
		snprintf(detail, len, "mkdir %s: %s", dir, strerror(errno));
		return -1;
	}
	if ((r = write_attr(dir, "irqmode", irqmode)) ||
	    /* long enough for the submitter's own return probes to have run
	     * under TCG's slow clock: at 100 us the timer often landed inside
	     * them, and a kprobe hit then is skipped (up to 26 of 200) */
	    (r = write_attr(dir, "completion_nsec", "1000000")) ||
	    (r = write_attr(dir, "size", "64")) || (r = write_attr(dir, "power", "1"))) {
		snprintf(detail, len, "configuring %s: %s", dir, strerror(-r));
		return -1;
	}
	snprintf(f, sizeof(f), "%s/index", dir);
	fd = open(f, O_RDONLY);
	if (fd < 0 || read(fd, idx, sizeof(idx) - 1) <= 0) {
		snprintf(detail, len, "reading its index: %s", strerror(errno));
		return -1;
	}
	close(fd);
	/* the disk takes the configfs directory's name (6.1), or nullb<index> */
	snprintf(f, sizeof(f), "/sys/block/%s", name);
	if (access(f, F_OK))
		snprintf(f, sizeof(f), "/sys/block/nullb%d", atoi(idx));
	snprintf(path, pathlen, "/dev/%s", strrchr(f, '/') + 1);
	/* no I/O scheduler: with one, a request can be dispatched from a
	 * kworker, whose context the completion would then run in */
	strncat(f, "/queue", sizeof(f) - strlen(f) - 1);
	r = write_attr(f, "scheduler", "none");
	snprintf(f + strlen(f), sizeof(f) - strlen(f), "/scheduler");
	fd = open(f, O_RDONLY);
	{
		char sched[128] = "";

		if (fd < 0 || read(fd, sched, sizeof(sched) - 1) <= 0 || !strstr(sched, "[none]")) {
			snprintf(detail, len, "%s: no scheduler \"none\" (%s; reads %s)", f,
				 r ? strerror(-r) : "written", sched);
			if (fd >= 0)
				close(fd);
			return -1;
		}
	}
	close(fd);
	return 0;
}

/*
 * bio_endio in interrupt context, by fentry and by kprobe: null_blk's
 * timer completes a child's direct reads in a hardirq, on CPUs kept busy
 * by spinners. The completions must be charged to no process (tgid 0,
 * cgroup 0), not to the spinner or reader they interrupted, and the
 * reader's own submissions (task context) to the reader; each one's trace
 * event (every call kept as slow) must say pid and tid 0. With task (a
 * device completing in the submitter's context), the same programs must
 * find task context: every completion the reader's, none in interrupts.
 */
static int irq_run(const char *mech, bool task)
{
	static char timer_dev[64], task_dev[64];
	char *dev = task ? task_dev : timer_dev;
	const char *name = task ? "vfs-irq-task" : "vfs-irq";
	struct probe_vfs_opts o = {.mechanism = mech,
				   .categories = "bio",
				   .max_keys = 1024,
				   .percpu = true,
				   .clock_fd = -1};
	uint64_t irq = 0, irq_ns = 0, spun = 0, reader_end = 0, other = 0, submits = 0, c, b;
	uint64_t got, stray, lost, missing;
	pid_t spinner[2] = {-1, -1}, reader;
	struct dc_fn_drain d = {};
	struct probe_vfs *p = NULL;
	struct traces *t = NULL;
	struct dc_config cfg;
	char detail[512] = "";
	long ev_irq = 0, ev_task = 0;
	size_t text_len;
	char *text;
	int status = -1, r, ok;
	unsigned want;

	if (!dev[0] && null_device(task ? "dc_task" : "dc_irq", task ? "0" : "2", dev, 64, detail,
				   sizeof(detail)) < 0) {
		printf("VMTEST %s/%s FAIL null_blk device: %s\n", name, mech, detail);
		return 1;
	}
	snprintf(irq_dev, sizeof(irq_dev), "%s", dev);
	if (!stop_spin) {
		void *m = mmap(NULL, sizeof(int), PROT_READ | PROT_WRITE,
			       MAP_SHARED | MAP_ANONYMOUS, -1, 0);

		if (m == MAP_FAILED) {
			printf("VMTEST %s/%s FAIL mmap: %m\n", name, mech);
			return 1;
		}
		stop_spin = m;
	}
	/* every call at least 1 ns long is kept: the trace ring, made by the
	 * VFS object alone here */
	config_defaults(&cfg);
	if (config_set(&cfg, "traces.sampling.slow_ms", "0.000001", detail, sizeof(detail)) < 0 ||
	    traces_new(&cfg, "vm", &t, detail, sizeof(detail)) < 0) {
		printf("VMTEST %s/%s FAIL traces: %s\n", name, mech, detail);
		return 1;
	}
	o.traces = t;
	r = probe_vfs_new(&o, &p, detail, sizeof(detail));
	if (r < 0 || strcmp(probe_vfs_mechanism(p), mech) || traces_start(t) < 0) {
		printf("VMTEST %s/%s FAIL attach: %s [%s]\n", name, mech,
		       r < 0 ? strerror(-r) : probe_vfs_mechanism(p), detail);
		probe_vfs_free(p);
		traces_free(t);
		return 1;
	}
	*stop_spin = 0;
	for (int i = 0; i < 2; i++) {
		spinner[i] = fork();
		if (spinner[i] == 0)
			_exit(spin_on(i));
	}
	probe_vfs_flip_and_drain(p, &d);
	free(trace_text(t, &text_len));
	reader = vm_child(irq_reads, &status);
	*stop_spin = 1;
	for (int i = 0; i < 2; i++)
		if (spinner[i] > 0)
			waitpid(spinner[i], NULL, 0);
	r = probe_vfs_flip_and_drain(p, &d);
	text = trace_text(t, &text_len);
	/* each bio_endio event: no process's (pid and tid 0) or a task's */
	for (char *q = text; q && (q = strstr(q, "\"name\":\"bio_endio\"")); q++) {
		char *pid = strstr(q, "\"pid\":");

		if (pid && !strncmp(pid, "\"pid\":0,\"tid\":0,", 16))
			ev_irq++;
		else
			ev_task++;
	}
	free(text);
	for (size_t i = 0; !r && i < d.n; i++) {
		const struct dc_fn_entry *e = &d.entries[i];

		if (e->func == DC_VFS_bio_endio) {
			if (!e->tgid && !e->cgroup_id) {
				irq += e->count;
				irq_ns += e->time_ns;
			} else if (e->tgid == (uint32_t)spinner[0] ||
				   e->tgid == (uint32_t)spinner[1])
				spun += e->count;
			else if (e->tgid == (uint32_t)reader)
				reader_end += e->count;
			else {
				other += e->count;
				printf("VMTEST %s/%s   bio_endio tgid %u cgroup %llu: %llu\n", name,
				       mech, e->tgid, (unsigned long long)e->cgroup_id,
				       (unsigned long long)e->count);
			}
		} else if (e->func == DC_VFS_submit_bio && e->tgid == (uint32_t)reader)
			submits += e->count;
	}
	sum(&d, DC_VFS_bio_endio, &c, &b); /* this process's: none expected either */
	/* a kprobe hit while the CPU runs another kprobe's handler (the
	 * reader's own, under TCG's slow clock) is skipped by the kernel
	 * before any program runs: a few such misses are the mechanism's */
	/* lost: counted as orphans or returns without entry. An interrupt's
	 * entry older than 10 ms is taken for a leftover (bpf/func.bpf.h):
	 * under TCG the host can stall a vCPU that long inside a handler
	 * (seen once in about a dozen runs: 2 calls of 200, with one hardware
	 * queue for both CPUs). Such a call is counted, as
	 * an orphan entry and a return without entry, never charged to
	 * anyone. In task context nothing is ever dropped so. */
	lost = d.counters[DC_FN_CNT_NO_ENTRY] + d.counters[DC_FN_CNT_ORPHAN];
	/* a call dropped so is one orphan, or one return without entry, or
	 * both: the larger of the two counts the calls missing */
	missing = d.counters[DC_FN_CNT_NO_ENTRY] > d.counters[DC_FN_CNT_ORPHAN]
		      ? d.counters[DC_FN_CNT_NO_ENTRY]
		      : d.counters[DC_FN_CNT_ORPHAN];
	want = strcmp(mech, "kprobe")
		   ? IRQ_N - (unsigned)(!task && lost <= IRQ_N / 20 ? missing : 0)
		   : IRQ_N * 9 / 10;
	/* where the completions must be, and where none may be */
	got = task ? reader_end : irq;
	stray = task ? irq : reader_end;
	ok = !r && reader > 0 && status == 0 && spinner[0] > 0 && spinner[1] > 0 && got >= want &&
	     (task || irq_ns > 0) && !stray && !spun && !c && !other && submits >= IRQ_N &&
	     ev_irq == (long)irq && ev_task == (long)reader_end && lost <= (task ? 0 : IRQ_N / 20);
	printf(
	    "VMTEST %s/%s %s bio_endio: interrupt context %llu calls (%llu ns), reader %llu "
	    "(want >= %u in %s, 0 in %s), spinners %llu, this process %llu, others %llu "
	    "(want 0, 0, 0); reader's submit_bio %llu (want >= %d); return_without_entry %llu, "
	    "orphans %llu (want 10 at most in all, in interrupts); trace events of bio_endio %ld "
	    "with pid and "
	    "tid 0, %ld with a pid "
	    "(want %llu, %llu); reader status %d, drain %s [%s]\n",
	    name, mech, ok ? "PASS" : "FAIL", (unsigned long long)irq, (unsigned long long)irq_ns,
	    (unsigned long long)reader_end, want, task ? "the reader" : "interrupt context",
	    task ? "interrupt context" : "the reader", (unsigned long long)spun,
	    (unsigned long long)c, (unsigned long long)other, (unsigned long long)submits, IRQ_N,
	    (unsigned long long)d.counters[DC_FN_CNT_NO_ENTRY],
	    (unsigned long long)d.counters[DC_FN_CNT_ORPHAN], ev_irq, ev_task,
	    (unsigned long long)irq, (unsigned long long)reader_end, status,
	    r < 0 ? strerror(-r) : "ok", probe_vfs_detail(p));
	probe_vfs_free(p);
	traces_free(t);
	return !ok;
}

/*
 * Raw tracepoints carry a cookie from 6.10 on; before, the VFS programs
 * that read it must be refused at load, by name, so that auto goes on to
 * the perf-event tracepoints instead of attaching rows it cannot tell apart.
 */
static int raw_tp_refused_before_6_10(void)
{
	struct probe_vfs_opts o = {
	    .mechanism = "raw_tp", .max_keys = 64, .percpu = true, .clock_fd = -1};
	struct probe_vfs *p = NULL;
	struct utsname u;
	char detail[512] = "";
	int major = 0, minor = 0, r;
	bool old;

	uname(&u);
	sscanf(u.release, "%d.%d", &major, &minor);
	old = major < 6 || (major == 6 && minor < 10);
	r = probe_vfs_new(&o, &p, detail, sizeof(detail));
	printf("VMTEST vfs/raw_tp %s kernel %s: %s [%s]\n",
	       (old ? r < 0 && strstr(detail, "raw_tp refused") : r >= 0 || r == -ENOENT) ? "PASS"
											  : "FAIL",
	       u.release, r < 0 ? "refused" : "attached", detail);
	probe_vfs_free(p);
	return old ? !(r < 0 && strstr(detail, "raw_tp refused")) : !(r >= 0 || r == -ENOENT);
}

int main(void)
{
	int failed = 0;

	vm_init();
	failed |= run("fentry");
	failed |= run("kprobe");
	failed |= raw_tp_refused_before_6_10();
	failed |= syscall_vm_run("tp_btf", "auto");
	failed |= syscall_vm_run("raw_tp", "auto");
	failed |= syscall_vm_run("tracepoint", "auto");
	/* the stash in task storage alone, as on preemptible kernels */
	failed |= syscall_vm_run("tp_btf", "task_storage");
	/* the per-thread hash, for kernels without task storage (< 5.11) */
	failed |= syscall_vm_run("tp_btf", "hash");
	failed |= syscall_vm_run_nofiles();
	failed |= syscall_vm_compat();
	failed |= uprobe_vm_run();
	failed |= pagecache_vm_run("tp_btf");
	failed |= pagecache_vm_run("tracepoint");
	failed |= block_vm_run("tp_btf");
	failed |= block_vm_run("raw_tp");
	failed |= block_vm_writeback("tp_btf");
	/* after the block cases, which load null_blk */
	failed |= irq_run("fentry", false);
	failed |= irq_run("kprobe", false);
	failed |= irq_run("fentry", true);
	failed |= irq_run("kprobe", true);
	vm_done(failed);
	return failed;
}

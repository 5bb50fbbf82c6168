// SPDX-License-Identifier: Apache-2.0
/*
 * The system-call programs with the file layer compiled in, on a stock
 * distribution kernel: the development kernel only proves them on its own
 * struct layouts (file, inode, fdtable, mount), and CO-RE is what has to
 * bridge the others. Loads and attaches through the agent's own
 * probe_syscall_new() (its nr and kind tables, its map sizing), with the
 * agent excluding itself as it does by default, so the measured calls are
 * made by a child. Then one window holds only that child's known calls.
 */
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include "config.h"
#include "ops.h"
#include "probe-file.h"
#include "probe-syscall.h"
#include "traces.h"
#include "stacks.h"
#include "vm-test.h"

#define N    100
#define SZ   4096
#define PATH "/tmp/dc-vm-file" /* a tmpfs mounted on the initramfs: the name crosses a mount */

/* 2 * SZ: the last write starts one byte in, to be unaligned in memory */
static char buf[2 * SZ] __attribute__((aligned(4096)));

/*
 * libbpf's warnings carry the verifier's and the CO-RE relocator's reasons
 * for a refusal. The serial console is slow under TCG and a verifier log
 * can be long, so only the last lines (where the reason is) are kept, to be
 * printed when the file layer is refused.
 */
#define LOG_LINES 80
static char log_ring[LOG_LINES][256];
static unsigned log_next;

static int keep_warning(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	char *text = NULL, *line, *save = NULL;

	if (level != LIBBPF_WARN || vasprintf(&text, fmt, ap) < 0)
		return 0;
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
		snprintf(log_ring[log_next++ % LOG_LINES], sizeof(log_ring[0]), "%s", line);
	free(text);
	return 0;
}

static void print_warnings(const char *name)
{
	unsigned i = log_next > LOG_LINES ? log_next - LOG_LINES : 0;

	for (; i < log_next; i++)
		printf("VMTEST %s   libbpf: %s\n", name, log_ring[i % LOG_LINES]);
}

/*
 * The measured process. Each call's effect on the counters is an
 * expectation in check_ops() and check_file(): change them together.
 * Nothing but these calls: a printf would be a counted write.
 */
static int workload(void)
{
	int fd, d;

	fd = open(PATH, O_CREAT | O_RDWR | O_TRUNC, 0600);
	if (fd < 0)
		return 10;
	for (int i = 0; i < N; i++)
		if (pwrite(fd, buf, SZ, (off_t)i * SZ) != SZ)
			return 11;
	for (int i = 0; i < N; i++)
		if (pread(fd, buf, SZ, (off_t)i * SZ) != SZ)
			return 12;
	/* a write at the file position (f_pos, read by the probe), through a
	 * second descriptor of the same file: consecutive to the pwrites */
	d = dup(fd);
	if (d < 0 || lseek(d, (off_t)N * SZ, SEEK_SET) != (off_t)N * SZ)
		return 13;
	if (write(d, buf + 1, SZ) != SZ)
		return 14;
	close(fd);
	close(d);
	return 0;
}

struct checks {
	const char *name;
	int n, failed;
};

static void check(struct checks *c, const char *what, uint64_t got, uint64_t want)
{
	c->n++;
	if (got != want)
		c->failed++;
	printf("VMTEST %s   %s %s=%llu (want %llu)\n", c->name, got == want ? "ok " : "BAD", what,
	       (unsigned long long)got, (unsigned long long)want);
}

static void check_ops(struct checks *c, const struct dc_drain_result *res, uint32_t pid)
{
	static const struct {
		enum dc_op op;
		uint64_t count, bytes;
	} want[] = {
	    {DC_OP_openat, 1, 0},
	    {DC_OP_pwrite64, N, (uint64_t)N * SZ},
	    {DC_OP_pread64, N, (uint64_t)N * SZ},
	    {DC_OP_dup, 1, 0},
	    {DC_OP_lseek, 1, 0},
	    {DC_OP_write, 1, SZ},
	    {DC_OP_close, 2, 0},
	};
	uint64_t count[DC_OP_MAX] = {}, bytes[DC_OP_MAX] = {}, errors = 0, rest, lost = 0;
	char what[64];

	for (size_t i = 0; i < res->n; i++) {
		const struct dc_agg_entry *e = &res->entries[i];

		if (e->tgid != pid || e->op >= DC_OP_MAX)
			continue;
		count[e->op] += e->v.count;
		bytes[e->op] += e->v.bytes;
		errors += e->v.errors;
	}
	rest = 0;
	for (unsigned op = 0; op < DC_OP_MAX; op++)
		rest += count[op];
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		const char *name = ops_get(want[i].op)->name;

		snprintf(what, sizeof(what), "op.%s.count", name);
		check(c, what, count[want[i].op], want[i].count);
		snprintf(what, sizeof(what), "op.%s.bytes", name);
		check(c, what, bytes[want[i].op], want[i].bytes);
		rest -= count[want[i].op];
	}
	check(c, "op.other.count", rest, 0);
	check(c, "op.errors", errors, 0);
	for (unsigned i = 0; i < DC_CNT_MAX; i++)
		lost += res->counters[i];
	for (unsigned op = 0; op < DC_OP_MAX; op++)
		lost += res->overflow[op].v.count;
	check(c, "op.lost_or_unattributed", lost, 0);
}

static void check_file(struct checks *c, struct probe_file *pf, const struct dc_file_drain *fres,
		       uint32_t pid, uint32_t dev, uint64_t ino, uint64_t window)
{
	const struct dc_file_sum *v = NULL;
	const struct fname *fn;
	uint64_t files = 0, lost = 0;
	uint32_t igen = 0;

	for (size_t i = 0; i < fres->n; i++)
		if (fres->entries[i].tgid == pid) {
			files++;
			if (fres->entries[i].dev == dev && fres->entries[i].ino == ino) {
				v = &fres->entries[i].v;
				igen = fres->entries[i].igen;
			}
		}
	/* the console descriptors are no regular files: one file only */
	check(c, "file.keys_of_workload", files, 1);
	check(c, "file.key_is_fstat_dev_ino", v != NULL, 1);
	if (v) {
		check(c, "file.opens", v->opens, 1);
		check(c, "file.meta_ops", v->meta_ops, 4); /* open, lseek, 2 closes */
		check(c, "file.write_ops", v->write_ops, N + 1);
		check(c, "file.read_ops", v->read_ops, N);
		check(c, "file.write_bytes", v->write_bytes, (uint64_t)(N + 1) * SZ);
		check(c, "file.read_bytes", v->read_bytes, (uint64_t)N * SZ);
		check(c, "file.consec_writes", v->consec_writes, N);
		check(c, "file.seq_writes", v->seq_writes, N);
		check(c, "file.consec_reads", v->consec_reads, N - 1);
		check(c, "file.seq_reads", v->seq_reads, N - 1);
		check(c, "file.rw_switches", v->rw_switches, 2);
		check(c, "file.max_write_end", v->max_write_end, (uint64_t)(N + 1) * SZ);
		check(c, "file.max_read_end", v->max_read_end, (uint64_t)N * SZ);
		check(c, "file.write_size_1K_10K", v->write_size[2], N + 1);
		check(c, "file.read_size_1K_10K", v->read_size[2], N);
		/* tmpfs blocks are pages: every offset is a multiple of SZ */
		check(c, "file.file_unaligned", v->file_unaligned, 0);
		check(c, "file.mem_unaligned", v->mem_unaligned, 1);
		check(c, "file.errors", v->errors, 0);
		check(c, "file.sync_ops", v->sync_ops, 0);
	}
	for (unsigned i = 0; i < DC_FILE_CNT_MAX; i++)
		lost += fres->counters[i];
	check(c, "file.lost", lost + fres->overflow.write_ops + fres->overflow.read_ops, 0);
	check(c, "file.path_events", fres->names, 1);
	check(c, "file.names_not_kept", fres->names_not_kept, 0);
	/* names are kept by (device, inode, generation): the key's own,
	 * which 6.1's copying path reads apart (bpf/file.bpf.h) */
	fn = probe_file_name(pf, dev, ino, igen, window);
	c->n++;
	if (!fn || fn->truncated || strcmp(fn->path, PATH))
		c->failed++;
	printf("VMTEST %s   %s file.path=%s%s (want %s)\n", c->name,
	       fn && !fn->truncated && !strcmp(fn->path, PATH) ? "ok " : "BAD",
	       fn ? fn->path : "(none)", fn && fn->truncated ? " [truncated]" : "", PATH);
}

static uint64_t pid_calls(const struct dc_drain_result *res, uint32_t pid)
{
	uint64_t n = 0;

	for (size_t i = 0; i < res->n; i++)
		if (res->entries[i].tgid == pid)
			n += res->entries[i].v.count;
	return n;
}

static uint64_t stacks_rows(const struct stacks_drain *d, pid_t pid)
{
	uint64_t n = 0;

	for (size_t i = 0; i < d->n; i++)
		n += d->rows[i].tgid == (uint32_t)pid;
	return n;
}

static bool kernel_has_func(const char *fn)
{
	struct btf *vmlinux = btf__load_vmlinux_btf();
	bool has = vmlinux && btf__find_by_name_kind(vmlinux, fn, BTF_KIND_FUNC) > 0;

	btf__free(vmlinux);
	return has;
}

/* probe_syscall_new() with libbpf's warnings kept; a refusal is reported
 * with them. With traces as the agent makes them (the programs' trace code
 * verified too); a load's traces outlive its probe until the next load. */
static int load(const struct dc_config *cfg, const char *name, struct probe_syscall **p)
{
	static struct traces *t;
	libbpf_print_fn_t prev;
	char err[256];
	int r;

	t = traces_free(t);
	if (cfg->traces_enable && (r = traces_new(cfg, "vm", &t, err, sizeof(err))) < 0) {
		printf("VMTEST %s FAIL traces: %s\n", name, err);
		return r;
	}
	log_next = 0;
	prev = libbpf_set_print(keep_warning);
	r = probe_syscall_new(cfg, t, -1, p);
	libbpf_set_print(prev);
	if (r < 0) {
		printf("VMTEST %s FAIL attach: %s\n", name, strerror(-r));
		print_warnings(name);
	}
	return r;
}

int syscall_vm_run(const char *mech, const char *stash)
{
	static struct dc_drain_result res;
	struct stacks_drain sres = {};
	struct dc_file_drain fres = {};
	struct probe_syscall *p = NULL;
	struct probe_file *pf;
	struct dc_config cfg;
	char name[64], err[256];
	struct checks c = {.name = name};
	struct stat st;
	int r, status = -1;
	pid_t pid;

	snprintf(name, sizeof(name), "syscall+files/%s%s%s", mech, strcmp(stash, "auto") ? "+" : "",
		 strcmp(stash, "auto") ? stash : "");
	config_defaults(&cfg);
	/* stack profiles on in every run: their exit code, user and kernel
	 * stacks and the sched_switch program on each mechanism of 6.1 */
	if (config_set(&cfg, "probes.syscall.mechanism", mech, err, sizeof(err)) < 0 ||
	    config_set(&cfg, "probes.syscall.entry_stash", stash, err, sizeof(err)) < 0 ||
	    config_set(&cfg, "probes.stacks.enable", "true", err, sizeof(err)) < 0 ||
	    config_set(&cfg, "probes.stacks.one_in_n", "1", err, sizeof(err)) < 0 ||
	    config_set(&cfg, "probes.stacks.slow_ms", "0", err, sizeof(err)) < 0) {
		printf("VMTEST %s FAIL config: %s\n", name, err);
		return 1;
	}
	r = load(&cfg, name, &p);
	if (r < 0)
		return 1;
	pf = probe_syscall_files(p);
	if (strcmp(probe_syscall_mechanism(p), mech) || !pf) {
		/* the agent keeps the syscall layer when the file code is
		 * refused: here that is the failure under test */
		printf("VMTEST %s FAIL mechanism %s, file layer: %s\n", name,
		       probe_syscall_mechanism(p), probe_syscall_files_detail(p));
		print_warnings(name);
		probe_syscall_free(p);
		return 1;
	}

	/* attaching made calls of its own (excluded, but a window may hold
	 * them half-seen): the measured window starts clean */
	unlink(PATH);
	r = probe_syscall_flip_and_drain(p, &res);
	if (!r)
		r = probe_file_flip_and_drain(pf, 1, &fres);
	if (!r && probe_syscall_stacks(p))
		r = stacks_flip_and_drain(probe_syscall_stacks(p), &sres);
	if (r < 0) {
		printf("VMTEST %s FAIL first drain: %s\n", name, strerror(-r));
		probe_syscall_free(p);
		return 1;
	}
	pid = vm_child(workload, &status);
	if (pid < 0) {
		printf("VMTEST %s FAIL fork/wait: %m\n", name);
		probe_syscall_free(p);
		return 1;
	}
	r = probe_syscall_flip_and_drain(p, &res);
	if (!r)
		r = probe_file_flip_and_drain(pf, 2, &fres);
	if (!r && probe_syscall_stacks(p))
		r = stacks_flip_and_drain(probe_syscall_stacks(p), &sres);
	if (r < 0 || stat(PATH, &st) < 0) {
		printf("VMTEST %s FAIL drain or stat: %s\n", name, strerror(r < 0 ? -r : errno));
		probe_syscall_free(p);
		return 1;
	}

	check(&c, "workload.exit_status", (uint64_t)status, 0);
	{
		/* Debian's 6.1 does not preempt BPF programs (voluntary):
		 * auto keeps the entries per CPU, on every mechanism, with
		 * the stack profiles' switch program on the same hook */
		const char *d = probe_syscall_detail(p),
			   *want = !strcmp(stash, "auto") ? "entry stash per CPU"
				   : !strcmp(stash, "task_storage")
				       ? "entry stash in task storage"
				       : "entry stash in a per-thread hash";

		check(&c, "syscall.stash_as_configured", strstr(d, want) != NULL, 1);
		if (!strstr(d, want))
			printf("VMTEST %s detail: %s\n", name, d);
	}
	if (!strcmp(mech, "tp_btf")) {
		/* 6.1 has no bpf_rdonly_cast: the copying programs load
		 * without a refused try of the direct-read ones, said so */
		const char *d = probe_syscall_files_detail(p);

		if (kernel_has_func("bpf_rdonly_cast"))
			check(&c, "files.reads_direct", strstr(d, "read by direct loads") != NULL,
			      1);
		else
			check(&c, "files.reads_fell_back_to_copies",
			      strstr(d,
				     "read by bpf_probe_read_kernel (direct loads not tried: the "
				     "kernel has no bpf_rdonly_cast") != NULL,
			      1);
	}
	{
		/* every call of the workload profiled (one_in_n = 1), each row
		 * with the syscall marker between user and kernel parts */
		uint64_t calls = 0, marked = 0;

		check(&c, "stacks.on", probe_syscall_stacks(p) != NULL, 1);
		for (size_t i = 0; i < sres.n; i++)
			if (sres.rows[i].tgid == (uint32_t)pid) {
				calls += sres.rows[i].count;
				marked += strstr(sres.rows[i].stack, "[syscall] ") != NULL;
			}
		check(&c, "stacks.calls_equal_syscall_calls", calls,
		      pid_calls(&res, (uint32_t)pid));
		check(&c, "stacks.rows_all_marked", marked > 0 && marked == stacks_rows(&sres, pid),
		      1);
	}
	check_ops(&c, &res, (uint32_t)pid);
	/* the kernel's dev_t is major << 20 | minor, not the user encoding */
	check_file(&c, pf, &fres, (uint32_t)pid,
		   (uint32_t)(major(st.st_dev) << 20 | minor(st.st_dev)), (uint64_t)st.st_ino, 2);
	printf("VMTEST %s %s %d/%d checks [%s] [files: %s]\n", name, c.failed ? "FAIL" : "PASS",
	       c.n - c.failed, c.n, probe_syscall_detail(p), probe_syscall_files_detail(p));
	probe_syscall_free(p);
	return c.failed != 0;
}

int syscall_vm_run_nofiles(void)
{
	struct probe_syscall *p = NULL;
	struct dc_config cfg;
	char err[256];

	/* the file layer off: the programs keep the file-name walk, a global
	 * function 6.1's verifier checks even where no call reaches it, and
	 * load only if the maps it uses exist */
	config_defaults(&cfg);
	if (config_set(&cfg, "probes.files.enable", "false", err, sizeof(err)) < 0) {
		printf("VMTEST syscall/files-off FAIL config: %s\n", err);
		return 1;
	}
	if (load(&cfg, "syscall/files-off", &p) < 0)
		return 1;
	printf("VMTEST syscall/files-off PASS [%s]\n", probe_syscall_detail(p));
	probe_syscall_free(p);
	return 0;
}

/*
 * 32-bit system calls: int 0x80 from a 64-bit child takes the ia32 table,
 * where 5 is open, 4 write and 6 close (stat, fstat and lstat in the
 * 64-bit table the programs map). Debian's kernel runs them; a kernel
 * built or booted without ia32 emulation (the development host's) makes
 * int 0x80 fault, so tests/bpf/test_compat.py can only prove there that
 * no call is taken for a 32-bit one.
 */
#define COMPAT_PATH "/tmp/dc-vm-compat"
static char *low32; /* the ia32 calls take 32-bit pointers */

static long int80(long nr, long a, long b, long c)
{
	long ret;

	__asm__ volatile("int $0x80" : "=a"(ret) : "a"(nr), "b"(a), "c"(b), "d"(c) : "memory");
	return ret;
}

/* Nothing but int 0x80 calls; fork's return and _exit are no I/O calls */
static int compat_workload(void)
{
	long fd = int80(5, (long)low32, 01 | 0100 | 01000, 0644); /* O_WRONLY|O_CREAT|O_TRUNC */

	if (fd < 0)
		return 20;
	for (int i = 0; i < N; i++)
		if (int80(4, fd, (long)low32 + 4096, 100) != 100)
			return 21;
	return int80(6, fd, 0, 0) ? 22 : 0;
}

int syscall_vm_compat(void)
{
	static struct dc_drain_result res;
	struct probe_syscall *p = NULL;
	struct checks c = {.name = "syscall/compat"};
	struct dc_config cfg;
	struct stat st = {};
	int r, status = -1;
	pid_t pid;

	low32 = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_32BIT,
		     -1, 0);
	if (low32 == MAP_FAILED) {
		printf("VMTEST %s FAIL mmap(MAP_32BIT): %m\n", c.name);
		return 1;
	}
	strcpy(low32, COMPAT_PATH);
	memset(low32 + 4096, 'c', 100);
	config_defaults(&cfg);
	cfg.traces_enable = false;
	if (load(&cfg, c.name, &p) < 0)
		return 1;
	r = probe_syscall_flip_and_drain(p, &res);
	pid = r < 0 ? -1 : vm_child(compat_workload, &status);
	if (pid >= 0)
		r = probe_syscall_flip_and_drain(p, &res);
	if (pid < 0 || r < 0) {
		printf("VMTEST %s FAIL fork, wait or drain: %s\n", c.name,
		       strerror(r < 0 ? -r : errno));
		probe_syscall_free(p);
		return 1;
	}
	stat(COMPAT_PATH, &st);
	check(&c, "workload.exit_status", (uint64_t)status, 0);
	check(&c, "workload.bytes_written", (uint64_t)st.st_size, (uint64_t)N * 100);
	/* none taken for the 64-bit call of its number (stat, fstat, lstat) */
	check(&c, "calls_of_the_process", pid_calls(&res, (uint32_t)pid), 0);
	/* open, N writes, close: once each, at entry; nothing else on this
	 * machine runs 32-bit code */
	check(&c, "compat_calls", res.counters[DC_CNT_COMPAT], N + 2);
	printf("VMTEST %s %s %d/%d checks\n", c.name, c.failed ? "FAIL" : "PASS", c.n - c.failed,
	       c.n);
	probe_syscall_free(p);
	munmap(low32, 8192);
	return c.failed != 0;
}

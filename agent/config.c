// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <limits.h>
#include <ctype.h>
#include <libconfig.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "config.h"
#include "datacrumbs/syscall.h"
#include "datacrumbs/vfs.h"
#include "macro.h"

#define F(field) offsetof(struct dc_config, field), sizeof(((struct dc_config *)0)->field)

static const struct dc_cfg_item items[] = {
    {"interval", CFG_FLOAT, F(interval), "1.0", 0.01, DC_WINDOW_MAX_SEC, NULL,
     "window length in seconds; one feature vector per process per window"},
    {"align_windows", CFG_BOOL, F(align_windows), "true", 0, 0, NULL,
     "windows end on the multiples of interval on the wall clock (UTC): every node's "
     "windows then cover the same spans, and records of a job's nodes join on ts_end. The "
     "first window lasts at least half an interval. false: windows count "
     "from the agent's start"},
    {"host", CFG_STRING, F(host), "", 0, 0, NULL,
     "host name put in every record; empty means the kernel's host name"},
    {"log_level", CFG_STRING, F(log_level), "info", 0, 0,
     "emerg|alert|crit|err|warning|notice|info|debug", "most verbose level logged"},
    {"output.path", CFG_STRING, F(output), "/var/lib/datacrumbs/records.jsonl", 0, 0, NULL,
     "JSON-lines file the records are appended to; \"-\" writes to standard output"},
    {"maps.max_keys", CFG_INT, F(max_keys), "8192", 16, 1 << 20, NULL,
     "distinct (process, cgroup, operation) keys per window; calls beyond are still "
     "counted, per operation, in the agent record's \"unattributed\""},
    {"maps.layout", CFG_STRING, F(map_layout), "auto", 0, 0, "auto|percpu|shared",
     "per-CPU aggregation maps (no cache-line sharing) or one shared map (memory does "
     "not grow with the CPU count); auto picks percpu while it fits maps.memory_mib"},
    {"maps.memory_mib", CFG_INT, F(map_memory_mib), "64", 1, 65536, NULL,
     "kernel memory the two window maps may take when maps.layout is auto"},
    {"maps.updates", CFG_STRING, F(map_updates), "auto", 0, 0, "auto|atomic",
     "how per-CPU values are updated: auto uses plain adds where the kernel cannot preempt "
     "a BPF program (preemption none or voluntary) and atomic adds elsewhere; atomic "
     "always pays the lock prefix (for kernels whose preemption mode is switched at run time)"},
    {"maps.max_procs", CFG_INT, F(max_procs), "16384", 64, 1 << 22, NULL,
     "processes whose name is remembered (LRU) between windows"},
    {"maps.max_threads", CFG_INT, F(max_threads), "65536", 64, 1 << 22, NULL,
     "threads inside a system call at once; only used on kernels without task storage"},
    {"probes.syscall.mechanism", CFG_STRING, F(syscall_mechanism), "auto", 0, 0,
     "auto|tp_btf|raw_tp|tracepoint",
     "how the system-call probes attach; auto takes the cheapest the kernel allows"},
    {"probes.syscall.entry_stash", CFG_STRING, F(syscall_stash), "auto", 0, 0,
     "auto|cpu|task_storage|hash",
     "where a call's entry time waits for its exit: per CPU, written back to BPF task "
     "storage when the thread leaves the CPU (cheapest; needs task storage, 5.13+, and a "
     "kernel that does not preempt BPF programs), BPF task storage, or a hash keyed by "
     "thread id (maps.max_threads); auto takes the first of these the kernel allows"},
    {"filter.exclude_self", CFG_BOOL, F(exclude_self), "true", 0, 0, NULL,
     "leave the agent's own I/O out (its record writes would otherwise feed back)"},
    {"filter.include_cgroups", CFG_STRLIST, F(filter_include_cgroups), "", 1, 0, NULL,
     "count only processes in these cgroups or below them: cgroup2 paths below the cgroup2 "
     "mount, [\"/system.slice/slurmstepd.scope\", ...]; each must exist at start"},
    {"filter.exclude_cgroups", CFG_STRLIST, F(filter_exclude_cgroups), "", 1, 0, NULL,
     "leave out processes in these cgroups or below them (paths as for include_cgroups)"},
    {"filter.include_uids", CFG_INTLIST, F(filter_include_uids), "", 0, 4294967294.0, NULL,
     "count only processes whose real uid is listed, [1000, 1001]"},
    {"filter.exclude_uids", CFG_INTLIST, F(filter_exclude_uids), "", 0, 4294967294.0, NULL,
     "leave out processes whose real uid is listed"},
    {"filter.include_comms", CFG_STRLIST, F(filter_include_comms), "", 1, 15, NULL,
     "count only processes whose comm (the main thread's name, 15 bytes at most) is listed "
     "exactly"},
    {"filter.exclude_comms", CFG_STRLIST, F(filter_exclude_comms), "", 1, 15, NULL,
     "leave out processes whose comm is listed exactly"},
    {"probes.block.enable", CFG_BOOL, F(block_enable), "true", 0, 0, NULL,
     "time every block request (queue and device latency) and attribute it to the process "
     "and cgroup that submitted it"},
    {"probes.block.mechanism", CFG_STRING, F(block_mechanism), "auto", 0, 0, "auto|tp_btf|raw_tp",
     "how the block probes attach; auto takes tp_btf, else raw_tp"},
    {"probes.pagecache.enable", CFG_BOOL, F(pagecache_enable), "true", 0, 0, NULL,
     "count pages each process brings into the page cache, dirties and loses, so records "
     "can split read bandwidth into memory and device"},
    {"probes.pagecache.mechanism", CFG_STRING, F(pagecache_mechanism), "auto", 0, 0,
     "auto|tp_btf|tracepoint",
     "how the page-cache probes attach; auto takes tp_btf, else the "
     "classic tracepoints"},
    {"probes.pagecache.faults", CFG_BOOL, F(pagecache_faults), "true", 0, 0, NULL,
     "count each process's faults on file mappings (I/O through mmap makes no read or write "
     "call) where the kernel has their tracepoints; a program run per fault-around or handled "
     "fault, 84 ns here (bench/mmap_bench.py)"},
    {"maps.pagecache_max_keys", CFG_INT, F(pagecache_max_keys), "4096", 16, 1 << 20, NULL,
     "distinct (process, cgroup) page-cache keys per window; beyond, activity is counted in "
     "the agent record's page_cache.unattributed"},
    {"probes.io_uring.enable", CFG_BOOL, F(uring_enable), "true", 0, 0, NULL,
     "time every io_uring request from submission to completion and attribute it, per "
     "opcode, to the process and cgroup that submitted it"},
    {"probes.io_uring.mechanism", CFG_STRING, F(uring_mechanism), "auto", 0, 0,
     "auto|tp_btf|tracepoint",
     "how the io_uring probes attach; auto takes tp_btf, else the classic tracepoints"},
    {"maps.io_uring_max_keys", CFG_INT, F(uring_max_keys), "4096", 16, 1 << 20, NULL,
     "distinct (process, cgroup, opcode) io_uring keys per window; beyond, completions are "
     "counted in the agent record's io_uring.unattributed"},
    {"maps.library_max_keys", CFG_INT, F(library_max_keys), "4096", 16, 1 << 20, NULL,
     "distinct (process, cgroup, library function) keys per window"},
    {"maps.library_max_functions", CFG_INT, F(library_max_functions), "512", 1, 65536, NULL,
     "library functions the patterns may select in all; more is an error at start"},
    {"probes.library_mechanism", CFG_STRING, F(library_mechanism), "auto", 0, 0,
     "auto|uprobe_multi|uprobe",
     "how the library uprobes attach: uprobe_multi (kernel 6.6+) takes two links per library "
     "for all its functions, uprobe two perf events per function (its stop waits for grace "
     "periods per function: minutes for a thousand); auto takes uprobe_multi, else uprobe"},
    {"probes.vfs.enable", CFG_BOOL, F(vfs_enable), "true", 0, 0, NULL,
     "time the kernel's VFS and file-system entry points (vfs_read, vfs_write, "
     "ext4_file_write_iter, ext4_sync_file, xfs_file_fsync, ...) per process"},
    {"probes.vfs.mechanism", CFG_STRING, F(vfs_mechanism), "auto", 0, 0,
     "auto|fentry|kprobe|raw_tp|tracepoint",
     "how the VFS probes attach; auto takes fentry, else kprobe, else the file systems' "
     "tracepoints (fewer functions; single events counted, not timed), raw (6.10+) or else "
     "through perf events, else the layer is off (the agent record says why)"},
    {"probes.vfs.categories", CFG_STRING, F(vfs_categories), DC_VFS_DEFAULT_CATEGORIES, 0, 0,
     ",vfs|ext4|xfs|nfs|fuse|iomap|file_cache|page_cache|bio",
     "which function families to time, comma-separated (the seeds' categories): the default "
     "is the file systems' entry points; iomap, file_cache, page_cache and bio add inner paths "
     "that run per page or per request, at a higher cost"},
    {"maps.vfs_max_keys", CFG_INT, F(vfs_max_keys), "4096", 16, 1 << 20, NULL,
     "distinct (process, cgroup, VFS function) keys per window"},
    {"maps.block_max_keys", CFG_INT, F(block_max_keys), "4096", 16, 1 << 20, NULL,
     "distinct (device, operation, process, cgroup) block keys per window; beyond, requests "
     "are counted per operation in the agent record's block.unattributed"},
    {"maps.block_bio_slots", CFG_INT, F(block_bio_slots), "16384", 2, 1 << 22, NULL,
     "bios remembered between their submission and their request (32 bytes each, rounded up "
     "to a power of two); a bio without a slot is attributed to the context that issues its "
     "request (block.drops.issue_without_bio)"},
    {"maps.block_request_slots", CFG_INT, F(block_request_slots), "8192", 2, 1 << 22, NULL,
     "block requests in flight held in a direct-mapped table (64 bytes each, rounded up to a "
     "power of two); the others go to a spare hash of 16384 (block.requests_spilled)"},
    {"probes.files.enable", CFG_BOOL, F(files_enable), "true", 0, 0, NULL,
     "follow each process's I/O per file (by the descriptor's inode): access pattern "
     "counters in Darshan's terms, and per-file records when granularity is \"file\""},
    {"probes.files.granularity", CFG_STRING, F(files_granularity), "process", 0, 0, "process|file",
     "process: access-pattern totals in each process's features record; file: also one "
     "\"file\" record per (process, file) and window, and \"filename\" dictionary records"},
    {"probes.files.reads", CFG_STRING, F(files_reads), "auto", 0, 0, "auto|direct|probe",
     "how the programs read a call's file and inode: direct loads of typed pointers "
     "(bpf_rdonly_cast, 6.2+, tp_btf only), or bpf_probe_read_kernel() copies; auto takes "
     "direct when the kernel loads it"},
    {"maps.files_max_keys", CFG_INT, F(files_max_keys), "4096", 16, 1 << 20, NULL,
     "distinct (process, cgroup, file) keys at once (a key goes after a window without "
     "calls); beyond, file I/O is counted in the agent record's files.unattributed"},
    {"maps.files_max_positions", CFG_INT, F(files_max_positions), "65536", 64, 1 << 22, NULL,
     "idle (process, file) pairs whose last offsets are remembered (LRU) for the sequential "
     "and consecutive counts, should they resume"},
    {"maps.files_ring_kib", CFG_INT, F(files_ring_kib), "1024", 4, 1 << 20, NULL,
     "ring buffer for file names (rounded up to a power of two pages); a full ring loses "
     "names, counted in the agent record, never counts"},
    {"traces.enable", CFG_BOOL, F(traces_enable), "true", 0, 0, NULL,
     "keep sampled full traces of individual calls (traces.sampling); false removes the "
     "sampling code from the probes (a reload changing it loads the probes again, a "
     "sampling change applies in place)"},
    {"traces.ring_mib", CFG_INT, F(traces_ring_mib), "2", 1, 1024, NULL,
     "kernel ring buffer for trace events (rounded up to a power of two; about 96 bytes an "
     "event: 2 MiB holds four times the default node burst); a full ring drops events, counted "
     "per window in the agent record. The agent maps the ring, so it counts twice in its RSS; "
     "raise it for workloads traced in full at high call rates"},
    {"traces.flush_ms", CFG_INT, F(traces_flush_ms), "100", 1, 10000, NULL,
     "how often the agent reads the ring (the kernel also wakes it when the ring is half "
     "full)"},
    {"traces.batch_max_mib", CFG_INT, F(traces_batch_max_mib), "16", 1, 1024, NULL,
     "a window's batch (uncompressed) is sealed early past this size"},
    {"traces.zstd_level", CFG_INT, F(traces_zstd_level), "1", 1, 19, NULL,
     "zstd level of trace batches"},
    {"traces.sampling.one_in_n", CFG_INT, F(traces_one_in_n), "100", 1, 1000000000, NULL,
     "keep each call with probability 1/N (weight N); 1 keeps every call"},
    {"traces.sampling.slow_ms", CFG_FLOAT, F(traces_slow_ms), "10", 0, 3600000, NULL,
     "always keep calls at least this slow (weight 1); 0 turns the rule off"},
    {"traces.sampling.rate", CFG_FLOAT, F(traces_rate), "5000", 0, 1e9, NULL,
     "at most this many sampled events per second for the node (token bucket); 0: no limit"},
    {"traces.sampling.burst", CFG_INT, F(traces_burst), "5000", 1, 1000000000, NULL,
     "events the node's bucket lets through at once"},
    {"traces.sampling.cgroup_rate", CFG_FLOAT, F(traces_cgroup_rate), "0", 0, 1e9, NULL,
     "at most this many sampled events per second for each cgroup; 0: no per-cgroup limit"},
    {"traces.sampling.cgroup_burst", CFG_INT, F(traces_cgroup_burst), "1000", 1, 1000000000, NULL,
     "events each cgroup's bucket lets through at once"},
    {"traces.sampling.slice_ms", CFG_FLOAT, F(traces_slice_ms), "0", 0, 3600000, NULL,
     "time slices: sample only during slice_ms of every period_s (0: always)"},
    {"traces.sampling.period_s", CFG_FLOAT, F(traces_period_s), "0", 0, 86400, NULL,
     "the period of the time slices"},
    {"traces.sampling.full_cgroups", CFG_STRLIST, F(traces_full_cgroups), "", 1, 0, NULL,
     "cgroup2 paths (\"/system.slice/slurmstepd.scope/job_42\") whose every call is "
     "traced, descendants included, whatever the sampling of the rest"},
    {"traces.output.dir", CFG_STRING, F(traces_dir), "/var/lib/datacrumbs/traces", 0, 0, NULL,
     "directory of the local trace files (.pfw.zst: one zstd frame per window); \"\" "
     "writes none (Kafka only)"},
    {"traces.output.rotate_mib", CFG_INT, F(traces_rotate_mib), "64", 1, 1 << 20, NULL,
     "a trace file is closed past this size"},
    {"traces.output.rotate_sec", CFG_INT, F(traces_rotate_sec), "300", 1, 86400 * 7, NULL,
     "or this age"},
    {"traces.output.max_mib", CFG_INT, F(traces_max_mib), "1024", 1, 1 << 24, NULL,
     "bound on the directory's trace files: the oldest are deleted (and counted) first"},
    {"budget.cpu", CFG_FLOAT, F(budget_cpu), "0.01", 0, 64, NULL,
     "what the agent may cost, kernel programs plus user space, as a fraction of one core "
     "averaged over budget.period; over it, detail is given up in order (trace sampling ten "
     "times sparser, traces off, stack profiles off, library uprobes off, VFS function probes "
     "off; the syscall, "
     "file, page-cache, io_uring and block layers always stay) and restored in reverse when "
     "back under; 0: no budget"},
    {"budget.period", CFG_FLOAT, F(budget_period), "60", 1, 3600, NULL,
     "seconds the cost is averaged over; a level is judged on a full period of its own"},
    {"budget.recover_below", CFG_FLOAT, F(budget_recover_below), "0.5", 0.05, 0.95, NULL,
     "a step is taken back when the cost stays under this fraction of budget.cpu for a "
     "period"},
    {"self.bpf_stats", CFG_BOOL, F(self_bpf_stats), "true", 0, 0, NULL,
     "time every BPF program (the kernel's run-time statistics, on for the agent's lifetime "
     "through BPF_ENABLE_STATS: about two clock reads per program run, paid by every BPF "
     "program on the node while on, since the kernel has one switch for all); false: the "
     "cost and the budget count the agent's user-space CPU only"},
    {"self.bpf_stats_duty", CFG_FLOAT, F(self_bpf_stats_duty), "0.1", 0.01, 1, NULL,
     "share of each window the statistics are on (their time per run is applied to the runs "
     "the programs count themselves): they cost two clock reads per program run on the whole "
     "node while on; 1: always"},
    {"self.map_scan_sec", CFG_FLOAT, F(self_map_scan_sec), "10", 0, 86400, NULL,
     "how often the hash maps are walked to publish their fill (one system call per entry); "
     "0: never"},
    {"probes.stacks.enable", CFG_BOOL, F(stacks_enable), "false", 0, 0, NULL,
     "stack-attributed I/O profiles: for chosen calls, the user stack and the kernel stack "
     "where the call blocked, summed per window into stacks records (docs/stacks.md); adds a "
     "program on every context switch, so off unless asked for"},
    {"probes.stacks.slow_ms", CFG_FLOAT, F(stacks_slow_ms), "10", 0, 3600000, NULL,
     "profile every call at least this slow; 0 turns the rule off"},
    {"probes.stacks.one_in_n", CFG_INT, F(stacks_one_in_n), "100", 0, 1000000000, NULL,
     "profile each call with probability 1/N; 0 turns the rule off, 1 profiles every call"},
    {"probes.stacks.full_cgroups", CFG_STRLIST, F(stacks_full_cgroups), "", 1, 0, NULL,
     "cgroup2 paths whose every call is profiled, descendants included"},
    {"probes.stacks.max_stacks", CFG_INT, F(stacks_max_stacks), "4096", 64, 1 << 20, NULL,
     "distinct stacks per window in each of the four stack maps (64 frames, 512 bytes "
     "each); a stack that finds its slot taken is lost, counted in the agent record"},
    {"probes.stacks.max_keys", CFG_INT, F(stacks_max_keys), "4096", 16, 1 << 20, NULL,
     "distinct (process, user stack, kernel stack, operation) keys per window; beyond, "
     "calls are counted per operation as unattributed"},
    {"probes.stacks.max_symbols_mib", CFG_INT, F(stacks_max_symbols_mib), "64", 1, 4096, NULL,
     "bound on the symbol tables of user binaries held for symbolization (LRU)"},
    {"kafka.brokers", CFG_STRING, F(kafka_brokers), "", 0, 0, NULL,
     "bootstrap servers (host:port,...); empty: no Kafka, records go to output.path only"},
    {"kafka.topics.features", CFG_STRING, F(kafka_topic_features), "datacrumbs.features", 0, 0,
     NULL, "topic of the feature vectors"},
    {"kafka.topics.agent", CFG_STRING, F(kafka_topic_agent), "datacrumbs.agent", 0, 0, NULL,
     "topic of the agent records (health, cost, drops)"},
    {"kafka.topics.traces", CFG_STRING, F(kafka_topic_traces), "datacrumbs.traces", 0, 0, NULL,
     "topic of the sampled traces: one message per window, a zstd frame of NDJSON"},
    {"kafka.topics.meta", CFG_STRING, F(kafka_topic_meta), "datacrumbs.meta", 0, 0, NULL,
     "topic of the dictionaries (reserved: not produced yet)"},
    {"kafka.topics.stacks", CFG_STRING, F(kafka_topic_stacks), "datacrumbs.stacks", 0, 0, NULL,
     "topic of the stacks records (only produced with probes.stacks.enable)"},
    {"kafka.key", CFG_STRING, F(kafka_key), "host", 0, 0, "host|host_cgroup",
     "message key: host keeps a node's windows in one partition, in order; host_cgroup "
     "spreads a node's feature vectors over partitions, ordered per cgroup"},
    {"kafka.properties", CFG_STRLIST, F(kafka_properties), "", 0, 0, NULL,
     "librdkafka properties, [\"name=value\", ...], passed verbatim after the agent's "
     "defaults (TLS, SASL, batching); a rejected one stops the agent with librdkafka's reason"},
    {"kafka.secrets_file", CFG_STRING, F(kafka_secrets), "", 0, 0, NULL,
     "file of librdkafka \"name=value\" lines applied after kafka.properties, for credentials "
     "(sasl.password, ssl.key.password, sasl.oauthbearer.client.secret): it must be owned by "
     "root and readable by root only (mode 0600), or the agent refuses to start; \"\": none"},
    {"kafka.flush_timeout", CFG_FLOAT, F(kafka_flush_timeout), "5.0", 0, 300, NULL,
     "seconds a stopping agent waits for deliveries (a reload restarting the Kafka sink, at "
     "most 10); what is left stays in the spool"},
    {"kafka.start_timeout", CFG_FLOAT, F(kafka_start_timeout), "3.0", 0, 60, NULL,
     "seconds to wait at start for the brokers to confirm the topics exist; a broker that "
     "does not answer does not stop the agent (the spool takes over)"},
    {"spool.dir", CFG_STRING, F(spool_dir), "/var/lib/datacrumbs/spool", 0, 0, NULL,
     "where records wait until Kafka confirms them; one agent per directory (locked)"},
    {"spool.max_mib", CFG_INT, F(spool_max_mib), "256", 1, 1 << 20, NULL,
     "spool bound; when full the oldest traces are dropped first, then the oldest feature "
     "vectors, and the agent record counts them"},
    {"spool.fsync", CFG_BOOL, F(spool_fsync), "true", 0, 0, NULL,
     "fsync each segment before it counts as written (survives a power cut, costs a disk "
     "flush per window)"},
};

#undef F

const struct dc_cfg_item *config_table(size_t *n)
{
	*n = ELEMENTSOF(items);
	return items;
}

static const struct dc_cfg_item *item_find(const char *path)
{
	for (size_t i = 0; i < ELEMENTSOF(items); i++)
		if (!strcmp(items[i].path, path))
			return &items[i];
	return NULL;
}

/* Is path a group that contains some key ("maps", "probes.syscall")? */
static int is_group(const char *path)
{
	size_t l = strlen(path);

	for (size_t i = 0; i < ELEMENTSOF(items); i++)
		if (!strncmp(items[i].path, path, l) && items[i].path[l] == '.')
			return 1;
	return 0;
}

static int fail(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

static int choice_ok(const char *choices, const char *v)
{
	size_t l = strlen(v);
	const char *p = choices;

	while (p && *p) {
		const char *bar = strchr(p, '|');
		size_t n = bar ? (size_t)(bar - p) : strlen(p);

		if (n == l && !strncmp(p, v, n))
			return 1;
		p = bar ? bar + 1 : NULL;
	}
	return 0;
}

/* v as the shortest decimal that reads back as v: a range printed rounded
 * (1.04858e+06) hides the bound an operator just crossed, and %.17g shows
 * 0.05 as 0.050000000000000003 */
struct num {
	char s[32];
};

static struct num num(double v)
{
	struct num n;

	for (int prec = 15; prec <= 17; prec++) {
		snprintf(n.s, sizeof(n.s), "%.*g", prec, v);
		if (strtod(n.s, NULL) == v)
			break;
	}
	return n;
}

static int set_number(struct dc_config *c, const struct dc_cfg_item *it, double v, char *err,
		      size_t errlen)
{
	if (!isfinite(v) || v < it->min || v > it->max)
		return fail(err, errlen, "%s: %s is out of range [%s, %s]", it->path, num(v).s,
			    num(it->min).s, num(it->max).s);
	if (it->type == CFG_INT) {
		if (v != floor(v))
			return fail(err, errlen, "%s: %g is not a whole number", it->path, v);
		*(int64_t *)((char *)c + it->offset) = (int64_t)v;
	} else {
		*(double *)((char *)c + it->offset) = v;
	}
	return 0;
}

/* choices ",a|b|c": the value is a comma-separated subset of a, b, c */
static int subset_ok(const char *choices, const char *v, char *bad, size_t badlen)
{
	char buf[DC_STR_MAX], *save = NULL;

	snprintf(buf, sizeof(buf), "%s", v);
	for (char *t = strtok_r(buf, ", ", &save); t; t = strtok_r(NULL, ", ", &save))
		if (!choice_ok(choices + 1, t)) {
			snprintf(bad, badlen, "%s", t);
			return 0;
		}
	return 1;
}

static int set_string(struct dc_config *c, const struct dc_cfg_item *it, const char *v, char *err,
		      size_t errlen)
{
	char bad[64];

	if (strlen(v) >= it->size)
		return fail(err, errlen, "%s: value is longer than %zu bytes", it->path,
			    it->size - 1);
	if (it->choices && it->choices[0] == ',') {
		if (!subset_ok(it->choices, v, bad, sizeof(bad)))
			return fail(err, errlen, "%s: \"%s\" is not one of %s", it->path, bad,
				    it->choices + 1);
	} else if (it->choices && !choice_ok(it->choices, v))
		return fail(err, errlen, "%s: \"%s\" is not one of %s", it->path, v, it->choices);
	strcpy((char *)c + it->offset, v);
	return 0;
}

int config_set(struct dc_config *c, const char *path, const char *value, char *err, size_t errlen)
{
	const struct dc_cfg_item *it = item_find(path);
	char *end;
	double v;

	if (!it)
		return fail(err, errlen, "unknown setting '%s'", path);
	switch (it->type) {
	case CFG_STRING:
		return set_string(c, it, value, err, errlen);
	case CFG_STRLIST:
	case CFG_INTLIST:
		if (*value)
			return fail(err, errlen, "%s: set lists in the configuration file", path);
		memset((char *)c + it->offset, 0, it->size);
		return 0;
	case CFG_BOOL:
		if (!strcmp(value, "true"))
			*(bool *)((char *)c + it->offset) = true;
		else if (!strcmp(value, "false"))
			*(bool *)((char *)c + it->offset) = false;
		else
			return fail(err, errlen, "%s: \"%s\" is not true or false", path, value);
		return 0;
	default:
		errno = 0;
		v = strtod(value, &end);
		/* decimal only: strtod reads "0x10" as 16 and "inf" too */
		if (errno || end == value || *end || strpbrk(value, "xXnN"))
			return fail(err, errlen, "%s: \"%s\" is not a decimal number", path, value);
		return set_number(c, it, v, err, errlen);
	}
}

void config_defaults(struct dc_config *c)
{
	char err[256];

	memset(c, 0, sizeof(*c));
	for (size_t i = 0; i < ELEMENTSOF(items); i++)
		if (config_set(c, items[i].path, items[i].def, err, sizeof(err)))
			abort(); /* a default that fails its own row is a bug in this file */
}

static int apply_setting(struct dc_config *c, config_setting_t *s, const char *file, char *err,
			 size_t errlen);

/* An array of strings, stored as newline-separated lines. */
static int set_strlist(struct dc_config *c, const struct dc_cfg_item *it, config_setting_t *s,
		       char *err, size_t errlen)
{
	char *out = (char *)c + it->offset;
	size_t off = 0;
	int n;

	if (config_setting_type(s) != CONFIG_TYPE_ARRAY &&
	    config_setting_type(s) != CONFIG_TYPE_LIST)
		return fail(err, errlen, "%s: expected a list of strings [\"...\", ...]", it->path);
	n = config_setting_length(s);
	out[0] = 0;
	for (int i = 0; i < n; i++) {
		config_setting_t *e = config_setting_get_elem(s, i);
		const char *v = config_setting_get_string(e);
		size_t l;

		if (config_setting_type(e) != CONFIG_TYPE_STRING || !v)
			return fail(err, errlen, "%s: element %d is not a string", it->path, i + 1);
		if (strchr(v, '\n'))
			return fail(err, errlen, "%s: element %d contains a newline", it->path,
				    i + 1);
		l = strlen(v);
		if (!l && it->min)
			return fail(err, errlen, "%s: element %d is empty", it->path, i + 1);
		if (l < it->min)
			return fail(err, errlen, "%s: element %d is shorter than %g bytes",
				    it->path, i + 1, it->min);
		if (it->max && l > it->max)
			return fail(err, errlen, "%s: element %d (\"%s\") is longer than %g bytes",
				    it->path, i + 1, v, it->max);
		if (off + l + 2 > it->size)
			return fail(err, errlen, "%s: longer than %zu bytes in all", it->path,
				    it->size - 1);
		memcpy(out + off, v, l);
		off += l;
		out[off++] = '\n';
		out[off] = 0;
	}
	return 0;
}

/* An array of integers, each within the row's bounds. */
static int set_intlist(struct dc_config *c, const struct dc_cfg_item *it, config_setting_t *s,
		       char *err, size_t errlen)
{
	struct dc_intlist *out = (struct dc_intlist *)((char *)c + it->offset);
	int n;

	if (config_setting_type(s) != CONFIG_TYPE_ARRAY &&
	    config_setting_type(s) != CONFIG_TYPE_LIST)
		return fail(err, errlen, "%s: expected a list of integers [1, 2, ...]", it->path);
	n = config_setting_length(s);
	if (n > DC_INTLIST_MAX)
		return fail(err, errlen, "%s: more than %d elements", it->path, DC_INTLIST_MAX);
	memset(out, 0, sizeof(*out));
	for (int i = 0; i < n; i++) {
		config_setting_t *e = config_setting_get_elem(s, i);
		int64_t v;

		if (config_setting_type(e) != CONFIG_TYPE_INT &&
		    config_setting_type(e) != CONFIG_TYPE_INT64)
			return fail(err, errlen, "%s: element %d is not an integer", it->path,
				    i + 1);
		v = config_setting_get_int64(e);
		if ((double)v < it->min || (double)v > it->max)
			/* a bare 3000000000, which libconfig 1.5 would read
			 * negative, never gets here: the text scan refused it
			 * with the L suffix to write (check_text) */
			return fail(err, errlen,
				    "%s: element %d (%lld) is out of range [%.0f, %.0f]", it->path,
				    i + 1, (long long)v, it->min, it->max);
		out->v[out->n++] = v;
	}
	return 0;
}

static int apply_group(struct dc_config *c, config_setting_t *g, const char *file, char *err,
		       size_t errlen)
{
	int n = config_setting_length(g);

	for (int i = 0; i < n; i++) {
		int r = apply_setting(c, config_setting_get_elem(g, i), file, err, errlen);

		if (r)
			return r;
	}
	return 0;
}

static void setting_path(config_setting_t *s, char *out, size_t len)
{
	const char *names[16];
	int depth = 0;
	size_t off = 0;

	for (; s && config_setting_name(s) && depth < 16; s = config_setting_parent(s))
		names[depth++] = config_setting_name(s);
	out[0] = 0;
	while (depth-- > 0 && off < len)
		off += (size_t)snprintf(out + off, len - off, "%s%s", off ? "." : "", names[depth]);
}

/* probes.libraries = ( { path = "..."; category = "..."; functions = [...];
 *                        bytes = [...]; }, ... ); the one setting that is a
 * list of groups, checked here key by key as strictly as the table. */
static int strlist_join(config_setting_t *l, char *out, size_t size, const char *what, char *err,
			size_t errlen)
{
	size_t off = 0;

	out[0] = 0;
	if (config_setting_type(l) != CONFIG_TYPE_ARRAY &&
	    config_setting_type(l) != CONFIG_TYPE_LIST)
		return fail(err, errlen, "%s: expected a list of strings", what);
	for (int i = 0; i < config_setting_length(l); i++) {
		const char *v = config_setting_get_string(config_setting_get_elem(l, i));
		size_t n;

		if (!v || !*v || strchr(v, '\n'))
			return fail(err, errlen, "%s: element %d is not a non-empty string", what,
				    i + 1);
		n = strlen(v);
		if (off + n + 2 > size)
			return fail(err, errlen, "%s: longer than %zu bytes in all", what,
				    size - 2);
		memcpy(out + off, v, n);
		off += n;
		out[off++] = '\n';
		out[off] = 0;
	}
	return 0;
}

/* The file a setting was read from: an @include'd one names itself, so that
 * its errors point at the right file as well as the right line. */
static const char *setting_file(const config_setting_t *s, const char *file)
{
	const char *f = config_setting_source_file(s);

	return f && *f ? f : file;
}

static int apply_libraries(struct dc_config *c, config_setting_t *s, const char *file, char *err,
			   size_t errlen)
{
	char msg[512];

	file = setting_file(s, file);

	if (config_setting_type(s) != CONFIG_TYPE_LIST)
		return fail(err, errlen,
			    "%s:%d: probes.libraries: expected a list of groups ( {...}, ... )",
			    file, (int)config_setting_source_line(s));
	c->n_libs = 0;
	for (int i = 0; i < config_setting_length(s); i++) {
		config_setting_t *g = config_setting_get_elem(s, i), *e;
		int line = (int)config_setting_source_line(g);
		struct dc_lib_cfg *l;
		const char *v;

		if (config_setting_type(g) != CONFIG_TYPE_GROUP)
			return fail(err, errlen,
				    "%s:%d: probes.libraries[%d]: expected a group {...}", file,
				    line, i);
		if (c->n_libs == DC_MAX_LIBS)
			return fail(err, errlen, "%s:%d: probes.libraries: at most %d libraries",
				    file, line, DC_MAX_LIBS);
		l = &c->libs[c->n_libs++];
		memset(l, 0, sizeof(*l));
		for (int k = 0; k < config_setting_length(g); k++) {
			e = config_setting_get_elem(g, k);
			const char *name = config_setting_name(e);
			int r = 0;

			line = (int)config_setting_source_line(e);
			if (!strcmp(name, "path") || !strcmp(name, "category")) {
				char *to = !strcmp(name, "path") ? l->path : l->category;
				size_t cap = to == l->path ? sizeof(l->path) : sizeof(l->category);

				v = config_setting_get_string(e);
				if (!v || !*v)
					r = fail(msg, sizeof(msg),
						 "%s: expected a non-empty string", name);
				else if (strlen(v) >= cap)
					r = fail(msg, sizeof(msg), "%s: longer than %zu bytes",
						 name, cap - 1);
				else
					strcpy(to, v);
			} else if (!strcmp(name, "functions")) {
				r = strlist_join(e, l->functions, sizeof(l->functions), name, msg,
						 sizeof(msg));
			} else if (!strcmp(name, "bytes")) {
				r = strlist_join(e, l->bytes, sizeof(l->bytes), name, msg,
						 sizeof(msg));
			} else {
				r = fail(msg, sizeof(msg),
					 "unknown setting '%s' (path, category, functions, bytes)",
					 name);
			}
			if (r)
				return fail(err, errlen, "%s:%d: probes.libraries[%d]: %s", file,
					    line, i, msg);
		}
		if (!l->path[0] || !l->category[0] || !l->functions[0])
			return fail(err, errlen,
				    "%s:%d: probes.libraries[%d]: path, category and functions are "
				    "required",
				    file, (int)config_setting_source_line(g), i);
	}
	return 0;
}

/* What a setting of this type is written as, for an error's "expected". */
static const char *type_name(enum dc_cfg_type t)
{
	switch (t) {
	case CFG_FLOAT:
		return "a number";
	case CFG_INT:
		return "an integer";
	case CFG_STRING:
		return "a string";
	case CFG_BOOL:
		return "true or false";
	default:
		return "a list";
	}
}

static int apply_setting(struct dc_config *c, config_setting_t *s, const char *file, char *err,
			 size_t errlen)
{
	const struct dc_cfg_item *it;
	char path[256], msg[512];
	int line = (int)config_setting_source_line(s), type = config_setting_type(s), r;

	setting_path(s, path, sizeof(path));
	if (!strcmp(path, "probes.libraries"))
		return apply_libraries(c, s, file, err, errlen);
	file = setting_file(s, file);
	it = item_find(path);
	if (type == CONFIG_TYPE_GROUP &&
	    !(it && (it->type == CFG_STRLIST || it->type == CFG_INTLIST))) {
		if (it)
			/* interval = { }: a known setting given a group */
			return fail(err, errlen, "%s:%d: %s: expected %s, not a group", file, line,
				    path, type_name(it->type));
		if (!is_group(path))
			return fail(err, errlen, "%s:%d: unknown setting group '%s'", file, line,
				    path);
		return apply_group(c, s, file, err, errlen);
	}
	if (!it && is_group(path))
		return fail(err, errlen, "%s:%d: '%s' is a group of settings: %s = { ... };", file,
			    line, path, path);
	if (!it)
		return fail(err, errlen,
			    "%s:%d: unknown setting '%s' (datacrumbs --help-config lists them)",
			    file, line, path);
	switch (it->type) {
	case CFG_FLOAT:
	case CFG_INT:
		if (type == CONFIG_TYPE_INT || type == CONFIG_TYPE_INT64) {
			long long iv = config_setting_get_int64(s);

			/* the integer as written: as a double, a large one reads
			 * rounded (-9.2233720368547758e+18) */
			if ((double)iv < it->min || (double)iv > it->max)
				r = fail(msg, sizeof(msg), "%s: %lld is out of range [%s, %s]",
					 path, iv, num(it->min).s, num(it->max).s);
			else
				r = set_number(c, it, (double)iv, msg, sizeof(msg));
		} else if (type == CONFIG_TYPE_FLOAT && it->type == CFG_FLOAT)
			r = set_number(c, it, config_setting_get_float(s), msg, sizeof(msg));
		else
			r = fail(msg, sizeof(msg), "%s: expected %s", path, type_name(it->type));
		break;
	case CFG_STRING:
		if (type != CONFIG_TYPE_STRING)
			r = fail(msg, sizeof(msg), "%s: expected a string", path);
		else
			r = set_string(c, it, config_setting_get_string(s), msg, sizeof(msg));
		break;
	case CFG_STRLIST:
		r = set_strlist(c, it, s, msg, sizeof(msg));
		break;
	case CFG_INTLIST:
		r = set_intlist(c, it, s, msg, sizeof(msg));
		break;
	case CFG_BOOL:
		if (type != CONFIG_TYPE_BOOL)
			r = fail(msg, sizeof(msg), "%s: expected true or false", path);
		else
			r = (*(bool *)((char *)c + it->offset) = config_setting_get_bool(s), 0);
		break;
	default:
		r = -EINVAL;
	}
	if (r)
		return fail(err, errlen, "%s:%d: %s", file, line, msg);
	return 0;
}

/* Settings that are each valid and together are not. The features or agent
 * topic left empty with brokers set would drop their records, earlier runs'
 * spooled ones too, without a word. (An empty traces or stacks topic keeps
 * those on the node, as documented.) */
static int check_topics(const struct dc_config *c, const char *file, char *err, size_t errlen)
{
	const struct {
		const char *name;
		const char *topic;
	} t[] = {
	    {"features", c->kafka_topic_features},
	    {"agent", c->kafka_topic_agent},
	};

	if (!c->kafka_brokers[0])
		return 0;
	for (size_t i = 0; i < ELEMENTSOF(t); i++)
		if (!t[i].topic[0])
			return fail(err, errlen,
				    "%s: kafka.topics.%s is empty while kafka.brokers is set: its "
				    "records would go to no topic",
				    file, t[i].name);
	return 0;
}

/* Settings each valid alone that do not go together: refused here, so
 * that --check-config says what starting would (exit 2), not the start. */
static int check_together(const struct dc_config *c, const char *file, char *err, size_t errlen)
{
	/* in ns, rounded as the trace policy takes them (traces.c): 1025 ms
	 * in 1.025 s, truncated, read 1025000000 against 1024999999 */
	uint64_t slice_ns = (uint64_t)llround(c->traces_slice_ms * 1e6),
		 period_ns = (uint64_t)llround(c->traces_period_s * 1e9);

	if (c->traces_enable && (!slice_ns != !period_ns || slice_ns > period_ns))
		return fail(
		    err, errlen,
		    "%s: traces.sampling.slice_ms (%s) and traces.sampling.period_s (%s) go "
		    "together, the slice within the period",
		    file, num(c->traces_slice_ms).s, num(c->traces_period_s).s);
	if (c->kafka_brokers[0] && !c->spool_dir[0])
		return fail(err, errlen,
			    "%s: spool.dir is empty while kafka.brokers is set: the spool is what "
			    "keeps the records through an outage",
			    file);
	if (c->vfs_enable && !c->vfs_categories[strspn(c->vfs_categories, ", \t")])
		return fail(
		    err, errlen,
		    "%s: probes.vfs.categories (\"%s\") names no category while "
		    "probes.vfs.enable is true (probes.vfs.enable = false turns the layer off)",
		    file, c->vfs_categories);
	return 0;
}

/* A syntax error on a line that names a setting the way --help-config
 * lists it ("maps.max_keys = 1;"): the hint that dots are groups. */
static const char *dotted_hint(const char *text, int line)
{
	const char *p = text;
	size_t n;

	for (int l = 1; p && l < line; l++) {
		p = strchr(p, '\n');
		if (p)
			p++;
	}
	if (!p)
		return "";
	p += strspn(p, " \t");
	n = strspn(p, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-");
	if (!n || p[n] != '.' || !isalpha((unsigned char)p[n + 1]))
		return "";
	return " (a dotted name is a path of groups: write maps = { max_keys = 1; }; for "
	       "maps.max_keys)";
}

static int load(struct dc_config *c, config_t *cf, int ok, const char *file, const char *text,
		char *err, size_t errlen)
{
	struct dc_config tmp;
	int r;

	if (!ok) {
		/* the line is the top file's unless libconfig names another */
		bool top = !config_error_file(cf) || !strcmp(config_error_file(cf), file);

		return fail(err, errlen, "%s:%d: %s%s",
			    config_error_file(cf) ? config_error_file(cf) : file,
			    config_error_line(cf), config_error_text(cf),
			    top && text && config_error_type(cf) == CONFIG_ERR_PARSE
				? dotted_hint(text, config_error_line(cf))
				: "");
	}
	/* parse aside: the caller's config changes only if the whole file is good */
	config_defaults(&tmp);
	r = apply_group(&tmp, config_root_setting(cf), file, err, errlen);
	if (r)
		return r;
	r = check_topics(&tmp, file, err, errlen);
	if (!r)
		r = check_together(&tmp, file, err, errlen);
	if (r)
		return r;
	*c = tmp;
	return 0;
}

/*
 * A configuration file's whole text, from a regular file or a pipe
 * (-c /dev/stdin). libconfig's scanner exit()s on a directory ("input in
 * flex scanner failed"), which on a reload would end the agent and lose its
 * window; and it reads a NUL byte as the end of the text.
 */
static int read_text(const char *path, const char *from, int from_line, char **ret, char *err,
		     size_t errlen)
{
	_cleanup_free_ char *text = NULL;
	size_t cap = 0;
	struct stat st;
	ssize_t n;
	FILE *f;
	int r;

	f = fopen(path, "re");
	if (!f) {
		r = -errno;
		if (from)
			fail(err, errlen, "%s:%d: cannot open @include file '%s': %s", from,
			     from_line, path, strerror(-r));
		else
			fail(err, errlen, "%s: cannot open: %s", path, strerror(-r));
		return r;
	}
	if (fstat(fileno(f), &st) < 0 || S_ISDIR(st.st_mode)) {
		fclose(f);
		if (from)
			return fail(err, errlen, "%s:%d: @include '%s' is a directory", from,
				    from_line, path);
		return fail(err, errlen, "%s: is a directory", path);
	}
	errno = 0;
	n = getdelim(&text, &cap, '\0', f);
	/* -1 at once is an empty file only at its end: glibc fails an
	 * allocation without setting the error flag */
	if (ferror(f))
		r = errno ? -errno : -EIO; /* a read cut short, whatever it got */
	else
		r = n < 0 && !feof(f) ? -ENOMEM : 0;
	fclose(f);
	if (r < 0) {
		fail(err, errlen, "%s: cannot read: %s", path, strerror(-r));
		return r;
	}
	if (n < 0) { /* empty */
		free(text);
		text = strdup("");
		if (!text)
			return -ENOMEM;
	} else if ((size_t)n != strlen(text)) {
		int line = 1;

		for (const char *p = text; *p; p++)
			line += *p == '\n';
		return fail(err, errlen, "%s:%d: a NUL byte: not a configuration file", path, line);
	}
	*ret = TAKE_PTR(text);
	return 0;
}

/*
 * libconfig 1.5 (Debian 12) reads an integer without the L suffix into 32
 * bits and keeps the low ones without a word: maps.max_keys = 4294975488
 * becomes 8192, in range, and a uid list can name another user. Before it
 * parses, the text's integers are read here (outside strings and comments,
 * @include'd files too) and one that does not fit is an error naming it.
 * So is a comment or string left open at the end of a file, which libconfig
 * takes for the end of the file, ignoring what follows its start.
 */
static int check_text(const char *text, const char *path, int depth, char *err, size_t errlen)
{
	int line = 1;

	if (depth > 10)
		return 0; /* libconfig reports the include loop */
	for (const char *p = text; *p; p++) {
		if (*p == '\n') {
			line++;
		} else if (*p == '"') {
			int open = line;

			for (p++; *p && *p != '"'; p++)
				if (*p == '\\' && p[1])
					p++;
				else if (*p == '\n')
					line++;
			if (!*p)
				return fail(err, errlen,
					    "%s:%d: a string left open to the end of the file",
					    path, open);
		} else if (*p == '#' || (*p == '/' && p[1] == '/')) {
			while (p[1] && p[1] != '\n')
				p++;
		} else if (*p == '/' && p[1] == '*') {
			int open = line;

			for (p += 2; *p && !(*p == '*' && p[1] == '/'); p++)
				line += *p == '\n';
			if (!*p)
				return fail(err, errlen,
					    "%s:%d: a /* comment left open to the end of the file",
					    path, open);
			p++;
		} else if (!strncmp(p, "@include", 8)) {
			const char *q = strchr(p, '"'), *e = q ? strchr(q + 1, '"') : NULL;
			_cleanup_free_ char *inc_text = NULL;
			char inc[PATH_MAX];
			int r;

			if (q && e && (size_t)(e - q - 1) < sizeof(inc)) {
				snprintf(inc, sizeof(inc), "%.*s", (int)(e - q - 1), q + 1);
				r = read_text(inc, path, line, &inc_text, err, errlen);
				if (r >= 0)
					r = check_text(inc_text, inc, depth + 1, err, errlen);
				if (r < 0)
					return r;
				p = e;
			}
		} else if (isdigit((unsigned char)*p) &&
			   (p == text ||
			    !(isalnum((unsigned char)p[-1]) || p[-1] == '_' || p[-1] == '.'))) {
			const char *start = p - (p > text && p[-1] == '-');
			bool hex = p[0] == '0' && (p[1] == 'x' || p[1] == 'X');
			unsigned long long v;
			char *end;

			errno = 0;
			v = strtoull(p, &end, hex ? 16 : 10);
			if (*end == '.' || *end == 'e' || *end == 'E') {
				/* a float: skip its fraction and exponent */
				p = end;
				while (isalnum((unsigned char)p[1]) || p[1] == '.' || p[1] == '+' ||
				       p[1] == '-')
					p++;
				continue;
			}
			/* with L, libconfig reads 64 bits and keeps the nearest
			 * it can, without a word */
			if (*end == 'L' &&
			    (errno == ERANGE ||
			     v > (start < p ? 9223372036854775808ULL : 9223372036854775807ULL)))
				return fail(err, errlen, "%s:%d: %.*s does not fit 64 bits", path,
					    line, (int)(end - start), start);
			if (*end != 'L' &&
			    (errno == ERANGE || v > (start < p ? 2147483648ULL : 2147483647ULL)))
				return fail(err, errlen,
					    "%s:%d: %.*s does not fit the config parser's 32-bit "
					    "integers: write it with an L suffix (%.*sL)",
					    path, line, (int)(end - start), start,
					    (int)(end - start), start);
			p = end - 1;
		}
	}
	return 0;
}

/*
 * The text with each relative @include of its own made absolute, from the
 * file's directory: "x.conf" is the file beside this one, wherever the
 * agent was started (systemd starts it in /). Not libconfig's include_dir,
 * which 1.5 prefixes to absolute paths too. libconfig takes @include only
 * at the start of a line; lines are kept, so errors keep their numbers.
 * An included file's own relative @include stays libconfig's: from the
 * current directory.
 */
static char *resolve_includes(const char *text, const char *path)
{
	const char *slash = strrchr(path, '/');
	size_t dirlen = slash ? (size_t)(slash - path) + 1 : 0, lines = 1, o = 0;
	char *out;

	for (const char *p = text; *p; p++)
		lines += *p == '\n';
	/* at most one prefix a line */
	out = malloc(strlen(text) + lines * dirlen + 1);
	if (!out)
		return NULL;
	for (const char *p = text; *p;) {
		const char *nl = strchr(p, '\n'), *end = nl ? nl + 1 : p + strlen(p);
		const char *q = p + strspn(p, " \t");

		if (dirlen && !strncmp(q, "@include", 8)) {
			const char *open = q + 8 + strspn(q + 8, " \t");

			if (open < end && *open == '"' && open[1] != '/') {
				memcpy(out + o, p, (size_t)(open + 1 - p));
				o += (size_t)(open + 1 - p);
				memcpy(out + o, path, dirlen);
				o += dirlen;
				p = open + 1;
			}
		}
		memcpy(out + o, p, (size_t)(end - p));
		o += (size_t)(end - p);
		p = end;
	}
	out[o] = 0;
	return out;
}

/* The text read once, checked, then parsed: a pipe is read only once. */
int config_load(struct dc_config *c, const char *path, char *err, size_t errlen)
{
	_cleanup_free_ char *raw = NULL, *text = NULL;
	struct stat st;
	config_t cf;
	int r;

	r = read_text(path, NULL, 0, &raw, err, errlen);
	if (r < 0)
		return r;
	/* a pipe (-c /dev/stdin, <(...)) has no directory of its own: its
	 * relative includes stay the working directory's */
	text = stat(path, &st) == 0 && S_ISREG(st.st_mode) && !strchr(path, '"')
		   ? resolve_includes(raw, path)
		   : strdup(raw);
	if (!text)
		return fail(err, errlen, "%s: out of memory", path) ? -ENOMEM : -ENOMEM;
	r = check_text(text, path, 0, err, errlen);
	if (r < 0)
		return r;
	config_init(&cf);
	r = load(c, &cf, config_read_string(&cf, text), path, text, err, errlen);
	config_destroy(&cf);
	return r;
}

/* The same checks as a file's (and so the fuzzer's reach, tests/fuzz). */
int config_load_string(struct dc_config *c, const char *text, char *err, size_t errlen)
{
	config_t cf;
	int r;

	r = check_text(text, "<string>", 0, err, errlen);
	if (r < 0)
		return r;
	config_init(&cf);
	r = load(c, &cf, config_read_string(&cf, text), "<string>", text, err, errlen);
	config_destroy(&cf);
	return r;
}

void config_print_help(FILE *f)
{
	static const char libs_help[] =
	    "probes.libraries (list of groups, default ( ))\n"
	    "    libraries to probe with uprobes: ( { path = \"/lib/x86_64-linux-gnu/libc.so.6\"; "
	    "category = \"libc\"; functions = [\"pwrite*\", \"fwrite\"]; bytes = [\"pwrite\"]; } "
	    ");\n"
	    "    functions are fnmatch patterns over the library's symbols; bytes names those "
	    "whose\n"
	    "    return value is a byte count (negative: an error). A uprobe traps on every "
	    "call\n"
	    "    (a microsecond on bare metal, tens in some VMs): none are attached unless "
	    "listed.\n";

	fprintf(f, "Settings of %s (libconfig syntax; dotted names are groups):\n\n",
		DC_CONFIG_DEFAULT_PATH);
	for (size_t i = 0; i < ELEMENTSOF(items); i++) {
		const struct dc_cfg_item *it = &items[i];

		if (it->type == CFG_STRLIST || it->type == CFG_INTLIST) {
			fprintf(f, "%s (list of %s, default [])\n    %s\n", it->path,
				it->type == CFG_STRLIST ? "strings" : "integers", it->help);
			continue;
		}
		fprintf(f, "%s (%s, default %s%s%s", it->path,
			it->type == CFG_FLOAT	 ? "number"
			: it->type == CFG_INT	 ? "integer"
			: it->type == CFG_STRING ? "string"
						 : "boolean",
			it->type == CFG_STRING ? "\"" : "", it->def,
			it->type == CFG_STRING ? "\"" : "");
		if (it->type == CFG_FLOAT || it->type == CFG_INT)
			fprintf(f, ", %s to %s", num(it->min).s, num(it->max).s);
		if (it->choices)
			fprintf(f, ", one of %s", it->choices);
		fprintf(f, ")\n    %s\n", it->help);
	}
	fputs(libs_help, f);
}

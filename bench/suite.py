#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The benchmark suite (issue 7): every workload under every tracer in one
run, then the agent's own figures, then the goals against baselines measured
in the same run.

Workloads (bench/workloads.c): 4 KiB pwrite/pread on tmpfs (pinned to CPU 1:
the worst case per call); on ext4 on a loop device, 1 MiB sequential buffered
write (fsync timed), buffered read (the file's pages evicted first), O_DIRECT
write and read; a metadata storm (create, stat, unlink of N files on the
ext4); two threads running all of them ("mixed").

Configurations, one after the other in every round, the order reversed every
other round; each runs all the workloads under one start of its tracer:
  none           no tracer
  empty          empty programs on every attach point of the agent's default
                 set (found from a default agent at start: bpftool perf show)
  minagg         minimal aggregation: count and time per (pid, syscall) and
                 per block request (bench/baseline.bpf.c)
  default        datacrumbs, default configuration
  all-layers     datacrumbs with every layer: files at file granularity,
                 every VFS category, page cache, block, io_uring, and libc
                 uprobes (read, write, pread*, pwrite*); its 4 KiB loop runs
                 a tenth of the calls (uprobe traps cost tens of us)
  traces-1pct    default + traces at 1 in 100, no rate limit
  traces-100pct  default + traces of every call, no rate limit
  bpftrace       the same aggregation as minagg, in bpftrace
  bpftrace-feat  bpftrace computing what the default agent's records hold
                 per call: for the agent's file I/O system calls, per
                 (cgroup, process, call) count, time, errors, bytes, log2
                 latency and size histograms; per block device requests,
                 bytes, time and the same histograms (no request origin, no
                 files, no page cache, no traces: less than the agent does)
  bcc            the same, in BCC (python3-bpfcc, bench/bcc_agg.py)
A configuration that cannot run here prints its reason in its rows.

Tables: per workload, median ns per call, ns added (median of the per-round
differences to none) with p25..p75, added / minagg's, and % throughput lost
(median of the per-round losses against none). For tmpfs-4k also each
tracer's programs' run time per call (kernel BPF statistics), which the
per-call goals are judged by when the rounds' added ns spread wider than
the goal's margin (a quarter of minagg's). Then the default agent's
programs' run time in each 1 MiB workload (kernel BPF statistics), as a
share of the workload's untraced time: the estimate the throughput goals
are judged by when the wall clock's spread is wider than twice the goal, as
it is on a noisy VM. Figures: agent CPU and RSS
(its own agent records), drain time of 1k/10k/100k keys (bench/drainbench:
the agent's flip and drain code), attach time (exec to READY=1) of the
default set and of a thousand libc functions. Goals: PASS/FAIL with the
ratios of this run.

usage: suite.py BUILD_DIR [--quick] [--rounds R] [--only c1,c2]
                [--quiet-budget S] [--json FILE]
       suite.py BUILD_DIR --attach-only [--library-mechanism auto,uprobe] [--quick]
"""
import argparse
import glob
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import layers_bench as lb  # noqa: E402  (tracer start/stop, ext4 loop device, quiet node)
import syscall_bench as sb  # noqa: E402
from syscall_bench import BPFTRACE  # noqa: E402  (the per-(pid, syscall) aggregation)
from traces_bench import CONFIGS as TRACES  # noqa: E402  (traces at 1% and 100%)

HERE = os.path.dirname(os.path.abspath(__file__))

BPFTRACE_BLOCK = r"""
tracepoint:block:block_rq_issue { @rq[args->dev, args->sector] = nsecs; }
tracepoint:block:block_rq_complete /@rq[args->dev, args->sector]/ {
  @blk_count[args->dev] = count();
  @blk_bytes[args->dev] = sum(args->nr_sector * 512);
  @blk_time[args->dev] = sum(nsecs - @rq[args->dev, args->sector]);
  delete(@rq[args->dev, args->sector]);
}
"""

# The agent's per-call features in bpftrace: the "comparable aggregation" of
# issue 7's goal (a third of bpftrace's cost). What a bpftrace user writes
# for it: one map per feature, the calls chosen by a map filled at BEGIN
# (the numbers from bench/opnrs, the agent's own table).
BPFTRACE_FEATURES = r"""
tracepoint:raw_syscalls:sys_enter /@io[args->id]/ { @start[tid] = nsecs; }
tracepoint:raw_syscalls:sys_exit /@start[tid]/ {
  $lat = nsecs - @start[tid];
  delete(@start[tid]);
  @calls[cgroup, pid, args->id] = count();
  @time[cgroup, pid, args->id] = sum($lat);
  @lat[cgroup, pid, args->id] = hist($lat);
  if (args->ret < 0) {
    @errors[cgroup, pid, args->id] = count();
  } else {
    @bytes[cgroup, pid, args->id] = sum(args->ret);
    @size[cgroup, pid, args->id] = hist(args->ret);
  }
}
tracepoint:block:block_rq_issue { @rq[args->dev, args->sector] = nsecs; }
tracepoint:block:block_rq_complete /@rq[args->dev, args->sector]/ {
  $t = nsecs - @rq[args->dev, args->sector];
  delete(@rq[args->dev, args->sector]);
  @blk_count[args->dev] = count();
  @blk_bytes[args->dev] = sum(args->nr_sector * 512);
  @blk_time[args->dev] = sum($t);
  @blk_dlat[args->dev] = hist($t);
  @blk_size[args->dev] = hist(args->nr_sector * 512);
}
"""


def bpftrace_features(build):
    """The bpftrace-feat script, or raise RuntimeError with the reason."""
    out = subprocess.run([os.path.join(build, "bench/opnrs")], capture_output=True, text=True)
    nrs = out.stdout.split()
    if out.returncode or not nrs:
        raise RuntimeError("bench/opnrs: %s" % (out.stderr.strip() or "no numbers"))
    return ('BEGIN { %s printf("ready\\n"); }\n' % " ".join("@io[%d] = 1;" % int(n) for n in nrs)
            + BPFTRACE_FEATURES)


# (name, description, sizes key); MiB/s style workloads report throughput lost
WORKLOADS = [
    ("tmpfs-4k", "4 KiB pwrite/pread on tmpfs, pinned to CPU 1"),
    ("buffered-write", "1 MiB sequential buffered writes on ext4, fsync timed"),
    ("buffered-read", "1 MiB sequential buffered reads on ext4, file evicted first"),
    ("direct-write", "1 MiB sequential O_DIRECT writes on ext4"),
    ("direct-read", "1 MiB sequential O_DIRECT reads on ext4"),
    ("metadata", "create (openat+close), stat, unlink of every file, on ext4"),
    ("mixed", "two threads, each running all the above on its own files"),
]
STREAMS = ("buffered-write", "buffered-read", "direct-write", "direct-read")

SIZES = {  # full, quick
    "calls": (500000, 20000), "mib": (256, 8), "files": (100000, 2000),
    "mix_calls": (100000, 10000), "mix_mib": (64, 4), "mix_files": (10000, 500),
}

TRACES_DIR = '"@TMP@/traces"'


def agent_configs():
    libc = lb.libc_path()
    every = ('probes = { files = { granularity = "file"; };'
             ' vfs = { categories = "vfs,ext4,xfs,nfs,fuse,iomap,file_cache,page_cache,bio"; };'
             ' %s };\n' % (lb.LIBC % libc if libc else "")) + lb.TRACES_ON
    return {
        "default": lb.TRACES_ON,
        "all-layers": every,
        # the default ring for 1%; 64 MiB at 100%, so that the ring keeps up
        "traces-1pct": TRACES["1pct"] % {"ring": 8, "dir": "@TMP@/traces"},
        "traces-100pct": TRACES["all"] % {"ring": 64, "dir": "@TMP@/traces"},
    }


CONFIGS = ["none", "empty", "minagg", "default", "all-layers", "traces-1pct", "traces-100pct",
           "bpftrace", "bpftrace-feat", "bcc"]
SCALE = {"all-layers": 0.1}  # share of the 4 KiB loop's calls (uprobe traps)


def med(v):
    return statistics.median(v) if v else float("nan")


# --- setting up the comparison tracers ---------------------------------------

def default_attach_points(b):
    """The attach points of a default agent, as bench/baseline floor takes
    them: raw:NAME for raw tracepoints (tp_btf, raw_tp) and tp:GROUP/NAME for
    tracepoints, from the kernel's list of the agent's perf events."""
    p, _ = b.start("default", "agent", lb.TRACES_ON)
    try:
        perf = json.loads(lb.sh("bpftool", "perf", "show", "-j"))
    finally:
        b.stop(p)
    points = []
    for e in perf:
        if e.get("pid") != p.pid or "tracepoint" not in e:
            continue
        name = e["tracepoint"]
        if e.get("fd_type") == "raw_tracepoint":
            points.append("raw:" + name)
            continue
        groups = glob.glob("/sys/kernel/tracing/events/*/%s" % name) or \
            glob.glob("/sys/kernel/debug/tracing/events/*/%s" % name)
        if groups:
            points.append("tp:%s/%s" % (os.path.basename(os.path.dirname(groups[0])), name))
    return sorted(set(points))


def bcc_setup(tmp):
    """(command, environment) for bench/bcc_agg.py, or (None, reason)."""
    if subprocess.run(["/usr/bin/python3", "-c", "import bcc"], capture_output=True).returncode:
        return None, "python3-bpfcc not installed (packaging/install-deps.sh bench)"
    env = dict(os.environ)
    rel = os.uname().release
    if not os.path.isdir("/lib/modules/%s/build" % rel):
        # no headers of the running kernel (and no kheaders): Debian's stock
        # headers, the common and the arch tree merged as BCC expects one tree
        common = sorted(glob.glob("/usr/src/linux-headers-*-common"))
        if not common:
            return None, ("no kernel headers: neither /lib/modules/%s/build nor Debian's "
                          "linux-headers (packaging/install-deps.sh bench)" % rel)
        ver = os.path.basename(common[-1])[len("linux-headers-"):-len("-common")]
        arch = [d for d in glob.glob("/usr/src/linux-headers-%s-*" % ver)
                if not d.endswith(("-common", "-common-rt")) and "-rt-" not in d
                and "-cloud-" not in d]
        if not arch:
            return None, "no arch headers next to %s" % common[-1]
        tree = os.path.join(tmp, "kheaders-" + ver)
        if not os.path.isdir(tree):
            os.makedirs(tree)
            subprocess.run(["cp", "-rs", common[-1] + "/.", tree + "/"], check=True)
            subprocess.run(["cp", "-rsf", arch[0] + "/.", tree + "/"], check=True)
        env["BCC_KERNEL_SOURCE"] = tree
    return ["/usr/bin/python3", os.path.join(HERE, "bcc_agg.py")], env


# --- one configuration's run of every workload -------------------------------

def workload(b, *args, pin=False):
    """(calls, bytes, ns) of one run of bench/workloads."""
    cmd = ([os.path.join(b.build, "bench/workloads")] + [str(x) for x in args])
    if pin and shutil.which("taskset"):
        cmd = ["taskset", "-c", "1"] + cmd
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode:
        raise RuntimeError("workloads %s: %s" % (args[0], out.stderr.strip()))
    c, by, ns = out.stdout.split()
    return int(c), int(by), int(ns)


def run_streams(b, fs, sz, each=None):
    """{workload: (calls, bytes, ns)} of the four 1 MiB workloads, in order;
    each(name, run) wraps every run (the BPF time section measures around it)."""
    seq, dio = os.path.join(fs.mnt, "seq"), os.path.join(fs.mnt, "dio")
    steps = [("buffered-write", ("write", seq, sz["mib"])), ("buffered-read", ("read", seq, sz["mib"])),
             ("direct-write", ("write", dio, sz["mib"], "direct")),
             ("direct-read", ("read", dio, sz["mib"], "direct"))]
    res = {}
    for name, args in steps:
        res[name] = (each or (lambda _, run: run()))(name, lambda: workload(b, *args))
        if args[0] == "read":
            os.unlink(args[1])
    return res


def run_workloads(b, fs, shm, sz, scale=1.0):
    """{workload: (calls, bytes, ns)} for every workload, in order."""
    def w(*args, pin=False):
        return workload(b, *args, pin=pin)

    res = {}
    calls = max(1000, int(sz["calls"] * scale) // 2 * 2)
    res["tmpfs-4k"] = w("tmpfs4k", os.path.join(shm, "f"), calls, pin=True)
    res.update(run_streams(b, fs, sz))
    mdir = os.path.join(fs.mnt, "meta")
    os.mkdir(mdir)
    res["metadata"] = w("meta", mdir, sz["files"])
    os.rmdir(mdir)
    res["mixed"] = w("mixed", shm, fs.mnt, max(1000, int(sz["mix_calls"] * scale) // 2 * 2),
                     sz["mix_mib"], sz["mix_files"])
    return res


def agent_cost(out, t1=None, t2=None):
    """CPU and RSS from the agent's own agent records (windows within
    [t1, t2] microseconds of wall time when given)."""
    recs = lb.records(out, "agent")
    inside = [x for x in recs if t1 is None or (x["ts_start"] >= t1 and x["ts_end"] <= t2)]
    wall = sum(x["duration_us"] for x in inside)
    return {"user_us": sum(x["cost"]["cpu_user_us"] for x in inside),
            "sys_us": sum(x["cost"]["cpu_sys_us"] for x in inside),
            "wall_us": wall, "windows": len(inside),
            "rss_kib": max((x["cost"]["rss_kib"] for x in recs), default=0),
            "drain_us": [x["cost"]["drain_us"] for x in inside],
            "keys": [x["keys"] for x in inside],
            "probes": lb.mechanisms(recs)[0]}


# --- figures ------------------------------------------------------------------

def vm_hwm(p):
    """The kernel's high-water mark of a live process's RSS in KiB (VmHWM):
    the agent's records sample its RSS at each window's close, this sees
    the start's transient too. None if it cannot be read."""
    try:
        return sb.proc_status(p.pid).get("VmHWM")
    except (OSError, ValueError):
        return None


def steady_cpu(b, shm, seconds):
    """The default agent while the 4 KiB loop runs for `seconds`: its user and
    system CPU share over the windows wholly inside, and the loop's calls/s."""
    exe = os.path.join(b.build, "bench/workloads")
    p, out = b.start("default", "agent", lb.TRACES_ON)
    t1 = time.time() * 1e6
    n = ns = 0
    while time.time() * 1e6 - t1 < seconds * 1e6:
        r = subprocess.run(["taskset", "-c", "1", exe, "tmpfs4k", os.path.join(shm, "s"), "200000"],
                           capture_output=True, text=True, check=True).stdout.split()
        n += int(r[0])
        ns += int(r[2])
    t2 = time.time() * 1e6
    b.stop(p)
    c = agent_cost(out, t1, t2)
    c["calls_per_s"] = n / (ns / 1e9)
    return c


def net_bpf_ns(stats, run):
    """(run()'s (calls, bytes, ns), the run time of the programs of stats (an
    lb.ProgStats) during it, and their runs, each net of what they were in
    an idle interval as long right after: the node's other activity). Call
    with the kernel's BPF statistics on."""
    def sum_of(progs, field):
        return sum(v[field] for v in progs.values())
    before = stats.snap()
    r = run()
    after = stats.snap()
    time.sleep(r[2] / 1e9)
    idle = stats.snap()

    def net(field):
        return sum_of(after, field) - sum_of(before, field) - \
            (sum_of(idle, field) - sum_of(after, field))
    return r, net("run_time_ns"), net("run_cnt")


def alive(p, name):
    """A tracer that died during a measured run: its programs stay loaded
    while measured (the statistics' fds hold them), detached, and would read
    as costing nothing."""
    if p.poll() is not None:
        raise RuntimeError("%s exited during a measured run (status %s)" % (name, p.returncode))


def bpf_time(b, fs, sz, passes, quiet, start, configs):
    """Each tracer's programs' run time in each 1 MiB workload (the default
    agent's, and the minimal aggregation's: the floor of a per-request
    aggregation on the same I/O), from the kernel's BPF statistics
    (kernel.bpf_stats_enabled, on only for these passes: the statistics add
    two clock reads a run), net of what they ran in an idle interval as
    long right after (the node's other activity), the tracers alternating.
    {config: {workload: [(net ns, traced run ns, net runs)]}}, one per pass."""
    out = {c: {wl: [] for wl in STREAMS} for c in configs}
    with lb.bpf_stats_on():
        for n in range(passes):
            for c in (configs if n % 2 == 0 else list(reversed(configs))):
                quiet.wait()
                p, rec = start(c)
                stats = lb.ProgStats(p.dc_ids)

                def each(name, run):
                    r, net, nruns = net_bpf_ns(stats, run)
                    alive(p, c)
                    out[c][name].append((net, r[2], nruns))
                    return r
                try:
                    run_streams(b, fs, sz, each)
                finally:
                    stats.close()
                b.stop(p)
                if rec and os.path.exists(rec):
                    os.unlink(rec)
                shutil.rmtree(os.path.join(b.tmp, "traces"), ignore_errors=True)
    return out


def bpf_call_time(b, shm, calls, start, configs, passes, quiet):
    """Each tracer's programs' run time per call of the 4 KiB loop, from the
    kernel's BPF statistics, net of an idle interval as long right after:
    ({config: [ns per call]}, {config: [ns per program run]}), one per
    pass, the tracers alternating. These hold steadier than the wall clock
    on this host (docs/benchmarks.md); report() adds the dispatch back
    (estimate_added). The empty programs' ns per run is what the
    statistics' own clock read adds to every run's recorded time."""
    out, per_run = {c: [] for c in configs}, {c: [] for c in configs}
    with lb.bpf_stats_on():
        for n in range(passes):
            for c in (configs if n % 2 == 0 else list(reversed(configs))):
                quiet.wait()
                p, rec = start(c)
                stats = lb.ProgStats(p.dc_ids)
                try:
                    r, net, nruns = net_bpf_ns(stats, lambda: workload(
                        b, "tmpfs4k", os.path.join(shm, "b"), calls, pin=True))
                    alive(p, c)
                finally:
                    stats.close()
                b.stop(p)
                if rec and os.path.exists(rec):
                    os.unlink(rec)
                out[c].append(net / r[0])
                per_run[c].append(net / nruns if nruns > 0 else float("nan"))
    shutil.rmtree(os.path.join(b.tmp, "traces"), ignore_errors=True)
    return out, per_run


def dispatch_pairs(b, shm, calls, start, pairs, quiet):
    """What the empty programs' presence adds a call of the 4 KiB loop (the
    dispatch to programs on sys_enter/sys_exit), in pairs: the loop
    untraced and under empty, back to back (the order swapped every pair),
    the pair's difference; [ns a call], one per pair. The suite's rounds
    run each tracer minutes apart, across this host's slow and fast spells,
    which move the untraced loop more than the dispatch costs
    (docs/benchmarks.md); a pair's two runs mostly fall in one spell."""
    out = []
    path = os.path.join(shm, "d")
    for n in range(pairs):
        quiet.wait()

        def run():
            r = workload(b, "tmpfs4k", path, calls, pin=True)
            return r[2] / r[0]
        p = None
        try:
            if n % 2 == 0:
                bare = run()
                p, _ = start("empty")
                traced = run()
            else:
                p, _ = start("empty")
                traced = run()
                b.stop(p)
                p = None
                bare = run()
        finally:
            b.stop(p)
        out.append(traced - bare)
    return out


def drain_times(b, keys, reps):
    """{(keys, layout): [(flip us, drain us)]} from bench/drainbench."""
    res = {}
    for k in keys:
        for layout in ("percpu", "shared", "hash-percpu", "hash-shared", "floor"):
            out = subprocess.run([os.path.join(b.build, "bench/drainbench"), str(k), layout,
                                  str(reps)], capture_output=True, text=True)
            if out.returncode:
                res[(k, layout)] = out.stderr.strip() or "exit status %d" % out.returncode
                continue
            res[(k, layout)] = [(int(x.split()[3]), int(x.split()[4]))
                                for x in out.stdout.splitlines()]
    return res


# functions that do not return the ordinary way (or return twice): a return
# probe there would disturb every process on the node for the measurement
NO_RETURN = ("fork", "clone", "context", "jmp", "exit", "abort", "exec", "spawn",
             "pthread_create", "__libc_start", "_dl_")


def libc_functions(n):
    """n libc functions, one name per address (the agent probes aliases once),
    none that would not return normally."""
    libc = lb.libc_path()
    out = lb.sh("nm", "-D", "--defined-only", libc)
    addrs, first = {}, {}
    for line in out.splitlines():
        f = line.split()
        if len(f) == 3 and f[1] in ("T", "W"):
            name = f[2].split("@")[0]
            addrs.setdefault(name, set()).add(f[0])
            first.setdefault(f[0], name)
    # a name with versions at several addresses would be probed at each
    names = [x for a, x in first.items() if len(addrs[x]) == 1 and
             x.replace("_", "a").isalnum() and not any(y in x.lower() for y in NO_RETURN)]
    return libc, names[:n]


def ready_ms(b, conf):
    """(agent exec to READY=1 in ms, its stop in ms, the libraries layer's
    mechanism), or (None, reason, None)."""
    t0 = time.monotonic()
    p, out = b.start_agent(conf, ready_timeout=600)
    t = (time.monotonic() - t0) * 1e3
    if p is None:
        return None, out, None
    t0 = time.monotonic()
    p.send_signal(signal.SIGINT)
    p.wait(1200)  # detaching thousands of uprobes takes minutes: measured, not cut short
    stop = (time.monotonic() - t0) * 1e3
    b.stop(p)
    return t, stop, lb.mechanisms(lb.records(out, "agent"))[0].get("libraries")


def attach_times(b, reps, nfuncs, mechanisms=("auto",)):
    """READY times of the default set (reps times), then once per library
    mechanism of the default set plus entry and return uprobes on nfuncs
    functions of a private copy of libc: uprobes belong to the file (inode),
    so no process runs into them and the figure is the attach itself, not
    the node slowed by traps in malloc. The stop of that agent (detaching
    them) is timed too."""
    res = {"default": [], "default_stop": [], "uprobes": {}, "nfuncs": 0}
    libc, names = libc_functions(nfuncs)
    copy = os.path.join(b.tmp, "libc-copy.so")
    shutil.copyfile(libc, copy)
    res["nfuncs"] = len(names)
    # several entries for the one library: a pattern list holds 4 KiB of text
    chunks, cur = [], []
    for x in names:
        if sum(len(y) + 1 for y in cur) + len(x) + 1 > 4000:
            chunks.append(cur)
            cur = []
        cur.append(x)
    chunks.append(cur)
    lib = ('probes = { libraries = ( %s ); %%s};\nmaps = { library_max_functions = %d; };\n'
           % (", ".join('{ path = "%s"; category = "libc"; functions = [%s]; }'
                        % (copy, ", ".join('"%s"' % x for x in c)) for c in chunks),
              max(512, len(names))))
    for _ in range(reps):
        t, stop, _ = ready_ms(b, lb.TRACES_ON)
        if t is None:
            res["why_default"] = stop
        else:
            res["default"].append(t)
            res["default_stop"].append(stop)
    for m in mechanisms:
        t, stop, got = ready_ms(b, lb.TRACES_ON + lib % (
            'library_mechanism = "%s"; ' % m if m != "auto" else ""))
        res["uprobes"][m] = (t, stop, got)
    return res


def print_attach(at):
    print("\n[attach] agent exec to READY=1, %d repetitions, medians" % len(at["default"]))
    if not at["default"]:
        print("default probe set: not run: %s" % at.get("why_default"))
        return
    print("default probe set: %.0f ms (stop: %.0f ms)" % (med(at["default"]),
                                                         med(at["default_stop"])))
    for m, (t, stop, got) in at["uprobes"].items():
        if t is None:
            print("default + uprobes on %d libc functions (library_mechanism %s): not run: %s"
                  % (at["nfuncs"], m, stop))
            continue
        print("default + uprobes on %d functions of a copy of libc (entry and return; "
              "library_mechanism %s, attached with %s), once: %.0f ms (+%.0f ms); its stop "
              "(detaching them): %.1f s" % (at["nfuncs"], m, got, t, t - med(at["default"]),
                                            stop / 1e3))


# --- report --------------------------------------------------------------------

def estimate_added(bc, t4, rounds, dispatch=None):
    """({config: estimated ns a call}, {config: [the same per BPF pass]},
    None) or ({}, {}, why not): the dispatch cost (the empty programs'
    presence) plus the programs' BPF time beyond the empty programs'. The
    dispatch comes from the paired runs (dispatch_pairs), else from empty's
    added ns in the wall-clock table; either must itself be measured
    steadily (its p25..p75 within a quarter of minagg's estimate): a wrong
    dispatch moves the ratios either way (towards 1 against the minimal
    aggregation, down against bpftrace). The passes alternate the tracers,
    so pass i of each is near in time to the others': a ratio is taken
    per pass too (report() judges a goal only where every pass agrees).
    What the programs do to the workload's caches, and the agent's
    threads, are not in it: for the agent it is a lower bound."""
    e, m = t4.get("empty", {}), t4.get("minagg", {}).get("added_ns")
    if not bc or not bc.get("empty") or not bc.get("minagg") or not bc.get("default"):
        return {}, {}, "no estimate: empty, minagg or the default did not run"
    base = med(bc["empty"])
    body = med(bc["minagg"]) - base
    if dispatch and len(dispatch) >= 5:
        d, lo, hi, src = (med(dispatch), lb.q(dispatch, .25), lb.q(dispatch, .75),
                          "%d paired runs" % len(dispatch))
    elif "added_ns" in e and m and m > 0 and rounds >= 3:
        d, (lo, hi), src = e["added_ns"], e["added_iqr"], "%d rounds" % rounds
    else:
        return {}, {}, "no estimate: the dispatch was not measured (empty did not run)"
    if d <= 0 or d + body <= 0 or hi - lo > (d + body) / 4:
        return {}, {}, ("no estimate: the dispatch is not measured steadily (%s, %.0f ns, "
                        "p25..p75 %.0f..%.0f)" % (src, d, lo, hi))
    n = min(len(v) for v in bc.values())
    if n < 3:
        return {}, {}, "no estimate: fewer than three BPF passes (%d)" % n
    est = {c: d + med(v) - base for c, v in bc.items()}
    per = {c: [d + v[i] - bc["empty"][i] for i in range(n)] for c, v in bc.items()}
    if est["minagg"] <= 0 or est["default"] <= 0 or min(per["minagg"]) <= 0:
        return {}, {}, "no estimate: minagg's or the default's came out at zero or below"
    return est, per, "dispatch %.1f ns from %s (p25..p75 %.1f..%.1f)" % (d, src, lo, hi)


def report(a, configs, not_run, runs, figures):
    rounds = len(runs["none"])
    tables = {}
    for wl, desc in WORKLOADS:
        n0 = runs["none"]
        c0, by0, _ = n0[0][wl]
        unit = "%d MiB per phase" % (by0 >> 20) if wl in STREAMS else "%d calls" % c0
        print("\n[%s] %s; %s; %d rounds; medians" % (wl, desc, unit, rounds))
        print("%-14s %10s %10s %15s %8s %10s" % ("config", "ns/call", "added ns", "p25..p75",
                                                "/minagg", "tput lost"))
        rows = {}
        for c in configs:
            if c in not_run:
                rows[c] = {"not_run": not_run[c]}
                continue
            nsc = [r[wl][2] / r[wl][0] for r in runs[c]]
            base = [r[wl][2] / r[wl][0] for r in n0]
            added = [x - y for x, y in zip(nsc, base)]
            # throughput: calls per second (bytes per second for the streams:
            # the same ratio, calls are fixed size)
            lost = [(1 - y / x) * 100 for x, y in zip(nsc, base)]
            rows[c] = {"ns_per_call": med(nsc), "added_ns": med(added),
                       "added_iqr": (lb.q(added, .25), lb.q(added, .75)),
                       "lost_pct": med(lost), "lost_iqr": (lb.q(lost, .25), lb.q(lost, .75))}
        m = rows.get("minagg", {}).get("added_ns")
        for c in configs:
            r = rows[c]
            if "not_run" in r:  # in its place: readers and test_suite.py read rows in order
                print("%-14s not run: %s" % (c, r["not_run"]))
                continue
            r["per_minagg"] = r["added_ns"] / m if m and m > 0 and c != "none" else None
            print("%-14s %10.1f %10.1f %15s %8s %9.2f%%" % (
                c, r["ns_per_call"], r["added_ns"],
                "%.0f..%.0f" % r["added_iqr"] if c != "none" else "-",
                "%.2fx" % r["per_minagg"] if r["per_minagg"] else "-", r["lost_pct"]))
        tables[wl] = rows
    print("added = median over rounds of (ns/call - none's in the same round); tput lost = "
          "median of 1 - none's time / this time, per round")

    f = figures
    share, minagg_share, raw_share = {}, {}, {}
    # what the statistics' clock read adds to every run's recorded time: the
    # empty programs' ns per run in the 4 KiB loop's passes (as the per-call
    # estimate takes it off too); without it, the recorded time is judged
    er = [x for x in (f.get("bpf_run") or {}).get("empty", []) if x == x and x > 0]
    e_run = med(er) if er else None
    if f.get("bpf_time"):
        bt = f["bpf_time"]
        bm = f.get("bpf_time_minagg") or {}

        def less(passes):
            """median ns over passes, less each pass's runs x e_run (not
            below 0: e_run holds an empty body's few ns too)"""
            return med([max(0.0, x[0] - (x[2] * e_run if e_run else 0)) for x in passes])
        print("\n[bpf time] the default agent's programs' run time in the 1 MiB workloads, and "
              "the minimal aggregation's (kernel BPF statistics, %d passes, medians; net of an "
              "idle interval as long)" % len(next(iter(bt.values()))))
        print("%-15s %10s %8s %10s %14s %10s %12s %8s" % (
            "workload", "BPF us/MiB", "runs/MiB", "less stats", "none ms/phase", "BPF/phase",
            "minagg us/MiB", "/minagg"))
        for wl in STREAMS:
            mib = runs["none"][0][wl][1] / (1 << 20)
            raw, net = med([x[0] for x in bt[wl]]), less(bt[wl])
            base = med([r[wl][2] for r in runs["none"]])
            share[wl], raw_share[wl] = 100 * net / base, 100 * raw / base
            mnet = less(bm[wl]) if bm.get(wl) else None
            minagg_share[wl] = 100 * mnet / base if mnet is not None else None
            print("%-15s %10.1f %8.1f %10s %14.1f %9.2f%% %12s %8s" % (
                wl, raw / 1e3 / mib, med([x[2] for x in bt[wl]]) / mib,
                "%.1f" % (net / 1e3 / mib) if e_run else "-", base / 1e6, share[wl],
                "%.1f" % (mnet / 1e3 / mib) if mnet is not None else "-",
                "%.2fx" % (net / mnet) if mnet and mnet > 0 else "-"))
        print("less stats: the run time less the statistics' own clock read, %s a run (the "
              "empty programs' recorded time in the 4 KiB loop's passes); BPF/phase and minagg "
              "are of it" % ("%.1f ns" % e_run if e_run else "not measured (empty did not run): "
                             "not taken off"))
        print("BPF/phase: the programs' time over the phase's untraced time: what they add "
              "where their time falls on the workload's own path (the system-call and page-cache "
              "programs run in its context; block completions may overlap the device). minagg: "
              "count and time per (pid, syscall), per block request issue time in a hash: the "
              "floor of aggregating these workloads' calls and requests at all")
    bc = f.get("bpf_call")
    est, est_pass, est_how = estimate_added(bc, tables["tmpfs-4k"], rounds, f.get("dispatch"))
    why_not = None if est else est_how
    if bc:
        print("\n[bpf time, tmpfs-4k] each tracer's programs' run time per call of the 4 KiB loop "
              "(kernel BPF statistics, %d passes alternating, medians; net of an idle interval "
              "as long)" % len(next(iter(bc.values()))))
        print("%-14s %12s %14s %8s  %s" % ("config", "BPF ns/call", "est. added ns", "/minagg",
                                           "per pass"))
        for c, v in bc.items():
            e = est.get(c)
            print("%-14s %12.1f %14s %8s  %s" % (
                c, med(v), "%.1f" % e if e is not None else "-",
                "%.2fx" % (e / est["minagg"]) if e is not None and est.get("minagg")
                and c not in ("minagg", "empty") else "-", " ".join("%.1f" % x for x in v)))
        if f.get("dispatch"):
            print("dispatch: the 4 KiB loop under empty less untraced, back to back, %d pairs: "
                  "median %.1f ns a call, p25..p75 %.1f..%.1f (per pair: %s)" % (
                      len(f["dispatch"]), med(f["dispatch"]), lb.q(f["dispatch"], .25),
                      lb.q(f["dispatch"], .75), " ".join("%.0f" % x for x in f["dispatch"])))
        print("est. added: the dispatch to programs on sys_enter/sys_exit (the paired runs "
              "above, else empty's added ns in the wall-clock table) + the programs' time beyond "
              "the empty programs' (whose BPF time is the statistics' own clock reads), per pass "
              "and the median. minagg and default attach by tp_btf as empty does; bpftrace's "
              "tracepoints dispatch at a higher cost, not in its estimate. Not in any: what the "
              "programs do to the workload's caches, the agent's threads (its CPU is the "
              "agent's own goal): for the agent a lower bound\n" + est_how)
    print("\n[agent] the default agent's own agent records")
    st = f.get("steady")
    if st:
        cps = st["calls_per_s"]
        us, ss = st["user_us"] / st["wall_us"] * 100, st["sys_us"] / st["wall_us"] * 100
        print("4 KiB loop at %.0f calls/s, %d windows: user %.3f%% + sys %.3f%% of a core; "
              "per million calls/s: user %.3f%%, user+sys %.3f%%"
              % (cps, st["windows"], us, ss, us / (cps / 1e6), (us + ss) / (cps / 1e6)))
    for c, v in f.get("suite_cost", {}).items():
        print("%-14s over the workloads: user+sys %.3f%% of a core (median of rounds), "
              "RSS max %d KiB at a window's close, peak %s KiB (VmHWM)"
              % (c, med(v["share"]) * 100, max(v["rss"]),
                 "%d" % max(v["hwm"]) if v.get("hwm") else "?"))
    if f.get("suite_cost", {}).get("default", {}).get("hwm"):
        print("(the default's peak has been its start's: libbpf parses the kernel's BTF for each "
              "family's object, two or three side by side, about 11 MB each while it does; "
              "bench/start_bench.py, docs/benchmarks.md)")
    print("\n[drain] the agent's flip and drain (agent/slotmap.c) on N keys of its system-call "
          "window map, %d repetitions, medians" % f["drain_reps"])
    print("%8s %8s %12s %10s %10s" % ("keys", "layout", "max_entries", "flip ms", "drain ms"))
    for (k, layout), v in f["drain"].items():
        if isinstance(v, str):
            print("%8d %8s not run: %s" % (k, layout, v))
            continue
        print("%8d %8s %12d %10.2f %10.2f" % (k, layout, 1 << (k - 1).bit_length(),
                                              med([x[0] for x in v]) / 1e3,
                                              med([x[1] for x in v]) / 1e3))
    print("(percpu, shared: the agent's slot map; hash-*: the per-window hash it replaced, for "
          "comparison; floor: a shared hash of the same keys with 8-byte values drained by the "
          "same code, nothing folded: the kernel's walk alone)")
    at = f["attach"]
    print_attach(at)
    print("fentry/kprobe attach: not measured here (this kernel refuses fentry and has no "
          "kprobes); bench/run-vm-attach-bench.sh measures them in a VM of Debian's kernel")

    goals = []

    def goal(name, value, text, ok, note=None):
        goals.append({"goal": name, "measured": text, "pass": ok, "value": value, "note": note})

    def added_iqr(c):
        lo, hi = tables["tmpfs-4k"][c]["added_iqr"]
        return "default's added ns p25..p75: %.0f..%.0f" % (lo, hi)

    t4 = tables["tmpfs-4k"]

    def added(c):
        r = t4.get(c, {})
        return r.get("added_ns")
    d, mg = added("default"), added("minagg")
    bt, bf = added("bpftrace"), added("bpftrace-feat")
    # the goal's margin is a quarter of the minimal aggregation's cost: rounds
    # whose added ns spread wider than that cannot place the ratio either
    # side of 1.25, and the programs' own time is judged instead (as the
    # [bpf time] estimate is for the streams)
    note, judged, by_est = added_iqr("default"), True, False
    if d is not None and mg and mg > 0 and (rounds < 3 or t4["default"]["added_iqr"][1] -
                                            t4["default"]["added_iqr"][0] > mg / 4):
        wide = ("fewer than three rounds" if rounds < 3 else
                "the rounds' spread is too wide (%s)" % note)
        if est.get("default") and est.get("minagg", 0) > 0:
            d, mg = est["default"], est["minagg"]
            bt, bf = est.get("bpftrace"), est.get("bpftrace-feat")
            note = "by the BPF time estimate, %s: %s" % (est_how, wide)
            by_est = True
        else:
            note, judged = "%s, %s" % (wide, why_not), False

    def verdict(ok, c, other, limit, below):
        """ok, the median's verdict; on the estimate, only where every
        pass's ratio falls on the same side of limit, else None (the passes
        cannot place it)."""
        if not judged:
            return None
        if not by_est:
            return ok
        if other not in est_pass:
            return None
        r = [x / y for x, y in zip(est_pass[c], est_pass[other]) if y > 0]
        sides = {(x <= limit) if below else (x < limit) for x in r}
        return ok if len(sides) == 1 and len(r) == len(est_pass[c]) and sides.pop() == ok \
            else None

    def pass_ratios(c, other):
        if not by_est or other not in est_pass:
            return ""
        return "; per pass %s" % " ".join(
            "%.2fx" % (x / y) for x, y in zip(est_pass[c], est_pass[other]) if y > 0)
    if d is not None and mg and mg > 0:
        goal("per call <= 1.25x the minimal aggregation (tmpfs-4k)", d / mg,
             "%.2fx (%.0f / %.0f ns)" % (d / mg, d, mg),
             verdict(d / mg <= 1.25, "default", "minagg", 1.25, True),
             note + pass_ratios("default", "minagg"))
    else:
        goal("per call <= 1.25x the minimal aggregation (tmpfs-4k)", None,
             "not measured: %s" % not_run.get("minagg", "minagg added nothing"), None)
    # the goal: bpftrace doing comparable aggregation (the agent's
    # per-call features); against bpftrace doing only minagg's aggregation
    # too, which the minimal aggregation itself does not reach
    for c, v, name in (("bpftrace-feat", bf, "per call < 1/3 of bpftrace, same features (tmpfs-4k)"),
                       ("bpftrace", bt, "per call < 1/3 of bpftrace, minagg's only (tmpfs-4k)")):
        why = None
        if c == "bpftrace":
            why = "bpftrace doing only the minimal aggregation%s" % (
                ", which minagg does at %.2fx of its cost" % (mg / v) if v and v > 0 and mg else "")
        if d is not None and v and v > 0:
            goal(name, d / v, "%.2fx (%.0f / %.0f ns)" % (d / v, d, v),
                 verdict(d / v < 1 / 3, "default", c, 1 / 3, False),
                 "; ".join(x for x in (note + pass_ratios("default", c), why) if x))
        else:
            goal(name, None, "not measured: %s" % not_run.get(c, "%s added nothing" % c), None)
    for wl in STREAMS:
        r = tables[wl].get("default", {})
        if "lost_pct" in r:
            lo, hi = r["lost_iqr"]
            text = "%.2f%% [%.1f..%.1f]" % (r["lost_pct"], lo, hi)
            # a spread wider than twice the goal cannot tell 0.5% from 0,
            # and fewer than three rounds have none to speak of: then the
            # programs' own time is the estimate judged
            if hi - lo <= 1.0 and rounds >= 3:
                goal("throughput lost < 0.5%% (%s)" % wl, r["lost_pct"], text,
                     r["lost_pct"] < 0.5)
            elif wl in share:
                goal("throughput lost < 0.5%% (%s)" % wl, share[wl],
                     "BPF %.2f%%; wall %s" % (share[wl], text), share[wl] < 0.5,
                     "by the BPF time estimate: the wall clock's spread is too wide; %s%s" % (
                         "less the statistics' clock reads (%.2f%% with them)" % raw_share[wl]
                         if e_run else "with the statistics' clock reads (empty not run)",
                         "; minagg's BPF %.2f%%" % minagg_share[wl]
                         if minagg_share.get(wl) is not None else ""))
            else:
                goal("throughput lost < 0.5%% (%s)" % wl, r["lost_pct"], text, None)
    if st:
        v = st["user_us"] / st["wall_us"] * 100 / (st["calls_per_s"] / 1e6)
        both = (st["user_us"] + st["sys_us"]) / st["wall_us"] * 100 / (st["calls_per_s"] / 1e6)
        # the kernel splits user and system time by ticks: only the sum is
        # exact, and it bounds the user share from above
        goal("agent user CPU < 1% of a core at 1M calls/s", v, "%.3f%%" % v, v < 1,
             "user + system %.3f%%, the exact sum (the split is by ticks)" % both)
    rss = max(f.get("suite_cost", {}).get("default", {}).get("rss", []) +
              ([st["rss_kib"]] if st else []), default=None)
    hwm = f.get("suite_cost", {}).get("default", {}).get("hwm")
    if rss:
        goal("agent RSS < 32 MiB (default, at windows' close)", rss, "%.1f MiB" % (rss / 1024),
             rss < 32768, "the start's peak (VmHWM) %.1f MiB" %
             (max(hwm) / 1024) if hwm else None)
    for layout in ("percpu", "shared"):
        v = f["drain"].get((max(f["drain_keys"]), layout))
        if isinstance(v, list):
            ms = med([x[1] for x in v]) / 1e3
            goal("%d keys drained < 20 ms (%s map)" % (max(f["drain_keys"]), layout), ms,
                 "%.1f ms (+ %.1f ms flip)" % (ms, med([x[0] for x in v]) / 1e3), ms < 20)
    if at["default"]:
        v = med(at["default"])
        goal("READY within 500 ms, default set", v, "%.0f ms" % v, v < 500)
    print("\n[goals] ratios and figures of this run%s" % (
        " (--quick: one round of small workloads, a smoke run, not a measurement)"
        if a.quick else ""))
    print("%-52s %-30s %s" % ("goal", "measured", "result"))
    for g in goals:
        verdict = ("PASS" if g["pass"] else "FAIL" if g["pass"] is not None else
                   "NOT RESOLVED (spread)" if g["value"] is not None else "NOT MEASURED")
        print("%-52s %-30s %s%s" % (g["goal"], g["measured"], verdict,
                                    "  (%s)" % g["note"] if g["note"] else ""))
    print("NOT RESOLVED: the per-round losses' p25..p75 (in brackets) is wider than twice the "
          "goal, so this run cannot tell a 0.5% loss from none; where the [bpf time] section "
          "ran, its estimate is judged instead (per call: fewer than three rounds, or the "
          "default's added ns spread wider than a quarter of minagg's, and no [bpf time, "
          "tmpfs-4k] estimate, or the estimate's passes on both sides of the goal)")
    return tables, goals


def attach_only(a):
    tmp = tempfile.mkdtemp(prefix="dc-suite-")
    b = lb.Bench(a.build, tmp)
    print("datacrumbs benchmark suite, attach section: %s, kernel %s, load average %.2f"
          % (time.strftime("%Y-%m-%d %H:%M:%S %z"), os.uname().release, lb.loadavg()),
          flush=True)
    try:
        at = attach_times(b, 1 if a.quick else 5, 20 if a.quick else 1000,
                          a.library_mechanism.split(","))
        print_attach(at)
        if a.json:
            with open(a.json, "w") as fh:
                json.dump({"figures": {"attach": at}}, fh)
    finally:
        b.stop_all()
        shutil.rmtree(tmp, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--quick", action="store_true", help="a short smoke run: small workloads, "
                    "one round, no waiting for other tracers")
    ap.add_argument("--rounds", type=int)
    ap.add_argument("--only", default="", help="configurations (none is always in)")
    ap.add_argument("--quiet-budget", type=float,
                    help="seconds to wait in all for other people's tracing programs to unload "
                         "(default 60, quick 0); once spent, samples are not retaken")
    ap.add_argument("--json", help="write the results here too")
    ap.add_argument("--ext4-dir", default="/var/tmp",
                    help="where the ext4 image lives (default /var/tmp, on the disk; "
                         "/dev/shm puts the device in memory: no disk noise, and the "
                         "largest relative cost a 1 MiB call can show)")
    ap.add_argument("--attach-only", action="store_true",
                    help="only the attach section (no workloads), once per --library-mechanism")
    ap.add_argument("--library-mechanism", default="auto",
                    help="probes.library_mechanism values for the attach section, "
                         "comma-separated (auto,uprobe)")
    a = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("suite: run as root")
    if a.attach_only:
        return attach_only(a)
    for tool in ("taskset", "bpftool", "mkfs.ext4", "losetup", "nm"):
        if not shutil.which(tool):
            sys.exit("suite: %s not found (packaging/install-deps.sh build test bench)" % tool)
    qi = 1 if a.quick else 0
    sz = {k: v[qi] for k, v in SIZES.items()}
    rounds = a.rounds or (1 if a.quick else 5)
    budget = a.quiet_budget if a.quiet_budget is not None else (0 if a.quick else 60)
    configs = CONFIGS if not a.only else ["none"] + [c for c in CONFIGS
                                                     if c in a.only.split(",") and c != "none"]
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("suite: terminated"))
    tmp = tempfile.mkdtemp(prefix="dc-suite-")
    shm = tempfile.mkdtemp(prefix="dc-suite-", dir="/dev/shm")
    b = lb.Bench(a.build, tmp)
    t_start = time.monotonic()
    commit = subprocess.run(["git", "-C", HERE, "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True).stdout.strip() or "unknown"
    print("datacrumbs benchmark suite%s: %s, kernel %s, %d CPUs, load average %.2f, commit %s"
          % (" (quick)" if a.quick else "", time.strftime("%Y-%m-%d %H:%M:%S %z"),
             os.uname().release, os.cpu_count(), lb.loadavg(), commit), flush=True)
    fs = None
    try:
        # what each tracer needs, or why it cannot run here
        not_run, spec = {}, {}
        agents = agent_configs()
        for c in configs:
            if c in agents:
                spec[c] = ("agent", agents[c])
        if "empty" in configs:
            points = default_attach_points(b)
            print("empty: %d attach points of the default agent: %s"
                  % (len(points), " ".join(points)))
            spec["empty"] = ("cmd", [os.path.join(a.build, "bench/baseline"), "floor"] + points,
                             None)
        if "minagg" in configs:
            spec["minagg"] = ("cmd", [os.path.join(a.build, "bench/baseline"), "minagg"], None)
        if "bpftrace" in configs:
            if shutil.which("bpftrace"):
                spec["bpftrace"] = ("cmd", ["bpftrace", "-e", BPFTRACE + BPFTRACE_BLOCK], None)
            else:
                not_run["bpftrace"] = "bpftrace not installed (packaging/install-deps.sh bench)"
        if "bpftrace-feat" in configs:
            if not shutil.which("bpftrace"):
                not_run["bpftrace-feat"] = ("bpftrace not installed "
                                            "(packaging/install-deps.sh bench)")
            else:
                try:
                    spec["bpftrace-feat"] = ("cmd", ["bpftrace", "-e",
                                                     bpftrace_features(a.build)], None)
                except RuntimeError as e:
                    not_run["bpftrace-feat"] = str(e)
        if "bcc" in configs:
            cmd, env = bcc_setup(tmp)
            if cmd:
                spec["bcc"] = ("cmd", cmd, env)
            else:
                not_run["bcc"] = env
        fs = lb.Ext4(max(2 * sz["mib"], 4 * sz["mix_mib"]), a.ext4_dir,
                     inodes=sz["files"] + 2 * sz["mix_files"] + 1024)
        print("ext4: image in %s, loop device %s (direct I/O %s, requests of at most %s KiB%s)"
              % (a.ext4_dir, fs.loop, "on" if fs.dio else "off", fs.max_sectors_kb,
                 "" if (fs.max_sectors_kb or 0) >= 1024 else
                 ": a 1 MiB call is split into several; was the device's max_sectors_kb "
                 "lowered by an earlier user?"), flush=True)

        def start(c):
            kind = spec.get(c, ("none",))
            if kind[0] == "agent":
                return b.start(c, "agent", kind[1])
            if kind[0] == "cmd":
                return b.start_cmd(kind[1], env=kind[2]), None
            return None, None

        # warm-up (first allocations, the journal) and a check that each tracer starts
        run_workloads(b, fs, shm, sz, 0.1)
        for c in configs:
            if c in not_run or c == "none":
                continue
            try:
                p, out = start(c)
                b.stop(p)
                if out:
                    print("%s: %s" % (c, " ".join("%s=%s" % kv for kv in
                                                  agent_cost(out)["probes"].items())))
            except RuntimeError as e:
                not_run[c] = str(e)
        active = [c for c in configs if c not in not_run]
        runs = {c: [] for c in active}
        suite_cost = {}
        foreign = []
        quiet = lb.Quiet(budget)
        for r in range(rounds):
            order = active if r % 2 == 0 else list(reversed(active))
            for c in order:
                def take():
                    p, out = start(c)
                    ids = p.dc_ids if p else set()
                    fp = lb.foreign_progs(ids)
                    res = run_workloads(b, fs, shm, sz, SCALE.get(c, 1.0))
                    fp += lb.foreign_progs(ids)
                    hwm = vm_hwm(p) if out else None
                    b.stop(p)
                    return ((res, out, hwm), fp), ids
                if quiet.waited < budget:
                    (res, out, hwm), fp = quiet.sample(take)
                else:  # budget spent: record what was loaded, do not retake
                    ((res, out, hwm), fp), _ = take()
                runs[c].append(res)
                if fp:
                    foreign.append((r + 1, c, fp))
                if out:
                    cost = agent_cost(out)
                    v = suite_cost.setdefault(c, {"share": [], "rss": [], "hwm": []})
                    v["share"].append((cost["user_us"] + cost["sys_us"]) / cost["wall_us"])
                    v["rss"].append(cost["rss_kib"])
                    if hwm:
                        v["hwm"].append(hwm)
                    os.unlink(out)
                    shutil.rmtree(os.path.join(tmp, "traces"), ignore_errors=True)
            print("round %d (%.0f s, load %.2f): %s" % (
                r + 1, time.monotonic() - t_start, lb.loadavg(), "  ".join(
                    "%s %.0f" % (c, runs[c][-1]["tmpfs-4k"][2] / runs[c][-1]["tmpfs-4k"][0])
                    for c in active)), flush=True)

        figures = {"suite_cost": suite_cost}
        quiet.wait()
        figures["steady"] = steady_cpu(b, shm, 2.5 if a.quick else 4.5)
        if "default" in active:
            # five passes: a window's close or the journal's commit in one
            # phase of 0.2 to 0.8 s moves its figure; the median sheds it
            bts = bpf_time(b, fs, sz, 1 if a.quick else 5, quiet, start,
                           [c for c in ("default", "minagg") if c in active])
            figures["bpf_time"] = bts["default"]
            if "minagg" in bts:
                figures["bpf_time_minagg"] = bts["minagg"]
            if "empty" in active:
                figures["dispatch"] = dispatch_pairs(b, shm, sz["calls"] // 5, start,
                                                     5 if a.quick else 15, quiet)
            figures["bpf_call"], figures["bpf_run"] = bpf_call_time(
                b, shm, sz["calls"], start, [c for c in ("empty", "minagg", "default", "bpftrace",
                                                            "bpftrace-feat") if c in active], 1 if a.quick else 3, quiet)
        figures["drain_keys"] = [1000, 10000, 100000]
        figures["drain_reps"] = 1 if a.quick else 5
        figures["drain"] = drain_times(b, figures["drain_keys"], figures["drain_reps"])
        figures["attach"] = attach_times(b, 1 if a.quick else 5, 20 if a.quick else 1000)
        tables, goals = report(a, configs, not_run, runs, figures)
        if foreign:
            print("\nruns with someone else's tracing programs loaded: %d of %d" %
                  (len(foreign), rounds * len(active)))
            for r, c, fp in foreign[:8]:
                print("  round %d %s: %s" % (r, c, " ".join(fp[:6])))
        else:
            print("\nno foreign tracing programs were loaded during any run")
        print("waited %.0f s for other people's tracing programs; whole run %.0f s"
              % (quiet.waited, time.monotonic() - t_start))
        result = {"commit": commit, "kernel": os.uname().release, "sizes": sz, "rounds": rounds,
                  "not_run": not_run, "tables": tables, "goals": goals,
                  "runs": runs, "foreign": foreign,
                  "figures": {k: (v if k != "drain" else {"%d %s" % kk: vv for kk, vv in v.items()})
                              for k, v in figures.items()}}
        path = a.json or os.path.join(tmp, "result.json")
        with open(path, "w") as fh:
            json.dump(result, fh)
        print("raw results: %s" % path)
    finally:
        b.stop_all()
        if fs:
            fs.close()
        shutil.rmtree(shm, ignore_errors=True)


if __name__ == "__main__":
    main()

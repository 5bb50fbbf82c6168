#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Cost of every probe layer and mechanism, and throughput lost on ext4.

Part "layers": the 4 KiB pwrite/pread loop on tmpfs (bench/iobench, pinned
to CPU 1) under each configuration below, in one run, the order reversed
every other round; per configuration the median ns per call, the ns added
to the untraced loop (median of the per-round differences, so slow phases
of a noisy machine cancel), its spread, and the ratios to the empty-program
floor and to the minimal aggregation:
  none               no tracer
  empty              empty tp_btf sys_enter/sys_exit programs (bench/baseline)
  minagg             the minimal aggregation (bench/baseline)
  empty-uprobe       empty entry and return uprobes on libc pread64 and
                     pwrite64 (bench/baseline): the library layer's floor
  syscall/<mech>     datacrumbs, syscall layer only, for each mechanism
  vfs/<mech>         syscall layer + VFS layer forced to fentry, kprobe,
                     raw_tp or tracepoint (file systems' tracepoints: on
                     ext4 only, --layers-on ext4)
  +files, +pagecache, +block   the syscall layer, then one layer more each
  default-traces     the default configuration with sampled traces off
  default            datacrumbs' default configuration
  default+libc       the default + uprobes on libc read/write/pread/pwrite
A configuration whose layer the kernel refuses (its agent record says
"off") is printed as "refused here" with the agent's reason.

Then, for the agents, a steady-state phase: a loop of 4.5 s under each,
the agent's CPU share and RSS from its own agent records (windows wholly
inside the loop). Then the kernel's per-program BPF statistics
(kernel.bpf_stats_enabled, restored afterwards): run time of each tracer's
own programs per loop call, from deltas over the loop.

Part "ext4": 1 MiB sequential writes (fsync at the end, inside the timing)
and reads, buffered and O_DIRECT (bench/ext4bench), on ext4 on a loop device
(image under /var/tmp, loop with direct I/O to the backing file), caches
dropped before every phase; no tracer, the default agent and a second
untraced run ("none2", the method's own noise), the order rotated every
round; median MiB/s and % lost. Then passes of the agent with the kernel's
BPF statistics: its programs' run time per MiB in each phase, net of an idle
interval as long. Everything it set up is removed, even on failure.
Samples taken while someone else's tracing programs are loaded are retaken
once, after waiting for them (--quiet-budget), and counted in the report.

usage: layers_bench.py BUILD_DIR [--ops N] [--rounds R] [--parts layers,ext4] [--layers-on tmpfs|ext4]
                       [--only c1,c2] [--ext4-rounds R] [--ext4-mib M]
                       [--ext4-tracers none,agent,none2] [--ext4-dirs /var/tmp]
                       [--ext4-stats-passes N] [--quiet-budget S] [--stats-ops N]
"""
import argparse
import contextlib
import glob
import json
import os
import resource
import shutil
import signal
import socket
import struct
import statistics
import subprocess
import sys
import tempfile
import time

LAYERS = ("files", "pagecache", "block", "io_uring", "vfs")
LIBC = ('libraries = ( { path = "%s"; category = "libc";'
        ' functions = ["read", "write", "pread*", "pwrite*"];'
        ' bytes = ["read", "write", "pread", "pwrite"]; } );')


# Sampled traces (on by default) are a feature of the syscall programs, not
# a layer: off in the per-layer rows, on in "default"; their files go to the
# run's own directory (@TMP@), never to /var/lib.
TRACES_OFF = "traces = { enable = false; };\n"
TRACES_ON = 'traces = { output = { dir = "@TMP@/traces"; }; };\n'


def probes_conf(syscall="auto", on=(), vfs_mech=None, libc=None):
    """probes = {...} with the syscall mechanism given, the layers in `on`
    enabled and every other layer off; traces off."""
    parts = ['syscall = { mechanism = "%s"; };' % syscall]
    for layer in LAYERS:
        if layer == "vfs" and vfs_mech:
            parts.append('vfs = { enable = true; mechanism = "%s"; };' % vfs_mech)
        else:
            parts.append("%s = { enable = %s; };" % (layer, "true" if layer in on else "false"))
    if libc:
        parts.append(LIBC % libc)
    return "probes = { %s };\n" % " ".join(parts) + TRACES_OFF


def libc_path():
    for p in ("/lib/x86_64-linux-gnu/libc.so.6", "/lib/aarch64-linux-gnu/libc.so.6",
              "/lib64/libc.so.6", "/usr/lib/libc.so.6"):
        if os.path.exists(p):
            return p
    return None


def configs():
    """(name, kind, agent config text, {layer: required mechanism or "on"})"""
    libc = libc_path()
    c = [("none", "none", None, {}),
         ("empty", "baseline", None, {}),
         ("minagg", "baseline", None, {})]
    if libc:
        c.append(("empty-uprobe", "baseline", libc, {}))
    for m in ("tp_btf", "raw_tp", "tracepoint"):
        c.append(("syscall/" + m, "agent", probes_conf(syscall=m), {"syscall": m}))
    for m in ("fentry", "kprobe", "raw_tp", "tracepoint"):
        c.append(("vfs/" + m, "agent", probes_conf(vfs_mech=m), {"vfs": m}))
    c.append(("+files", "agent", probes_conf(on=("files",)), {"files": "on"}))
    c.append(("+pagecache", "agent", probes_conf(on=("files", "pagecache")),
              {"files": "on", "pagecache": "on"}))
    c.append(("+block", "agent", probes_conf(on=("files", "pagecache", "block")),
              {"files": "on", "pagecache": "on", "block": "on"}))
    c.append(("default-traces", "agent", TRACES_OFF, {}))
    c.append(("default", "agent", TRACES_ON, {}))
    if libc:
        c.append(("default+libc", "agent", "probes = { %s };\n" % (LIBC % libc) + TRACES_ON,
                  {"libraries": "on"}))
    return c


class Bench:
    def __init__(self, build, tmp):
        self.build = build
        self.tmp = tmp
        self.live = []  # tracers started and not yet stopped

    # --- tracers -----------------------------------------------------------

    def start_baseline(self, variant, arg):
        cmd = [os.path.join(self.build, "bench/baseline"), variant]
        if variant == "empty-uprobe":
            cmd = cmd[:1] + ["uprobe", arg, "pread64", "pwrite64"]
        elif isinstance(arg, list):
            cmd += arg  # floor: its attach points
        return self.start_cmd(cmd)

    def start_cmd(self, cmd, env=None, timeout=120):
        """Start a tracer that prints "ready" once attached (baseline,
        bpftrace, BCC). Its output goes to a file, never to a pipe nobody
        reads (bpftrace prints its maps at exit)."""
        out = os.path.join(self.tmp, "tracer.out")
        with open(out, "w") as of:
            p = subprocess.Popen(cmd, stdout=of, stderr=subprocess.STDOUT, text=True, env=env)
        self.live.append(p)
        deadline = time.monotonic() + timeout
        while True:
            with open(out) as f:
                text = f.read()
            if "ready" in text.split():
                break
            if p.poll() is not None or time.monotonic() > deadline:
                self.stop(p)
                lines = [l.strip() for l in text.splitlines() if l.strip()]
                raise RuntimeError("%s did not start: %s" % (
                    os.path.basename(cmd[0]), lines[-1] if lines else "exit status %s" % p.returncode))
            time.sleep(0.05)
        p.dc_ids = prog_ids_of(p.pid)
        return p

    def start_agent(self, conf_text, ready_timeout=60):
        """Start the agent; (process, records path) once it notified READY=1,
        (None, reason) if it exited first."""
        sock_path = os.path.join(self.tmp, "notify")
        if os.path.exists(sock_path):
            os.unlink(sock_path)
        s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        s.bind(sock_path)
        out = os.path.join(self.tmp, "agent.jsonl")
        err = os.path.join(self.tmp, "agent.err")
        for f in (out, err):
            if os.path.exists(f):
                os.unlink(f)
        conf = os.path.join(self.tmp, "bench.conf")
        with open(conf, "w") as f:
            # each configuration is measured as configured: the CPU budget
            # would give up detail in the middle of a heavy run
            budget = "" if "budget" in conf_text else "budget = { cpu = 0.0; };\n"
            f.write('interval = 1.0;\nlog_level = "info";\n' + budget +
                    conf_text.replace("@TMP@", self.tmp))
        env = dict(os.environ, NOTIFY_SOCKET=sock_path)
        with open(err, "w") as ef:
            p = subprocess.Popen([os.path.join(self.build, "agent/datacrumbs"), "-c", conf,
                                  "-o", out], env=env, stderr=ef)
        self.live.append(p)
        s.settimeout(1)
        deadline = time.monotonic() + ready_timeout
        try:
            while True:
                try:
                    if "READY=1" in s.recv(4096).decode().split("\n"):
                        p.dc_ids = prog_ids_of(p.pid)
                        return p, out
                except socket.timeout:
                    pass
                if p.poll() is not None or time.monotonic() > deadline:
                    self.stop(p)
                    lines = [l.strip() for l in open(err) if l.strip()]
                    return None, (lines[-1] if lines else "exit status %s" % p.returncode)
        finally:
            s.close()

    def start(self, name, kind, conf_text):
        if kind == "baseline":
            return self.start_baseline(name, conf_text), None
        if kind == "agent":
            p, out = self.start_agent(conf_text)
            if p is None:
                raise RuntimeError("agent for %s did not start: %s" % (name, out))
            return p, out
        return None, None

    def stop(self, p):
        if p is None:
            return
        if p.poll() is None:
            p.send_signal(signal.SIGINT)
            try:
                p.wait(30)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        if p in self.live:
            self.live.remove(p)
        # programs are freed a little after their last fd closes: wait, so
        # the next sample starts with none of them loaded
        deadline = time.monotonic() + 5
        while getattr(p, "dc_ids", None) and time.monotonic() < deadline:
            if not p.dc_ids & set(bpf_progs()):
                break
            time.sleep(0.02)

    def stop_all(self):
        for p in list(self.live):
            self.stop(p)

    # --- workloads -----------------------------------------------------------

    def iobench(self, path, ops):
        cmd = ["taskset", "-c", "1", os.path.join(self.build, "bench/iobench"), path, str(ops)]
        out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout.split()
        return float(out[2]), float(out[1]) / 1e9


def records(path, typ):
    with open(path) as f:
        return [r for r in map(json.loads, f) if r.get("type") == typ]


def mechanisms(agent_recs):
    """{layer: mechanism} and {layer: detail} from the last agent record."""
    if not agent_recs:
        return {}, {}
    pr = agent_recs[-1].get("probes", [])
    return ({x["name"]: x["mechanism"] for x in pr}, {x["name"]: x.get("detail", "") for x in pr})


def refusal(require, mech, detail):
    """None if every required layer attached as required, else the reason."""
    for layer, want in require.items():
        got = mech.get(layer, "off")
        if got == "off" or (want != "on" and got != want):
            why = detail.get(layer) or "not in the agent record (off)"
            return "%s: %s" % (layer, why)
    return None


def prog_ids_of(pid):
    """BPF programs a process holds (program and link fds)."""
    ids = set()
    for f in glob.glob("/proc/%d/fdinfo/*" % pid):
        try:
            with open(f) as fh:
                for l in fh:
                    if l.startswith("prog_id:"):
                        ids.add(int(l.split()[1]))
        except OSError:
            pass
    return ids


def bpf_progs():
    out = subprocess.run(["bpftool", "prog", "show", "-j"], capture_output=True, text=True,
                         check=True).stdout
    return {p["id"]: p for p in json.loads(out)}


class ProgStats:
    """Run time and count of the given BPF programs, read with bpf(2) from
    this process: a snapshot is one system call a program. bpftool's is a
    process of its own and some 600 system calls, which the syscall
    programs being measured count too: about 0.5 ms of their run time a
    snapshot here, the size of a 1 MiB phase's own. Offsets are the uapi's
    struct bpf_prog_info (append-only), checked once against bpftool, whose
    names (from BTF: the kernel's stop at 15 characters) are kept."""
    _GET_FD_BY_ID, _GET_INFO = 13, 15
    _NAME, _RUN_TIME, _RUN_CNT, _SIZE = 64, 192, 200, 232
    # __NR_bpf: x86_64's table, and the generic one of the newer ports
    _NR_BPF = {"x86_64": 321, "aarch64": 280, "riscv64": 280, "loongarch64": 280}

    def __init__(self, ids):
        import ctypes
        self._ct = ctypes
        machine = os.uname().machine
        if machine not in self._NR_BPF:
            raise RuntimeError("ProgStats: bpf(2)'s number on %s is not known here" % machine)
        self._nr = self._NR_BPF[machine]
        self._sys = ctypes.CDLL(None, use_errno=True).syscall
        self._sys.restype = ctypes.c_long
        self._sys.argtypes = [ctypes.c_long, ctypes.c_int, ctypes.c_void_p, ctypes.c_uint]
        self.fds = {}
        try:
            for i in sorted(ids):
                attr = ctypes.create_string_buffer(struct.pack("III", i, 0, 0), 128)
                fd = self._sys(self._nr, self._GET_FD_BY_ID, attr, 128)
                if fd < 0:
                    # a program left out would read as no run time at all
                    raise RuntimeError("ProgStats: program %d: %s"
                                       % (i, os.strerror(ctypes.get_errno())))
                self.fds[i] = fd
            self._info = ctypes.create_string_buffer(self._SIZE)
            self.names = {}
            shown = bpf_progs()
            for i, v in self.snap().items():
                full = shown.get(i, {}).get("name", v["name"])
                if not full.startswith(v["name"]):
                    raise RuntimeError("ProgStats: program %d read as %r, bpftool says %r"
                                       % (i, v["name"], full))
                self.names[i] = full
        except BaseException:
            self.close()
            raise

    def snap(self):
        """{id: {"name", "run_time_ns", "run_cnt"}}, the shape bpf_progs() gives."""
        ct, out = self._ct, {}
        for i, fd in self.fds.items():
            ct.memset(self._info, 0, self._SIZE)
            attr = ct.create_string_buffer(
                struct.pack("IIQ", fd, self._SIZE, ct.addressof(self._info)), 128)
            if self._sys(self._nr, self._GET_INFO, attr, 128) < 0:
                raise RuntimeError("ProgStats: program %d: %s" % (i, os.strerror(ct.get_errno())))
            raw = self._info.raw
            name = raw[self._NAME:self._NAME + 16].split(b"\0")[0].decode()
            out[i] = {"name": getattr(self, "names", {}).get(i, name),
                      "run_time_ns": struct.unpack_from("Q", raw, self._RUN_TIME)[0],
                      "run_cnt": struct.unpack_from("Q", raw, self._RUN_CNT)[0]}
        return out

    def close(self):
        for fd in self.fds.values():
            os.close(fd)
        self.fds = {}


@contextlib.contextmanager
def bpf_stats_on():
    """kernel.bpf_stats_enabled on for the block (two clock reads a program
    run while it is), then back as it was, also on failure."""
    path = "/proc/sys/kernel/bpf_stats_enabled"
    with open(path) as fh:
        old = fh.read().strip()
    try:
        with open(path, "w") as fh:
            fh.write("1")
        yield
    finally:
        with open(path, "w") as fh:
            fh.write(old)


TRACING_TYPES = {"tracing", "raw_tracepoint", "tracepoint", "kprobe", "perf_event"}


def foreign_progs(mine=()):
    """Tracing programs loaded by someone else: they slow every system call."""
    return sorted("%s(%d)" % (p.get("name", "?"), i) for i, p in bpf_progs().items()
                  if p.get("type") in TRACING_TYPES and i not in mine)


class Quiet:
    """Other people's tracers (their agents, tests) run programs on every
    system call: wait for them to go before a sample, within a budget."""

    def __init__(self, budget_s):
        self.budget = budget_s
        self.waited = 0.0

    def wait(self):
        t = time.monotonic()
        while self.waited + (time.monotonic() - t) < self.budget and foreign_progs():
            time.sleep(0.25)
        self.waited += time.monotonic() - t

    def sample(self, take, mine=lambda: ()):
        """take() once, again if foreign programs were loaded at its start or
        end; returns (result, foreign programs seen or [])."""
        for attempt in (1, 2):
            self.wait()
            res, ids = take()
            fp = sorted(set(res[1]) | set(foreign_progs(ids)))
            if not fp or attempt == 2:
                return res[0], fp


def q(v, f):
    """Quantile f of v (linear interpolation)."""
    s = sorted(v)
    if len(s) == 1:
        return s[0]
    x = f * (len(s) - 1)
    i = int(x)
    return s[i] + (s[min(i + 1, len(s) - 1)] - s[i]) * (x - i)


def loadavg():
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])


# --- part 1: layers ------------------------------------------------------------

def part_layers(b, a, cfgs, shm):
    f = os.path.join(shm, "file")
    refused = {}
    mech = {}
    # Warm-up and check: every agent configuration once, its agent record
    # says what attached. A layer the kernel refuses is reported, not timed.
    # A loop slower than 5 us a call (uprobes cost tens of microseconds a
    # call on some machines) is shortened to about 1 s.
    ops = {}
    for name, kind, conf, require in cfgs:
        if kind == "agent":
            p, out = b.start_agent(conf)
            if p is None:
                refused[name] = "agent did not start: " + out
                continue
        else:
            p, out = b.start(name, kind, conf)
        warm, _ = b.iobench(f, 20000)
        b.stop(p)
        # only a configuration slow by nature (uprobe traps), not a noisy warm-up
        ops[name] = a.ops if warm < 5000 else max(20000, min(a.ops, int(1e9 / warm)) // 2 * 2)
        if kind != "agent":
            continue
        m, d = mechanisms(records(out, "agent"))
        mech[name] = m
        why = refusal(require, m, d)
        if why:
            refused[name] = why
    active = [c for c in cfgs if c[0] not in refused]
    if any(v != a.ops for v in ops.values()):
        print("calls per sample: %s" % ", ".join("%s %d" % (n, ops[n]) for n, *_ in active
                                                  if ops[n] != a.ops))
    print("refused here: %s" % ("; ".join("%s (%s)" % x for x in refused.items()) or "none"))
    for name in mech:
        if name not in refused:
            print("  %-18s %s" % (name, " ".join("%s=%s" % kv for kv in mech[name].items())))

    res = {c[0]: [] for c in active}
    foreign = []
    quiet = Quiet(a.quiet_budget)
    loads = []
    t0 = time.monotonic()
    for r in range(a.rounds):
        order = active if r % 2 == 0 else list(reversed(active))
        for name, kind, conf, _ in order:
            def take():
                p, _ = b.start(name, kind, conf)
                ids = p.dc_ids if p else set()
                fp = foreign_progs(ids)
                ns, _ = b.iobench(f, ops[name])
                fp += foreign_progs(ids)
                b.stop(p)
                return (ns, fp), ids
            ns, fp = quiet.sample(take)
            res[name].append(ns)
            if fp:
                foreign.append((r + 1, name, fp))
        loads.append(loadavg())
        print("round %d (%.0f s): %s" % (r + 1, time.monotonic() - t0,
                                         "  ".join("%s %.0f" % (c[0], res[c[0]][-1]) for c in active)),
              flush=True)

    # Steady state of each agent: CPU share and RSS from its agent records,
    # over the windows that lie wholly inside a loop of about 4 s.
    steady = {}
    med = {n: statistics.median(v) for n, v in res.items()}
    for name, kind, conf, _ in active:
        if kind != "agent":
            continue
        chunk = max(20000, int(0.5e9 / med[name]) // 2 * 2)
        p, out = b.start_agent(conf)
        t1 = time.time() * 1e6
        n = secs = 0
        while time.time() * 1e6 - t1 < 4.5e6:  # at least three whole 1 s windows
            secs += b.iobench(f, chunk)[1]
            n += chunk
        t2 = time.time() * 1e6
        b.stop(p)
        recs = records(out, "agent")
        inside = [x for x in recs if x["ts_start"] >= t1 and x["ts_end"] <= t2]
        cpu = sum(x["cost"]["cpu_user_us"] + x["cost"]["cpu_sys_us"] for x in inside)
        wall = sum(x["duration_us"] for x in inside)
        steady[name] = {"cpu_share": cpu / wall if wall else float("nan"),
                        "windows": len(inside), "rss_kib": max(x["cost"]["rss_kib"] for x in recs),
                        "calls_per_s": n / secs,
                        "cpu_share_whole_run": sum(x["cost"]["cpu_user_us"] + x["cost"]["cpu_sys_us"]
                                                   for x in recs) / sum(x["duration_us"] for x in recs)}

    # Kernel BPF statistics: each tracer's own programs, deltas over the loop.
    stats = {}
    with bpf_stats_on():
        for name, kind, conf, _ in active:
            if kind == "none":
                continue
            p, _ = b.start(name, kind, conf)
            mine = p.dc_ids
            n = max(20000, min(a.stats_ops, int(2e9 / med[name])) // 2 * 2)
            before = bpf_progs()
            ns, _ = b.iobench(f, n)
            after = bpf_progs()
            b.stop(p)
            rt = sum(after[i].get("run_time_ns", 0) - before.get(i, {}).get("run_time_ns", 0)
                     for i in mine if i in after)
            cnt = sum(after[i].get("run_cnt", 0) - before.get(i, {}).get("run_cnt", 0)
                      for i in mine if i in after)
            stats[name] = {"ns_per_call": rt / n, "runs_per_call": cnt / n,
                           "programs": len(mine), "calls": n}

    # --- report
    base = res["none"]
    added = {n: [v[i] - base[i] for i in range(len(v))] for n, v in res.items()}
    add_med = {n: statistics.median(v) for n, v in added.items()}
    print("\n4 KiB pwrite/pread on %s, %d rounds of %d calls, %.0f s; medians and p25..p75; "
          "added = median of the per-round differences to none"
          % (a.layers_on, a.rounds, a.ops, time.monotonic() - t0))
    hdr = ("%-18s %8s %13s %8s %13s %7s %7s %7s %5s %6s %7s"
           % ("config", "ns/call", "p25..p75", "added", "p25..p75", "/empty", "/minagg", "BPF ns",
              "runs", "CPU %", "RSS KiB"))
    print(hdr)
    e, m = add_med.get("empty"), add_med.get("minagg")
    for name, kind, _, _ in cfgs:
        if name in refused:
            print("%-18s refused here: %s" % (name, refused[name]))
            continue
        st = stats.get(name)
        sd = steady.get(name)
        print("%-18s %8.1f %13s %8.1f %13s %7s %7s %7s %5s %6s %7s" % (
            name, med[name], "%.0f..%.0f" % (q(res[name], .25), q(res[name], .75)), add_med[name],
            "%.0f..%.0f" % (q(added[name], .25), q(added[name], .75)) if name != "none" else "-",
            "%.2fx" % (add_med[name] / e) if e and name != "none" else "-",
            "%.2fx" % (add_med[name] / m) if m and name != "none" else "-",
            "%.1f" % st["ns_per_call"] if st else "-",
            "%.2f" % st["runs_per_call"] if st else "-",
            "%.3f" % (sd["cpu_share"] * 100) if sd else "-",
            "%d" % sd["rss_kib"] if sd else "-"))
    print("BPF ns = run time of the tracer's own programs per loop call (kernel BPF statistics, "
          "up to %d calls; uprobe traps not included); runs = program runs per call"
          % a.stats_ops)
    if "default+libc" in add_med and "default" in add_med and "empty-uprobe" in add_med:
        print("library layer alone (default+libc - default): %.1f ns per call; its floor "
              "(empty-uprobe): %.1f ns; ratio %.2fx"
              % (add_med["default+libc"] - add_med["default"], add_med["empty-uprobe"],
                 (add_med["default+libc"] - add_med["default"]) / add_med["empty-uprobe"]))
    print("CPU % = agent user+sys over the windows inside a ~4 s loop (calls/s, windows, "
          "whole-run share incl. start and stop):")
    for name, sd in steady.items():
        print("  %-18s %9.0f calls/s  %d windows  whole run %.3f%%"
              % (name, sd["calls_per_s"], sd["windows"], sd["cpu_share_whole_run"] * 100))
    print("load average after each round: %s" % " ".join("%.2f" % x for x in loads))
    if foreign:
        print("samples taken while someone else's tracing programs were loaded: %d of %d"
              % (len(foreign), a.rounds * len(active)))
        for r, n, fp in foreign[:10]:
            print("  round %d %s: %s" % (r, n, " ".join(fp[:6])))
    else:
        print("no foreign tracing programs were loaded during any sample")
    print("waited %.0f s in all for other people's tracing programs to unload" % quiet.waited)
    return {"ops": ops, "runs_ns": res, "median_ns": med, "added_ns": add_med, "refused": refused,
            "mechanisms": mech, "steady": steady, "bpf_stats": stats, "loadavg": loads,
            "foreign": foreign}


# --- part 2: ext4 ------------------------------------------------------------

def sh(*cmd):
    return subprocess.run(cmd, capture_output=True, text=True, check=True).stdout.strip()


def drop_caches():
    os.sync()
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("3")


class Ext4:
    """An ext4 file system on a loop device over an image in /var/tmp; close()
    undoes whatever part of it exists."""

    def __init__(self, mib, where, inodes=None):
        self.img = self.loop = self.mnt = None
        self.dio = self.mounted = False
        self.max_sectors_kb = None
        try:
            self._setup(mib, where, inodes)
        except BaseException:
            self.close()
            raise

    def _setup(self, mib, where, inodes):
        fd, self.img = tempfile.mkstemp(prefix="dc-layers-bench-", suffix=".img", dir=where)
        os.close(fd)
        size = (2 * mib + 512) << 20
        if shutil.disk_usage(where).free < size + (1 << 30):
            raise RuntimeError("not enough space in %s for a %d MiB image" % (where, size >> 20))
        os.truncate(self.img, size)
        # no lazy init: ext4lazyinit would write inode tables during the runs
        sh("mkfs.ext4", "-q", "-F", "-E", "lazy_itable_init=0,lazy_journal_init=0",
           *(["-N", str(inodes)] if inodes else []), self.img)
        try:
            self.loop = sh("losetup", "-f", "--show", "--direct-io=on", self.img)
        except subprocess.CalledProcessError:
            self.loop = sh("losetup", "-f", "--show", self.img)
        with open("/sys/block/%s/loop/dio" % os.path.basename(self.loop)) as f:
            self.dio = f.read().strip() == "1"
        # a loop device keeps its queue settings across detach: a tool that
        # lowered them (a test splitting requests) changes what is measured
        with open("/sys/block/%s/queue/max_sectors_kb" % os.path.basename(self.loop)) as f:
            self.max_sectors_kb = int(f.read())
        self.mnt = tempfile.mkdtemp(prefix="dc-layers-bench-mnt-")
        sh("mount", "-t", "ext4", self.loop, self.mnt)
        self.mounted = True

    def close(self):
        if self.mnt:
            if self.mounted:
                r = subprocess.run(["umount", self.mnt], capture_output=True)
                if r.returncode:
                    subprocess.run(["umount", "-l", self.mnt], capture_output=True)
            os.rmdir(self.mnt)
            self.mnt = None
        if self.loop:
            subprocess.run(["losetup", "-d", self.loop], capture_output=True)
            self.loop = None
        if self.img:
            os.unlink(self.img)
            self.img = None


PHASES = (("buffered write", "write", "seq", False), ("buffered read", "read", "seq", False),
          ("direct write", "write", "dio", True), ("direct read", "read", "dio", True))


def children_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def ext4_phases(b, fs, mib, progs=None, bpf_by_prog=None):
    """{phase: (MiB/s, CPU us of the workload process per MiB, BPF run time
    of the programs in progs in ns per MiB during the phase, and during an
    idle interval as long right after it: the rest of the node's share)}"""
    stats = ProgStats(progs) if progs else None
    try:
        return ext4_run_phases(b, fs, mib, stats, bpf_by_prog)
    finally:
        if stats:
            stats.close()


def ext4_run_phases(b, fs, mib, stats, bpf_by_prog):
    tput = {}
    exe = os.path.join(b.build, "bench/ext4bench")
    for label, op, name, direct in PHASES:
        drop_caches()
        cmd = [exe, op, os.path.join(fs.mnt, name), str(mib)] + (["direct"] if direct else [])
        before = stats.snap() if stats else None
        c0 = children_cpu()
        out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout.split()
        cpu = children_cpu() - c0
        bpf_ns = idle_ns = None
        if stats:
            after = stats.snap()
            time.sleep(float(out[1]) / 1e9)
            idle = stats.snap()

            def delta(x, y):
                return sum(y[i]["run_time_ns"] - x.get(i, {}).get("run_time_ns", 0) for i in y)
            bpf_ns, idle_ns = delta(before, after) / mib, delta(after, idle) / mib
            per = {}
            for i in after:
                nm = after[i]["name"]
                ns, runs = per.get(nm, (0, 0))
                per[nm] = (ns + (after[i]["run_time_ns"]
                                 - before.get(i, {}).get("run_time_ns", 0)) / mib,
                           runs + (after[i]["run_cnt"] - before.get(i, {}).get("run_cnt", 0)) / mib)
            bpf_by_prog[label] = per
        if int(out[0]) != mib << 20:
            raise RuntimeError("ext4bench %s moved %s bytes, not %d" % (label, out[0], mib << 20))
        tput[label] = (float(out[2]), cpu * 1e6 / mib, bpf_ns, idle_ns)
        if op == "read":
            os.unlink(os.path.join(fs.mnt, name))
    os.sync()
    return tput


def reported_kib():
    """Guest memory handed back to the host so far (free page reporting of
    this VM's kernel), or None where the kernel has no such counter."""
    try:
        with open("/sys/module/page_reporting/parameters/reported_kib") as f:
            return int(f.read())
    except (OSError, ValueError):
        return None


def part_ext4(b, a, where):
    fs = Ext4(a.ext4_mib, where)
    try:
        print("\next4 on %s (image %s, loop direct I/O %s), %d MiB per phase"
              % (fs.loop, fs.img, "on" if fs.dio else "off", a.ext4_mib), flush=True)
        ext4_phases(b, fs, min(a.ext4_mib, 256))  # warm-up: first allocations, journal
        # "none2" is a second untraced run: the difference between none and
        # none2 is what this method reads into two identical configurations.
        tracers = a.ext4_tracers.split(",")
        res = {t: {ph[0]: [] for ph in PHASES} for t in tracers}
        cpu = {t: {ph[0]: [] for ph in PHASES} for t in tracers}
        seen = []
        foreign = []
        quiet = Quiet(a.quiet_budget)
        rep0 = reported_kib()
        t0 = time.monotonic()
        for r in range(a.ext4_rounds):
            order = tracers[r % len(tracers):] + tracers[:r % len(tracers)]  # rotate
            for t in order:
                def take():
                    p, out = (b.start("default", "agent", TRACES_ON) if t == "agent"
                              else (None, None))
                    ids = p.dc_ids if p else set()
                    fp = foreign_progs(ids)
                    tput = ext4_phases(b, fs, a.ext4_mib)
                    fp += foreign_progs(ids)
                    b.stop(p)
                    return ((tput, out), fp), ids
                (tput, out), fp = quiet.sample(take)
                if fp:
                    foreign.append((r + 1, t, fp))
                for k, v in tput.items():
                    res[t][k].append(v[0])
                    cpu[t][k].append(v[1])
                if out:
                    # what the agent saw of the workload: syscall bytes, block bytes
                    rd = wr = bw = br = 0
                    for x in records(out, "features"):
                        if x.get("comm") == "ext4bench":
                            rd += x["totals"].get("read_bytes", 0)
                            wr += x["totals"].get("write_bytes", 0)
                            bw += x.get("block", {}).get("write", {}).get("bytes", 0)
                            br += x.get("block", {}).get("read", {}).get("bytes", 0)
                    seen.append((rd >> 20, wr >> 20, br >> 20, bw >> 20))
            print("round %d (%.0f s): %s" % (r + 1, time.monotonic() - t0, "  ".join(
                "%s %s" % (t, "/".join("%.0f" % res[t][ph[0]][-1] for ph in PHASES))
                for t in tracers)), flush=True)
        elapsed = time.monotonic() - t0
        rep1 = reported_kib()

        # three more passes of the agent with the kernel's BPF statistics on
        # (after other people's tracers are gone, within the budget): its
        # programs' run time per MiB in each phase, medians
        bpf = {}
        by_prog = {}
        with bpf_stats_on():
            passes = []
            for _ in range(a.ext4_stats_passes):
                quiet.wait()
                p, _ = b.start("default", "agent", TRACES_ON)
                per = {}
                passes.append((ext4_phases(b, fs, a.ext4_mib, p.dc_ids, per), per))
                b.stop(p)
            for ph in PHASES:
                k = ph[0]
                bpf[k] = (statistics.median(x[0][k][2] for x in passes),
                          statistics.median(x[0][k][3] for x in passes))
                names = set().union(*(x[1][k] for x in passes))
                by_prog[k] = {n: (statistics.median(x[1][k].get(n, (0, 0))[0] for x in passes),
                                  statistics.median(x[1][k].get(n, (0, 0))[1] for x in passes))
                              for n in names}

        print("\n1 MiB sequential I/O on ext4 (loop device over an image in %s), %d MiB per "
              "phase, %d rounds, %.0f s; MiB/s medians [p25..p75]"
              % (where, a.ext4_mib, a.ext4_rounds, elapsed))
        others = [t for t in tracers if t != "none"]
        print("%-15s %20s %s %14s %9s" % (
            "phase", "none", " ".join("%20s %8s %8s" % (t, "lost", "paired") for t in others),
            "BPF us/MiB", "BPF/phase"))
        out_rows = {}
        for ph in PHASES:
            k = ph[0]
            n = res["none"][k]
            mn = statistics.median(n)
            row = {"none": mn, "none_iqr": (q(n, .25), q(n, .75)),
                   "cpu_us_per_mib": {t: statistics.median(cpu[t][k]) for t in tracers}}
            cells = []
            for t in others:
                g = res[t][k]
                mg = statistics.median(g)
                # per-round paired loss: both ran in the same round
                paired = statistics.median((n[i] - g[i]) / n[i] * 100 for i in range(len(n)))
                row[t] = {"median": mg, "iqr": (q(g, .25), q(g, .75)),
                          "lost_pct": (mn - mg) / mn * 100, "paired_lost_pct": paired}
                cells.append("%6.0f [%5.0f..%5.0f] %7.2f%% %7.2f%%"
                             % (mg, q(g, .25), q(g, .75), (mn - mg) / mn * 100, paired))
            # share of the phase's time (at the untraced median) spent in BPF
            raw, idle = bpf.get(k, (None, None))
            net = raw - idle if raw is not None else None
            row["bpf_ns_per_mib"] = {"phase": raw, "idle": idle, "net": net}
            share = net / (1e9 / mn) * 100 if net is not None else None
            row["bpf_share_pct"] = share
            out_rows[k] = row
            print("%-15s %6.0f [%5.0f..%5.0f] %s %14s %9s" % (
                k, mn, q(n, .25), q(n, .75), " ".join(cells),
                "%.1f (%.1f)" % (net / 1e3, raw / 1e3) if net is not None else "-",
                "%.2f%%" % share if share is not None else "-"))
        print("lost = 1 - median/median(none); paired = median over rounds of the same, within "
              "a round (goal < 0.5%); none2 = a second untraced run (the method's noise)")
        print("BPF us/MiB: run time of all the agent's programs per MiB moved (kernel BPF "
              "statistics, median of %d passes), net of what they ran in an idle interval as "
              "long right after (raw in parentheses: the rest of the node's activity runs them "
              "too); BPF/phase: net time / the phase's time per MiB untraced"
              % a.ext4_stats_passes)
        print("BPF us/MiB by program (raw, medians, the largest; runs per MiB and ns a run "
              "in brackets):")
        for k, per in by_prog.items():
            top = sorted(per.items(), key=lambda x: -x[1][0])[:7]
            print("  %-15s %s" % (k, "  ".join(
                "%s %.1f [%.1f, %.0f]" % (n, v[0] / 1e3, v[1], v[0] / v[1] if v[1] else 0)
                for n, v in top)))
        print("CPU us/MiB of the workload process (user+sys), medians: %s" % "; ".join(
            "%s %s" % (ph[0], " ".join("%s %.0f" % (t, out_rows[ph[0]]["cpu_us_per_mib"][t])
                                      for t in tracers)) for ph in PHASES))
        if seen:
            s = seen[len(seen) // 2]
            print("the agent saw ext4bench read %d MiB and write %d MiB in system calls, "
                  "%d MiB and %d MiB in block requests (one run)" % s)
        if rep0 is not None and rep1 is not None:
            print("free page reporting handed %.1f GiB of guest memory back to the host during "
                  "the rounds" % ((rep1 - rep0) / 2**20))
        if foreign:
            print("runs with someone else's tracing programs loaded: %d" % len(foreign))
            for r, t, fp in foreign[:10]:
                print("  round %d %s: %s" % (r, t, " ".join(fp[:6])))
        else:
            print("no foreign tracing programs were loaded during any run")
        print("waited %.0f s in all for other people's tracing programs to unload" % quiet.waited)
        return {"where": where, "loop_dio": fs.dio, "runs_mib_s": res, "cpu_us_per_mib": cpu,
                "rows": out_rows, "bpf_ns_per_mib": bpf, "bpf_ns_per_mib_by_prog": by_prog, "seen_mib": seen, "foreign": foreign,
                "reported_kib": (rep0, rep1)}
    finally:
        fs.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--ops", type=int, default=500000)
    ap.add_argument("--rounds", type=int, default=11)
    ap.add_argument("--stats-ops", type=int, default=1000000)
    ap.add_argument("--parts", default="layers,ext4")
    ap.add_argument("--only", default="", help="layer configurations to run (none is always in)")
    ap.add_argument("--ext4-rounds", type=int, default=9)
    ap.add_argument("--ext4-mib", type=int, default=512)
    ap.add_argument("--ext4-tracers", default="none,agent,none2")
    ap.add_argument("--ext4-stats-passes", type=int, default=3)
    ap.add_argument("--quiet-budget", type=float, default=120,
                    help="seconds, per part, to wait in all for other people's tracing programs "
                         "to unload before samples (a sample taken with them is retaken once)")
    ap.add_argument("--layers-on", choices=("tmpfs", "ext4"), default="tmpfs",
                    help="where the 4 KiB loop's file is (ext4: on a loop device in /var/tmp)")
    ap.add_argument("--ext4-dirs", default="/var/tmp",
                    help="where the images go, one ext4 run each (/dev/shm: a RAM-backed device)")
    a = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("layers_bench: run as root")
    for tool in ("taskset", "bpftool", "mkfs.ext4", "losetup"):
        if not shutil.which(tool):
            sys.exit("layers_bench: %s not found (packaging/install-deps.sh build bench)" % tool)
    parts = a.parts.split(",")
    cfgs = configs()
    if a.only:
        keep = set(a.only.split(",")) | {"none"}
        cfgs = [c for c in cfgs if c[0] in keep]
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("layers_bench: terminated"))
    tmp = tempfile.mkdtemp(prefix="dc-layers-bench-")
    shm = tempfile.mkdtemp(prefix="dc-layers-bench-", dir="/dev/shm")
    b = Bench(a.build, tmp)
    result = {"kernel": os.uname().release, "date": time.strftime("%Y-%m-%d %H:%M:%S %z"),
              "args": vars(a)}
    print("%s, kernel %s, %d CPUs, load average %.2f"
          % (result["date"], result["kernel"], os.cpu_count(), loadavg()))
    fp = foreign_progs()
    if fp:
        print("warning: tracing programs already loaded by someone else: %s" % " ".join(fp))
    try:
        if "layers" in parts and a.layers_on == "ext4":
            # the file systems' functions and tracepoints fire on ext4 only
            # (ext4_da_write_begin/_end, ... for each 4 KiB pwrite)
            fs = Ext4(64, "/var/tmp")
            try:
                print("the loop runs on ext4 on %s" % fs.loop)
                result["layers"] = part_layers(b, a, cfgs, fs.mnt)
            finally:
                fs.close()
        elif "layers" in parts:
            result["layers"] = part_layers(b, a, cfgs, shm)
        if "ext4" in parts:
            result["ext4"] = [part_ext4(b, a, d) for d in a.ext4_dirs.split(",")]
    finally:
        b.stop_all()
        shutil.rmtree(shm, ignore_errors=True)
    with open(os.path.join(tmp, "result.json"), "w") as f:
        json.dump(result, f)
    print("raw results: %s" % os.path.join(tmp, "result.json"))


if __name__ == "__main__":
    main()

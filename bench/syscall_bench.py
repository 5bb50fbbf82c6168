#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Per-call cost of the system-call layer, against baselines in the same run.

Runs the 4 KiB pwrite/pread loop on tmpfs under each tracer in turn,
alternating the order every round, and reports medians:
  none      no tracer
  empty     empty programs on tp_btf sys_enter/sys_exit (the floor)
  minagg    minimal per-(pid, syscall) aggregation: task-storage start time,
            per-CPU hash (count, total time)
  agent     datacrumbs with its default configuration
  agent-syscall  datacrumbs with the syscall layer only (files, block and
            page cache off): agent minus this is what the other layers add
  agent-probe-reads  the default with the file layer reading files by
            bpf_probe_read_kernel copies (probes.files.reads = "probe"), as
            on kernels before 6.2: agent minus this is what direct loads save
  agent-nostats  the default without the kernel's BPF statistics
            (self.bpf_stats = false): agent minus this is the self-measurement
  agent-stats-always  the default with the statistics on all the time
            (self.bpf_stats_duty = 1), as before they were sampled
  agent-nofiles, agent-notraces  the default without the file layer, without
            sampled traces: agent minus each is what that part adds
  agent@PATH  the agent binary at PATH, default configuration: an A/B of
            two builds in one run (e.g. agent,agent@/tmp/datacrumbs-old)
  bpftrace  bpftrace doing the minimal aggregation
plus the agent's own CPU and RSS while the loop runs.

usage: syscall_bench.py BUILD_DIR [--ops N] [--rounds R] [--only a,b]
"""
import argparse
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile

BPFTRACE = r"""
tracepoint:raw_syscalls:sys_enter { @start[tid] = nsecs; }
tracepoint:raw_syscalls:sys_exit /@start[tid]/ {
  @count[pid, args->id] = count();
  @time[pid, args->id] = sum(nsecs - @start[tid]);
  delete(@start[tid]);
}
BEGIN { printf("ready\n"); }
"""


def start_line_ready(cmd):
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    for line in p.stdout:
        if "ready" in line:
            return p, None
    raise RuntimeError("%s did not start" % cmd[0])


AGENT_CONFIGS = {
    "agent": "",
    "agent-syscall": "probes = { files = { enable = false; }; block = { enable = false; };"
                     " pagecache = { enable = false; }; };\n",
    # the default without the kernel's per-program statistics (self.bpf_stats):
    # agent minus this is what the agent's self-measurement costs per call
    "agent-nostats": "self = { bpf_stats = false; };\n",
    # the file layer's reads by helper copies, as on kernels without bpf_rdonly_cast
    "agent-probe-reads": 'probes = { files = { reads = "probe"; }; };\n',
    # the statistics on all the time (before they were sampled)
    "agent-stats-always": "self = { bpf_stats_duty = 1.0; };\n",
    # the default less one part: agent minus each is what that part adds
    "agent-nofiles": "probes = { files = { enable = false; }; };\n",
    "agent-notraces": "traces = { enable = false; };\n",
}


def start_agent(build, tmp, extra="", binary=None):
    sock_path = os.path.join(tmp, "notify")
    if os.path.exists(sock_path):
        os.unlink(sock_path)
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    s.bind(sock_path)
    out = os.path.join(tmp, "agent.jsonl")
    conf = os.path.join(tmp, "bench.conf")
    with open(conf, "w") as f:
        # measured as configured: the CPU budget would change it mid-run
        f.write("interval = 1.0;\nbudget = { cpu = 0.0; };\n" + extra)
    env = dict(os.environ, NOTIFY_SOCKET=sock_path)
    p = subprocess.Popen([binary or os.path.join(build, "agent/datacrumbs"), "-c", conf, "-o", out],
                         env=env, stderr=subprocess.DEVNULL)
    s.settimeout(30)
    while "READY=1" not in s.recv(4096).decode().split("\n"):
        pass
    s.close()
    return p, out


def stop(p):
    if p is None:
        return
    p.send_signal(signal.SIGINT)
    try:
        p.wait(30)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()


def proc_status(pid):
    """The memory lines of a live process's /proc/PID/status, KiB:
    {"VmRSS": ..., "VmHWM": ..., "RssAnon": ..., ...}."""
    with open("/proc/%d/status" % pid) as f:
        return {l.split(":")[0]: int(l.split()[1]) for l in f
                if l.startswith(("Vm", "Rss")) and l.rstrip().endswith("kB")}


def proc_cpu_rss(pid):
    """(user+sys seconds, RSS KiB) of a live process."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    tick = os.sysconf("SC_CLK_TCK")
    cpu = (int(fields[11]) + int(fields[12])) / tick
    return cpu, proc_status(pid)["VmRSS"]


def prog_ids():
    out = subprocess.run(["bpftool", "prog", "show", "-j"], capture_output=True, text=True, check=True)
    return {p["id"]: p for p in json.loads(out.stdout)}


def bpf_stats_phase(build, tmp, f, configs, ops):
    """Per loop call, the total run time of each tracer's own programs, from
    the kernel's BPF statistics (kernel.bpf_stats_enabled, on only for this
    phase): all of a tracer's programs, divided by the calls the loop made.
    Precise, but it covers the programs' bodies, not the dispatch to them;
    the stats add about two clock reads per program run to every tracer."""
    res = {}
    with open("/proc/sys/kernel/bpf_stats_enabled") as fh:
        old = fh.read().strip()
    with open("/proc/sys/kernel/bpf_stats_enabled", "w") as fh:
        fh.write("1")
    try:
        for c in configs:
            if c == "none":
                continue
            before = prog_ids()
            p = start_tracer(c, build, tmp)
            mine = [i for i in prog_ids() if i not in before]
            run_loop(build, f, ops)
            after = prog_ids()
            stop(p)
            total = sum(after.get(i, {}).get("run_time_ns", 0) for i in mine)
            res[c] = total / ops
    finally:
        with open("/proc/sys/kernel/bpf_stats_enabled", "w") as fh:
            fh.write(old)
    return res


def start_tracer(c, build, tmp):
    if c in ("empty", "minagg"):
        return start_line_ready([os.path.join(build, "bench/baseline"), c])[0]
    if c in AGENT_CONFIGS:
        return start_agent(build, tmp, AGENT_CONFIGS[c])[0]
    if c.startswith("agent@"):
        return start_agent(build, tmp, binary=c[6:])[0]
    if c == "bpftrace":
        return start_line_ready(["bpftrace", "-e", BPFTRACE])[0]
    return None


def run_loop(build, tmpfs_file, ops):
    cmd = [os.path.join(build, "bench/iobench"), tmpfs_file, str(ops)]
    if subprocess.run(["which", "taskset"], capture_output=True).returncode == 0:
        cmd = ["taskset", "-c", "1"] + cmd  # keep the loop on one CPU, the tracer's work on the other
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout.split()
    return float(out[2]), float(out[1]) / 1e9


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--ops", type=int, default=500000)
    ap.add_argument("--rounds", type=int, default=21)
    ap.add_argument("--only", default="none,empty,minagg,agent-syscall,agent,bpftrace")
    a = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("syscall_bench: run as root")
    configs = a.only.split(",")
    have_bpftrace = subprocess.run(["which", "bpftrace"], capture_output=True).returncode == 0
    if "bpftrace" in configs and not have_bpftrace:
        print("bpftrace not installed (packaging/install-deps.sh bench): skipping it")
        configs.remove("bpftrace")
    tmp = tempfile.mkdtemp(prefix="dc-bench-")
    shm = tempfile.mkdtemp(prefix="dc-bench-", dir="/dev/shm")
    f = os.path.join(shm, "file")
    res = {c: [] for c in configs}
    agent_cost = []
    for r in range(a.rounds):
        order = configs if r % 2 == 0 else list(reversed(configs))
        for c in order:
            p, out = None, None
            if c == "empty" or c == "minagg":
                p, _ = start_line_ready([os.path.join(a.build, "bench/baseline"), c])
            elif c in AGENT_CONFIGS:
                p, out = start_agent(a.build, tmp, AGENT_CONFIGS[c])
            elif c.startswith("agent@"):
                p, out = start_agent(a.build, tmp, binary=c[6:])
            elif c == "bpftrace":
                p, _ = start_line_ready(["bpftrace", "-e", BPFTRACE])
            ns, secs = run_loop(a.build, f, a.ops)
            if c == "agent":
                _, rss = proc_cpu_rss(p.pid)
            stop(p)
            if out and c != "agent":
                os.unlink(out)
            if c == "agent":
                # the agent's own getrusage figures (microseconds), over every
                # window of the run, including start-up and the final drain
                recs = [json.loads(l) for l in open(out) if '"type":"agent"' in l]
                cpu_us = sum(r["cost"]["cpu_user_us"] + r["cost"]["cpu_sys_us"] for r in recs)
                wall_us = sum(r["duration_us"] for r in recs)
                agent_cost.append((cpu_us / wall_us if wall_us else 0, rss, a.ops / secs))
                os.unlink(out)
            res[c].append(ns)
        print("round %d: %s" % (r + 1, "  ".join("%s %.1f" % (c, res[c][-1]) for c in configs)),
              flush=True)

    med = {c: statistics.median(v) for c, v in res.items()}
    base = med.get("none", 0)
    print("\nmedian ns per call over %d rounds of %d calls (4 KiB pwrite/pread, tmpfs):" % (a.rounds, a.ops))
    print("%-18s %10s %12s" % ("tracer", "ns/call", "added ns"))
    for c in configs:
        print("%-18s %10.1f %12.1f" % (c, med[c], med[c] - base))
    added = {c: med[c] - base for c in configs}
    if "agent" in added and "minagg" in added and added["minagg"] > 0:
        print("agent added cost / minimal aggregation's: %.2fx (goal <= 1.25x)"
              % (added["agent"] / added["minagg"]))
    if "agent-syscall" in added and "minagg" in added and added["minagg"] > 0:
        print("agent, syscall layer only / minimal aggregation's: %.2fx"
              % (added["agent-syscall"] / added["minagg"]))
    if "agent" in added and "agent-nostats" in added:
        print("the kernel's BPF statistics (self.bpf_stats, sampled as configured) add %.1f ns "
              "per call" % (added["agent"] - added["agent-nostats"]))
    if "agent-stats-always" in added and "agent-nostats" in added:
        print("the kernel's BPF statistics on all the time add %.1f ns per call"
              % (added["agent-stats-always"] - added["agent-nostats"]))
    if "agent" in added and "bpftrace" in added and added["bpftrace"] > 0:
        print("agent added cost / bpftrace's: %.2fx (goal < 0.33x)" % (added["agent"] / added["bpftrace"]))
    if agent_cost:
        cpu = statistics.median(x[0] for x in agent_cost)
        rss = max(x[1] for x in agent_cost)
        rate = statistics.median(x[2] for x in agent_cost)
        print("agent user+sys CPU while tracing %.0f calls/s: %.3f%% of a core (goal < 1%%); "
              "RSS %d KiB (goal < 32768)" % (rate, cpu * 100, rss))
    stats = bpf_stats_phase(a.build, tmp, f, configs, a.ops)
    print("\nBPF program run time per call (kernel BPF statistics, enter + exit programs):")
    for c in configs:
        if c in stats:
            print("%-18s %8.1f ns" % (c, stats[c]))
    if stats.get("minagg") and stats.get("agent"):
        print("agent programs / minimal aggregation's: %.2fx" % (stats["agent"] / stats["minagg"]))
    json.dump({"median_ns": med, "runs": res, "agent_cost": agent_cost, "bpf_stats_ns": stats},
              open(os.path.join(tmp, "result.json"), "w"))
    print("raw results: %s" % os.path.join(tmp, "result.json"))


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Run time per program run of the system-call programs, tracer against tracer.

The kernel's BPF statistics (kernel.bpf_stats_enabled, on only while this
runs) over the 4 KiB tmpfs pwrite/pread loop, per program and alternating
the tracers every round, medians. Finer than bench/syscall_bench.py's
throughput (no dispatch, no noise of the loop itself), and what tells
where a change of the programs' bodies went: enter and exit separately.
Each figure includes the two clock reads the statistics add per run, the
same for every tracer.

usage: prog_bench.py BUILD_DIR [TRACER ...]
  TRACER: minagg | empty | NAME=[AGENT_BINARY|]EXTRA_CONFIG
  default: minagg agent=  (the agent's default configuration)
  e.g. prog_bench.py build minagg 'agent=' 'nofiles=probes = { files = { enable = false; }; };'
       prog_bench.py build 'old=/tmp/datacrumbs-old|' 'new=build/agent/datacrumbs|'
env: OPS (calls of the loop per run, default 1000000), ROUNDS (default 3)
"""
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import syscall_bench as sb  # noqa: E402  (the agent started as syscall_bench does)


def progs():
    out = subprocess.run(["bpftool", "prog", "show", "-j"], capture_output=True, text=True,
                         check=True).stdout
    return {p["id"]: p for p in json.loads(out)}


def start(build, spec, tmp):
    if spec in ("minagg", "empty"):
        p = subprocess.Popen([os.path.join(build, "bench/baseline"), spec],
                             stdout=subprocess.PIPE, text=True)
        if "ready" not in p.stdout.readline():
            sys.exit("bench/baseline %s did not start" % spec)
        return spec, p
    name, _, rest = spec.partition("=")
    binary, bar, extra = rest.partition("|")
    if not bar:
        binary, extra = os.path.join(build, "agent/datacrumbs"), rest
    # as configured for the whole run (no budget steps), and no sampled
    # statistics of the agent's own: they are on globally here
    p, _ = sb.start_agent(build, tmp, "self = { bpf_stats = false; };\n" + extra, binary)
    return name, p


def main():
    if len(sys.argv) < 2 or sys.argv[1] in ("-h", "--help"):
        sys.exit(__doc__)
    if os.geteuid() != 0:
        sys.exit("prog_bench: run as root")
    build = sys.argv[1]
    specs = sys.argv[2:] or ["minagg", "agent="]
    ops = int(os.environ.get("OPS", "1000000"))
    rounds = int(os.environ.get("ROUNDS", "3"))
    tmp = tempfile.mkdtemp(prefix="dc-prog-")
    shm = tempfile.mkdtemp(prefix="dc-prog-", dir="/dev/shm")
    loop = [os.path.join(build, "bench/iobench"), os.path.join(shm, "file"), str(ops)]
    if subprocess.run(["which", "taskset"], capture_output=True).returncode == 0:
        loop = ["taskset", "-c", "1"] + loop
    res = {}
    with open("/proc/sys/kernel/bpf_stats_enabled") as f:
        old = f.read().strip()
    with open("/proc/sys/kernel/bpf_stats_enabled", "w") as f:
        f.write("1")
    try:
        for r in range(rounds):
            for spec in (specs if r % 2 == 0 else specs[::-1]):
                before = progs()
                name, p = start(build, spec, tmp)
                mine = {i: v for i, v in progs().items() if i not in before}
                subprocess.run(loop, capture_output=True, check=True)
                after = progs()
                p.send_signal(signal.SIGINT)
                p.wait(60)
                for i, v in mine.items():
                    a = after.get(i, {})
                    cnt = a.get("run_cnt", 0) - v.get("run_cnt", 0)
                    if cnt < ops // 2:  # programs of other hooks
                        continue
                    ns = (a["run_time_ns"] - v.get("run_time_ns", 0)) / cnt
                    res.setdefault((name, a.get("name", "?")), []).append(ns)
    finally:
        with open("/proc/sys/kernel/bpf_stats_enabled", "w") as f:
            f.write(old)
    print("ns per program run, medians of %d rounds of %d calls:" % (rounds, ops))
    tot = {}
    for (name, prog), v in sorted(res.items()):
        med = statistics.median(v)
        tot[name] = tot.get(name, 0) + med
        print("%-16s %-20s %7.1f   runs %s" % (name, prog, med, " ".join("%.0f" % x for x in v)))
    base = tot.get("minagg")
    for name, t in tot.items():
        print("%-16s enter + exit %7.1f ns%s" % (name, t, "  (%.2fx minagg)" % (t / base)
                                                  if base and name != "minagg" else ""))


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""What the other layers' trace events cost (docs/traces.md#layers).

The 4 KiB pwrite/pread loop (bench/iobench, on tmpfs, pinned to CPU 1) in a
cgroup of its own, with libc's pwrite and pread uprobed, under three agent
configurations, the order rotated every round:
  off     traces.enable = false: no trace code in any program
  out     traces on, nothing kept: the cgroup is not traced in full, no
          slow rule, 1-in-N so rare it never fires; every library call
          still runs the layer's decision (sampled out)
  full    the loop's cgroup traced in full: every library call and every
          system call is an event
Per configuration, medians over the rounds: the loop's ns per call (one
call is a library pwrite or pread and its system call), the library return
program's run time per run (the kernel's BPF statistics, from the agent's
own records), and the events the agent sealed per call; then the ratios
to "off" measured in the same run. Other processes' calls of the uprobed
functions run the programs too (the uprobe is on libc for everyone): their
calls are sampled out, as on any node.

usage: layer_traces_bench.py BUILD_DIR [--ops N] [--rounds R]
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "bpf"))
from agentlib import Agent  # noqa: E402
from test_stacks import Cgroup  # noqa: E402


def libc_path(binary):
    out = subprocess.run(["ldd", binary], capture_output=True, text=True, check=True).stdout
    return next(ln.split()[2] for ln in out.splitlines() if "libc.so" in ln)


def conf(kind, libc, cg, tdir):
    c = ('interval = 1.0;\nprobes = { libraries = ( { path = "%s"; category = "libc"; '
         'functions = ["pwrite", "pread"]; bytes = ["pwrite", "pread"]; } ); };\n' % libc)
    if kind == "off":
        return c + 'traces = { enable = false; };\n'
    full = '"%s"' % cg.rel if kind == "full" else ""
    return c + ('traces = { ring_mib = 64; sampling = { one_in_n = 1000000000; slow_ms = 0; rate = 0.0;'
                ' full_cgroups = [%s]; }; output = { dir = "%s"; }; };\n' % (full, tdir))


def one(build, kind, ops, libc, cg):
    tmp = tempfile.mkdtemp(prefix="dc-ltb-")
    a = Agent(os.path.join(build, "agent", "datacrumbs"), conf(kind, libc, cg, os.path.join(tmp, "t")))
    try:
        p = subprocess.run(["taskset", "-c", "1", os.path.join(build, "bench", "iobench"),
                            "/dev/shm/dc-ltb-%d" % os.getpid(), str(ops)],
                           capture_output=True, text=True, check=True, preexec_fn=cg.enter)
    finally:
        a.stop()
    ns_per_op = float(p.stdout.split()[2])
    runs = run_ns = events = 0
    for r in a.records():
        if r["type"] != "agent":
            continue
        for pr in r.get("programs", []):
            if pr["name"] == "dc_up_return":
                runs += pr["runs"]
                run_ns += pr["run_ns"]
        events += r.get("traces", {}).get("events", 0)
    shutil.rmtree(tmp, ignore_errors=True)
    return ns_per_op, (run_ns / runs if runs else 0.0), events / ops


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--ops", type=int, default=200000)
    ap.add_argument("--rounds", type=int, default=5)
    o = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("layer_traces_bench: needs root")
    libc = libc_path(os.path.join(o.build, "bench", "iobench"))
    cg = Cgroup()
    kinds = ["off", "out", "full"]
    res = {k: [] for k in kinds}
    try:
        for rnd in range(o.rounds):
            order = kinds[rnd % 3:] + kinds[:rnd % 3]
            for k in order:
                res[k].append(one(o.build, k, o.ops, libc, cg))
    finally:
        cg.remove()
        try:
            os.unlink("/dev/shm/dc-ltb-%d" % os.getpid())
        except OSError:
            pass
    med = {k: [statistics.median(x[i] for x in v) for i in range(3)] for k, v in res.items()}
    print("%-5s %14s %22s %18s" % ("", "ns/call", "dc_up_return ns/run", "events/call"))
    for k in kinds:
        print("%-5s %14.0f %22.0f %18.2f" % (k, med[k][0], med[k][1], med[k][2]))
    base = med["off"]
    for k in ("out", "full"):
        print("%s/off: loop %.3f, library return program %.3f" % (
            k, med[k][0] / base[0], med[k][1] / base[1] if base[1] else float("nan")))
    print(json.dumps({"ops": o.ops, "rounds": o.rounds, "medians": med}))


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""How well sampled BPF statistics estimate the system-call programs' cost.

The agent runs with 1 s windows and self.bpf_stats_duty = 1 (on all window:
exact, the baseline) and then each sampled duty, alternating, ROUNDS times,
while a writer loops (tests/bpf/traceload, 20,000 pwrite calls a process,
one after another, as bpf-selfcost does). For each window wholly inside the
load it prints the syscall layer's runs over two per counted call (1.0
where every call ran the entry and exit programs once and the count is
exact), the layer's run time per counted call in ns, and the calls the
window counted. The summary sets each duty's run time per call against
duty 1's: the sampled estimate of the programs' time against the
statistics on all window. A duty whose statistics were not sampled as asked
(kernel.bpf_stats_enabled set, another tool's fd) stops the run.

usage: stats_duty_bench.py BUILD_DIR [--duties 0.1,0.3] [--rounds 2]
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "bpf"))
from agentlib import Agent  # noqa: E402


def ratios(agent, load, data, duty, seconds=4.5):
    """(runs / two per call, run ns per call, calls) of each window inside the load"""
    a = Agent(agent, "interval = 1.0;\nself = { bpf_stats_duty = %s; };\n" % duty)
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        subprocess.run([load, data, "20000"], stdout=subprocess.DEVNULL, check=True)
    a.stop()
    ag = [r for r in a.records() if r["type"] == "agent"][1:-1]
    # sampled only if the agent says so: kernel.bpf_stats_enabled, or
    # another tool's statistics fd, would time the programs all window
    want = "fd" if float(duty) >= 1 else "on %g%% of each window" % (float(duty) * 100)
    bad = [r["cost"]["bpf_stats"] for r in ag if want not in r["cost"]["bpf_stats"]]
    if bad:
        sys.exit("duty %s: the statistics were not as asked: %s" % (duty, bad[0]))
    return [(r["layers"]["syscall"]["runs"] / (2.0 * r["events"]),
             r["layers"]["syscall"]["run_ns"] / r["events"], r["events"])
            for r in ag if r["events"]]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--duties", default="0.1,0.3")
    ap.add_argument("--rounds", type=int, default=2)
    o = ap.parse_args()
    agent = os.path.join(o.build, "agent", "datacrumbs")
    load = os.path.join(o.build, "tests", "bpf", "traceload")
    tmp = tempfile.mkdtemp(prefix="dc-duty-")
    data = os.path.join(tmp, "data")
    got = {}
    try:
        for _ in range(o.rounds):
            for duty in ["1"] + o.duties.split(","):
                r = ratios(agent, load, data, duty)
                got.setdefault(duty, []).extend(r)
                print("duty %-4s %s" % (duty, " ".join("%.2f/%.0fns/%d" % x for x in r)),
                      flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("\n      windows  runs / two per call   run ns per call         calls")
    print("duty           median  min   max    median  vs duty 1    a window")
    base = statistics.median([ns for _, ns, _ in got.get("1", [])] or [float("nan")])
    for duty, r in got.items():
        x = [v for v, _, _ in r] or [float("nan")]
        ns = statistics.median([v for _, v, _ in r] or [float("nan")])
        calls = [n for _, _, n in r] or [0]
        print("%-5s %7d  %6.2f  %.2f  %.2f  %7.1f  %7.2f  %10d"
              % (duty, len(r), statistics.median(x), min(x), max(x), ns, ns / base,
                 statistics.median(calls)))


if __name__ == "__main__":
    main()

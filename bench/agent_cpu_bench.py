#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The agent's own CPU per million traced calls per second, build against build.

What bench/suite.py measures once for its goal ("agent user CPU < 1% of a
core at 1M calls/s"), repeated for each binary in turn, alternating, medians:
the default configuration (traces kept 1 in 100) while the 4 KiB tmpfs loop
runs pinned to CPU 1 for SECONDS; user CPU over the windows wholly inside,
from the agent's own records, divided by the loop's rate in millions of
calls per second.

usage: agent_cpu_bench.py BUILD_DIR [NAME=AGENT_BINARY ...] [--rounds R] [--seconds S]
  default: the build's agent alone
  e.g. agent_cpu_bench.py build old=/tmp/datacrumbs-old new=build/agent/datacrumbs
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import layers_bench as lb  # noqa: E402
import suite  # noqa: E402
import syscall_bench as sb  # noqa: E402


def measure(build, binary, tmp, shm, seconds):
    exe = os.path.join(build, "bench/workloads")
    p, out = sb.start_agent(build, tmp, lb.TRACES_ON.replace("@TMP@", tmp), binary)
    t1 = time.time() * 1e6
    n = ns = 0
    try:
        while time.time() * 1e6 - t1 < seconds * 1e6:
            r = subprocess.run(["taskset", "-c", "1", exe, "tmpfs4k", os.path.join(shm, "s"),
                                "200000"], capture_output=True, text=True, check=True).stdout.split()
            n += int(r[0])
            ns += int(r[2])
        t2 = time.time() * 1e6
    finally:
        sb.stop(p)
    c = suite.agent_cost(out, t1, t2)
    os.unlink(out)
    rate = n / (ns / 1e9) / 1e6
    return c["user_us"] / c["wall_us"] * 100 / rate, c["sys_us"] / c["wall_us"] * 100 / rate


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("agents", nargs="*")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--seconds", type=float, default=4.5)
    a = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("agent_cpu_bench: run as root")
    agents = [x.split("=", 1) for x in a.agents] or [["agent",
                                                      os.path.join(a.build, "agent/datacrumbs")]]
    tmp = tempfile.mkdtemp(prefix="dc-bench-")
    shm = tempfile.mkdtemp(prefix="dc-bench-", dir="/dev/shm")
    res = {name: [] for name, _ in agents}
    for r in range(a.rounds):
        for name, binary in (agents if r % 2 == 0 else list(reversed(agents))):
            user, sys_ = measure(a.build, binary, tmp, shm, a.seconds)
            res[name].append(user)
            print("round %d %-8s user %.3f%%, sys %.3f%% of a core per 1M calls/s"
                  % (r + 1, name, user, sys_), flush=True)
    for name, v in res.items():
        print("%-8s median user %.3f%% of a core per 1M calls/s (goal < 1%%)"
              % (name, statistics.median(v)))


if __name__ == "__main__":
    main()

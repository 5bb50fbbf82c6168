#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""What counting faults on file mappings costs (bpf/pagecache.bpf.c).

The worst case: a cached file (written a page a call, so single-page
folios and a fault-around every 16 pages), read through a mapping one byte
a page by tests/bpf/mmapload, so that the run is nothing but faults. The
default agent and no agent alternate, ROUNDS times each; per round, the
wall time of REPS reads. With the agent, the kernel's BPF statistics
(kernel.bpf_stats_enabled, on only while the agent runs, then put back)
give the fault programs' runs and run time, every such program on the
node: run no other agent meanwhile. Their run time leaves out the
tracepoint's dispatch.

usage: mmap_bench.py BUILD_DIR [ROUNDS] [REPS] [MIB]
"""
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import syscall_bench as sb  # noqa: E402  (the agent's start and stop)

PROGS = ("dc_pc_fault_", "dc_pc_around_")


def fault_progs():
    out = json.loads(subprocess.run(["bpftool", "prog", "show", "--json"], capture_output=True,
                                    text=True, check=True).stdout)
    got = [p for p in out if p.get("name", "").startswith(PROGS)]
    return sum(p.get("run_cnt", 0) for p in got), sum(p.get("run_time_ns", 0) for p in got)


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    build = sys.argv[1]
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 7
    reps = int(sys.argv[3]) if len(sys.argv) > 3 else 20
    mib = int(sys.argv[4]) if len(sys.argv) > 4 else 64
    load = os.path.join(build, "tests/bpf/mmapload")
    tmp = tempfile.mkdtemp(prefix="dc-mmap-bench-", dir="/var/tmp")
    path = os.path.join(tmp, "f.bin")
    chunk = os.urandom(1 << 20)
    with open(path, "wb", buffering=0) as f:
        for _ in range(mib):
            for off in range(0, 1 << 20, 4096):
                f.write(chunk[off:off + 4096])
        # written back before the rounds: a folio under writeback is not
        # mapped around, its fault goes to the handler
        os.fsync(f.fileno())
    with open("/proc/sys/kernel/bpf_stats_enabled") as f:
        stats_was = f.read().strip()
    wall = {"none": [], "agent": []}
    runs = ns = 0
    try:
        subprocess.run([load, "read", path], check=True, stdout=subprocess.DEVNULL)  # cached
        for rnd in range(rounds):
            for who in (("none", "agent") if rnd % 2 == 0 else ("agent", "none")):
                p = None
                if who == "agent":
                    p, _ = sb.start_agent(build, tmp)
                    subprocess.run(["sysctl", "-q", "kernel.bpf_stats_enabled=1"], check=True)
                    r0, n0 = fault_progs()
                t0 = time.monotonic()
                for _ in range(reps):
                    subprocess.run([load, "read", path], check=True, stdout=subprocess.DEVNULL)
                wall[who].append((time.monotonic() - t0) / reps)
                if p:
                    r1, n1 = fault_progs()
                    runs, ns = runs + r1 - r0, ns + n1 - n0
                    subprocess.run(["sysctl", "-q", "kernel.bpf_stats_enabled=" + stats_was])
                    sb.stop(p)
    finally:
        subprocess.run(["sysctl", "-q", "kernel.bpf_stats_enabled=" + stats_was])
        shutil.rmtree(tmp, ignore_errors=True)
    none, agent = statistics.median(wall["none"]), statistics.median(wall["agent"])
    print("read of a cached %d MiB file through a mapping, %d rounds of %d, medians:" % (
        mib, rounds, reps))
    print("  no agent %.2f ms, default agent %.2f ms: %.3fx" % (none * 1e3, agent * 1e3,
                                                               agent / none))
    if runs:
        per_read = ns / (rounds * reps)
        print("  fault programs (both, the process's own faults too): %.1f runs a read, %.0f ns "
              "a run, %.3f ms a read (%.2f%% of the untraced read)" % (runs / (rounds * reps), ns / runs, per_read / 1e6,
                                  100 * per_read / 1e9 / none))


if __name__ == "__main__":
    main()

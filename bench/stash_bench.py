#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Where a call's entry waits for its exit: the per-CPU stash against task storage.

Two loops, each under every tracer in turn, the order reversed every other
round, medians of the per-round differences to no tracer:
  tmpfs   bench/iobench: 4 KiB pwrite/pread on tmpfs, pinned to CPU 1 (no call
          blocks: the per-CPU stash's best case)
  ctxsw   bench/ctxsw: a pipe ping-pong between two processes on one CPU,
          every read blocks (its worst case: each switch-out writes the
          stash back, each return takes it over again)
Tracers: none; minagg (bench/baseline: entry time in task storage, per-CPU
hash); the agent's default configuration with probes.syscall.entry_stash
"task_storage" and "cpu" (AGENT=path picks another binary).

usage: stash_bench.py BUILD_DIR [--rounds R] [--ops N]
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import syscall_bench as sb  # noqa: E402

TRACERS = ["none", "minagg", "task_storage", "cpu"]


def start(build, tmp, t):
    if t == "none":
        return None
    if t == "minagg":
        return sb.start_line_ready([os.path.join(build, "bench/baseline"), "minagg"])[0]
    return sb.start_agent(build, tmp, 'probes = { syscall = { entry_stash = "%s"; }; };\n' % t,
                          os.environ.get("AGENT"))[0]


def ctxsw(build, rounds):
    out = subprocess.run([os.path.join(build, "bench/ctxsw"), str(rounds)], capture_output=True,
                         text=True, check=True).stdout.split()
    return float(out[2])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--ops", type=int, default=500000)
    a = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("stash_bench: run as root")
    tmp = tempfile.mkdtemp(prefix="dc-bench-")
    shm = tempfile.mkdtemp(prefix="dc-bench-", dir="/dev/shm")
    f = os.path.join(shm, "file")
    res = {w: {t: [] for t in TRACERS} for w in ("tmpfs", "ctxsw")}
    for r in range(a.rounds):
        order = TRACERS if r % 2 == 0 else list(reversed(TRACERS))
        for t in order:
            p = start(a.build, tmp, t)
            try:
                res["tmpfs"][t].append(sb.run_loop(a.build, f, a.ops)[0])
                res["ctxsw"][t].append(ctxsw(a.build, a.ops // 5))
            finally:
                sb.stop(p)
        print("round %d: " % (r + 1) + " | ".join(
            "%s %s" % (w, " ".join("%s %.1f" % (t, res[w][t][-1]) for t in TRACERS))
            for w in res), flush=True)
    print("\nmedians over %d rounds; added = median of per-round differences to none" % a.rounds)
    print("%-8s %-14s %10s %10s" % ("loop", "tracer", "ns", "added ns"))
    for w, unit in (("tmpfs", "per call"), ("ctxsw", "per round trip")):
        for t in TRACERS:
            added = statistics.median(x - n for x, n in zip(res[w][t], res[w]["none"]))
            print("%-8s %-14s %10.1f %10.1f  %s" % (w, t, statistics.median(res[w][t]), added,
                                                   unit))
    print("tmpfs: one 4 KiB call; ctxsw: a round trip, 2 blocking reads + 2 writes + 2 switches")


if __name__ == "__main__":
    main()

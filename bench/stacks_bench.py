#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Stack profiles: what capturing stacks costs, and the agent's symbolization CPU.

In one run, alternating the order each round, medians over rounds, under:
  off     the agent with probes.stacks.enable = false (traces off in all)
  idle    stacks on, a policy that chooses nothing (one_in_n = 1e9, no slow
          rule): the entry/exit checks and the sched_switch program alone
  default stacks on with the shipped policy (1-in-100, calls >= 10 ms): every
          blocking call's kernel stack is captured at its first switch-out
  all     every call profiled (one_in_n = 1): a user stack per call
two loops, each pinned to CPU 1:
  io      bench/iobench, 4 KiB pwrite/pread on tmpfs (never blocks): ns per call
  ctxsw   bench/ctxsw, a pipe ping-pong between two processes: ns per round
          trip (two blocking reads, two context switches)
The added cost per captured stack is all - idle on the io loop (one user
stack per call, no kernel stack: tmpfs calls do not block). The sched_switch
program's cost is idle - off on ctxsw; a kernel stack per block is default -
idle there. Symbolization: the agent records' stacks.symbolize_us per key
and the agent's CPU share, at the "all" rate and at the default rate.

Then, with the kernel's BPF statistics on (kernel.bpf_stats_enabled, only
for that phase), the mean run time of the agent's own exit and sched_switch
programs under each configuration: precise where the loops are noisy, but
it covers the programs' bodies, not the dispatch to them.

usage: stacks_bench.py BUILD_DIR [--ops N] [--rounds R]
"""
import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from syscall_bench import prog_ids, run_loop, start_agent  # noqa: E402  (one loop, one agent start)

BASE = "traces = { enable = false; };\n"
CONFIGS = {
    "off": BASE,
    "idle": BASE + "probes = { stacks = { enable = true; one_in_n = 1000000000; slow_ms = 0; }; };",
    "default": BASE + "probes = { stacks = { enable = true; }; };",
    "all": BASE + "probes = { stacks = { enable = true; one_in_n = 1; slow_ms = 0; }; };",
}


def run_ctxsw(build, rounds):
    cmd = [os.path.join(build, "bench/ctxsw"), str(rounds)]
    if shutil.which("taskset"):
        cmd = ["taskset", "-c", "1"] + cmd
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout.split()
    return float(out[2])


def bpf_stats_phase(build, tmp, f, ops):
    """Mean ns per run of the agent's sys_exit and sched_switch programs, per config."""
    res = {}
    with open("/proc/sys/kernel/bpf_stats_enabled") as fh:
        old = fh.read().strip()
    with open("/proc/sys/kernel/bpf_stats_enabled", "w") as fh:
        fh.write("1")
    try:
        for c in CONFIGS:
            before = prog_ids()
            p, out = start_agent(build, tmp, CONFIGS[c])
            mine = {i: q for i, q in prog_ids().items() if i not in before}
            run_loop(build, f, ops)
            run_ctxsw(build, ops // 5)
            after = prog_ids()
            p.send_signal(signal.SIGINT)
            p.wait(60)
            os.unlink(out)
            for i, q in mine.items():
                name = q.get("name", "")
                if not (name.startswith("dc_exit") or name.startswith("dc_switch")):
                    continue
                a = after.get(i, {})
                cnt = a.get("run_cnt", 0)
                res.setdefault(c, {})[name] = (a.get("run_time_ns", 0) / cnt if cnt else 0, cnt)
    finally:
        with open("/proc/sys/kernel/bpf_stats_enabled", "w") as fh:
            fh.write(old)
    return res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--ops", type=int, default=500000)
    ap.add_argument("--rounds", type=int, default=9)
    a = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("stacks_bench: run as root")
    tmp = tempfile.mkdtemp(prefix="dc-stbench-")
    shm = tempfile.mkdtemp(prefix="dc-stbench-", dir="/dev/shm")
    f = os.path.join(shm, "file")
    io = {c: [] for c in CONFIGS}
    cs = {c: [] for c in CONFIGS}
    sym = {c: [] for c in CONFIGS}
    for r in range(a.rounds):
        order = list(CONFIGS) if r % 2 == 0 else list(reversed(CONFIGS))
        for c in order:
            p, out = start_agent(a.build, tmp, CONFIGS[c])
            io[c].append(run_loop(a.build, f, a.ops)[0])
            cs[c].append(run_ctxsw(a.build, a.ops // 5))
            p.send_signal(signal.SIGINT)
            p.wait(60)
            recs = [json.loads(x) for x in open(out) if '"type":"agent"' in x]
            os.unlink(out)
            st = [x["stacks"] for x in recs if "stacks" in x]
            if st:
                sym[c].append({
                    "keys": sum(s["keys"] for s in st),
                    "symbolize_us": sum(s["symbolize_us"] for s in st),
                    "user_lost": sum(s["user_stacks_lost"] for s in st),
                    "captures": sum(s["kernel_captures"] for s in st),
                    "windows": len(st),
                    "cpu_us": sum(x["cost"]["cpu_user_us"] + x["cost"]["cpu_sys_us"] for x in recs),
                })
        print("round %d: io %s | ctxsw %s" % (
            r + 1, " ".join("%s %.1f" % (c, io[c][-1]) for c in CONFIGS),
            " ".join("%s %.1f" % (c, cs[c][-1]) for c in CONFIGS)), flush=True)
    mi = {c: statistics.median(v) for c, v in io.items()}
    mc = {c: statistics.median(v) for c, v in cs.items()}
    print("\nio loop: median ns per call, %d rounds of %d calls (4 KiB pwrite/pread, tmpfs):"
          % (a.rounds, a.ops))
    for c in CONFIGS:
        print("%-8s %8.1f ns/call  %+7.1f vs off  %+7.1f vs idle   (runs: %s)"
              % (c, mi[c], mi[c] - mi["off"], mi[c] - mi["idle"], " ".join("%.0f" % x for x in io[c])))
    print("\nctxsw loop: median ns per round trip (2 blocking reads, 2 switches), %d rounds:"
          % (a.ops // 5))
    for c in CONFIGS:
        print("%-8s %8.1f ns/rt    %+7.1f vs off  %+7.1f vs idle   (runs: %s)"
              % (c, mc[c], mc[c] - mc["off"], mc[c] - mc["idle"], " ".join("%.0f" % x for x in cs[c])))
    print("\nadded cost per captured user stack (io: all - idle): %.1f ns" % (mi["all"] - mi["idle"]))
    print("sched_switch program, nothing chosen (ctxsw: idle - off): %.1f ns per round trip"
          % (mc["idle"] - mc["off"]))
    print("kernel stack at each block (ctxsw: default - idle): %.1f ns per round trip"
          % (mc["default"] - mc["idle"]))
    for c in ("default", "all"):
        if not sym[c]:
            continue
        keys = statistics.median(s["keys"] / s["windows"] for s in sym[c])
        us = statistics.median(s["symbolize_us"] / s["windows"] for s in sym[c])
        per = statistics.median(s["symbolize_us"] / s["keys"] for s in sym[c] if s["keys"])
        lost = statistics.median(s["user_lost"] for s in sym[c])
        cpu = statistics.median(s["cpu_us"] / s["windows"] for s in sym[c])
        print("symbolization at %-7s: %.0f keys/window, %.0f us/window, %.1f us per key; agent CPU "
              "%.0f us/window in all (user stacks lost per run: %.0f)" % (c, keys, us, per, cpu, lost))
    st = bpf_stats_phase(a.build, tmp, f, a.ops)
    print("\nBPF statistics: mean ns per program run (runs):")
    for c in CONFIGS:
        print("%-8s %s" % (c, "  ".join("%s %.0f (%d)" % (n, v[0], v[1])
                                        for n, v in sorted(st.get(c, {}).items()))))
    json.dump({"io": io, "ctxsw": cs, "sym": sym, "bpf_stats": st}, open(os.path.join(tmp, "result.json"), "w"))
    print("raw results: %s" % os.path.join(tmp, "result.json"))
    shutil.rmtree(shm, ignore_errors=True)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Sampled traces: what tracing every call costs and how fast the agent drains it.

In one run, alternating the order each round, medians over rounds, the 4 KiB
tmpfs pwrite/pread loop (bench/iobench) pinned to one CPU, under:
  off       the agent with traces.enable = false (aggregation only)
  1pct      traces at 1-in-100, no rate limit
  all       traces at 100% (one_in_n = 1, no rate limit, no slow rule)
and reports ns added per call against "off", the events per second the agent
took from the ring at 100% with the drops the kernel counted, and the bytes
per event after zstd, all from the agent's own records.

usage: traces_bench.py BUILD_DIR [--ops N] [--rounds R] [--ring-mib M]
"""
import argparse
import json
import os
import shutil
import signal
import statistics
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from syscall_bench import run_loop, start_agent  # noqa: E402  (one loop, one agent start)

CONFIGS = {
    "off": "traces = { enable = false; };",
    "1pct": "traces = { ring_mib = %(ring)d; sampling = { one_in_n = 100; rate = 0; slow_ms = 0; };"
            " output = { dir = \"%(dir)s\"; }; };",
    "all": "traces = { ring_mib = %(ring)d; sampling = { one_in_n = 1; rate = 0; slow_ms = 0; };"
           " output = { dir = \"%(dir)s\"; }; };",
}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--ops", type=int, default=1000000)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--ring-mib", type=int, default=64)
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="dc-trbench-")
    shm = tempfile.mkdtemp(prefix="dc-trbench-", dir="/dev/shm")
    f = os.path.join(shm, "file")
    res = {c: [] for c in CONFIGS}
    drain = []
    for r in range(a.rounds):
        order = list(CONFIGS) if r % 2 == 0 else list(reversed(CONFIGS))
        for c in order:
            tdir = os.path.join(tmp, "traces-%s-%d" % (c, r))
            p, out = start_agent(a.build, tmp, CONFIGS[c] % {"ring": a.ring_mib, "dir": tdir})
            ns, secs = run_loop(a.build, f, a.ops)
            p.send_signal(signal.SIGINT)
            p.wait(60)
            res[c].append(ns)
            recs = [json.loads(x) for x in open(out) if '"type":"agent"' in x]
            os.unlink(out)
            if c == "all":
                t = {k: sum(x["traces"][k] for x in recs) for k in
                     ("seen", "kept", "dropped", "events", "raw_bytes", "zstd_bytes")}
                t["loop_secs"] = secs
                drain.append(t)
            shutil.rmtree(tdir, ignore_errors=True)
        print("round %d: %s" % (r + 1, "  ".join("%s %.1f" % (c, res[c][-1]) for c in CONFIGS)),
              flush=True)
    med = {c: statistics.median(v) for c, v in res.items()}
    print("\nmedian ns per call, %d rounds of %d calls (4 KiB pwrite/pread, tmpfs):" % (a.rounds, a.ops))
    for c in CONFIGS:
        print("%-6s %8.1f ns/call  %+7.1f ns vs traces off   (runs: %s)"
              % (c, med[c], med[c] - med["off"], " ".join("%.0f" % x for x in res[c])))
    rate = statistics.median(d["events"] / d["loop_secs"] for d in drain)
    calls = statistics.median(a.ops / d["loop_secs"] for d in drain)
    drops = [d["dropped"] for d in drain]
    bpe = statistics.median(d["zstd_bytes"] / d["events"] for d in drain if d["events"])
    raw = statistics.median(d["raw_bytes"] / d["events"] for d in drain if d["events"])
    print("\nat 100%%: the loop made %.0f calls/s; the agent read %.0f events/s "
          "(kernel-counted drops per run: %s; goal: 1,000,000 events/s without drops)"
          % (calls, rate, drops))
    print("bytes per event: %.1f NDJSON, %.1f after zstd (level 3)" % (raw, bpe))
    json.dump({"median_ns": med, "runs": res, "drain": drain},
              open(os.path.join(tmp, "result.json"), "w"))
    print("raw results: %s" % os.path.join(tmp, "result.json"))
    shutil.rmtree(shm, ignore_errors=True)


if __name__ == "__main__":
    main()

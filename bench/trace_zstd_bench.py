#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The trace batches' zstd level: bytes and compression speed on real traces.

1. The agent (default sampling) traces a mixed node for --seconds: the 4 KiB
   tmpfs loop, a metadata storm, short shells, and tar reading /usr/include.
2. Its trace files, decoded, are compressed again by the zstd tool's
   benchmark at each level in chunks of the median window's batch size
   (-B: each chunk its own frame, as the agent seals one per window), the
   levels alternating over --rounds, medians.

Prints per level the compressed bytes per event and the speed, and both as
ratios to level 3 (zstd's own default). The agent's cost of a batch is the
speed's inverse: traces are most of its user-space CPU (bench/tracefmt_bench).

usage: trace_zstd_bench.py BUILD_DIR [--seconds S] [--rounds R] [--levels 1,2,3]
"""
import argparse
import glob
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import layers_bench as lb  # noqa: E402
import syscall_bench as sb  # noqa: E402


def mixed_node(build, tmp, shm, seconds):
    """Several processes, files and layers, until seconds have passed."""
    exe = os.path.join(build, "bench/workloads")
    meta = os.path.join(tmp, "meta")
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        subprocess.run([exe, "tmpfs4k", os.path.join(shm, "s"), "100000"], check=True,
                       stdout=subprocess.DEVNULL)
        os.mkdir(meta)
        subprocess.run([exe, "meta", meta, "2000"], check=True, stdout=subprocess.DEVNULL)
        shutil.rmtree(meta)
        for _ in range(50):
            subprocess.run(["sh", "-c", "cat /etc/os-release > /dev/null; ls /usr/lib > /dev/null"],
                           check=True)
        subprocess.run(["tar", "cf", "/dev/null", "/usr/include"], check=True,
                       stderr=subprocess.DEVNULL)


def zstd_bench(path, level, chunk, seconds):
    """(compressed bytes, MB/s) of zstd's benchmark at level on chunks."""
    out = subprocess.run(["zstd", "-b%d" % level, "-i%d" % seconds, "-B%d" % chunk, path],
                         capture_output=True, text=True, check=True)
    text = (out.stdout + out.stderr).replace("\r", "\n")
    m = re.findall(r"->\s+(\d+) \(x[\d.]+\),\s+([\d.]+) MB/s", text)
    if not m:
        sys.exit("trace_zstd_bench: no result from zstd -b: %s" % text[-300:])
    return int(m[-1][0]), float(m[-1][1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--seconds", type=float, default=10)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--levels", default="1,2,3")
    a = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("trace_zstd_bench: run as root")
    if not shutil.which("zstd"):
        sys.exit("trace_zstd_bench: the zstd tool is not installed (apt-get install zstd)")
    levels = [int(x) for x in a.levels.split(",")]
    tmp = tempfile.mkdtemp(prefix="dc-bench-")
    shm = tempfile.mkdtemp(prefix="dc-bench-", dir="/dev/shm")
    try:
        p, out = sb.start_agent(a.build, tmp, lb.TRACES_ON.replace("@TMP@", tmp))
        try:
            mixed_node(a.build, tmp, shm, a.seconds)
        finally:
            sb.stop(p)
        tr = [r["traces"] for r in lb.records(out, "agent") if r.get("traces", {}).get("events")]
        files = sorted(glob.glob(os.path.join(tmp, "traces", "*.pfw.zst")))
        if not tr or not files:
            sys.exit("trace_zstd_bench: the agent wrote no traces")
        raw = os.path.join(tmp, "traces.ndjson")
        with open(raw, "wb") as f:
            subprocess.run(["zstd", "-dc"] + files, stdout=f, check=True)
        events = sum(x["events"] for x in tr)
        chunk = int(statistics.median(x["raw_bytes"] for x in tr))
        agent_zstd = sum(x["zstd_bytes"] for x in tr)
        print("traces: %d events in %d windows, %.1f MiB as NDJSON, a window's batch %d KiB "
              "(median); the agent's own frames %.1f bytes per event"
              % (events, len(tr), os.path.getsize(raw) / 2**20, chunk >> 10, agent_zstd / events))
        res = {lv: [] for lv in levels}
        for r in range(a.rounds):
            for lv in (levels if r % 2 == 0 else list(reversed(levels))):
                res[lv].append(zstd_bench(raw, lv, chunk, 1))
        base = levels.index(3) if 3 in levels else 0
        med = {lv: (statistics.median(x[0] for x in v), statistics.median(x[1] for x in v))
               for lv, v in res.items()}
        b_bytes, b_speed = med[levels[base]]
        print("%-6s %16s %12s %16s %16s" % ("level", "bytes per event", "MB/s", "bytes vs L%d"
                                            % levels[base], "time vs L%d" % levels[base]))
        for lv in levels:
            nb, sp = med[lv]
            print("%-6d %16.2f %12.0f %16.2fx %15.2fx" % (lv, nb / events, sp, nb / b_bytes,
                                                          b_speed / sp))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.rmtree(shm, ignore_errors=True)


if __name__ == "__main__":
    main()

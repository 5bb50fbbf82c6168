#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Two agent binaries on the pipe ping-pong (bench/ctxsw), alternating with
no tracer: the per-CPU stash's worst case, where every call takes the stash
over from task storage and every switch-out writes it back. Prints each
round, then the medians of the per-round differences.

usage: ctxsw_ab.py BUILD_DIR OLD_AGENT NEW_AGENT [ROUNDS] [TRIPS]
"""
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import syscall_bench as sb  # noqa: E402  (the agent started as syscall_bench does)


def trip_ns(build, trips):
    out = subprocess.run([os.path.join(build, "bench/ctxsw"), str(trips)], capture_output=True,
                         text=True, check=True).stdout.split()
    return float(out[2])


def main():
    if len(sys.argv) < 4 or sys.argv[1] in ("-h", "--help"):
        sys.exit(__doc__)
    if os.geteuid() != 0:
        sys.exit("ctxsw_ab: run as root")
    build, bins = sys.argv[1], {"old": sys.argv[2], "new": sys.argv[3]}
    rounds = int(sys.argv[4]) if len(sys.argv) > 4 else 8
    trips = int(sys.argv[5]) if len(sys.argv) > 5 else 100000
    tmp = tempfile.mkdtemp(prefix="dc-ctxsw-")
    res = {"none": [], "old": [], "new": []}
    try:
        for r in range(rounds):
            for t in (["none", "old", "new"] if r % 2 == 0 else ["new", "old", "none"]):
                p = None if t == "none" else sb.start_agent(build, tmp, "", bins[t])[0]
                try:
                    res[t].append(trip_ns(build, trips))
                finally:
                    sb.stop(p)
            print("round %d: " % (r + 1) + " ".join("%s %.1f" % (k, v[-1]) for k, v in res.items()),
                  flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    for t in ("old", "new"):
        print("%s: %.1f ns added per round trip (median of per-round differences to none)"
              % (t, statistics.median(x - n for x, n in zip(res[t], res["none"]))))
    print("new - old: %.1f ns per round trip (median of per-round differences)"
          % statistics.median(b - a for a, b in zip(res["old"], res["new"])))


if __name__ == "__main__":
    main()

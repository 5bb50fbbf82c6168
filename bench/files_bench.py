#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A process reading many small files, each once (a data loader walking a
dataset of small files): RATE files a second opened, read and closed, under
one or more agent binaries, alternating, for a few rounds. Prints per binary
the medians over rounds of what the agent records say about the busy
windows: the file layer's slots in use after each close, its map-full
count, the calls counted unattributed, and the agent's own CPU.

usage: files_bench.py [--rounds N] [--seconds S] [--rate R] LABEL=AGENT_BINARY[|EXTRA_CONFIG] ...
  e.g. files_bench.py 'old=/tmp/datacrumbs-old' 'new=build/agent/datacrumbs'
       files_bench.py 'new16k=build/agent/datacrumbs|maps = { files_max_keys = 16384; };'
"""
import argparse
import os
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import churn_bench  # noqa: E402  (the agents' arguments and the table)

NFILES = 40000


def make_files(d):
    for i in range(NFILES):
        with open(os.path.join(d, "f%05d" % i), "wb") as f:
            f.write(b"x" * 4096)


def read_files(d, rate, seconds):
    """Open, read and close files of d at `rate` a second for `seconds`."""
    t0 = time.monotonic()
    i = 0
    while time.monotonic() - t0 < seconds:
        with open(os.path.join(d, "f%05d" % (i % NFILES)), "rb") as f:
            f.read()
        i += 1
        ahead = i / rate - (time.monotonic() - t0)
        if ahead > 0:
            time.sleep(ahead)
    return i


def run(agent, extra, rate, seconds, tmp, data):
    recs = churn_bench.agent_records("files_bench", agent, extra, seconds, tmp,
                                     lambda: read_files(data, rate, seconds))
    # the windows wholly inside the busy phase, past the first two (filling)
    ag = [r for r in recs if r["type"] == "agent"][3:2 + seconds - 1]
    med = statistics.median
    unattr = [r["files"]["unattributed"] for r in ag]
    return {
        "file slots": med(r["files"].get("slots_in_use", -1) for r in ag),
        "files_full/win": med(r["files"]["drops"]["agg_map_full"] for r in ag),
        "unattr opens/win": med(u["opens"] for u in unattr),
        "flip ms": med(r["cost"]["flip_us"] for r in ag) / 1000,
        "user+sys ms/win": med((r["cost"]["cpu_user_us"] + r["cost"]["cpu_sys_us"]) / 1000
                               for r in ag),
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=int, default=8)
    ap.add_argument("--rate", type=int, default=3000, help="files a second")
    ap.add_argument("agents", nargs="+", help="LABEL=AGENT_BINARY[|EXTRA_CONFIG]")
    a = ap.parse_args()
    agents = churn_bench.parse_agents("files_bench", a.agents)
    res = {label: [] for label, _, _ in agents}
    with tempfile.TemporaryDirectory(prefix="dc-files-", dir="/var/tmp") as tmp:
        data = os.path.join(tmp, "data")
        os.mkdir(data)
        make_files(data)
        for _ in range(a.rounds):
            for label, binary, extra in agents:
                res[label].append(run(binary, extra, a.rate, a.seconds, tmp, data))
    print("files: one process opening, reading (4 KiB) and closing %d files/s, each once in "
          "the run, 1 s windows, %d rounds of %d s; medians over rounds"
          % (a.rate, a.rounds, a.seconds))
    churn_bench.print_medians(res)


if __name__ == "__main__":
    main()

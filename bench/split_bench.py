#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Block programs' run time per MiB where every O_DIRECT call is split.

A loop device over a 1 GiB image in /var/tmp (a file of its own), its requests limited to
256 KiB (queue/max_sectors_kb), so that each 1 MiB O_DIRECT dd call is one
bio split into four requests; two agents alternate (the order swapped
every round), each writing then reading 512 MiB, and the kernel's BPF
statistics (kernel.bpf_stats_enabled, on only while this runs) give the
block programs' (dc_bio_*, dc_rq_*) run time per MiB moved. Medians.

usage: split_bench.py OLD NEW [ROUNDS]
  OLD, NEW: an agent binary, optionally followed by "|" and configuration
  text added to each agent's (e.g. 'build/agent/datacrumbs|maps = {
  block_request_slots = 2048; };' against 'build/agent/datacrumbs')
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "bpf"))
from agentlib import Agent  # noqa: E402

MIB = 512


def block_ns():
    out = json.loads(subprocess.run(["bpftool", "prog", "show", "--json"], capture_output=True,
                                    text=True, check=True).stdout)
    return sum(p.get("run_time_ns", 0) for p in out
               if p.get("name", "").startswith(("dc_bio", "dc_rq")))


def main():
    if len(sys.argv) < 3:
        print(__doc__)
        sys.exit(2)
    bins, extra = {}, {}
    for name, spec in (("old", sys.argv[1]), ("new", sys.argv[2])):
        bins[name], _, extra[name] = spec.partition("|")
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 4
    fd, img = tempfile.mkstemp(prefix="dc-split-bench-", suffix=".img", dir="/var/tmp")
    os.close(fd)
    subprocess.run(["truncate", "-s", "1G", img], check=True)
    lo = subprocess.run(["losetup", "-f", "--show", "--direct-io=on", img], capture_output=True,
                        text=True)
    if lo.returncode:
        os.unlink(img)
        sys.exit("split_bench: losetup %s: %s" % (img, lo.stderr.strip()))
    dev = lo.stdout.strip()
    res = {"old": [], "new": []}
    # put back at the end: the setting outlives the device's detach
    msk = "/sys/block/%s/queue/max_sectors_kb" % os.path.basename(dev)
    msk_was = None
    try:
        with open(msk) as f:
            msk_was = f.read().strip()
        with open(msk, "w") as f:
            f.write("256")
        subprocess.run(["sysctl", "-q", "kernel.bpf_stats_enabled=1"], check=True)
        for rnd in range(rounds):
            for name in (["old", "new"] if rnd % 2 == 0 else ["new", "old"]):
                a = Agent(bins[name], "interval = 1.0;\n" + extra[name] + "\n")
                try:
                    time.sleep(0.5)
                    t0 = block_ns()
                    subprocess.run(["dd", "if=/dev/zero", "of=" + dev, "bs=1M",
                                    "count=%d" % MIB, "oflag=direct"], check=True,
                                   capture_output=True)
                    subprocess.run(["dd", "of=/dev/null", "if=" + dev, "bs=1M",
                                    "count=%d" % MIB, "iflag=direct"], check=True,
                                   capture_output=True)
                    t1 = block_ns()
                finally:
                    a.stop()
                res[name].append((t1 - t0) / 1000 / (2 * MIB))
                print("%s %.2f us/MiB" % (name, res[name][-1]), flush=True)
    finally:
        subprocess.run(["sysctl", "-q", "kernel.bpf_stats_enabled=0"])
        if msk_was:
            with open(msk, "w") as f:
                f.write(msk_was)
        subprocess.run(["losetup", "-d", dev])
        os.unlink(img)
    for k, v in res.items():
        print("%s median %.2f us/MiB of block programs" % (k, statistics.median(v)))
    print("new/old %.2fx" % (statistics.median(res["new"]) / statistics.median(res["old"])))


if __name__ == "__main__":
    main()

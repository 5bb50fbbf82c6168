#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The agent's memory over a long run, build against build: where its RSS
settles, not only what a few windows show.

Each build's agent starts in turn with the default configuration (traces
to the run's directory) and goes through STORMS rounds of the suite's
heaviest workloads for the agent's own memory: a metadata storm (create,
stat, unlink of 100,000 new files in one directory on ext4, every one a
new file name for the file layer) then the mixed workload (two threads,
10,000 files each, 16 MiB streams); after each round, 1.2 s later (a
window's close), VmRSS and its parts: RssAnon (the agent's heap and
stacks) and RssFile (its binary and libraries, and the BPF maps it maps:
slot maps, the trace ring twice). The agents run one after the other, not
alternating: memory is not what a noisy host moves. The last row is
where each settled; the ratio is to the first build.

usage: rss_bench.py BUILD_DIR ... [--storms N] [--files N]
  e.g. rss_bench.py /tmp/old build --storms 10
  (a BUILD_DIR needs agent/datacrumbs and bench/workloads: an old
  binary's directory can link bench to build/bench)
"""
import argparse
import os
import shutil
import signal
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import layers_bench as lb  # noqa: E402
import suite  # noqa: E402
import syscall_bench as sb  # noqa: E402


def one_build(build, fs, shm, storms, files):
    """[status at start, after each storm] of build's agent."""
    tmp = tempfile.mkdtemp(prefix="dc-rss-")
    b = lb.Bench(build, tmp)
    try:
        p, out = b.start("default", "agent", lb.TRACES_ON)
        rows = [sb.proc_status(p.pid)]
        for r in range(storms):
            d = os.path.join(fs.mnt, "meta%d" % r)
            os.mkdir(d)
            suite.workload(b, "meta", d, files)
            os.rmdir(d)
            suite.workload(b, "mixed", shm, fs.mnt, 100000, 16, 10000)
            time.sleep(1.2)
            if p.poll() is not None:
                raise RuntimeError("%s: the agent exited (%s)" % (build, p.returncode))
            rows.append(sb.proc_status(p.pid))
            print("  %s storm %d: VmRSS %.1f MiB" % (build, r + 1, rows[-1]["VmRSS"] / 1024),
                  flush=True)
        b.stop(p)
        return rows
    finally:
        b.stop_all()
        shutil.rmtree(tmp, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("builds", nargs="+")
    ap.add_argument("--storms", type=int, default=10)
    ap.add_argument("--files", type=int, default=100000)
    a = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("rss_bench: needs root (BPF, mount)")
    # a stop by SIGTERM cleans up as Ctrl-C does: the agent, the mount, the
    # loop device and its image in /var/tmp
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("rss_bench: terminated"))
    fs = lb.Ext4(600, "/var/tmp", inodes=a.files + 30000)
    shm = None
    try:
        shm = tempfile.mkdtemp(prefix="dc-rss-shm-", dir="/dev/shm")
        res = {bd: one_build(bd, fs, shm, a.storms, a.files) for bd in a.builds}
    finally:
        fs.close()
        if shm:
            shutil.rmtree(shm, ignore_errors=True)

    def cell(s):
        return "%6.1f %5.1f %5.1f" % (s["VmRSS"] / 1024, s["RssAnon"] / 1024, s["RssFile"] / 1024)
    print("\nRSS of the default agent over %d storms of %d files (+ the mixed workload), MiB: "
          "VmRSS, RssAnon, RssFile" % (a.storms, a.files))
    print("%-6s %s" % ("after", "  ".join("%-22s" % os.path.basename(os.path.abspath(bd))[:22]
                                           for bd in a.builds)))
    for i in range(a.storms + 1):
        print("%-6s %s" % ("start" if i == 0 else str(i),
                           "  ".join("%-22s" % cell(res[bd][i]) for bd in a.builds)))
    base = res[a.builds[0]][-1]
    for bd in a.builds[1:]:
        last = res[bd][-1]
        print("%s / %s at the end: VmRSS %.2fx, RssAnon %.2fx" % (
            bd, a.builds[0], last["VmRSS"] / base["VmRSS"], last["RssAnon"] / base["RssAnon"]))


if __name__ == "__main__":
    main()

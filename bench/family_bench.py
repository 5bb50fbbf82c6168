#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Run time per program run of every family's programs, agent against agent.

bench/prog_bench.py times the system-call programs on the 4 KiB tmpfs loop;
this times the others (VFS, page cache, block) as well, under a workload
on an ext4 file system over a loop device that runs them all: the
metadata storm (bench/workloads meta: files created, stat'ed, unlinked),
then bench/ext4bench's buffered write and direct read of 1 MiB calls.
The agents alternate every round (the order reversed every other round);
per program, the median over rounds of its run time over its runs, from
the kernel's BPF statistics (on only while this runs). Each figure
includes the statistics' own clock read (about 43 ns a run here: an empty
program's), the same for both agents. Programs with fewer than 1000 runs
in a round are left out.

usage: family_bench.py BUILD_DIR NAME=AGENT_BINARY NAME=AGENT_BINARY... [ROUNDS]
(two copies of one binary, an A/A pair, show what the host's noise alone does)
env: FILES (the storm's files, default 20000), MIB (each ext4bench phase's, default 256)
e.g. family_bench.py build old=/tmp/dc-old new=build/agent/datacrumbs 8
"""
import collections
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import layers_bench as lb  # noqa: E402  (the ext4 image, the BPF statistics)
import syscall_bench as sb  # noqa: E402  (the agent's start and stop)


def workload(build, mnt, files, mib):
    meta = os.path.join(mnt, "meta")
    os.makedirs(meta, exist_ok=True)
    ext4bench = os.path.join(build, "bench/ext4bench")
    for cmd in ([os.path.join(build, "bench/workloads"), "meta", meta, str(files)],
                [ext4bench, "write", os.path.join(mnt, "data"), str(mib)],
                [ext4bench, "read", os.path.join(mnt, "data"), str(mib), "direct"]):
        subprocess.run(cmd, capture_output=True, check=True)
    os.unlink(os.path.join(mnt, "data"))


def main():
    args = sys.argv[1:]
    if len(args) < 3 or args[0] in ("-h", "--help"):
        sys.exit(__doc__)
    if os.geteuid() != 0:
        sys.exit("family_bench: run as root")
    build, specs = args[0], [a for a in args[1:] if "=" in a]
    rounds = int(args[-1]) if "=" not in args[-1] else 6
    agents = [s.split("=", 1) for s in specs]
    files = int(os.environ.get("FILES", "20000"))
    mib = int(os.environ.get("MIB", "256"))
    fs = lb.Ext4(2 * mib, "/var/tmp", inodes=files + 1024)
    tmp = tempfile.mkdtemp(prefix="dc-family-")
    res = collections.defaultdict(lambda: collections.defaultdict(list))
    try:
        workload(build, fs.mnt, files, mib)  # warm-up: the journal, first allocations
        with lb.bpf_stats_on():
            for r in range(rounds):
                for name, binary in (agents if r % 2 == 0 else agents[::-1]):
                    p, _ = sb.start_agent(build, tmp, "self = { bpf_stats = false; };\n", binary)
                    try:
                        stats = lb.ProgStats(lb.prog_ids_of(p.pid))
                        try:
                            a = stats.snap()
                            workload(build, fs.mnt, files, mib)
                            z = stats.snap()
                        finally:
                            stats.close()
                    finally:
                        sb.stop(p)
                    for i, v in z.items():
                        runs = v["run_cnt"] - a[i]["run_cnt"]
                        if runs >= 1000:
                            res[v["name"]][name].append(
                                (v["run_time_ns"] - a[i]["run_time_ns"]) / runs)
    finally:
        fs.close()
        shutil.rmtree(tmp, ignore_errors=True)
    names = [n for n, _ in agents]
    print("ns per program run, medians of %d rounds (%d files' storm, %d MiB buffered write "
          "and direct read):" % (rounds, files, mib))
    print("%-22s " % "program" + " ".join("%9s" % n for n in names) +
          "".join("  %9s" % ("%s/%s" % (n, names[0])) for n in names[1:]))
    for prog, d in sorted(res.items()):
        if any(len(d[n]) < rounds for n in names):
            continue  # not run in every round by every agent
        m = [statistics.median(d[n]) for n in names]
        print("%-22s " % prog + " ".join("%9.1f" % x for x in m) +
              "".join("  %9s" % ("%.3fx" % (x / m[0]) if m[0] > 0 else "-") for x in m[1:]))


if __name__ == "__main__":
    main()

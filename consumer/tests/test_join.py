#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""flatten --join-nodes on real records: two agents of this node, named as
two hosts (host = "node-a", "node-b"), each counting a workload run in a
cgroup of its own; joined, every interval of the grid holds both nodes'
rows (hosts 2), and the sums are the two nodes' sums.

usage: test_join.py AGENT
"""
import csv
import glob
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(TOP, "tests", "bpf"))
from agentlib import Agent, Checks, cgroup2_root, require_root  # noqa: E402

WRITES = 6 * 400


def flatten(files, out, join=None):
    args = ["/usr/bin/python3", "-W", "ignore", "-m", "datacrumbs_consumer", "flatten",
            "--in-process", "--out", out, "--files"] + files
    if join:
        args += ["--join-nodes", join]
    p = subprocess.run(args, cwd=os.path.join(TOP, "consumer"), capture_output=True, text=True,
                       timeout=240)
    print("$ %s (exit %d)\n%s%s" % (" ".join(args[4:]), p.returncode, p.stdout[-1000:],
                                    p.stderr[-1000:]), flush=True)
    rows = []
    for f in sorted(glob.glob(os.path.join(out, "part-*.csv"))):
        with open(f) as fh:
            rows += list(csv.DictReader(fh))
    return p, rows


def main():
    require_root()
    agent_bin = sys.argv[1]
    c = Checks()
    tmp = tempfile.mkdtemp(prefix="dc-join-")
    rel = "/dc-join-test-%d" % os.getpid()
    root = cgroup2_root()
    if not root:
        raise RuntimeError("no cgroup2 hierarchy")
    cg = root + rel
    os.makedirs(cg, exist_ok=True)
    agents = []
    try:
        for host in ("node-a", "node-b"):
            agents.append(Agent(agent_bin, 'interval = 0.5;\nhost = "%s";\n'
                                'traces = { enable = false; };\n' % host))
        time.sleep(0.7)
        data = os.path.join(tmp, "data")
        # six bursts a third of a second apart: the workload spans windows
        subprocess.run(["sh", "-c", "echo $$ > %s/cgroup.procs; for i in 1 2 3 4 5 6; do "
                        "dd if=/dev/zero of=%s bs=4096 count=400 status=none; sleep 0.3; done"
                        % (cg, data)], check=True, timeout=60)
        time.sleep(1.2)
        for a in agents:
            c.eq(a.stop(), 0, "agent exits 0")
        files = [a.out for a in agents]
        wl = "cgroup:" + rel
        _, plain = flatten(files, os.path.join(tmp, "plain"))
        mine = [r for r in plain if r["workload"] == wl]
        per_host = {h: sum(float(r["write-syscall.count"]) for r in mine if r["host"] == h)
                    for h in ("node-a", "node-b")}
        # the dd writes, and the shell's own write moving it into the cgroup
        c.check(per_host["node-a"] == per_host["node-b"] and
                WRITES <= per_host["node-a"] <= WRITES + 2,
                "each node counted the workload's writes (per-node rows): %s" % per_host)
        p, joined = flatten(files, os.path.join(tmp, "joined"), join="0.5")
        c.eq(p.returncode, 0, "flatten --join-nodes exits 0")
        c.check("left out" not in p.stderr, "no row off the grid (aligned windows)")
        rows = [r for r in joined if r["workload"] == wl]
        c.check(len(rows) >= 2, "the workload spans %d intervals of the grid" % len(rows))
        c.eq(sorted({int(r["hosts"]) for r in rows}), [2], "every interval holds both nodes")
        c.eq(sum(float(r["write-syscall.count"]) for r in rows), sum(per_host.values()),
             "joined, the writes are both nodes' writes")
        by_end = {}
        for r in mine:
            g = (int(r["ts_start"]) + int(r["ts_end"])) / 2
            by_end.setdefault(-(-g // 500000) * 500000, []).append(float(r["write-syscall.count"]))
        c.eq({int(r["grid_end"]): float(r["write-syscall.count"]) for r in rows},
             {int(k): sum(v) for k, v in by_end.items()},
             "each interval's writes are the sum of the nodes' windows in it")
        c.check(all(int(r["grid_end"]) % 500000 == 0 for r in rows),
                "intervals end on multiples of 0.5 s")
    finally:
        for a in agents:
            if a.proc.poll() is None:
                a.proc.kill()
        try:
            os.rmdir(cg)
        except OSError:
            pass
        shutil.rmtree(tmp, ignore_errors=True)
    c.done()


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""BPF test: 32-bit system calls are counted apart, not taken for others.

int 0x80 from a 64-bit process runs the ia32 table, where 5 is open, 4
write and 6 close; the 64-bit table, which the programs map, has fstat,
stat and lstat there. tests/bpf/compatload.c opens a file, writes it N
times and closes it that way. None of those may show up as the process's
stat, fstat or lstat, and the agent record must count every one of them
in compat_calls. Before, the process read N stat calls, one fstat and one
lstat.

usage: test_compat.py AGENT COMPATLOAD
"""
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from agentlib import Agent, Checks, require_root  # noqa: E402

N = 300


def main():
    agent_bin, load = sys.argv[1:3]
    require_root()
    c = Checks()
    tmp = tempfile.mkdtemp(prefix="dc-compat-")
    path = os.path.join(tmp, "c.dat")
    a = Agent(agent_bin, "interval = 0.2;\n")
    try:
        p = subprocess.run([load, path, str(N)], stdout=subprocess.PIPE, check=True, timeout=60)
        pid = int(p.stdout.decode().split()[-1])
        size = os.path.getsize(path)
    finally:
        rc = a.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    c.eq(rc, 0, "agent exits 0")
    c.eq(size, N * 100, "the 32-bit writes ran")
    ops = {}
    for r in a.records():
        if r["type"] == "features" and r["pid"] == pid:
            for k, o in r["ops"].items():
                ops[k] = ops.get(k, 0) + o["count"]
    c.eq({k: ops.get(k, 0) for k in ("stat", "fstat", "lstat")}, {"stat": 0, "fstat": 0, "lstat": 0},
         "no 32-bit call taken for the 64-bit call of its number (ops: %s)" % ops)
    compat = sum(r.get("compat_calls", 0) for r in a.records() if r["type"] == "agent")
    c.check(compat >= N + 2, "the agent record counts them: compat_calls %d, the workload made %d"
            % (compat, N + 2))
    return c.done()


if __name__ == "__main__":
    sys.exit(main())

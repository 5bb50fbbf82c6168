#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""BPF test: 32-bit system calls are counted apart, not taken for others.

int 0x80 from a 64-bit process runs the ia32 table, where 5 is open, 4
write and 6 close; the 64-bit table, which the programs map, has fstat,
stat and lstat there. tests/bpf/compatload.c opens a file, writes it N
times and closes it that way. None of those may show up as the process's
stat, fstat or lstat, and the agent record must count every one of them
in compat_calls. Before, the process read N stat calls, one fstat and one
lstat. On a kernel that runs no 32-bit calls (int 0x80 faults) it checks
that none is counted; tests/vm counts them on Debian's kernel.

usage: test_compat.py AGENT COMPATLOAD
"""
import os
import shutil
import signal
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
        p = subprocess.run([load, path, str(N)], stdout=subprocess.PIPE, timeout=60)
        size = os.path.getsize(path) if os.path.exists(path) else 0
    finally:
        rc = a.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    if p.returncode == -signal.SIGSEGV:
        # No ia32 emulation (CONFIG_IA32_EMULATION=n, ia32_emulation=false):
        # int 0x80 faults, and no process here can make a 32-bit call. What
        # is left to prove is the other side: not one of the node's 64-bit
        # calls taken for a 32-bit one (TS_COMPAT misread would drop them all
        # from the features). The ia32 calls themselves are counted in the
        # VM on Debian's kernel (vm-vfs, syscall/compat).
        print("int 0x80 faults: this kernel runs no 32-bit system calls; "
              "their counting is checked in the VM (vm-vfs syscall/compat)", flush=True)
        c.eq(rc, 0, "agent exits 0")
        ag = [r for r in a.records() if r["type"] == "agent"]
        c.eq(sum(r.get("compat_calls", 0) for r in ag), 0,
             "no call counted as 32-bit where none can run (%d windows)" % len(ag))
        c.check(any(r["type"] == "features" and r["ops"] for r in a.records()),
                "the node's 64-bit calls are counted")
        return c.done()
    c.eq(p.returncode, 0, "the workload exits 0")
    pid = int(p.stdout.decode().split()[-1])
    c.eq(rc, 0, "agent exits 0")
    c.eq(size, N * 100, "the 32-bit writes ran")
    ops = {}
    for r in a.records():
        if r["type"] == "features" and r["pid"] == pid:
            for k, o in r["ops"].items():
                ops[k] = ops.get(k, 0) + o["count"]
    c.eq({k: ops.get(k, 0) for k in ("stat", "fstat", "lstat")}, {"stat": 0, "fstat": 0, "lstat": 0},
         "no 32-bit call taken for the 64-bit call of its number (ops: %s)" % ops)
    # its 64-bit calls are still the process's: printf's write to the pipe
    c.check(ops.get("write", 0) >= 1, "the process's own 64-bit write is counted")
    compat = sum(r.get("compat_calls", 0) for r in a.records() if r["type"] == "agent")
    # at least the workload's; a few more only if something else on the
    # node runs 32-bit code meanwhile, not every call taken for one
    c.check(N + 2 <= compat <= N + 100,
            "the agent record counts them: compat_calls %d, the workload made %d"
            % (compat, N + 2))
    return c.done()


if __name__ == "__main__":
    sys.exit(main())

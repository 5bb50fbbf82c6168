#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The agent's start, binary against binary: exec to READY=1 and the
memory the start takes at its highest.

Each binary starts in turn with the default configuration (traces to the
run's directory), alternating, ROUNDS times; the time from exec to READY=1
on its notify socket, then VmHWM (the kernel's high-water mark of its RSS)
and VmRSS 0.3 s later, and a stop. The agent's records sample its RSS at each
window's close, which is after the start: VmHWM sees the start too.

usage: start_bench.py AGENT_BINARY ... [--rounds R]
  e.g. start_bench.py /tmp/datacrumbs-old build/agent/datacrumbs --rounds 7
"""
import argparse
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import syscall_bench as sb  # noqa: E402  (the agent's stop)


def start_once(binary, tmp):
    """(ms from exec to READY=1, VmHWM KiB, VmRSS KiB)."""
    sock_path = os.path.join(tmp, "notify")
    if os.path.exists(sock_path):
        os.unlink(sock_path)
    conf = os.path.join(tmp, "start.conf")
    with open(conf, "w") as f:
        f.write('traces = { output = { dir = "%s/traces"; }; };\n' % tmp)
    err = os.path.join(tmp, "agent.err")
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as s, open(err, "w") as ef:
        s.bind(sock_path)
        s.settimeout(0.05)
        t0 = time.monotonic()
        p = subprocess.Popen([binary, "-c", conf, "-o", os.path.join(tmp, "out.jsonl")],
                             env=dict(os.environ, NOTIFY_SOCKET=sock_path), stderr=ef)
        try:
            while True:
                try:
                    if "READY=1" in s.recv(4096).decode().split("\n"):
                        break
                except socket.timeout:
                    pass
                if p.poll() is not None or time.monotonic() - t0 > 60:
                    with open(err) as f:
                        lines = [l.strip() for l in f if l.strip()]
                    sys.exit("start_bench: %s did not become ready: %s"
                             % (binary, lines[-1] if lines else "exit status %s" % p.returncode))
            ms = (time.monotonic() - t0) * 1000
            time.sleep(0.3)
            st = sb.proc_status(p.pid)
        finally:
            if p.poll() is None:
                sb.stop(p)
    return ms, st["VmHWM"], st["VmRSS"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("binaries", nargs="+")
    ap.add_argument("--rounds", type=int, default=7)
    a = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("start_bench: run as root")
    res = {b: [] for b in a.binaries}
    with tempfile.TemporaryDirectory(prefix="dc-start-") as tmp:
        for r in range(a.rounds):
            for b in (a.binaries if r % 2 == 0 else a.binaries[::-1]):
                res[b].append(start_once(b, tmp))
    for b, v in res.items():
        print(b)
        for i, what in enumerate(("READY ms", "VmHWM KiB", "VmRSS KiB")):
            x = [r[i] for r in v]
            print("  %-10s median %.0f [%s]" % (what + ":", statistics.median(x),
                                                " ".join("%.0f" % y for y in x)))


if __name__ == "__main__":
    main()

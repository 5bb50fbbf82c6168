#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The benchmark suite runs end to end (bench/suite.py --quick) and prints
well-formed tables: every workload has a row per configuration, each with
numbers or the reason it did not run; the project's own tracers (baselines
and agents) must have run; every goal has a measured value and a verdict.
No speed goal is checked here: the verdicts are the suite's to print.
usage: test_suite.py BUILD_DIR"""
import json
import math
import re
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import suite  # noqa: E402

OPTIONAL = {"bpftrace", "bpftrace-feat", "bcc"}  # other packages (install-deps.sh bench); a reason if absent


def number(s):
    try:
        return math.isfinite(float(s))
    except ValueError:
        return False


def main():
    if os.geteuid() != 0:
        print("test_suite: needs root (BPF)")
        sys.exit(77)
    fails = []
    with tempfile.TemporaryDirectory() as d:
        js = os.path.join(d, "r.json")
        p = subprocess.run([sys.executable, suite.__file__, sys.argv[1], "--quick", "--json", js],
                           capture_output=True, text=True, timeout=540)
        print(p.stdout)
        if p.returncode:
            sys.exit("suite.py --quick failed (%d): %s" % (p.returncode, p.stderr[-2000:]))
        r = json.load(open(js))
    out = p.stdout
    for wl, _ in suite.WORKLOADS:
        block = out.split("\n[%s] " % wl)
        if len(block) != 2:
            fails.append("no table for %s" % wl)
            continue
        lines = block[1].split("\n")[2:2 + len(suite.CONFIGS)]
        for c, line in zip(suite.CONFIGS, lines):
            f = line.split()
            if not f or f[0] != c:
                fails.append("%s: row %r where %s was expected" % (wl, line, c))
            elif line[len(c):].strip().startswith("not run:"):
                if c not in OPTIONAL:
                    fails.append("%s: %s did not run: %s" % (wl, c, line))
                elif len(line.split("not run:", 1)[1].strip()) < 10:
                    fails.append("%s: %s has no reason" % (wl, c))
            elif len(f) != 6 or not all(number(x) for x in (f[1], f[2], f[5].rstrip("%"))) \
                    or not f[5].endswith("%"):
                fails.append("%s: malformed row %r" % (wl, line))
        row = r["tables"][wl]
        for c in suite.CONFIGS:
            v = row.get(c)
            if v is None:
                fails.append("%s: %s missing from the results" % (wl, c))
            elif "not_run" not in v and not (math.isfinite(v["ns_per_call"]) and v["ns_per_call"] > 0):
                fails.append("%s: %s ns/call %r" % (wl, c, v["ns_per_call"]))
    sc = r["figures"].get("suite_cost", {}).get("default", {})
    # read before the stop: the last window's record may come after it, so
    # only its presence is checked, not that it tops every sampled RSS
    if not sc.get("hwm") or not all(number(x) and x > 0 for x in sc["hwm"]):
        fails.append("default's peak RSS (VmHWM) not read: %r" % sc.get("hwm"))
    bc = r["figures"].get("bpf_call", {})
    for c in ("empty", "minagg", "default"):
        if not bc.get(c) or not all(number(x) and x > 0 for x in bc[c]):
            fails.append("BPF time per call of %s in tmpfs-4k: %r" % (c, bc.get(c)))
    dp = r["figures"].get("dispatch")
    if not dp or len(dp) < 5 or not all(number(x) for x in dp):
        fails.append("the dispatch's paired runs: %r" % dp)
    if "\ndispatch: the 4 KiB loop under empty less untraced, back to back, " not in out:
        fails.append("the dispatch's paired runs not printed")
    er = r["figures"].get("bpf_run", {}).get("empty")
    if not er or not all(number(x) and x > 0 for x in er):
        fails.append("BPF time per run of the empty programs: %r" % er)
    if "less stats: the run time less the statistics' own clock read, " not in out or \
            "not taken off" in out:
        fails.append("the [bpf time] table does not take the statistics' clock read off")
    if "\n[bpf time, tmpfs-4k] " not in out:
        fails.append("no [bpf time, tmpfs-4k] table")
    goals = out.split("\n[goals] ")
    if len(goals) != 2:
        fails.append("no goals table")
    else:
        rows = [l for l in goals[1].split("\n")[2:] if l.strip() and not l.startswith(("runs ", "  ", "no foreign", "waited", "raw results"))]
        if len(rows) < 9:
            fails.append("%d goal rows, expected at least 9: %s" % (len(rows), rows))
        for l in rows:
            if not l.startswith("NOT RESOLVED:") and \
                    not re.search(r" (PASS|FAIL|NOT MEASURED|NOT RESOLVED \(spread\))( |$)", l):
                fails.append("goal row without a verdict: %r" % l)
    for g in r["goals"]:
        # one quick round of the 4 KiB loop can show the minimal
        # aggregation adding nothing on a noisy host (seen in CI once):
        # a verdict the suite may give, as long as its programs were seen
        # to take time (checked above, BPF time per call of minagg)
        noise = (g["goal"].startswith("per call <= 1.25x the minimal aggregation")
                 and "minagg added nothing" in g["measured"] and bc.get("minagg"))
        if g["value"] is None and not g["goal"].startswith("per call < 1/3 of bpftrace") \
                and not noise:
            fails.append("goal not measured: %s (%s)" % (g["goal"], g["measured"]))
    for key, who in (("bpf_time", "the default agent"), ("bpf_time_minagg", "minagg")):
        bt = r["figures"].get(key, {})
        for wl in suite.STREAMS:
            v = bt.get(wl)
            if not v or not all(number(x[1]) and x[1] > 0 and number(x[0]) and number(x[2])
                                and x[2] > 0 for x in v):
                fails.append("BPF time of %s in %s: %r" % (who, wl, v))
    if "\n[bpf time] " not in out:
        fails.append("no [bpf time] table")
    at = r["figures"]["attach"]
    if not at["default"] or not at["uprobes"] or \
            any(v[0] is None for v in at["uprobes"].values()):
        fails.append("attach times missing: %s" % at)
    for f in fails:
        print("FAIL: " + f)
    print("%d problems" % len(fails))
    sys.exit(1 if fails else 0)


if __name__ == "__main__":
    main()

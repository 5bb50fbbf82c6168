#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A node starting processes: about a hundred short shells a second, each
running `cat` and `ls` (kafka_bench.busy), under one or more agent binaries,
alternating, for a few rounds. Prints per binary the medians over rounds of
what the agent records say about the busy windows: the calls left
unattributed for want of a slot, the map-full counts of the system-call and
file maps, the slots in use, the close's times, the agent's own CPU, and the
system-call programs' run time per call.

usage: churn_bench.py [--rounds N] [--seconds S] LABEL=AGENT_BINARY[|EXTRA_CONFIG] ...
  e.g. churn_bench.py 'old=/tmp/datacrumbs-old' 'new=build/agent/datacrumbs'
       churn_bench.py 'f4k=build/agent/datacrumbs' \
                      'f16k=build/agent/datacrumbs|maps = { files_max_keys = 16384; };'
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kafka_bench  # noqa: E402  (busy())

CONF = "interval = 1.0;\nbudget = { cpu = 0; };\n"


def agent_records(prog, agent, extra, seconds, tmp, workload):
    """The records of the agent (1 s windows, no budget, extra config
    appended) run for seconds + 3 while workload() runs from 1.5 s in."""
    out = os.path.join(tmp, "records.jsonl")
    conf = os.path.join(tmp, "bench.conf")
    with open(conf, "w") as f:
        f.write(CONF + extra + "\n")
    if os.path.exists(out):
        os.unlink(out)
    ag = subprocess.Popen([agent, "-c", conf, "-d", str(seconds + 3), "-o", out],
                          stderr=subprocess.DEVNULL)
    time.sleep(1.5)
    workload()
    if ag.wait() != 0:
        sys.exit("%s: %s exited with %d" % (prog, agent, ag.returncode))
    with open(out) as f:
        return [json.loads(line) for line in f]


def run(agent, extra, seconds, tmp):
    recs = agent_records("churn_bench", agent, extra, seconds, tmp,
                         lambda: kafka_bench.busy(seconds))
    # the windows wholly inside the busy phase
    ag = [r for r in recs if r["type"] == "agent"][2:2 + seconds - 1]
    events = sum(r["events"] for r in ag)
    unattr = sum(o["count"] for r in ag for o in r["unattributed"].values())

    def prog(name):
        runs = sum(p["runs"] for r in ag for p in r["programs"] if p["name"].startswith(name))
        ns = sum(p["run_ns"] for r in ag for p in r["programs"] if p["name"].startswith(name))
        return ns / runs if runs else 0.0

    med = statistics.median
    return {
        "unattributed %": 100.0 * unattr / events if events else 0.0,
        "agg_map_full/win": med(r["drops"]["agg_map_full"] for r in ag),
        "files_full/win": med(r["files"]["drops"]["agg_map_full"] for r in ag),
        "slots max": max(r["maps"]["slots_in_use"] for r in ag),
        "file slots max": max(r["files"].get("slots_in_use", -1) for r in ag),
        "flip ms": med(r["cost"]["flip_us"] for r in ag) / 1000,
        "drain ms": med(r["cost"]["drain_us"] for r in ag) / 1000,
        "user+sys ms/win": med((r["cost"]["cpu_user_us"] + r["cost"]["cpu_sys_us"]) / 1000
                               for r in ag),
        "features/win": med(r["records"] for r in ag),
        "enter ns": prog("dc_enter"),
        "exit ns": prog("dc_exit"),
    }


def parse_agents(prog, specs):
    """[(label, binary, extra config)] from LABEL=AGENT_BINARY[|EXTRA_CONFIG]
    arguments; exits saying which one is malformed."""
    if os.geteuid() != 0:
        sys.exit("%s: run as root" % prog)
    agents = []
    for x in specs:
        label, _, rest = x.partition("=")
        binary, _, extra = rest.partition("|")
        if not label or not os.access(binary, os.X_OK):
            sys.exit("%s: each agent as LABEL=EXECUTABLE[|EXTRA_CONFIG], not %r" % (prog, x))
        agents.append((label, binary, extra))
    return agents


def print_medians(res):
    """One row per agent: the median over rounds of every column."""
    cols = list(next(iter(res.values()))[0])
    print("%-10s" % "agent" + "".join("%17s" % c for c in cols))
    for label, rows in res.items():
        print("%-10s" % label + "".join("%17.1f" % statistics.median(r[c] for r in rows)
                                        for c in cols))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=int, default=7)
    ap.add_argument("agents", nargs="+", help="LABEL=AGENT_BINARY[|EXTRA_CONFIG]")
    a = ap.parse_args()
    agents = parse_agents("churn_bench", a.agents)
    res = {label: [] for label, _, _ in agents}
    with tempfile.TemporaryDirectory(prefix="dc-churn-", dir="/var/tmp") as tmp:
        for _ in range(a.rounds):
            for label, binary, extra in agents:
                res[label].append(run(binary, extra, a.seconds, tmp))
    print("churn: ~100 short processes/s (sh -c 'cat ...; ls'), 1 s windows, %d rounds of %d s;"
          " medians over rounds" % (a.rounds, a.seconds))
    print_medians(res)


if __name__ == "__main__":
    main()

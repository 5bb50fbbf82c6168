#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Kafka publishing: throughput per core, delivery latency, bytes on the wire.

All against the mock broker (tests/kafka/mock-broker) on loopback:
 1. corpus: a few seconds of the real agent on a busy node, so the records
    pushed below are real feature vectors, not synthetic ones;
 2. throughput: bench/kafka-load pushes them through the agent's own Kafka
    sink and spool (fsync on, disk), zstd and uncompressed, and reports
    records/s and MB/s per CPU-second of the publishing process, and the
    payload and wire bytes from librdkafka's statistics;
 3. latency: the agent with 1 s windows for --seconds, window close to the
    last delivery report of the window, from its agent records.

usage: kafka_bench.py BUILD_DIR [--windows N] [--per-window M] [--seconds S]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time


def broker(build):
    p = subprocess.Popen([os.path.join(build, "tests/kafka/mock-broker"), "datacrumbs.features",
                          "datacrumbs.agent", "datacrumbs.traces", "datacrumbs.stacks"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    return p, p.stdout.readline().split()[1]


def busy(seconds):
    """Many short processes and some bulk I/O: a node with a few hundred active processes."""
    end = time.monotonic() + seconds
    procs = []
    while time.monotonic() < end:
        procs.append(subprocess.Popen(["sh", "-c", "cat /etc/hostname /etc/os-release > /dev/null; "
                                       "ls /usr/lib > /dev/null"]))
        if len(procs) % 25 == 0:
            subprocess.run(["dd", "if=/dev/zero", "of=/dev/null", "bs=64k", "count=200"],
                           capture_output=True)
        time.sleep(0.01)
    for p in procs:
        p.wait()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--windows", type=int, default=200)
    ap.add_argument("--per-window", type=int, default=500)
    ap.add_argument("--seconds", type=int, default=30)
    a = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("kafka_bench: run as root")
    tmp = tempfile.mkdtemp(prefix="dc-kbench-", dir="/var/tmp")
    agent = os.path.join(a.build, "agent/datacrumbs")

    corpus = os.path.join(tmp, "corpus.jsonl")
    ag = subprocess.Popen([agent, "-i", "0.5", "-d", "6", "-o", corpus], stderr=subprocess.DEVNULL)
    time.sleep(1)
    busy(4)
    ag.wait()
    recs = [l for l in open(corpus) if '"type":"features"' in l]
    print("corpus: %d real feature records, %.0f bytes on average"
          % (len(recs), statistics.mean(len(l) for l in recs)))

    print("\nthroughput: %d windows x %d records through the agent's Kafka sink and spool"
          % (a.windows, a.per_window))
    print("%-6s %10s %8s %11s %10s %13s %13s %11s" % ("codec", "records", "wall s", "rec/s/core",
                                                      "MB/s/core", "payload B", "wire B", "wire/rec"))
    wires = {}
    for codec in ("zstd", "none"):
        bp, bs = broker(a.build)
        spool = os.path.join(tmp, "spool-" + codec)
        out = subprocess.run([os.path.join(a.build, "bench/kafka-load"), bs, spool, corpus,
                              str(a.windows), str(a.per_window), "compression.codec=" + codec],
                             capture_output=True, text=True, check=True).stdout.split()
        bp.stdin.close()
        bp.wait()
        n, nbytes, wall, cpu = int(out[0]), int(out[1]), float(out[2]), float(out[3])
        wire, payload = int(out[4]), int(out[5])
        wires[codec] = wire
        print("%-6s %10d %8.2f %11.0f %10.1f %13d %13d %11.1f" % (
            codec, n, wall, n / cpu, nbytes / cpu / 1e6, payload, wire, wire / n))
    if wires.get("none"):
        print("zstd puts %.1f%% of the uncompressed bytes on the wire (%.1fx smaller)"
              % (100.0 * wires["zstd"] / wires["none"], wires["none"] / max(wires["zstd"], 1)))

    print("\nlatency: the agent, 1 s windows, %d s, busy node" % a.seconds)
    bp, bs = broker(a.build)
    conf = os.path.join(tmp, "lat.conf")
    with open(conf, "w") as f:
        f.write('interval = 1.0;\noutput = { path = "%s"; };\nkafka = { brokers = "%s"; };\n'
                'spool = { dir = "%s"; };\n' % (os.path.join(tmp, "lat.jsonl"), bs,
                                                  os.path.join(tmp, "spool-lat")))
    ag = subprocess.Popen([agent, "-c", conf, "-d", str(a.seconds)], stderr=subprocess.DEVNULL)
    time.sleep(1)
    busy(a.seconds - 2)
    ag.wait()
    bp.stdin.close()
    bp.wait()
    lat = []
    for l in open(os.path.join(tmp, "lat.jsonl")):
        r = json.loads(l)
        if r["type"] == "agent" and r["sinks"]["kafka"]["delivery_ms_max"]:
            lat.append(r["sinks"]["kafka"]["delivery_ms_max"])
    lat.sort()
    if lat:
        p99 = lat[min(len(lat) - 1, int(len(lat) * 0.99))]
        print("window close -> last delivery report, over %d windows: p50 %d ms, p99 %d ms, max %d ms "
              "(goal p99 < 250 ms)" % (len(lat), statistics.median(lat), p99, lat[-1]))
    print("work files: %s" % tmp)


if __name__ == "__main__":
    main()

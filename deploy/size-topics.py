#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Size the Kafka topics of a datacrumbs fleet from what one agent wrote.

usage: size-topics.py RECORDS.jsonl [--nodes 10000] [--retention-days 7] [--replication 3]

RECORDS.jsonl is an agent's local output (output.path, by default
/var/lib/datacrumbs/records.jsonl): the same bytes as the Kafka message
values. Run the agent for a few minutes on a node whose load is typical of
the fleet, with Kafka on if you can (the agent record then carries
librdkafka's wire and payload byte counts, so the compression the topics
will see is measured, not assumed). Only the last run in the file is used.
Prints per-node figures, then the fleet's, as docs/fleet.md explains them.
"""
import argparse
import json
import math


def pct(xs, p):
    if not xs:
        return 0
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(math.ceil(p / 100.0 * len(xs))) - 1)]


def mean(xs):
    return sum(xs) / len(xs) if xs else 0.0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("records")
    ap.add_argument("--nodes", type=int, default=10000)
    ap.add_argument("--retention-days", type=float, default=7)
    ap.add_argument("--replication", type=int, default=3)
    # one partition takes far more; this keeps a broker's share of a topic
    # spread and leaves room for replays of a spool after an outage
    ap.add_argument("--partition-mb-s", type=float, default=5.0,
                    help="wire MB/s to plan per partition (default 5)")
    a = ap.parse_args()

    recs = []
    with open(a.records, "rb") as f:
        for line in f:
            r = json.loads(line)
            r["_bytes"] = len(line) - 1  # the Kafka value: the line without its newline
            recs.append(r)
    runs = [r["run"] for r in recs if r["type"] == "agent"]
    if not runs:
        raise SystemExit("no agent record in %s" % a.records)
    run = runs[-1]
    recs = [r for r in recs if r["run"] == run]
    agents = sorted((r for r in recs if r["type"] == "agent"), key=lambda r: r["window"])
    # the first and last windows are partial (start-up, stop)
    windows = {r["window"] for r in agents[1:-1]} if len(agents) > 2 else {r["window"] for r in agents}
    agents = [r for r in agents if r["window"] in windows]
    interval = mean([r["duration_us"] for r in agents]) / 1e6
    nwin = len(windows)

    feat_topic = [r for r in recs if r["type"] != "agent" and r["window"] in windows]
    by_type = {}
    for r in feat_topic:
        by_type.setdefault(r["type"], []).append(r["_bytes"])
    per_window = {}
    for r in feat_topic:
        w = per_window.setdefault(r["window"], [0, 0])
        w[0] += 1
        w[1] += r["_bytes"]
    recs_w = [per_window.get(w, [0, 0])[0] for w in windows]
    bytes_w = [per_window.get(w, [0, 0])[1] for w in windows]
    agent_bytes = [r["_bytes"] for r in agents]
    tr = [r["traces"] for r in agents if "traces" in r]
    tz = [t["zstd_bytes"] for t in tr]
    traw = [t["raw_bytes"] for t in tr]
    tev = [t["events"] for t in tr]

    # librdkafka's totals since start: the ratio is the topics' compression
    kafka = [r["sinks"]["kafka"] for r in agents if "kafka" in r.get("sinks", {})]
    ratio = None
    if kafka and kafka[-1]["payload_bytes"] > 0:
        ratio = kafka[-1]["wire_bytes"] / kafka[-1]["payload_bytes"]

    print("run %s: %d full windows of %.3f s" % (run, nwin, interval))
    print("\nper node")
    print("  features topic, per record (bytes): " + "; ".join(
        "%s %d records, mean %.0f, p50 %d, p90 %d, max %d" % (t, len(v), mean(v), pct(v, 50), pct(v, 90), max(v))
        for t, v in sorted(by_type.items())))
    print("  features topic, per window: %.1f records (p95 %d), %.0f bytes (p95 %d)"
          % (mean(recs_w), pct(recs_w, 95), mean(bytes_w), pct(bytes_w, 95)))
    print("  agent topic: 1 record per window, mean %.0f bytes (max %d)" % (mean(agent_bytes), max(agent_bytes)))
    if tr:
        print("  traces topic: 1 message per window, zstd_bytes mean %.0f (p95 %d, max %d); raw %.0f; %.0f events"
              % (mean(tz), pct(tz, 95), max(tz), mean(traw), mean(tev)))
    if ratio is not None:
        print("  on the wire (librdkafka wire_bytes / payload_bytes, all topics): %.3f" % ratio)
    else:
        print("  on the wire: no Kafka sink in this run; assuming 0.30 (zstd of small JSON batches)")
        ratio = 0.30

    n = a.nodes
    per_s = 1.0 / interval
    rows = [
        ("features", mean(recs_w) * per_s, mean(bytes_w) * per_s),
        ("agent", per_s, mean(agent_bytes) * per_s),
    ]
    if tr:
        # trace values are zstd frames already: librdkafka's zstd gains little
        rows.append(("traces", per_s, mean(tz) * per_s))
    print("\n%d nodes, %.0f days retention, replication %d" % (n, a.retention_days, a.replication))
    print("  %-9s %12s %12s %12s %14s %11s" % ("topic", "msgs/s", "payload MB/s", "wire MB/s", "disk TB (xRF)", "partitions"))
    for name, msgs, payload in rows:
        wire = payload if name == "traces" else payload * ratio
        msgs_f, payload_f, wire_f = msgs * n, payload * n / 1e6, wire * n / 1e6
        disk = wire_f * 1e6 * 86400 * a.retention_days * a.replication / 1e12
        parts = max(1, int(math.ceil(wire_f / a.partition_mb_s)))
        print("  %-9s %12.0f %12.2f %12.2f %14.2f %11d" % (name, msgs_f, payload_f, wire_f, disk, parts))


if __name__ == "__main__":
    main()

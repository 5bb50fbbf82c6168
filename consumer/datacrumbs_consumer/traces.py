# SPDX-License-Identifier: Apache-2.0
"""The seeds' trace query on sampled traces (docs/traces.md), on Dask.

1. the calls on files whose path matches a pattern (FH metadata: fhash -> path);
2. their intervals [ts, ts + dur), merged;
3. every event overlapping the merged intervals;
4. time per (name, cat): sampled time, and estimated time (dur x weight).

Inputs: .pfw.zst files (concatenated zstd frames of NDJSON; one Dask partition
per file), plain .pfw NDJSON, or the Kafka traces topic (one frame per message).
"""
import functools
import json
import logging
import re

import numpy as np
import pandas as pd

from . import sources as S

log = logging.getLogger("datacrumbs_consumer")

EVENT_COLS = ["name", "cat", "pid", "tid", "ts", "dur", "te", "fhash", "size", "weight"]


# ---- intervals (pure) ---------------------------------------------------

def merge_intervals(iv):
    """Half-open [start, end) intervals -> sorted, disjoint, merged (touching ones join)."""
    iv = sorted((float(a), float(b)) for a, b in iv if b > a)
    out = []
    for a, b in iv:
        if out and a <= out[-1][1]:
            if b > out[-1][1]:
                out[-1][1] = b
        else:
            out.append([a, b])
    return [(a, b) for a, b in out]


def overlaps(starts, ends, merged):
    """Boolean mask: [starts[i], ends[i]) overlaps some merged interval.

    Zero-length events (ends == starts) count when their instant lies inside.
    """
    starts = np.asarray(starts, float)
    ends = np.asarray(ends, float)
    if not merged:
        return np.zeros(len(starts), bool)
    ms = np.array([a for a, _ in merged])
    me = np.array([b for _, b in merged])
    # the last merged interval starting before the event's end (or at it, for instants)
    i = np.searchsorted(ms, np.maximum(ends, starts + 1e-9), side="left") - 1
    ok = i >= 0
    j = np.where(ok, i, 0)
    return ok & (me[j] > starts)


# ---- loading ------------------------------------------------------------

def iter_trace_lines(path):
    if path.endswith(".zst"):
        # a frame cut short at the end (a batch being written as this
        # reads, a crash) is said, the frames before it read; a stream
        # reader read a truncated file as "(no events)" without a word
        yield from S.iter_lines(path, strict=False)
    else:
        with open(path, "rb") as f:
            yield from f


def parse_trace_lines(lines, where=""):
    """NDJSON lines -> (events frame, {fhash: path})."""
    ev = []
    names = {}
    for n, line in enumerate(lines, 1):
        line = line.strip()
        if not line or line[:1] == b"[":
            continue
        try:
            v = json.loads(line)
        except ValueError as e:
            raise ValueError("%s line %d: not JSON: %s" % (where, n, e)) from None
        if v.get("ph") == "M":
            a = v.get("args") or {}
            if v.get("name") == "FH":
                names[a.get("value")] = a.get("name")
            continue
        if v.get("ph") != "X":
            continue
        a = v.get("args") or {}
        ts = int(v["ts"])
        dur = float(v.get("dur", 0))
        ev.append((v["name"], v.get("cat", ""), v.get("pid", 0), v.get("tid", 0), ts, dur,
                   ts + dur, a.get("fhash"), a.get("size", 0), a.get("weight", 1)))
    df = pd.DataFrame(ev, columns=EVENT_COLS)
    return _types(df), names


def _types(df):
    return df.astype({"name": object, "cat": object, "pid": "int64", "tid": "int64",
                      "ts": "int64", "dur": "float64", "te": "float64", "fhash": object,
                      "size": "int64", "weight": "int64"})


def load_file(path):
    return parse_trace_lines(iter_trace_lines(path), path)


def load_kafka(conf, part):
    lines = [ln for ln, _ in S.read_kafka_partition(conf, part, by_window=False)]
    return parse_trace_lines(lines, "kafka:%s[%d]" % (part[0], part[1]))


# ---- the query ----------------------------------------------------------

def _first(x):
    return x[0]


def _second(x):
    return x[1]


BY_COLS = ["name", "cat", "events", "calls_est", "dur_us", "dur_us_est"]


def _file_intervals(df, hashes):
    sel = df["fhash"].isin(hashes)
    return pd.DataFrame(merge_intervals(zip(df.loc[sel, "ts"], df.loc[sel, "te"])),
                        columns=["start", "end"], dtype=float)


def _overlapping_by(df, merged):
    lo, hi = merged[0][0], merged[-1][1]
    df = df[(df["te"] >= lo) & (df["ts"] <= hi)]
    df = df[overlaps(df["ts"], df["te"], merged)]
    g = df.assign(events=1, dur_est=df["dur"] * df["weight"]).groupby(["name", "cat"],
                                                                       as_index=False)
    out = g.agg(events=("events", "sum"), calls_est=("weight", "sum"), dur_us=("dur", "sum"),
                dur_us_est=("dur_est", "sum"))
    return out.astype({c: float for c in BY_COLS[2:]})


def _compute(client, x):
    """On this query's client (not whichever Dask holds as its default)."""
    if client is None:
        import dask
        return dask.compute(x)[0]
    return client.compute(x, sync=True)


def query(client, loaders, pattern):
    """Run the query; returns (files matched {fhash: path}, merged intervals, time per (name, cat))."""
    import dask
    import dask.dataframe as dd
    parts = [dask.delayed(f)(*a) for f, a in loaders]
    parts = client.persist(parts) if client else parts
    evs = [dask.delayed(_first)(p) for p in parts]
    fh = _compute(client, [dask.delayed(_second)(p) for p in parts])
    names = {}
    for d in fh:
        names.update(d)
    rx = re.compile(pattern)
    hashes = sorted(h for h, path in names.items() if path is not None and rx.search(path))
    matched = {h: names[h] for h in hashes}
    meta = _types(pd.DataFrame(columns=EVENT_COLS))
    events = dd.from_delayed(evs, meta=meta)
    hs = set(hashes)
    # each partition merges its own intervals; the merge of those is the answer
    chunks = events.map_partitions(functools.partial(_file_intervals, hashes=hs),
                                   meta=pd.DataFrame({"start": pd.Series(dtype=float),
                                                      "end": pd.Series(dtype=float)}))
    merged = merge_intervals(_compute(client, chunks).itertuples(index=False, name=None))
    if not merged:
        return matched, merged, pd.DataFrame(columns=BY_COLS)
    # each partition sums its overlapping events per (name, cat); the sums add up
    part = events.map_partitions(functools.partial(_overlapping_by, merged=merged),
                                 meta=pd.DataFrame({c: pd.Series(dtype=object if c in (
                                     "name", "cat") else float) for c in BY_COLS}))
    by = _compute(client, part)
    by = by.groupby(["name", "cat"], as_index=False)[BY_COLS[2:]].sum()
    by = by.astype({"events": "int64", "calls_est": "int64"})
    by = by.sort_values(["dur_us", "name"], ascending=[False, True]).reset_index(drop=True)
    return matched, merged, by

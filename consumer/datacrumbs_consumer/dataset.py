# SPDX-License-Identifier: Apache-2.0
"""The flattened table on Dask: records -> one row per (host, run, window, workload).

The loading and the per-window flattening run as Dask tasks, one per
partition of the input (sources.py); a LocalCluster by default, or any
scheduler's address for a fleet's data.
"""
import json
import logging

import numpy as np
import pandas as pd

from . import records as R
from . import sources as S

log = logging.getLogger("datacrumbs_consumer")


def make_client(scheduler=None, workers=None, threads=None, processes=True):
    """A Dask client: an existing scheduler's address, or a LocalCluster on this node."""
    from dask.distributed import Client, LocalCluster
    # distributed sets its loggers to INFO when imported: its chatter is not ours
    for name in ("distributed", "distributed.scheduler", "distributed.worker", "distributed.core",
                 "distributed.nanny", "distributed.comm", "tornado", "bokeh"):
        logging.getLogger(name).setLevel(logging.ERROR)
    if scheduler:
        return Client(scheduler)
    kw = {"dashboard_address": ":0", "processes": processes}
    if workers:
        kw["n_workers"] = workers
    if threads:
        kw["threads_per_worker"] = threads
    return Client(LocalCluster(**kw))


class Labels:
    """The generator's labels: which (host, pid, time span) is which workload, and its bandwidth."""

    def __init__(self, rows):
        self.rows = rows
        self.by_pid = {}
        for r in rows:
            self.by_pid.setdefault((r["host"], r["pid"]), []).append(r)

    @classmethod
    def load(cls, path):
        rows = []
        with open(path) as f:
            for n, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    r = json.loads(line)
                except ValueError as e:
                    raise ValueError("%s:%d: not JSON: %s" % (path, n, e)) from None
                for k in ("workload", "host", "pid", "t_start_us", "t_end_us", "bandwidth"):
                    if k not in r:
                        raise ValueError("%s:%d: label without %r" % (path, n, k))
                rows.append(r)
        if not rows:
            raise ValueError("%s: no labels" % path)
        return cls(rows)

    def workload(self, rec):
        """The label whose process and lifetime match the record's window, else None."""
        for r in self.by_pid.get((rec.get("host"), rec.get("pid")), ()):
            if rec["ts_start"] < r["t_end_us"] and rec["ts_end"] > r["t_start_us"]:
                return r["workload"]
        return None

    def for_join(self):
        """The same labels without their timelines: what every loading task needs."""
        return Labels([{k: v for k, v in r.items() if k != "timeline"} for r in self.rows])

    def frame(self):
        return pd.DataFrame(self.rows).drop(columns=["timeline"], errors="ignore").set_index(
            "workload")

    def window_bandwidth(self, df):
        """Per row, the bytes/s the generator measured in that row's window.

        From the label's timeline (bytes moved so far, sampled every few ms on
        the wall clock), interpolated at the window's bounds. NaN for a
        workload whose label has no timeline.
        """
        out = np.full(len(df), np.nan)
        tl = {r["workload"]: np.asarray(r["timeline"], float) for r in self.rows
              if r.get("timeline")}
        for i, (wl, a, b) in enumerate(zip(df["workload"], df["ts_start"], df["ts_end"])):
            t = tl.get(wl)
            if t is None or b <= a:
                continue
            moved = np.interp([a, b], t[:, 0], t[:, 1])
            out[i] = (moved[1] - moved[0]) / ((b - a) / 1e6)
        return out


def rows_frame(lines, labels=None):
    """Record lines (one partition) -> a pandas frame of combined rows."""
    rows = []
    # repeats within this partition; a repeat in another partition (a
    # segment produced again much later) is not seen here (consumer/README.md)
    for rec in R.unique_records(S.parse_lines(lines)):
        wl = None
        if labels is not None:
            wl = labels.workload(rec)
            if wl is None:
                continue  # not one of the labelled runs: another process on the node
        rows.append(R.row_of(rec, wl))
    rows = R.combine_rows(rows)
    df = pd.DataFrame(rows)
    if df.empty:
        df = pd.DataFrame(columns=R.KEYS + R.WINDOW_COLS + ["processes"])
    return df


def _columns(df):
    return list(df.columns)


def _conform(df, cols):
    df = df.reindex(columns=cols)
    for c in cols:
        if c in ("host", "run", "workload"):
            df[c] = df[c].astype(object)
        else:
            df[c] = df[c].fillna(0).astype("float64" if "." in c else "int64")
    return df


def load_rows(client, files=None, kafka=None, labels=None, blocksize=S.BLOCKSIZE, combine=None):
    """The flattened table as a Dask dataframe, and its column list.

    files: paths (sources.expand_paths); kafka: (config dict, topic).
    combine: sum rows across partitions (default: for Kafka only; see below).
    """
    import dask
    import dask.dataframe as dd
    if files:
        parts = S.file_partitions(S.expand_paths(files), blocksize)
        lines = [dask.delayed(S.read_file_partition)(p) for p in parts]
        shuffle = False  # a window is whole in one partition
    else:
        conf, topic = kafka
        parts = S.kafka_partitions(conf, topic)
        if not parts:
            raise RuntimeError("Kafka topic %s holds no records" % topic)
        lines = [dask.delayed(S.read_kafka_partition)(conf, p) for p in parts]
        # keyed by host, a window is in one partition; keyed by host/cgroup it
        # is spread over several, so rows are summed across partitions
        shuffle = True
    log.info("reading %d partitions", len(parts))
    if labels is not None:
        labels = labels.for_join()
        if client:
            labels = client.scatter(labels, broadcast=True)  # once, not in every task
    frames = [dask.delayed(rows_frame)(ln, labels) for ln in lines]
    frames = client.persist(frames) if client else frames
    colsets = [dask.delayed(_columns)(f) for f in frames]
    colsets = client.compute(colsets, sync=True) if client else dask.compute(*colsets)
    stat = sorted({c for cs in colsets for c in cs} - set(R.KEYS + R.WINDOW_COLS + ["processes"]))
    cols = R.KEYS + R.WINDOW_COLS + ["processes"] + stat
    meta = _conform(pd.DataFrame(columns=cols), cols)
    ddf = dd.from_delayed([dask.delayed(_conform)(f, cols) for f in frames], meta=meta)
    if combine is not None:
        shuffle = combine
    if shuffle and len(parts) > 1:
        agg = {c: "sum" for c in cols if c not in R.KEYS}
        for c in R.WINDOW_COLS:
            agg[c] = "first"
        ddf = ddf.groupby(R.KEYS).agg(agg, split_out=max(1, len(parts) // 4)).reset_index()
    return ddf, cols


def _grid_part(df, interval_us):
    """records.grid_end, on_grid and node_workload on a frame's rows (a
    partition holds a few rows a window: no need for a second, vectorised
    copy of the rules)."""
    df = df.copy()
    se = list(zip(df["ts_start"], df["ts_end"]))
    df["grid_end"] = pd.Series([R.grid_end(s, e, interval_us) for s, e in se],
                               index=df.index, dtype="int64")
    df["on_grid"] = pd.Series([R.on_grid(s, e, interval_us) for s, e in se],
                              index=df.index, dtype=bool)
    df["workload"] = pd.Series([R.node_workload(w, h) for w, h in zip(df["workload"], df["host"])],
                               index=df.index, dtype=object)
    return df


def join_nodes(ddf, cols, interval_us):
    """The flattened rows of many nodes joined per (workload, interval of the
    grid): records.join_nodes on Dask. Returns the joined dataframe, its
    columns, and the rows left out because off the grid (count_rows counts
    them: a Dask scalar's compute fails in Debian 12's Dask, as len() does)."""
    meta = _grid_part(ddf._meta, interval_us)
    g = ddf.map_partitions(_grid_part, interval_us, meta=meta)
    off = g[~g["on_grid"]]
    g = g[g["on_grid"]]
    stat = [c for c in cols if c not in R.KEYS + R.WINDOW_COLS]
    split = max(1, ddf.npartitions // 4)
    # a host's rows first (two runs of one host in an interval: a restart),
    # so that hosts counts hosts; then the hosts together
    agg = {c: "sum" for c in stat}
    agg.update(ts_start="min", ts_end="max")
    per_host = g.groupby(R.JOIN_KEYS + ["host"]).agg(agg, split_out=split).reset_index()
    per_host["hosts"] = 1
    agg["hosts"] = "sum"
    out = per_host.groupby(R.JOIN_KEYS).agg(agg, split_out=split).reset_index()
    out["duration_us"] = out["ts_end"] - out["ts_start"]
    jcols = R.JOIN_KEYS + ["ts_start", "ts_end", "duration_us", "hosts"] + stat
    return out[jcols], jcols, off


def count_rows(ddf, client=None):
    """Rows of a Dask frame, one count per partition.

    len() of a grouped frame fails in Debian 12's Dask (2022.12: "'Serialize'
    object is not callable" while packing the graph); per-partition counts work.
    """
    import dask
    counts = [dask.delayed(len)(d) for d in ddf.to_delayed()]
    return int(sum(client.compute(counts, sync=True) if client else dask.compute(*counts)))


def steady_rows(df, labels):
    """Rows of windows that lie wholly inside their workload's measured run.

    A window that caught only part of a run holds a fraction of its I/O but
    would carry the whole run's bandwidth as its label: such edge windows are
    left out of training and evaluation (and counted in the report).
    """
    lab = labels.frame()
    t0 = df["workload"].map(lab["t_start_us"])
    t1 = df["workload"].map(lab["t_end_us"])
    inside = (df["ts_start"] >= t0) & (df["ts_end"] <= t1)
    return df[inside].copy(), int((~inside).sum())


def complete_rows(df):
    """Rows measured with every layer some row had: (those rows, {layer: rows
    left out}, layers every row lacked).

    A features record names the layers it lacks (docs/records.md `lacks`:
    the CPU budget's steps, a family that did not start again, one the
    kernel refused), and a row counts its records that did (lacks_<layer>).
    A layer no row has is absent from the data: its columns are zero
    everywhere and say nothing. A layer that some rows lack is unknown in
    those, and a model would read their zeros as no activity: a window at
    the budget's vfs_off would look like I/O that called no VFS function.
    """
    cols = R.lacks_columns(df.columns)
    if not len(df):
        return df, {}, []
    every = [c for c in cols if (df[c] > 0).all()]
    some = [c for c in cols if c not in every and (df[c] > 0).any()]
    missing = (df[some] > 0) if some else pd.DataFrame(index=df.index)
    out = {R.lacks_layer(c): int(missing[c].sum()) for c in some}
    keep = ~missing.any(axis=1) if some else pd.Series(True, index=df.index)
    return df[keep].copy(), out, [R.lacks_layer(c) for c in every]


def lossless_rows(df):
    """Rows none of whose records' windows lost counts node-wide (docs/
    records.md `window_losses`: events that found a map full, program runs
    the kernel skipped), and how many were left out. Whose counts were lost
    is not known, so any row of such a window may be short of them."""
    if R.LOSSY not in df.columns or not len(df):
        return df, 0
    lossy = df[R.LOSSY] > 0
    return df[~lossy].copy(), int(lossy.sum())


def agent_bandwidth(df):
    """Bytes/s the records themselves say each row moved (system-call bytes / window)."""
    cols = [c for c in df.columns if c.endswith("-syscall.bytes") and
            R.split_column(c)[0] in DATA_CALLS]
    secs = df["duration_us"].replace(0, np.nan) / 1e6
    return (df[cols].sum(axis=1) / secs).fillna(0)


DATA_CALLS = {"read", "pread64", "readv", "preadv", "preadv2", "write", "pwrite64", "writev",
              "pwritev", "pwritev2"}

# SPDX-License-Identifier: Apache-2.0
"""Records -> flat rows: one row per (window, workload), `<function>-<category>.<stat>` columns.

Pure functions on parsed records (docs/records.md); no I/O, no Dask. Every value
a row carries is additive (counts, bytes, nanoseconds), so rows of several
processes of one workload in one window, or of one process split over two
input partitions, are combined by summing; ratios (rates, time shares, mean
latencies) are made afterwards from the sums (features.py).

Column names, per layer of the record:

| record member              | column                                 | stats                          |
|----------------------------|----------------------------------------|--------------------------------|
| ops.<syscall>              | <syscall>-syscall                      | count errors bytes time_ns     |
| functions.<fn>-<category>  | <fn>-<category> (as published)         | count errors bytes time_ns     |
| block.<op>                 | <op>-block                             | count bytes queue_ns device_ns |
| page_cache                 | added|dirtied|removed-page_cache       | count (pages) bytes            |
| page_cache (mapped files)  | file_faults|fault_arounds-page_cache   | count (events)                 |
| io_uring.<opcode>          | <opcode>-io_uring                      | count errors bytes time_ns     |
| access (Darshan counters)  | <counter>-access                       | count (calls) or time_ns       |
"""
import json
import math

KEYS = ["host", "run", "window", "workload"]
# per-window facts, the same for every row of a window: kept, not summed
WINDOW_COLS = ["ts_start", "ts_end", "duration_us"]

OP_STATS = ("count", "errors", "bytes", "time_ns")
BLOCK_STATS = ("count", "bytes", "queue_ns", "device_ns")
PAGE_CACHE = ("added", "dirtied", "removed")
# I/O through file mappings: fault events, counted, not sized (docs/records.md)
PAGE_FAULTS = ("file_faults", "fault_arounds")
# Darshan counters of `access`: calls, and the time columns as time_ns
ACCESS_COUNTS = ("opens", "reads", "writes", "meta_ops", "fsyncs", "errors", "seq_reads",
                 "seq_writes", "consec_reads", "consec_writes", "rw_switches",
                 "file_not_aligned", "mem_not_aligned", "files")
ACCESS_TIMES = {"read_time_ns": "read", "write_time_ns": "write", "meta_time_ns": "meta",
                "fsync_time_ns": "fsync"}
ACCESS_BYTES = {"bytes_read": "read", "bytes_written": "write"}
# a row's count of records that lacked a layer (the record's `lacks`): not a
# feature, but what tells a layer's absence from its silence (complete_rows)
LACKS_PREFIX = "lacks_"
# a row's count of records whose window lost counts node-wide (the record's
# `window_losses`: a full map, runs the kernel skipped): not a feature
LOSSY = "records_with_window_losses"


class RecordError(ValueError):
    """A line that is not a datacrumbs record (the message says where and why)."""


def parse_line(line, where=""):
    """One JSON line -> dict; a clear error naming the place for anything else."""
    if isinstance(line, bytes):
        line = line.decode("utf-8", errors="replace")
    line = line.strip()
    if not line:
        return None
    try:
        rec = json.loads(line)
    except json.JSONDecodeError as e:
        raise RecordError("%s: not JSON (%s): %.80s" % (where or "input", e, line)) from None
    if not isinstance(rec, dict) or "type" not in rec or "schema" not in rec:
        raise RecordError("%s: not a datacrumbs record (no type/schema): %.80s"
                          % (where or "input", line))
    if rec["schema"] != 1:
        raise RecordError("%s: record schema %r, this consumer reads schema 1"
                          % (where or "input", rec["schema"]))
    return rec


def workload_of(rec):
    """Who a features record belongs to, when no label says otherwise.

    The innermost job the agent found (Slurm, Flux, pod, container, systemd
    unit), else the cgroup path, else the process. Fleets group by job; the
    generator's labels (labels.py) override this with their own workload ids.
    """
    job = rec.get("job") or {}
    wl = None
    for k in ("slurm_job", "flux_job", "pod", "container", "unit"):
        if job.get(k):
            wl = "%s:%s" % (k, job[k])
            break
    if wl is None and rec.get("cgroup") not in (None, "", "/"):
        wl = "cgroup:" + rec["cgroup"]
    if rec.get("pid") == 0:
        # the kernel's writeback for a cgroup: a workload of its own beside
        # the job's processes, as the labelled training rows (processes
        # only) have no such bytes; a model may join the two
        return "kernel:" + (wl or "pid:0")
    if wl:
        return wl
    # a pid is reused: with its start (proc_start_ns, where the record has
    # it) it names one process, whose windows the pid alone would join to
    # a later one's (node_workload adds the host)
    if rec.get("proc_start_ns"):
        return "pid:%d:%d" % (rec.get("pid", -1), rec["proc_start_ns"])
    return "pid:%d" % rec.get("pid", -1)


def _add(out, col, v):
    if v:
        out[col] = out.get(col, 0) + v


def flatten_features(rec):
    """A features record -> {column: additive value} (no key columns)."""
    out = {}
    for name, o in (rec.get("ops") or {}).items():
        for s in OP_STATS:
            _add(out, "%s-syscall.%s" % (name, s), o.get(s, 0))
    for name, o in (rec.get("functions") or {}).items():
        # already `<function>-<category>`, as in the seeds
        for s in OP_STATS:
            _add(out, "%s.%s" % (name, s), o.get(s, 0))
    for op, o in (rec.get("block") or {}).items():
        for s in BLOCK_STATS:
            _add(out, "%s-block.%s" % (op, s), o.get(s, 0))
    pc = rec.get("page_cache")
    if pc:
        psz = pc.get("page_size", 4096) or 4096
        for k in PAGE_CACHE:
            n = pc.get(k + "_pages", 0)
            _add(out, "%s-page_cache.count" % k, n)
            _add(out, "%s-page_cache.bytes" % k, n * psz)
        for k in PAGE_FAULTS:
            _add(out, "%s-page_cache.count" % k, pc.get(k, 0))
    for op, o in (rec.get("io_uring") or {}).items():
        for s in OP_STATS:
            _add(out, "%s-io_uring.%s" % (op, s), o.get(s, 0))
    acc = rec.get("access")
    if acc:
        for k in ACCESS_COUNTS:
            _add(out, "%s-access.count" % k, acc.get(k, 0))
        for k, n in ACCESS_TIMES.items():
            _add(out, "%s-access.time_ns" % n, acc.get(k, 0))
        for k, n in ACCESS_BYTES.items():
            _add(out, "%s-access.bytes" % n, acc.get(k, 0))
        for kind in ("size_read", "size_write"):
            for bucket, n in (acc.get(kind) or {}).items():
                _add(out, "%s_%s-access.count" % (kind, bucket), n)
    return out


def row_of(rec, workload=None):
    """A features record -> one row (keys, window facts, columns)."""
    row = flatten_features(rec)
    row["host"] = rec.get("host", "")
    row["run"] = rec.get("run", "")
    row["window"] = rec["window"]
    row["workload"] = workload if workload is not None else workload_of(rec)
    for c in WINDOW_COLS:
        row[c] = rec.get(c, 0)
    row["processes"] = 1
    for layer in rec.get("lacks") or ():
        row[LACKS_PREFIX + layer] = 1
    wl = rec.get("window_losses") or {}
    if wl.get("map_full") or wl.get("recursion_misses"):
        # the node lost counts of this window that may be any process's
        row[LOSSY] = 1
    return row


def lacks_columns(columns):
    """The `lacks_<layer>` columns among `columns`."""
    return [c for c in columns if c.startswith(LACKS_PREFIX)]


def lacks_layer(col):
    """`lacks_vfs` -> "vfs"."""
    return col[len(LACKS_PREFIX):]


# the VFS layer's categories (include/datacrumbs/vfs.h); a library's are the
# operator's own (probes.libraries), so any other function category is one
VFS_CATEGORIES = {"vfs", "ext4", "xfs", "nfs", "fuse", "iomap", "file_cache", "page_cache",
                  "bio"}
LAYER_OF_CATEGORY = {"syscall": None, "access": "files", "block": "block",
                     "io_uring": "io_uring"}


def layer_of(key):
    """`<function>-<category>` -> the layer a record's `lacks` names for it
    (None: the system-call layer, which always runs)."""
    fn, _, cat = key.rpartition("-")
    if cat in LAYER_OF_CATEGORY:
        return LAYER_OF_CATEGORY[cat]
    if cat == "page_cache" and fn in PAGE_CACHE + PAGE_FAULTS:
        return "page_cache"  # the page-cache layer's own counts, not a VFS function's
    return "vfs" if cat in VFS_CATEGORIES else "libraries"


def record_id(r):
    """What identifies a record: a repeat has the same (docs/kafka.md; a
    window has one agent record)."""
    if r.get("type") == "agent":
        return (r.get("host"), r.get("run"), r.get("window"), "agent")
    return (r.get("host"), r.get("run"), r.get("window"), r.get("type"), r.get("pid"),
            r.get("cgroup_id"), r.get("dev"), r.get("ino"), r.get("igen"), r.get("fhash"))


def unique_records(recs):
    """The records without their repeats: Kafka delivers at least once, and a
    copy has the same (host, run, window, type, pid, cgroup_id) as its first
    (docs/kafka.md, "Detecting duplicates and gaps"). Summed, a repeat would
    count its process's calls twice."""
    seen = set()
    for r in recs:
        k = record_id(r)
        if k in seen:
            continue
        seen.add(k)
        yield r


def combine_rows(rows):
    """Sum rows with the same (host, run, window, workload): one row per key.

    Window facts are taken from the first row (every record of a window
    carries the same ones); everything else is summed.
    """
    acc = {}
    for r in rows:
        k = tuple(r[c] for c in KEYS)
        a = acc.get(k)
        if a is None:
            acc[k] = dict(r)
            continue
        for c, v in r.items():
            if c in KEYS or c in WINDOW_COLS:
                continue
            a[c] = a.get(c, 0) + v
    return list(acc.values())


# Rows of many nodes joined: one per (workload, window end on the grid)
JOIN_KEYS = ["workload", "grid_end"]
# how far (a share of the interval) a window's end may lie from the grid:
# an aligned window closes a millisecond or so late (docs/records.md), more
# when a close takes long (a node whose processes all exited: 150 ms for
# 100k slots, docs/benchmarks.md); one of an unaligned agent or of another
# interval lies anywhere
GRID_SLACK = 0.25


def grid_end(ts_start, ts_end, interval_us):
    """The multiple of the interval that ends the grid interval a window
    belongs to (microseconds): the one its midpoint lies in. By its end
    alone, a stop's short window just past a multiple went with the window
    before it."""
    mid = (ts_start + ts_end) / 2
    return int(math.ceil(mid / interval_us)) * interval_us


def _near_grid(t, interval_us):
    return abs(t - round(t / interval_us) * interval_us) <= interval_us * GRID_SLACK


def on_grid(ts_start, ts_end, interval_us):
    """An aligned agent's window ends on the grid (a millisecond or so late),
    but for its last one, cut by a stop, which starts on it; an unaligned
    agent's windows neither start nor end there."""
    return _near_grid(ts_end, interval_us) or _near_grid(ts_start, interval_us)


def node_workload(workload, host):
    """A workload's name across nodes: a job, pod, unit or cgroup path names
    the same thing on every node; a pid does not, and keeps its host."""
    return "%s@%s" % (workload, host) if workload.startswith(("pid:", "kernel:pid:")) else workload


def join_nodes(rows, interval_us):
    """Rows of (host, run, window, workload) -> rows of (workload, grid_end):
    one workload's windows on every node that fall in the same interval of
    the grid (the agents' align_windows, the default, ends every node's
    windows on its multiples), summed. `hosts` counts the distinct hosts;
    `ts_start` and `ts_end` are the earliest start and latest end of the
    windows summed, `duration_us` the span between (the interval, but for a
    bucket holding a long window 0). Returns the joined rows and how many
    rows lay off the grid (not joined: agents with align_windows = false, or
    another interval). A `pid:` workload is one node's: it becomes
    `pid:<pid>@<host>` and is not summed with another's. (The command runs
    dataset.join_nodes on Dask; this is what its unit test holds it to.)"""
    acc, hosts, off = {}, {}, 0
    for r in rows:
        if not on_grid(r["ts_start"], r["ts_end"], interval_us):
            off += 1
            continue
        g = grid_end(r["ts_start"], r["ts_end"], interval_us)
        wl = node_workload(r["workload"], r["host"])
        k = (wl, g)
        a = acc.get(k)
        if a is None:
            a = acc[k] = {"workload": wl, "grid_end": g, "ts_start": r["ts_start"],
                          "ts_end": r["ts_end"]}
            hosts[k] = set()
        hosts[k].add(r["host"])
        a["ts_start"] = min(a["ts_start"], r["ts_start"])
        a["ts_end"] = max(a["ts_end"], r["ts_end"])
        for c, v in r.items():
            if c in KEYS or c in WINDOW_COLS:
                continue
            a[c] = a.get(c, 0) + v
    for k, a in acc.items():
        a["hosts"] = len(hosts[k])
        a["duration_us"] = a["ts_end"] - a["ts_start"]
    return list(acc.values()), off


def stat_columns(columns):
    """The `<function>-<category>.<stat>` columns among `columns`."""
    return [c for c in columns if "." in c and "-" in c.rpartition(".")[0]]


def split_column(col):
    """`pwrite64-syscall.time_ns` -> ("pwrite64", "syscall", "time_ns")."""
    key, _, stat = col.rpartition(".")  # a library symbol may hold dots; a stat never does
    fn, _, cat = key.rpartition("-")
    return fn, cat, stat

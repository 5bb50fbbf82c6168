# SPDX-License-Identifier: Apache-2.0
"""Keep going as windows arrive: tail the local file (across rotation) or consume Kafka.

A window is complete when its agent record arrives (files: written last), when a
window `lag` windows later of the same (host, run) does (Kafka's features topic
holds no agent records; keyed by host/cgroup, its partitions interleave), or
after `idle` seconds without news of it. Each complete window becomes its rows
(records.py), written as JSON lines, with the model's predicted bandwidth when
a model is given. A part of a window that arrives after it was closed becomes
a second row with the same key: rows are additive, sum them by key.
"""
import json
import os
import time

from . import records as R
from . import sources as S


# closed windows whose records' identities are kept, to know a repeat
CLOSED_KEPT = 4096


class Windows:
    def __init__(self, labels=None, idle=5.0, lag=0):
        self.open = {}  # (host, run, window) -> (records, last seen)
        self.labels = labels
        self.idle = idle
        self.lag = lag
        self.closed = {}  # (host, run, window) -> identities of its records, oldest first
        self.repeats = 0

    def add(self, rec, now):
        k = (rec.get("host"), rec.get("run"), rec.get("window"))
        done = []
        # Kafka's at-least-once repeat of a window already written (a
        # segment produced again): not a late part, which is a record not
        # seen before
        if R.record_id(rec) in self.closed.get(k, ()):
            self.repeats += 1
            return []
        if rec["type"] == "agent":
            done.append(k)
        elif rec["type"] == "features":
            ent = self.open.setdefault(k, ([], now))
            ent[0].append(rec)
            self.open[k] = (ent[0], now)
        # a later window of the same run closes the earlier ones (`lag` windows
        # later: partitions of a topic keyed by host/cgroup arrive in any order)
        for o in list(self.open):
            if o[:2] == k[:2] and o[2] + self.lag < k[2]:
                done.append(o)
        return [self._close(d) for d in dict.fromkeys(done)]

    def expire(self, now):
        old = [k for k, (_, t) in self.open.items() if now - t > self.idle]
        return [self._close(k) for k in old]

    def _close(self, k):
        recs, _ = self.open.pop(k, ([], 0))
        ids = self.closed.setdefault(k, set())
        ids.update(R.record_id(r) for r in recs)
        ids.add(R.record_id({"host": k[0], "run": k[1], "window": k[2], "type": "agent"}))
        while len(self.closed) > CLOSED_KEPT:
            del self.closed[next(iter(self.closed))]
        rows = []
        for r in R.unique_records(recs):
            wl = self.labels.workload(r) if self.labels else None
            if self.labels and wl is None:
                continue
            rows.append(R.row_of(r, wl))
        return k, R.combine_rows(rows)


def tail_lines(path, from_start=False, poll=0.25, stop=lambda: False):
    """Complete lines appended to `path`, across rotation (a new inode) and truncation."""
    f, ino = None, None
    partial = b""
    while not stop():
        if f is None:
            try:
                f = open(path, "rb")
            except FileNotFoundError:
                yield None
                time.sleep(poll)
                continue
            ino = os.fstat(f.fileno()).st_ino
            if not from_start:
                f.seek(0, os.SEEK_END)
            from_start = True  # a file that replaces it is read from its start
            partial = b""
        chunk = f.read(1 << 20)
        if chunk:
            data = partial + chunk
            lines = data.split(b"\n")
            partial = lines.pop()
            for ln in lines:
                yield ln
            continue
        try:
            st = os.stat(path)
            if st.st_ino != ino and st.st_size == 0:
                pass  # moved, but the writer has not reopened yet: it still writes here
            elif st.st_ino != ino:
                # the writer moved to the new file (the agent reopens at its
                # SIGHUP, after logrotate's move): what it wrote here before
                # that comes first, then the new file from its start
                data = partial + f.read()
                f.close()
                f = None
                for ln in data.split(b"\n"):
                    if ln:
                        yield ln
                continue
            elif st.st_size < f.tell():
                f.close()
                f = None  # truncated: from its start
                continue
        except FileNotFoundError:
            pass
        yield None  # nothing new now
        time.sleep(poll)


def kafka_lines(conf, topic, stop=lambda: False):
    from confluent_kafka import Consumer, KafkaError
    c = Consumer(dict(conf, **{"enable.partition.eof": False}))
    c.subscribe([topic])
    try:
        while not stop():
            m = c.poll(0.5)
            if m is None:
                yield None
                continue
            if m.error():
                if m.error().code() == KafkaError._PARTITION_EOF:
                    continue
                raise RuntimeError("Kafka %s: %s" % (topic, m.error()))
            for ln in S.message_lines(m):
                yield ln
    finally:
        c.close()


def follow(lines, out, labels=None, model=None, idle=5.0, max_windows=0, deadline=None, lag=0):
    """Rows of each complete window to `out` (a text file), until max_windows or deadline."""
    import pandas as pd
    w = Windows(labels, idle, lag)
    n = 0

    def emit(closed):
        nonlocal n
        for key, rows in closed:
            if model is not None and rows:
                from .model import predict
                used = {R.layer_of(f.rpartition(".")[0]) for f in model["features"]}
                ok = []
                for r in rows:
                    # a layer the model has features of but this row lacks:
                    # its zeros would read as no activity (dataset.complete_rows)
                    gone = [R.lacks_layer(c) for c in R.lacks_columns(r)
                            if r[c] and R.lacks_layer(c) in used]
                    if gone:
                        r["predicted_bandwidth"] = None
                        r["prediction_withheld"] = "lacks %s, whose features the model " \
                            "uses" % ", ".join(gone)
                    else:
                        ok.append(r)
                if ok:
                    df = pd.DataFrame(ok).fillna(0)
                    for r, p in zip(ok, predict(model, df)):
                        r["predicted_bandwidth"] = float(p)
            for r in rows:
                out.write(json.dumps(r, sort_keys=True) + "\n")
            out.flush()
            n += 1
        return max_windows and n >= max_windows

    for ln in lines:
        now = time.monotonic()
        if deadline and now > deadline:
            break
        if ln is not None and ln.strip():
            rec = R.parse_line(ln, "follow")
            if emit(w.add(rec, now)):
                return n
        elif emit(w.expire(now)):
            return n
    emit(w.expire(float("inf")))  # stopped: what is open is all there is
    return n

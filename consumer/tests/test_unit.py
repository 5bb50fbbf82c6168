#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Unit tests on fixed inputs (consumer/tests/fixtures): flattening, partitioning,
labels, follow's window closing and file tailing, interval merge, the trace query.

usage: /usr/bin/python3 test_unit.py [-v]
"""
import io
import json
import os
import shutil
import sys
import tempfile
import threading
import time
import unittest

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
FIX = os.path.join(HERE, "fixtures")

import zstandard  # noqa: E402

from datacrumbs_consumer import records as R  # noqa: E402
from datacrumbs_consumer import sources as S  # noqa: E402
from datacrumbs_consumer import traces as T  # noqa: E402
from datacrumbs_consumer import follow as F  # noqa: E402
from datacrumbs_consumer import dataset as D  # noqa: E402
from datacrumbs_consumer import model as M  # noqa: E402


def fixture_records():
    with open(os.path.join(FIX, "records.jsonl"), "rb") as f:
        return [json.loads(ln) for ln in f]


class Flatten(unittest.TestCase):
    def test_every_layer_named(self):
        rec = fixture_records()[0]
        got = R.flatten_features(rec)
        want = {
            "pwrite64-syscall.count": 10, "pwrite64-syscall.errors": 1,
            "pwrite64-syscall.bytes": 40960, "pwrite64-syscall.time_ns": 5000000,
            "fsync-syscall.count": 1, "fsync-syscall.time_ns": 2000000,
            "ext4_sync_file-ext4.count": 1, "ext4_sync_file-ext4.time_ns": 1900000,
            "write-block.count": 3, "write-block.bytes": 12288, "write-block.queue_ns": 300,
            "write-block.device_ns": 9000,
            "added-page_cache.count": 10, "added-page_cache.bytes": 40960,
            "dirtied-page_cache.count": 10, "dirtied-page_cache.bytes": 40960,
            "file_faults-page_cache.count": 3,
            "write-io_uring.count": 2, "write-io_uring.bytes": 8192,
            "write-io_uring.time_ns": 7000,
            "files-access.count": 1, "writes-access.count": 10, "fsyncs-access.count": 1,
            "errors-access.count": 1, "seq_writes-access.count": 9,
            "consec_writes-access.count": 9, "write-access.time_ns": 5000000,
            "fsync-access.time_ns": 2000000, "write-access.bytes": 40960,
            "size_write_1K_10K-access.count": 10,
        }
        # zeros are not stored: a sparse row, filled with 0 when tabled
        self.assertEqual(got, want)
        for c in got:
            fn, cat, stat = R.split_column(c)
            self.assertTrue(fn and cat and stat, c)

    def test_quantiles_and_hists_left_out(self):
        # not additive over processes: never summed into a row
        got = R.flatten_features(fixture_records()[0])
        self.assertFalse([c for c in got if "p50" in c or "hist" in c])

    def test_split_column(self):
        self.assertEqual(R.split_column("pwrite64-syscall.time_ns"), ("pwrite64", "syscall", "time_ns"))
        self.assertEqual(R.split_column("H5Dwrite.cold-hdf5.count"), ("H5Dwrite.cold", "hdf5", "count"))
        self.assertEqual(M.category_of("write-block.rate"), "block")

    def test_workload_of(self):
        recs = fixture_records()
        self.assertEqual(R.workload_of(recs[0]), "unit:a.service")
        self.assertEqual(R.workload_of(recs[2]), "pid:200")
        # a reused pid is another process: its start tells them apart
        self.assertEqual(R.workload_of({"job": {}, "cgroup": "/", "pid": 200,
                                        "proc_start_ns": 4240000000}), "pid:200:4240000000")
        self.assertNotEqual(R.workload_of({"job": {}, "cgroup": "/", "pid": 200,
                                           "proc_start_ns": 4240000000}),
                            R.workload_of({"job": {}, "cgroup": "/", "pid": 200,
                                           "proc_start_ns": 9990000000}))
        self.assertEqual(R.workload_of({"job": {"slurm_job": "42", "unit": "x.scope"}}), "slurm_job:42")
        self.assertEqual(R.workload_of({"job": {}, "cgroup": "/a/b", "pid": 3}), "cgroup:/a/b")
        # pid 0: the kernel's writeback for the job, kept apart from it
        self.assertEqual(R.workload_of({"job": {"slurm_job": "42"}, "cgroup": "/s/job_42",
                                        "pid": 0}), "kernel:slurm_job:42")

    def test_rows_per_window_and_workload(self):
        rows = R.combine_rows(R.row_of(r) for r in fixture_records() if r["type"] == "features")
        self.assertEqual(len(rows), 4)  # 2 windows x {a.service, pid:200}
        a0 = [r for r in rows if r["workload"] == "unit:a.service" and r["window"] == 0][0]
        self.assertEqual(a0["processes"], 2)
        self.assertEqual(a0["pwrite64-syscall.count"], 15)
        self.assertEqual(a0["pwrite64-syscall.bytes"], 61440)
        self.assertEqual(a0["duration_us"], 500000)  # a window fact, not summed
        self.assertEqual(a0["ts_start"], 1000000)
        c1 = [r for r in rows if r["workload"] == "pid:200" and r["window"] == 1][0]
        self.assertEqual(c1["read-syscall.bytes"], 2000)

    def test_bad_input_is_named(self):
        with self.assertRaisesRegex(R.RecordError, r"f\.jsonl:3: not JSON"):
            R.parse_line(b"{oops", "f.jsonl:3")
        with self.assertRaisesRegex(R.RecordError, "not a datacrumbs record"):
            R.parse_line(b'{"a":1}', "x")
        with self.assertRaisesRegex(R.RecordError, "schema 2"):
            R.parse_line(b'{"type":"features","schema":2}', "x")
        self.assertIsNone(R.parse_line(b"  \n", "x"))


class Partitions(unittest.TestCase):
    def rows(self, parts):
        out = []
        for p in parts:
            out += [R.row_of(r) for r in S.parse_lines(S.read_file_partition(p))]
        return sorted((r["window"], r["workload"], r.get("pwrite64-syscall.count", 0))
                      for r in R.combine_rows(out))

    def test_any_blocksize_reads_each_window_once(self):
        path = os.path.join(FIX, "records.jsonl")
        whole = self.rows(S.file_partitions([path], 1 << 30))
        size = os.path.getsize(path)
        for bs in (1, 7, 100, 600, 1000, 2345, size - 1):
            parts = S.file_partitions([path], bs)
            lines = [ln for p in parts for ln, _ in S.read_file_partition(p)]
            with open(path, "rb") as f:
                self.assertEqual(sorted(lines), sorted(f.readlines()), "blocksize %d" % bs)
            self.assertEqual(self.rows(parts), whole, "blocksize %d" % bs)

    def test_compressed_and_globs(self):
        d = tempfile.mkdtemp()
        try:
            src = os.path.join(FIX, "records.jsonl")
            shutil.copy(src, os.path.join(d, "records.jsonl"))
            with open(src, "rb") as f, open(os.path.join(d, "records.jsonl.1.zst"), "wb") as g:
                g.write(zstandard.ZstdCompressor().compress(f.read()))
            files = S.expand_paths([d])
            self.assertEqual([os.path.basename(x) for x in files],
                             ["records.jsonl", "records.jsonl.1.zst"])
            n = [len(S.read_file_partition(p)) for p in S.file_partitions(files)]
            self.assertEqual(n, [10, 10])
            with self.assertRaisesRegex(FileNotFoundError, "no such file"):
                S.expand_paths([os.path.join(d, "nope.jsonl")])
        finally:
            shutil.rmtree(d)

    def test_partial_last_line_waits(self):
        d = tempfile.mkdtemp()
        try:
            p = os.path.join(d, "r.jsonl")
            with open(os.path.join(FIX, "records.jsonl"), "rb") as f:
                data = f.read()
            with open(p, "wb") as f:
                f.write(data + data[:50])  # a line being written
            self.assertEqual(len(S.read_file_partition((p, 0, len(data) + 50))), 10)
        finally:
            shutil.rmtree(d)


class DaskLoad(unittest.TestCase):
    def test_dask_rows_equal_plain(self):
        self.check_rows(False)

    def test_dask_rows_summed_across_partitions(self):
        # the path Kafka takes: a window's records spread over partitions
        self.check_rows(True)

    def check_rows(self, combine):
        client = D.make_client(workers=1, threads=2, processes=False)
        try:
            ddf, cols = D.load_rows(client, files=[os.path.join(FIX, "records.jsonl")],
                                    blocksize=300, combine=combine)
            df = client.compute(ddf, sync=True)
            self.assertEqual(D.count_rows(ddf, client), 4)
        finally:
            client.close()
        self.assertEqual(len(df), 4)
        self.assertIn("ext4_sync_file-ext4.time_ns", cols)
        a = df[(df["workload"] == "unit:a.service")].sort_values("window")
        self.assertEqual(list(a["pwrite64-syscall.count"]), [15, 15])
        self.assertEqual(list(a["ext4_sync_file-ext4.time_ns"]), [1900000, 1900000])
        self.assertEqual(list(df[df["workload"] == "pid:200"]["ext4_sync_file-ext4.count"]), [0, 0])

    def nodes_file(self, d):
        """The fixture's records (windows 0 and 1 of 0.5 s, ending on 1.5 s
        and 2 s) on several nodes: h1 as is; h1 again, a second run (a
        restart); h2 closing each window 1.2 ms late (aligned); h3 200 ms off
        the grid (align_windows = false); and h4's pid 100 stopped 120 ms
        past 2 s, its last, short window [2 s, 2.12 s]."""
        out = os.path.join(d, "nodes.jsonl")
        with open(out, "w") as f:
            for host, run, shift in (("h1", "r1", 0), ("h1", "r1b", 0), ("h2", "r2", 1200),
                                     ("h3", "r3", 200000)):
                for r in fixture_records():
                    r = dict(r, host=host, run=run)
                    r["ts_start"] += shift
                    r["ts_end"] += shift
                    f.write(json.dumps(r) + "\n")
            for r in fixture_records():
                if r["type"] == "features" and r["pid"] == 100 and r["window"] == 1:
                    r = dict(r, host="h4", run="r4", window=3, ts_start=2000000,
                             ts_end=2120000, duration_us=120000)
                    f.write(json.dumps(r) + "\n")
        return out

    def test_join_nodes(self):
        d = tempfile.mkdtemp()
        try:
            path = self.nodes_file(d)
            with open(path, "rb") as f:
                recs = [json.loads(ln) for ln in f]
            plain = R.combine_rows(R.row_of(r) for r in recs if r["type"] == "features")
            joined, off = R.join_nodes(plain, 500000)
            client = D.make_client(workers=1, threads=2, processes=False)
            try:
                ddf, cols = D.load_rows(client, files=[path], blocksize=300)
                jd, jcols, doff = D.join_nodes(ddf, cols, 500000)
                df = client.compute(jd, sync=True)
                doff = D.count_rows(doff, client)
            finally:
                client.close()
        finally:
            shutil.rmtree(d)
        # h3's 4 rows (2 windows x 2 workloads) are off the grid; h1 (both
        # runs) and h2 join for the unit; pid 200 is a process of each node
        self.assertEqual(off, 4)
        self.assertEqual(doff, 4)
        self.assertEqual(sorted({r["workload"] for r in joined}),
                         ["pid:200@h1", "pid:200@h2", "unit:a.service"])
        self.assertEqual(len(joined), 7)
        a0 = [r for r in joined if r["workload"] == "unit:a.service" and r["grid_end"] == 1500000][0]
        self.assertEqual(a0["hosts"], 2)  # hosts, not runs
        self.assertEqual(a0["processes"], 6)
        self.assertEqual(a0["pwrite64-syscall.count"], 45)  # 15 on each of 3 runs
        self.assertEqual((a0["ts_start"], a0["ts_end"]), (1000000, 1501200))
        self.assertEqual(a0["duration_us"], 501200)
        # h4's short last window is the next interval's, not the one it
        # ends just past
        a2 = [r for r in joined if r["workload"] == "unit:a.service" and r["grid_end"] == 2500000]
        self.assertEqual([(r["hosts"], r["ts_start"], r["ts_end"]) for r in a2],
                         [(1, 2000000, 2120000)])
        a1 = [r for r in joined if r["workload"] == "unit:a.service" and r["grid_end"] == 2000000][0]
        self.assertEqual(a1["hosts"], 2)
        self.assertEqual(len(df), 7)
        self.assertEqual(df["workload"].dtype, object)
        for g in (1500000, 2500000):
            want = [r for r in joined if r["workload"] == "unit:a.service" and r["grid_end"] == g][0]
            row = df[(df["workload"] == "unit:a.service") & (df["grid_end"] == g)].iloc[0]
            for c in jcols:
                self.assertEqual(row[c], want.get(c, 0), c)  # a plain row omits what it lacks

    def test_labels(self):
        lab = D.Labels([{"workload": "w1", "host": "h1", "pid": 100, "t_start_us": 1200000,
                         "t_end_us": 2600000, "bandwidth": 5.0}])
        recs = [r for r in fixture_records() if r["type"] == "features"]
        got = [(r["pid"], r["window"], lab.workload(r)) for r in recs]
        self.assertEqual(got, [(100, 0, "w1"), (101, 0, None), (200, 0, None),
                               (100, 1, "w1"), (101, 1, None), (200, 1, None)])
        import pandas as pd
        df = pd.DataFrame([{"workload": "w1", "ts_start": 1000000, "ts_end": 1500000},
                           {"workload": "w1", "ts_start": 1500000, "ts_end": 2000000}])
        steady, edge = D.steady_rows(df, lab)
        self.assertEqual((len(steady), edge), (1, 1))  # [1.0, 1.5) s began before the run


class Features(unittest.TestCase):
    def test_rates_no_bytes(self):
        import pandas as pd
        rows = R.combine_rows(R.row_of(r) for r in fixture_records() if r["type"] == "features")
        df = pd.DataFrame(rows).fillna(0)
        X = M.feature_frame(df)
        self.assertFalse([c for c in X.columns if c.endswith(".bps")])
        a0 = df.index[(df["workload"] == "unit:a.service") & (df["window"] == 0)][0]
        self.assertAlmostEqual(X.loc[a0, "pwrite64-syscall.rate"], 30.0)  # 15 calls / 0.5 s
        self.assertAlmostEqual(X.loc[a0, "pwrite64-syscall.busy"], 0.012)  # 6 ms / 0.5 s
        self.assertAlmostEqual(X.loc[a0, "pwrite64-syscall.lat"], 400000.0)
        self.assertAlmostEqual(X.loc[a0, "pwrite64-syscall.share"], 15 / 16)  # and 1 fsync
        Xb = M.feature_frame(df, with_bytes=True)
        self.assertAlmostEqual(Xb.loc[a0, "pwrite64-syscall.bps"], 122880.0)

    def test_predict_from_one_row(self):
        """follow --model predicts a window at a time: its row's features,
        not zeros for every column that a single row cannot vary in."""
        import pandas as pd
        rows = R.combine_rows(R.row_of(r) for r in fixture_records() if r["type"] == "features")
        df = pd.DataFrame(rows).fillna(0)
        full = M.feature_frame(df)

        class Echo:  # the model: the sum of its inputs
            def predict(self, X):
                return np.log(1 + np.asarray(X).sum(axis=1))
        model = {"with_bytes": False, "features": list(full.columns), "model": Echo()}
        for i in range(len(df)):
            one = M.predict(model, df.iloc[[i]])
            want = np.exp(Echo().predict(full.iloc[[i]].values))
            self.assertAlmostEqual(float(one[0]), float(want[0]))

    def test_repeats_of_a_point_are_one_group(self):
        self.assertEqual(M.configuration_of("6745d1c2-003-write-4k-seq-2f"), "write-4k-seq-2f")
        self.assertEqual(M.configuration_of("6745d1c2-011-write-4k-seq-2f"), "write-4k-seq-2f")
        self.assertEqual(M.configuration_of("unit:a.service"), "unit:a.service")

    def test_important_99(self):
        got = M.important(["a", "b", "c", "d"], [0.5, 0.3, 0.195, 0.005])
        self.assertEqual([f for f, _ in got], ["a", "b", "c"])
        got = M.important(["a", "b"], [0.995, 0.005])
        self.assertEqual([f for f, _ in got], ["a"])


class Intervals(unittest.TestCase):
    def test_merge(self):
        self.assertEqual(T.merge_intervals([]), [])
        self.assertEqual(T.merge_intervals([(5, 7), (1, 3), (2, 4), (4, 5), (10, 12), (11, 11)]),
                         [(1, 7), (10, 12)])  # touching intervals join; empty ones vanish
        self.assertEqual(T.merge_intervals([(0, 10), (2, 3)]), [(0, 10)])

    def test_overlaps(self):
        m = [(10, 20), (30, 40)]
        s = [0, 5, 15, 20, 25, 35, 39.5, 40, 10, 19.9, 29, 0]
        e = [5, 10, 16, 21, 30, 36, 45, 41, 10, 19.9, 31, 100]
        self.assertEqual(list(T.overlaps(s, e, m)),
                         [False, False, True, False, False, True, True, False,
                          True, True, True, True])
        self.assertEqual(list(T.overlaps([1], [2], [])), [False])


class TraceQuery(unittest.TestCase):
    def test_fixed_trace(self):
        d = tempfile.mkdtemp()
        try:
            # both batches in one file as two zstd frames, as the agent writes them
            path = os.path.join(d, "trace-1-h1-000000.pfw.zst")
            with open(path, "wb") as out:
                for n in ("trace-1.ndjson", "trace-2.ndjson"):
                    with open(os.path.join(FIX, n), "rb") as f:
                        out.write(zstandard.ZstdCompressor().compress(f.read()))
            client = D.make_client(workers=1, threads=1, processes=False)
            try:
                matched, merged, by = T.query(client, [(T.load_file, (path,))], r"file_\d")
            finally:
                client.close()
        finally:
            shutil.rmtree(d)
        self.assertEqual(matched, {"0000000000000f00": "/data/file_0"})
        self.assertEqual(merged, [(100.0, 120.0), (200.0, 210.0)])
        got = {(r.name, r.cat): (r.events, r.calls_est, r.dur_us, r.dur_us_est)
               for r in by.itertuples()}
        self.assertEqual(got, {("pwrite64", "syscall"): (2, 20, 25.0, 250.0),
                               ("read", "syscall"): (1, 1, 2.5, 2.5),
                               ("fsync", "syscall"): (1, 1, 10.0, 10.0),
                               ("openat", "syscall"): (1, 2, 6.0, 12.0)})


def tailer(path):
    """tail_lines over path; the lines it gave (None: nothing new at that
    moment); take(n), which reads until n lines came (10 s at most); and the
    event that stops it."""
    stop = threading.Event()
    gen = F.tail_lines(path, poll=0.01, stop=stop.is_set)
    got = []

    def take(n):
        t0 = time.monotonic()
        while len([x for x in got if x is not None]) < n and time.monotonic() - t0 < 10:
            got.append(next(gen))
    return gen, got, take, stop


class Follow(unittest.TestCase):
    def test_windows_close_on_agent_record_or_later_window(self):
        recs = fixture_records()
        w = F.Windows()
        closed = []
        for r in recs:
            closed += w.add(r, 0.0)
        self.assertEqual([k for k, _ in closed], [("h1", "r1", 0), ("h1", "r1", 1)])
        self.assertEqual([len(rows) for _, rows in closed], [2, 2])
        # Kafka's features topic has no agent records: the next window closes one
        w = F.Windows(idle=1.0)
        closed = []
        for r in recs:
            if r["type"] == "features":
                closed += w.add(r, 0.0)
        self.assertEqual([k for k, _ in closed], [("h1", "r1", 0)])
        self.assertEqual([k for k, _ in w.expire(0.5)], [])
        self.assertEqual([k for k, _ in w.expire(2.0)], [("h1", "r1", 1)])

    def test_tail_across_rotation(self):
        d = tempfile.mkdtemp()
        p = os.path.join(d, "records.jsonl")
        with open(p, "w") as f:
            f.write("old\n")  # there before following: not read
        gen, got, take, stop = tailer(p)
        try:
            next(gen)
            with open(p, "a") as f:
                f.write("a\nb")
            take(1)
            with open(p, "a") as f:
                f.write("c\n")
            take(2)
            os.rename(p, p + ".1")  # logrotate
            with open(p, "w") as f:
                f.write("d\n")
            take(3)
        finally:
            stop.set()
            shutil.rmtree(d)
        self.assertEqual([x for x in got if x is not None], [b"a", b"bc", b"d"])

    def test_tail_reads_the_old_file_until_the_writer_moves(self):
        """logrotate moves the file; the agent writes on to it until its
        SIGHUP: those lines come before the new file's."""
        d = tempfile.mkdtemp()
        p = os.path.join(d, "records.jsonl")
        open(p, "w").close()
        gen, got, take, stop = tailer(p)
        try:
            next(gen)
            with open(p, "a") as old:
                old.write("a\n")
                old.flush()
                take(1)
                os.rename(p, p + ".1")  # logrotate: a new empty file, the writer not told yet
                open(p, "w").close()
                for _ in range(5):
                    got.append(next(gen))
                old.write("b\n")  # the agent's last window before its SIGHUP
                old.flush()
                for _ in range(5):
                    got.append(next(gen))
            with open(p, "a") as f:
                f.write("c\n")  # reopened
            take(3)
        finally:
            stop.set()
            shutil.rmtree(d)
        self.assertEqual([x for x in got if x is not None], [b"a", b"b", b"c"])

    def test_repeats_dropped(self):
        recs = [r for r in fixture_records() if r["type"] == "features"]
        once = R.combine_rows(R.row_of(r) for r in R.unique_records(recs))
        twice = R.combine_rows(R.row_of(r) for r in R.unique_records(recs + recs))
        self.assertEqual(once, twice)  # Kafka's at-least-once repeats, not twice the calls

    def test_follow_drops_a_window_delivered_again(self):
        """A segment produced again repeats windows already written (their
        agent records too): not written a second time. A record of a closed
        window not seen before is a late part, and is."""
        recs = fixture_records()
        w = F.Windows()
        first = [k for r in recs for k, _ in w.add(r, 0.0)]
        again = [k for r in recs for k, _ in w.add(r, 1.0)]
        self.assertEqual(again, [])
        # the records of the windows written; the last window's, still open,
        # are dropped as repeats when it closes (unique_records)
        self.assertEqual(w.repeats, sum(1 for r in recs if r["type"] in ("features", "agent")
                                        and (r["host"], r["run"], r["window"]) in first))
        late = dict(next(r for r in recs if r["type"] == "features"), pid=4242)
        got = w.add(late, 2.0) + w.expire(100.0)
        self.assertEqual([k for k, _ in got], [first[0]])

    def test_follow_writes_rows(self):
        out = io.StringIO()
        lines = [ln for ln in open(os.path.join(FIX, "records.jsonl"), "rb")]
        n = F.follow(iter(lines), out)
        self.assertEqual(n, 2)
        rows = [json.loads(x) for x in out.getvalue().splitlines()]
        self.assertEqual(len(rows), 4)
        self.assertEqual({r["workload"] for r in rows}, {"unit:a.service", "pid:200"})


class Lacks(unittest.TestCase):
    """A record's `lacks` (docs/records.md): layers not running in its window."""

    def test_row_counts_the_records_lacking(self):
        recs = [r for r in fixture_records() if r["type"] == "features"][:2]
        a, b = dict(recs[0], lacks=["libraries", "vfs"]), dict(recs[1], lacks=["vfs"])
        rows = R.combine_rows([R.row_of(a, "w"), R.row_of(dict(b, window=a["window"]), "w")])
        self.assertEqual(len(rows), 1)
        self.assertEqual((rows[0]["lacks_vfs"], rows[0]["lacks_libraries"]), (2, 1))
        self.assertEqual(R.lacks_columns(rows[0]), ["lacks_libraries", "lacks_vfs"])
        self.assertFalse([c for c in R.stat_columns(rows[0]) if "lacks" in c],
                         "a count of records, never a feature")
        self.assertNotIn("lacks_vfs", R.row_of(recs[0]), "nothing lacking: no column")

    def test_rows_lacking_what_others_have_left_out(self):
        import pandas as pd
        df = pd.DataFrame({"workload": ["a", "b", "c", "d"],
                           "lacks_vfs": [1, 0, 2, 0], "lacks_block": [0, 0, 1, 0],
                           "lacks_io_uring": [1, 1, 1, 1]})
        kept, out, absent = D.complete_rows(df)
        self.assertEqual(list(kept["workload"]), ["b", "d"])
        self.assertEqual(out, {"vfs": 2, "block": 1})
        self.assertEqual(absent, ["io_uring"], "a layer no row has is just absent")
        kept, out, absent = D.complete_rows(pd.DataFrame({"workload": ["a"], "x": [1]}))
        self.assertEqual((len(kept), out, absent), (1, {}, []))
        # the rows that lacked it gone already (steady_rows): nothing to say
        kept, out, absent = D.complete_rows(pd.DataFrame({"workload": ["a"], "lacks_vfs": [0]}))
        self.assertEqual((len(kept), out, absent), (1, {}, []))

    def test_rows_of_windows_with_losses_left_out(self):
        import pandas as pd
        rec = [r for r in fixture_records() if r["type"] == "features"][0]
        self.assertEqual(R.row_of(dict(rec, window_losses={"map_full": 0,
                                                           "recursion_misses": 2}))[R.LOSSY], 1)
        self.assertNotIn(R.LOSSY, R.row_of(rec))
        self.assertNotIn(R.LOSSY, R.stat_columns([R.LOSSY]), "never a feature")
        df = pd.DataFrame({"workload": ["a", "b", "c"], R.LOSSY: [0, 3, 0]})
        kept, n = D.lossless_rows(df)
        self.assertEqual((list(kept["workload"]), n), (["a", "c"], 1))
        kept, n = D.lossless_rows(pd.DataFrame({"workload": ["a"]}))
        self.assertEqual((len(kept), n), (1, 0))

    def test_follow_withholds_a_prediction_without_its_layers(self):
        class Const:
            def predict(self, X):
                return np.zeros(len(X))  # exp(0) = 1 byte/s

        model = {"model": Const(), "features": ["pwrite64-syscall.rate", "vfs_write-vfs.lat"],
                 "with_bytes": False}
        recs = fixture_records()
        feats = [i for i, r in enumerate(recs) if r["type"] == "features"]
        recs[feats[0]] = dict(recs[feats[0]], lacks=["vfs"])
        # the second is the same workload's (a.service) in the same window
        recs[feats[2]] = dict(recs[feats[2]], lacks=["io_uring"])
        out = io.StringIO()
        F.follow(iter(json.dumps(r) for r in recs), out, model=model)
        rows = [json.loads(x) for x in out.getvalue().splitlines()]
        gone = [r for r in rows if r.get("lacks_vfs")]
        self.assertEqual(len(gone), 1)
        self.assertIsNone(gone[0]["predicted_bandwidth"])
        self.assertIn("lacks vfs", gone[0]["prediction_withheld"])
        rest = [r for r in rows if not r.get("lacks_vfs")]
        self.assertTrue([r for r in rest if r.get("lacks_io_uring")] and
                        all(r["predicted_bandwidth"] == 1.0 for r in rest),
                        "a layer the model has no feature of does not withhold: %s" % rest)

    def test_layer_of_a_column(self):
        for key, want in (("pwrite64-syscall", None), ("writes-access", "files"),
                          ("write-block", "block"), ("added-page_cache", "page_cache"),
                          ("fault_arounds-page_cache", "page_cache"),
                          ("filemap_fault-page_cache", "vfs"), ("ext4_sync_file-ext4", "vfs"),
                          ("bio_endio-bio", "vfs"), ("write-io_uring", "io_uring"),
                          ("pwrite-libc", "libraries"), ("H5Dwrite-hdf5", "libraries"),
                          ("MPI_File_write_at-mpiio", "libraries")):
            self.assertEqual(R.layer_of(key), want, key)


class DamagedInput(unittest.TestCase):
    """A damaged file is an error naming it (a bad-input audit: a truncated
    .zst read as 0 rows, a truncated .gz raised a bare EOFError, a cut last
    line went without a word)."""

    def setUp(self):
        self.d = tempfile.mkdtemp()
        with open(os.path.join(FIX, "records.jsonl"), "rb") as f:
            self.text = f.read()

    def tearDown(self):
        shutil.rmtree(self.d)

    def put(self, name, data):
        path = os.path.join(self.d, name)
        with open(path, "wb") as f:
            f.write(data)
        return path

    def read(self, path):
        return [ln for p in S.file_partitions([path]) for ln, _ in S.read_file_partition(p)]

    def test_truncated_zstd(self):
        z = zstandard.ZstdCompressor().compress(self.text)
        path = self.put("cut.jsonl.zst", z[:len(z) // 2])
        with self.assertRaisesRegex(R.RecordError, "cut.jsonl.zst, byte 0: a zstd frame cut short"):
            self.read(path)

    def test_second_frame_truncated(self):
        z = zstandard.ZstdCompressor().compress(self.text)
        path = self.put("two.jsonl.zst", z + z[:10])
        with self.assertRaisesRegex(R.RecordError, "two.jsonl.zst, byte %d: " % len(z)):
            self.read(path)

    def test_not_zstd(self):
        path = self.put("fake.jsonl.zst", self.text)
        with self.assertRaisesRegex(R.RecordError, "fake.jsonl.zst, byte 0: not zstd data"):
            self.read(path)

    def test_truncated_gzip(self):
        import gzip
        g = gzip.compress(self.text)
        path = self.put("cut.jsonl.gz", g[:len(g) - 20])
        with self.assertRaisesRegex(R.RecordError, "cut.jsonl.gz: not a whole gzip file"):
            self.read(path)

    def test_whole_compressed_files_read(self):
        import gzip
        z = zstandard.ZstdCompressor()
        path = self.put("two.jsonl.zst", z.compress(self.text) + z.compress(self.text))
        self.assertEqual(len(self.read(path)), 2 * self.text.count(b"\n"))
        path = self.put("r.jsonl.gz", gzip.compress(self.text))
        self.assertEqual(len(self.read(path)), self.text.count(b"\n"))

    def test_cut_last_line_said(self):
        path = self.put("tail.jsonl", self.text + b'{"schema":1,"type":"feat')
        with self.assertLogs(level="WARNING") as log:
            lines = self.read(path)
        self.assertEqual(len(lines), self.text.count(b"\n"))
        self.assertIn("tail.jsonl, byte %d: a last line without its newline" % len(self.text),
                      "\n".join(log.output))

    def test_truncated_trace_file(self):
        # a trace file's last frame cut short (a batch being written as a
        # live query reads): the frames before it are read, the cut said
        ev = b'{"ph":"X","name":"w","ts":1,"dur":1}\n' * 50
        z = zstandard.ZstdCompressor().compress(ev)
        path = self.put("t.pfw.zst", z + z[:len(z) - 3])
        with self.assertLogs(level="WARNING") as log:
            lines = list(T.iter_trace_lines(path))
        self.assertEqual(len(lines), 50)
        self.assertIn("t.pfw.zst, byte %d: a zstd frame cut short" % len(z), "\n".join(log.output))

    def test_many_frames(self):
        # one frame per window, thousands in a file, lines across the
        # reader's 1 MiB chunks
        z = zstandard.ZstdCompressor()
        frames = b"".join(z.compress(b'{"a":%d,"pad":"%s"}\n' % (i, b"x" * 300))
                          for i in range(20000))
        path = self.put("many.jsonl.zst", frames)
        lines = list(S.iter_lines(path))
        self.assertEqual([json.loads(ln)["a"] for ln in lines], list(range(20000)))


if __name__ == "__main__":
    unittest.main()

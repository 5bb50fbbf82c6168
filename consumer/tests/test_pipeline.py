#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""The consumer end to end, from the agent's records.

The agent runs (0.25 s windows) publishing to local files and to Kafka (the
mock broker of tests/kafka, features keyed by host/cgroup over 3 partitions
so a window's records are spread); a small workload matrix runs under it;
then the consumer's command line: pipeline (flatten on Dask, train, plots)
from the files, flatten from Kafka (the same rows), follow on Kafka with the
trained model, and the trace query on the trace files and the traces topic.

usage: test_pipeline.py AGENT MOCK_BROKER
"""
import csv
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(TOP, "tests", "bpf"))
sys.path.insert(0, os.path.join(TOP, "tests", "kafka"))
from agentlib import Agent, Checks, require_root  # noqa: E402

PY = "/usr/bin/python3"
TOPICS = ["datacrumbs.features", "datacrumbs.agent", "datacrumbs.traces"]


def cli(*args, timeout=240):
    p = subprocess.run([PY, "-W", "ignore", "-m", "datacrumbs_consumer"] + list(args),
                       cwd=os.path.join(TOP, "consumer"), capture_output=True, text=True,
                       timeout=timeout)
    print("$ datacrumbs_consumer %s  (exit %d)\n%s%s" % (" ".join(args), p.returncode,
                                                       p.stdout[-3000:], p.stderr[-3000:]),
          flush=True)
    return p


def read_parts(d):
    rows = []
    for f in sorted(glob.glob(os.path.join(d, "part-*.csv"))):
        with open(f) as fh:
            rows += list(csv.DictReader(fh))
    return rows


def main():
    agent_bin, mock_bin = sys.argv[1:3]
    require_root()
    c = Checks()
    tmp = tempfile.mkdtemp(prefix="dc-consumer-", dir="/var/tmp")  # O_DIRECT needs a disk
    broker = subprocess.Popen([mock_bin, "--partitions", "3"] + TOPICS, stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    a = None
    a_tmp = None
    try:
        line = broker.stdout.readline().split()
        assert line and line[0] == "bootstrap", "mock broker did not start"
        boot = line[1]
        tdir = os.path.join(tmp, "traces")
        a = Agent(agent_bin, 'interval = 0.25;\n'
                  'kafka = { brokers = "%s"; key = "host_cgroup"; flush_timeout = 10.0; };\n'
                  'spool = { dir = "%s"; };\n'
                  'traces = { output = { dir = "%s"; }; sampling = { one_in_n = 20; }; };\n'
                  % (boot, os.path.join(tmp, "spool"), tdir))
        agent_records = a.out
        a_tmp = a.tmp
        labels = os.path.join(tmp, "labels.jsonl")
        g = cli("generate", "--labels", labels, "--dir", os.path.join(tmp, "data"),
                "--ops", "read,write", "--modes", "buffered,direct", "--sizes", "4K,64K,1M",
                "--files", "2", "--threads", "1,2", "--fsync", "none", "--repeat", "1",
                "--duration", "1.0", "--file-mib", "4", timeout=240)
        c.eq(g.returncode, 0, "generate exits 0")
        c.eq(a.stop(), 0, "agent exits 0")
        a = None
        labs = [json.loads(x) for x in open(labels)]
        c.eq(len(labs), 24, "one label per matrix point")
        c.check(all(lb["bandwidth"] > 0 and lb["bytes"] > 0 for lb in labs),
                "every point moved bytes")
        out = os.path.join(tmp, "out")
        p = cli("pipeline", "--files", agent_records, "--labels", labels, "--out", out,
                "--in-process", "--workers", "1", "--threads", "2", "--trees", "60")
        c.eq(p.returncode, 0, "pipeline exits 0")
        rows = read_parts(out)
        per = {}
        for r in rows:
            per.setdefault(r["workload"], []).append(r)
        c.eq(sorted(per), sorted(lb["workload"] for lb in labs),
             "rows for every labelled workload and no other process")
        # a 1 s run spans 4 or 5 windows of 0.25 s; on a loaded node a late
        # window flip can stretch one window over most of a run, so the median
        n_win = sorted(len(v) for v in per.values())
        c.check(n_win and n_win[0] >= 1 and n_win[len(n_win) // 2] >= 3,
                "rows per workload: every run has rows, the median run 3 windows or more (%s)"
                % n_win)
        keys = [(r["workload"], r["window"]) for r in rows]
        c.eq(len(keys), len(set(keys)), "one row per (window, workload)")
        cols = set(rows[0]) if rows else set()
        for want in ("pwrite64-syscall.count", "pwrite64-syscall.time_ns", "preadv2-syscall.count",
                     "write-block.count", "added-page_cache.count", "writes-access.count",
                     "openat-syscall.count"):
            c.check(want in cols, "column %s" % want)
        c.check(any(x.endswith("-ext4.count") for x in cols), "ext4 function columns")
        # the rows' bytes are the generator's: the agent counted what was done
        for lb in labs:
            op = "pwrite64" if lb["op"] == "write" else "preadv2"
            got = sum(float(r.get("%s-syscall.bytes" % op, 0)) for r in per.get(lb["workload"], []))
            if not (0.98 * lb["bytes"] <= got <= lb["bytes"] * 1.001 + 1):
                c.check(False, "%s: rows hold %d bytes of %s, generator moved %d"
                        % (lb["workload"], got, op, lb["bytes"]))
                break
        else:
            c.check(True, "each workload's rows hold the bytes its process moved")

        rep = json.load(open(os.path.join(out, "report.json")))
        h, base = rep["all"]["heldout"], rep["all"]["mean_predictor"]
        c.check(rep["all"]["test_workloads"] >= 3 and rep["all"]["train_workloads"] >= 10,
                "held-out workloads are whole workloads (%d train, %d test)"
                % (rep["all"]["train_workloads"], rep["all"]["test_workloads"]))
        # 24 configurations, one run each: the check is that the features carry
        # signal to configurations the model never saw, not the accuracy goal
        # over the whole matrix (bench/consumer_bench.sh). (Until 2026-11-26 it
        # ran 8 configurations twice, and a held-out run's twin was in
        # training: the scores below were a configuration recognised, not
        # predicted; grouped by configuration, that matrix scored -1.1.)
        cv, cbase = rep["all"]["cv"], rep["all"]["cv_mean_predictor"]
        print("held-out split: R^2 log %.3f (mean predictor %.3f), MAPE %.3f (%.3f)"
              % (h["r2_log"], base["r2_log"], h["mape"], base["mape"]))
        # measured over three runs of this matrix: 0.37 to 0.57 against -0.03 to -0.06
        c.check(cv["r2_log"] > max(0.25, cbase["r2_log"] + 0.25) and cv["mape"] < cbase["mape"],
                "the model beats the mean predictor on workloads it never saw (%d-fold by "
                "workload: R^2 of log bandwidth %.3f vs %.3f; MAPE %.3f vs %.3f)"
                % (cv["folds"], cv["r2_log"], cbase["r2_log"], cv["mape"], cbase["mape"]))
        c.check({"syscall", "block", "access"} <= set(rep["categories"]),
                "a model per category (%s)" % sorted(rep["categories"]))
        c.check(all(r["important"] for r in rep["categories"].values()),
                "each category names the features of 99% of its importance")
        for png in ("bandwidth_over_time.png", "predicted_vs_measured.png", "importance.png"):
            f = os.path.join(out, png)
            ok = os.path.exists(f) and os.path.getsize(f) > 1000
            if ok:
                with open(f, "rb") as fh:
                    ok = fh.read(8) == b"\x89PNG\r\n\x1a\n"
            c.check(ok, "%s is a PNG" % png)

        # rows measured without a layer the others have (records' `lacks`: the
        # CPU budget's vfs_off, say) are left out of training; one every row
        # lacks is just absent (dataset.complete_rows)
        lrows = os.path.join(tmp, "lacking.csv")
        names = list(rows[0]) + ["lacks_vfs", "lacks_io_uring",
                                 "records_with_window_losses"] if rows else []
        with open(lrows, "w", newline="") as fh:
            wr = csv.DictWriter(fh, names)
            wr.writeheader()
            for i, r in enumerate(rows):
                # and rows of windows that lost counts node-wide (window_losses)
                wr.writerow(dict(r, lacks_vfs=int(i % 3 == 0), lacks_io_uring=1,
                                 records_with_window_losses=int(i % 3 == 1 and i % 2 == 0)))
        lout = os.path.join(tmp, "out-lacking")
        p = cli("train", "--rows", lrows, "--labels", labels, "--out", lout, "--trees", "30")
        c.eq(p.returncode, 0, "train on rows some of which lack the VFS layer exits 0")
        if p.returncode == 0:
            r2 = json.load(open(os.path.join(lout, "report.json")))
            left = r2["rows_lacking_layers_left_out"]
            lossy = r2["rows_with_window_losses_left_out"]
            c.check(left.get("vfs", 0) > 0 and set(left) == {"vfs"} and lossy > 0 and
                    r2["rows"] + r2["rows_without_bandwidth"] + left["vfs"] + lossy ==
                    rep["rows"] + rep["rows_without_bandwidth"],
                    "the rows lacking the VFS layer and those of windows with losses left out "
                    "of training, counted (%s, %d lossy; rows %d + %d without bandwidth, before "
                    "%d + %d)" % (left, lossy, r2["rows"], r2["rows_without_bandwidth"],
                                  rep["rows"], rep["rows_without_bandwidth"]))
            c.eq(r2["layers_absent"], ["io_uring"], "a layer every row lacks: absent, no row "
                 "left out for it")

        # Kafka: the same rows as the files (windows spread over 3 partitions)
        kout = os.path.join(tmp, "kafka-rows")
        p = cli("flatten", "--kafka", boot, "--labels", labels, "--out", kout, "--in-process")
        c.eq(p.returncode, 0, "flatten from Kafka exits 0")
        krows = read_parts(kout)

        def key_sums(rs):
            return sorted((r["workload"], int(r["window"]),
                           round(float(r.get("pwrite64-syscall.bytes", 0) or 0)),
                           round(float(r.get("preadv2-syscall.count", 0) or 0))) for r in rs)
        c.check(len(krows) == len(rows) and key_sums(krows) == key_sums(rows),
                "Kafka gives the same rows as the files (%d, %d)" % (len(krows), len(rows)))

        # follow: windows as they come, with the model's prediction
        fout = os.path.join(tmp, "follow.jsonl")
        p = cli("follow", "--kafka", boot, "--from-start", "--labels", labels, "--model",
                os.path.join(out, "model.pkl"), "--out", fout, "--duration", "12", "--idle", "1")
        frows = [json.loads(x) for x in open(fout)] if os.path.exists(fout) else []
        c.eq(p.returncode, 0, "follow exits 0")
        # keyed by host/cgroup a window's records come from 3 partitions in any
        # order: a late part is a second row with the same key, and rows add up
        fsum = {}
        for r in frows:
            k = (r["workload"], r["window"])
            fsum[k] = fsum.get(k, 0) + r.get("pwrite64-syscall.bytes", 0)
        want = {(r["workload"], int(r["window"])): float(r.get("pwrite64-syscall.bytes", 0) or 0)
                for r in rows}
        c.check(fsum == want and all(r.get("predicted_bandwidth", 0) > 0 for r in frows),
                "follow emits every window's rows, with a predicted bandwidth (%d keys of %d)"
                % (len(fsum), len(want)))

        # the trace query, from the files and from the traces topic
        pat = os.path.join(tmp, "data").replace(".", r"\.")
        tf = cli("traces", "--files", tdir, "--pattern", pat, "--out",
                 os.path.join(tmp, "tf.csv"), "--in-process")
        tk = cli("traces", "--kafka", boot, "--pattern", pat, "--out",
                 os.path.join(tmp, "tk.csv"), "--in-process")
        c.check(tf.returncode == 0 and tk.returncode == 0, "traces exit 0")
        t1 = list(csv.DictReader(open(os.path.join(tmp, "tf.csv"))))
        t2 = list(csv.DictReader(open(os.path.join(tmp, "tk.csv"))))
        c.check(any(r["name"] in ("pwrite64", "preadv2") for r in t1),
                "the traced calls on the data files are found (%s)" % [r["name"] for r in t1])
        c.check(t1 == t2, "trace files and the traces topic give the same answer")
    finally:
        if a is not None and a.proc.poll() is None:
            a.proc.kill()
        broker.stdin.close()
        broker.wait(10)
        if c.failed and os.environ.get("DC_KEEP"):
            print("kept %s and the agent's %s" % (tmp, a_tmp))
        else:
            shutil.rmtree(tmp, ignore_errors=True)
            if a_tmp:
                shutil.rmtree(a_tmp, ignore_errors=True)
    c.done()


if __name__ == "__main__":
    main()

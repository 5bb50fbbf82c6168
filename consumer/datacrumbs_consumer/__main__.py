# SPDX-License-Identifier: Apache-2.0
"""datacrumbs_consumer: flatten, follow, generate, train, plot, traces, pipeline.

python3 -m datacrumbs_consumer SUBCOMMAND --help for each one's options.
"""
import argparse
import glob
import json
import logging
import os
import socket
import sys
import time

from . import records as R
from . import sources as S

log = logging.getLogger("datacrumbs_consumer")


def add_source(p, default_files=True):
    g = p.add_argument_group("input (local files by default, or Kafka)")
    g.add_argument("--files", nargs="+", metavar="PATH",
                   help="record files, directories or globs (default %s)" % S.DEFAULT_PATH
                   if default_files else "files, directories or globs")
    g.add_argument("--kafka", metavar="BROKERS", help="bootstrap servers (host:port,...)")
    g.add_argument("--topic", help="Kafka topic (default datacrumbs.features)")
    g.add_argument("--kafka-property", action="append", default=[], metavar="NAME=VALUE",
                   help="librdkafka property for the consumer (security, ...), repeatable")
    g.add_argument("--group", help="Kafka consumer group (default datacrumbs-consumer; for "
                   "follow, a group of its own per process)")


def add_dask(p):
    g = p.add_argument_group("Dask")
    g.add_argument("--scheduler", metavar="ADDRESS",
                   help="an existing Dask scheduler (tcp://host:8786); default: a LocalCluster")
    g.add_argument("--workers", type=int, help="LocalCluster workers (default: Dask's choice)")
    g.add_argument("--threads", type=int, help="threads per LocalCluster worker")
    g.add_argument("--in-process", action="store_true",
                   help="LocalCluster of threads in this process (small data, tests)")


def client_of(a):
    from .dataset import make_client
    return make_client(a.scheduler, a.workers, a.threads, processes=not a.in_process)


def kafka_of(a, default_topic):
    return (S.kafka_config(a.kafka, a.group, a.kafka_property), a.topic or default_topic)


def load_labels(path):
    from .dataset import Labels
    return Labels.load(path) if path else None


def rows_from_source(a, client, labels):
    from .dataset import load_rows
    if a.kafka:
        if a.files:
            raise SystemExit("error: --files and --kafka: choose one input")
        return load_rows(client, kafka=kafka_of(a, "datacrumbs.features"), labels=labels,
                         blocksize=a.blocksize)
    return load_rows(client, files=a.files or [S.DEFAULT_PATH], labels=labels,
                     blocksize=a.blocksize)


def read_rows(path):
    import pandas as pd
    files = sorted(glob.glob(os.path.join(path, "part-*.csv"))) if os.path.isdir(path) else [path]
    if not files:
        raise FileNotFoundError("no part-*.csv in %s (made by `flatten --out`)" % path)
    df = pd.concat([pd.read_csv(f, dtype={"host": str, "run": str, "workload": str})
                    for f in files], ignore_index=True)
    for c in R.KEYS:
        if c not in df.columns:
            raise ValueError("%s: no %r column: not a flattened table" % (path, c))
    return df.fillna(0)


def positive_seconds(text):
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError("%r is not a number of seconds" % text) from None
    if not (v >= 0.001 and v <= 86400):
        raise argparse.ArgumentTypeError("%r: an interval from 0.001 to 86400 seconds" % text)
    return v


# ---- subcommands ----------------------------------------------------------

def cmd_flatten(a):
    labels = load_labels(a.labels)
    client = client_of(a)
    try:
        ddf, cols = rows_from_source(a, client, labels)
        off = None
        if a.join_nodes is not None:
            from .dataset import join_nodes
            ddf, cols, off = join_nodes(ddf, cols, int(round(a.join_nodes * 1e6)))
        os.makedirs(a.out, exist_ok=True)
        for f in glob.glob(os.path.join(a.out, "part-*.csv")):
            os.unlink(f)
        ddf.to_csv(os.path.join(a.out, "part-*.csv"), index=False)
        from .dataset import count_rows
        nrows = count_rows(ddf, client)
        print("%d rows, %d columns (%d `<function>-<category>.<stat>`) in %s/part-*.csv"
              % (nrows, len(cols), len(R.stat_columns(cols)), a.out))
        if off is not None:
            off = count_rows(off, client)
            if off:
                print("warning: %d rows left out: their windows neither ended nor started "
                      "within %d%% of the interval of a multiple of %g s (agents with "
                      "align_windows = false, or another interval)"
                      % (off, R.GRID_SLACK * 100, a.join_nodes), file=sys.stderr)
    finally:
        client.close()


def cmd_follow(a):
    from .follow import follow, kafka_lines, tail_lines
    from .model import load_model
    labels = load_labels(a.labels)
    model = load_model(a.model) if a.model else None
    deadline = time.monotonic() + a.duration if a.duration else None

    def stop():
        return deadline is not None and time.monotonic() > deadline

    if a.kafka:
        # a group of its own: it commits no offsets, so a follower sharing a
        # group would lose or replay records at every rebalance another
        # follower's start causes (and see only some partitions)
        group = a.group or "datacrumbs-follow-%s-%d" % (socket.gethostname(), os.getpid())
        lines = kafka_lines(dict(S.kafka_config(a.kafka, group, a.kafka_property),
                                 **({"auto.offset.reset": "latest"} if not a.from_start else {})),
                            a.topic or "datacrumbs.features", stop)
    else:
        files = a.files or [S.DEFAULT_PATH]
        if len(files) != 1:
            raise SystemExit("error: follow tails one file")
        lines = tail_lines(files[0], a.from_start, stop=stop)
    out = open(a.out, "a") if a.out else sys.stdout
    try:
        n = follow(lines, out, labels, model, a.idle, a.windows, deadline,
                   a.lag if a.lag is not None else (2 if a.kafka else 0))
    finally:
        if a.out:
            out.close()
    log.info("%d windows", n)


def cmd_generate(a):
    from . import generate as G
    pts = G.matrix(a.ops.split(","), a.modes.split(","),
                   [G.parse_size(s) for s in a.sizes.split(",")],
                   [int(x) for x in a.files.split(",")], [int(x) for x in a.threads.split(",")],
                   a.fsync.split(","))
    pts = G.sample(pts, a.points, a.seed) * a.repeat
    print("running %d points of %.1f s" % (len(pts), a.duration), flush=True)
    n = G.generate(pts, a.dir, a.labels, a.duration, a.file_mib, a.pause, a.host,
                   log=lambda s: print(s, flush=True))
    if not a.keep:
        G.cleanup(a.dir)
    print("%d labels appended to %s" % (n, a.labels))


def train_and_report(df, labels, a):
    from . import model as M
    from .dataset import complete_rows, lossless_rows, steady_rows
    df, edge = steady_rows(df, labels)
    df, lacking, absent = complete_rows(df)
    if lacking:
        log.info("left out %s: measured without layers other rows have (records' lacks)",
                 ", ".join("%d rows lacking %s" % (n, k) for k, n in sorted(lacking.items())))
    df, lossy = lossless_rows(df)
    if lossy and not len(df):
        raise ValueError("every row's window lost counts to a full map or skipped program runs "
                         "(records' window_losses): for map_full, size the agent's maps.* for "
                         "the node (its agent records' drops say which map)")
    if lossy:
        log.info("left out %d rows of windows that lost counts to a full map or skipped "
                 "program runs (records' window_losses; the agent record's losses say which)",
                 lossy)
    report, pred, mdl = M.train(df, labels, seed=a.seed, test_size=a.test_size, trees=a.trees,
                                with_bytes=a.with_bytes, target=a.target, exclude=a.exclude)
    report["edge_windows_left_out"] = edge
    report["rows_lacking_layers_left_out"] = lacking
    report["rows_with_window_losses_left_out"] = lossy
    report["layers_absent"] = absent
    M.save(a.out, report, pred, mdl)
    print(M.table(report))
    print("model, report.json and predictions.csv in %s" % a.out)
    return report


def cmd_train(a):
    labels = load_labels(a.labels)
    if a.rows:
        df = read_rows(a.rows)
    else:
        client = client_of(a)
        try:
            ddf, _ = rows_from_source(a, client, labels)
            df = client.compute(ddf, sync=True)
        finally:
            client.close()
    train_and_report(df, labels, a)


def make_plots(df, model_dir, out, labels=None):
    import pandas as pd
    from . import plots as P
    from .dataset import agent_bandwidth
    os.makedirs(out, exist_ok=True)
    df = df.reset_index(drop=True)
    made = []
    p = os.path.join(out, "bandwidth_over_time.png")
    measured = None
    if labels is not None:
        measured = pd.Series(labels.window_bandwidth(df), index=df.index)
    P.bandwidth_over_time(df, agent_bandwidth(df), p, measured)
    made.append(p)
    if model_dir:
        with open(os.path.join(model_dir, "report.json")) as f:
            report = json.load(f)
        pred = pd.read_csv(os.path.join(model_dir, "predictions.csv"))
        p = os.path.join(out, "predicted_vs_measured.png")
        P.predicted_vs_measured(pred, report, p)
        made.append(p)
        p = os.path.join(out, "importance.png")
        P.importance(report, p)
        made.append(p)
    for p in made:
        print(p)
    return made


def cmd_plot(a):
    make_plots(read_rows(a.rows), a.model_dir, a.out, load_labels(a.labels))


def cmd_traces(a):
    from . import traces as T
    if a.kafka:
        conf, topic = kafka_of(a, "datacrumbs.traces")
        loaders = [(T.load_kafka, (conf, p)) for p in S.kafka_partitions(conf, topic)]
    else:
        specs = a.files or ["/var/lib/datacrumbs/traces"]
        files = []
        for s in specs:
            if os.path.isdir(s):
                files += sorted(glob.glob(os.path.join(s, "*.pfw*")))
            else:
                g = sorted(glob.glob(s))
                if not g:
                    raise FileNotFoundError("no such trace file: %s" % s)
                files += g
        if not files:
            raise FileNotFoundError("no trace files in %s" % ", ".join(specs))
        loaders = [(T.load_file, (f,)) for f in files]
    client = client_of(a)
    try:
        matched, merged, by = T.query(client, loaders, a.pattern)
    finally:
        client.close()
    print("%d files match %r; %d merged intervals covering %.1f us; %d overlapping events"
          % (len(matched), a.pattern, len(merged), sum(b - x for x, b in merged),
             len(by) and int(by["events"].sum())))
    print(by.to_string(index=False) if len(by) else "(no events)")
    if a.out:
        by.to_csv(a.out, index=False)


def cmd_pipeline(a):
    """flatten (Dask) -> train -> plots, from the records and labels in one go."""
    labels = load_labels(a.labels)
    client = client_of(a)
    try:
        t0 = time.monotonic()
        ddf, cols = rows_from_source(a, client, labels)
        df = client.compute(ddf, sync=True)
        log.info("flattened %d rows x %d columns in %.1f s", len(df), len(cols),
                 time.monotonic() - t0)
    finally:
        client.close()
    os.makedirs(a.out, exist_ok=True)
    df.to_csv(os.path.join(a.out, "part-0.csv"), index=False)
    report = train_and_report(df, labels, a)
    make_plots(df, a.out, a.out, labels)
    if a.goal is not None:
        al = report["all"]
        for what, r in (("held-out split, rows", al["heldout"]), ("%d-fold by workload, rows"
                        % al["cv"]["folds"], al["cv"]), ("%d-fold by workload, per workload"
                        % al["cv"]["folds"], al["cv_by_workload"])):
            print("goal: R^2 of the all-feature model on unseen workloads (%s): %.3f %s %.2f "
                  "(R^2 of log %.3f, MAPE %.3f, %d)" % (what, r["r2"], ">=" if r["r2"] >= a.goal
                                                       else "<", a.goal, r["r2_log"], r["mape"],
                                                       r["rows"]))


def add_train_opts(p):
    p.add_argument("--labels", required=True, help="labels of the generated workloads")
    p.add_argument("--out", required=True, help="directory for model.pkl, report.json, ...")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--test-size", type=float, default=0.25,
                   help="share of workloads held out (default 0.25)")
    p.add_argument("--trees", type=int, default=200)
    p.add_argument("--target", choices=["window", "workload"], default="window",
                   help="bandwidth of the row's window (default) or of the whole run")
    p.add_argument("--exclude", metavar="REGEX",
                   help="leave out the features matching this (an ablation: --exclude='-access\\.')")
    p.add_argument("--with-bytes", action="store_true",
                   help="also give the model byte rates (see model.py: an ablation)")


def main(argv=None):
    ap = argparse.ArgumentParser(prog="datacrumbs_consumer", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-v", "--verbose", action="store_true")
    sub = ap.add_subparsers(dest="cmd", required=True)

    p = sub.add_parser("flatten", help="records -> one row per (window, workload), CSV parts")
    add_source(p)
    add_dask(p)
    p.add_argument("--labels", help="only the generator's workloads, named by their labels")
    p.add_argument("--out", required=True, help="directory for part-*.csv")
    p.add_argument("--join-nodes", type=positive_seconds, metavar="INTERVAL",
                   help="one row per (workload, window end) across every node: a job's "
                   "windows on all its nodes summed; INTERVAL is the agents' (seconds)")
    p.add_argument("--blocksize", type=int, default=S.BLOCKSIZE, help=argparse.SUPPRESS)
    p.set_defaults(fn=cmd_flatten)

    p = sub.add_parser("follow", help="rows of each window as it arrives (JSON lines)")
    add_source(p)
    p.add_argument("--labels")
    p.add_argument("--model", help="model.pkl from train: add predicted_bandwidth to rows")
    p.add_argument("--out", help="append rows here (default standard output)")
    p.add_argument("--from-start", action="store_true", help="read what is there first")
    p.add_argument("--idle", type=float, default=5.0,
                   help="close a window after this many seconds without news (default 5)")
    p.add_argument("--windows", type=int, default=0, help="stop after N windows")
    p.add_argument("--lag", type=int, help="close a window when one N later arrives "
                   "(default 2 for Kafka, 0 for files, which have agent records)")
    p.add_argument("--duration", type=float, default=0, help="stop after S seconds")
    p.set_defaults(fn=cmd_follow)

    p = sub.add_parser("generate", help="run the workload matrix (under a running agent)")
    p.add_argument("--labels", required=True, help="append one label line per point here")
    p.add_argument("--dir", required=True, help="working directory (on the file system to test)")
    p.add_argument("--ops", default="read,write")
    p.add_argument("--modes", default="buffered,direct")
    p.add_argument("--sizes", default="4K,64K,1M,16M,64M")
    p.add_argument("--files", default="1,2,4,8")
    p.add_argument("--threads", default="1,2,4")
    p.add_argument("--fsync", default="none,end,each")
    p.add_argument("--points", type=int, default=0, help="a random sample of N points (0: all)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--repeat", type=int, default=1,
                   help="run the points N times (each run its own workload)")
    p.add_argument("--duration", type=float, default=2.0, help="seconds per point")
    p.add_argument("--file-mib", type=int, default=64, help="size of each file, MiB")
    p.add_argument("--pause", type=float, default=0.0, help="seconds between points")
    p.add_argument("--host", help="the agent's host name (default: the kernel's)")
    p.add_argument("--keep", action="store_true", help="keep the data files")
    p.set_defaults(fn=cmd_generate)

    p = sub.add_parser("train", help="random forests per category and over all features")
    add_source(p)
    add_dask(p)
    p.add_argument("--rows", help="flattened table from `flatten --out` (else read the input)")
    p.add_argument("--blocksize", type=int, default=S.BLOCKSIZE, help=argparse.SUPPRESS)
    add_train_opts(p)
    p.set_defaults(fn=cmd_train)

    p = sub.add_parser("plot", help="PNG pictures of a flattened table and a trained model")
    p.add_argument("--rows", required=True)
    p.add_argument("--model-dir", help="train's --out (predictions and importance)")
    p.add_argument("--labels", help="the generator's labels: its measurement beside the records'")
    p.add_argument("--out", required=True)
    p.set_defaults(fn=cmd_plot)

    p = sub.add_parser("traces", help="the seeds' query on sampled traces")
    add_source(p, default_files=False)
    add_dask(p)
    p.add_argument("--pattern", required=True, help="regular expression over file paths")
    p.add_argument("--out", help="write time per (name, cat) as CSV here")
    p.set_defaults(fn=cmd_traces)

    p = sub.add_parser("pipeline", help="flatten + train + plot in one command")
    add_source(p)
    add_dask(p)
    p.add_argument("--blocksize", type=int, default=S.BLOCKSIZE, help=argparse.SUPPRESS)
    p.add_argument("--goal", type=float, help="print whether held-out R^2 reaches this")
    add_train_opts(p)
    p.set_defaults(fn=cmd_pipeline)

    a = ap.parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if a.verbose else logging.INFO,
                        format="%(levelname)s: %(message)s")
    for noisy in ("distributed", "tornado", "bokeh"):
        logging.getLogger(noisy).setLevel(logging.ERROR)
    try:
        a.fn(a)
    except (R.RecordError, FileNotFoundError, ValueError, RuntimeError) as e:
        print("error: %s" % e, file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())

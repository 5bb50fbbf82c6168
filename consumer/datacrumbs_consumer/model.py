# SPDX-License-Identifier: Apache-2.0
"""Learn bandwidth from the features: a random forest per category and one over all.

Target, measured by the generator, never by the agent (generate.py):
  window   (default) the bytes/s the workload's process moved during the row's
           window, read from its timeline of bytes moved so far;
  workload the run's bytes / wall time, one value for all its windows (as the
           seeds labelled a whole run): windows of one run differ (dirty-page
           throttling, a final fsync) while their label does not.
Rows of windows that lie wholly inside their run only (dataset.steady_rows),
and with some bytes moved (a log needs a positive value).

Features: per `<function>-<category>`, rates and times made from the agent's counters:

  K.rate   calls (or pages, or requests) per second of the window
  K.busy   time in K per second of the window (the seeds' time per function)
  K.lat    mean time per call, ns
  K.erate  failed calls per second
  K.share  K's calls over all calls of its category in the window

Byte counts are left out (`with_bytes` puts them back, as K.bps): a row's bytes
over its window is the bandwidth itself, so a model that had them would learn
a division, not what the kernel's activity says about throughput. Page-cache
page counts stay in: they count kernel events, as the seeds' page-cache
function counts did.

Evaluation as the seed does (out-of-bag score, the features that explain 99%
of the importance) and on held-out workloads: whole workloads the model never
saw (GroupShuffleSplit by workload), not random rows of workloads it saw.
"""
import json
import logging
import re
import math
import os
import pickle

import numpy as np
import pandas as pd

from . import records as R

log = logging.getLogger("datacrumbs_consumer")

IMPORTANCE_TARGET = 0.99


def feature_frame(df, with_bytes=False, all_columns=False):
    """Rows (sums) -> model features (rates, shares, means). Index kept.

    all_columns: keep the columns that do not vary too (prediction: a
    single window's row has no column that varies)."""
    secs = (df["duration_us"].astype(float) / 1e6).replace(0, np.nan)
    out = {}
    keys = {}
    for c in R.stat_columns(df.columns):
        fn, cat, stat = R.split_column(c)
        keys.setdefault("%s-%s" % (fn, cat), {})[stat] = df[c].astype(float)
    for k, st in sorted(keys.items()):
        cnt = st.get("count")
        t = st.get("time_ns")
        if t is None and ("queue_ns" in st or "device_ns" in st):
            t = st.get("queue_ns", 0) + st.get("device_ns", 0)
        if cnt is not None:
            out[k + ".rate"] = cnt / secs
        if t is not None:
            out[k + ".busy"] = t / (secs * 1e9)
            if cnt is not None:
                out[k + ".lat"] = (t / cnt.replace(0, np.nan))
        if "errors" in st:
            out[k + ".erate"] = st["errors"] / secs
        if with_bytes and "bytes" in st:
            out[k + ".bps"] = st["bytes"] / secs
    # the share of each function's calls among its category's: scale-free, so a
    # slowed-down run of 4 KiB writes still looks like 4 KiB writes (its size
    # class is the share of its calls in the size_write_1K_10K-access bucket)
    cnt = {k: st["count"] for k, st in keys.items() if "count" in st}
    bycat = {}
    for k in cnt:
        bycat.setdefault(k.rpartition("-")[2], []).append(k)
    for cat, ks in bycat.items():
        tot = sum(cnt[k] for k in ks).replace(0, np.nan)
        for k in ks:
            out[k + ".share"] = cnt[k] / tot
    X = pd.DataFrame(out, index=df.index).fillna(0.0)
    if all_columns:
        return X
    # a column that never varies says nothing
    return X.loc[:, X.nunique() > 1]


def category_of(feature):
    return R.split_column(feature.rpartition(".")[0] + ".x")[1]


def _forest(seed, trees, jobs):
    from sklearn.ensemble import RandomForestRegressor
    # a third of the features per split (Breiman's choice for regression):
    # measured better on workloads never seen than all of them (consumer/README.md)
    return RandomForestRegressor(n_estimators=trees, random_state=seed, oob_score=True,
                                 n_jobs=jobs, max_features=0.33)


def scores(y, p):
    from sklearn.metrics import mean_absolute_percentage_error, r2_score
    y, p = np.asarray(y, float), np.asarray(p, float)
    ok = (y > 0) & (p > 0)
    return {"r2": float(r2_score(y, p)) if len(y) > 1 else float("nan"),
            "r2_log": float(r2_score(np.log(y[ok]), np.log(p[ok]))) if ok.sum() > 1 else
            float("nan"),
            "mape": float(mean_absolute_percentage_error(y, p)) if len(y) else float("nan"),
            "rows": int(len(y))}


def important(names, importances, target=IMPORTANCE_TARGET):
    """The features that explain `target` of the importance, most important first."""
    fi = sorted(zip(names, importances), key=lambda x: -x[1])
    cum = np.cumsum([v for _, v in fi])
    n = int(np.searchsorted(cum, target * cum[-1] - 1e-12) + 1) if len(fi) and cum[-1] > 0 else 0
    return [(f, float(v)) for f, v in fi[:n]]


def configuration_of(workload):
    """The matrix point a generator run measured ("<stamp>-<i>-<point>"):
    repeats of one point are one group, so that a held-out run never has
    its twin in training; any other label is its own group."""
    m = re.match(r"^[0-9a-f]+-\d{3,}-(.+)$", str(workload))
    return m.group(1) if m else str(workload)


def split_workloads(groups, test_size, seed):
    from sklearn.model_selection import GroupShuffleSplit
    gss = GroupShuffleSplit(n_splits=1, test_size=test_size, random_state=seed)
    train, test = next(gss.split(np.zeros(len(groups)), groups=groups))
    return train, test


def group_folds(groups, k, seed):
    """k folds of whole workloads, assigned in a random order.

    (GroupKFold deals equal-sized groups out in name order: runs named in
    sequence would land in folds by their position in the matrix.)
    """
    uniq = np.unique(groups)
    order = np.random.RandomState(seed).permutation(len(uniq))
    fold = dict(zip(uniq[order], np.arange(len(uniq)) % k))
    f = np.array([fold[g] for g in groups])
    for i in range(k):
        yield np.where(f != i)[0], np.where(f == i)[0]


def fit_eval(X, y, groups, seed=0, test_size=0.25, trees=200, jobs=-1, folds=4):
    """One model: fit on the training workloads, score on the held-out ones.

    Also `folds`-fold cross-validation by workload (every workload predicted once
    by a model that never saw it): steadier than one split when workloads are few.
    """
    tr, te = split_workloads(groups, test_size, seed)
    # what never varies among the training workloads cannot be learned from
    X = X.loc[:, X.iloc[tr].nunique() > 1]
    if X.shape[1] == 0:
        return None, None, te, None
    ylog = np.log(y)
    m = _forest(seed, trees, jobs)
    m.fit(X.iloc[tr].values, ylog[tr])
    m.dc_features = list(X.columns)  # the columns it was fit on, in order
    p = np.exp(m.predict(X.iloc[te].values))
    # the mean predictor: what a model that learned nothing from the features scores
    base = np.full(len(te), float(np.exp(ylog[tr].mean())))
    res = {"features": int(X.shape[1]),
           "train_workloads": int(len(set(groups[tr]))),
           "test_workloads": int(len(set(groups[te]))),
           "oob_r2_log": float(m.oob_score_),
           "heldout": scores(y[te], p),
           "train": scores(y[tr], np.exp(m.predict(X.iloc[tr].values))),
           "mean_predictor": scores(y[te], base),
           "important": important(list(X.columns), m.feature_importances_)}
    k = min(folds, len(set(groups)))
    if k >= 2:
        oof = np.zeros(len(y))
        oof_base = np.zeros(len(y))
        for a, b in group_folds(groups, k, seed):
            f = _forest(seed, trees, jobs).fit(X.iloc[a].values, ylog[a])
            oof[b] = np.exp(f.predict(X.iloc[b].values))
            oof_base[b] = np.exp(ylog[a].mean())
        res["cv"] = dict(scores(y, oof), folds=k)
        # per workload: its windows' geometric means, measured and predicted
        g = pd.DataFrame({"w": groups, "y": ylog, "p": np.log(oof)}).groupby("w").mean()
        res["cv_by_workload"] = scores(np.exp(g["y"]), np.exp(g["p"]))
        res["cv_mean_predictor"] = scores(y, oof_base)
        res["_oof"] = oof
    return m, res, te, p


TARGETS = {
    "window": "bytes/s the generator measured in the row's window (its timeline)",
    "workload": "bytes/s the generator measured over the whole run (bytes / wall time)",
}


def target_of(df, labels, target):
    if target == "window":
        return labels.window_bandwidth(df)
    if target == "workload":
        return df["workload"].map(labels.frame()["bandwidth"]).astype(float).values
    raise ValueError("target %r: window or workload" % target)


def train(df, labels, seed=0, test_size=0.25, trees=200, with_bytes=False, jobs=-1,
          min_rows=4, target="window", exclude=None):  # noqa: C901
    """Every category's model and the all-feature one; returns (report, predictions, model)."""
    y = target_of(df, labels, target)
    # a window in which nothing completed has no bandwidth to learn in log space
    keep = y > 0
    df = df[keep]
    y = y[keep]
    groups = np.array([configuration_of(w) for w in df["workload"].values])
    if len(set(groups)) < 4:
        raise ValueError("need rows of at least 4 workloads (matrix points) to hold some "
                         "out, have %d" % len(set(groups)))
    X = feature_frame(df, with_bytes)
    if exclude:
        import re
        rx = re.compile(exclude)
        X = X[[c for c in X.columns if not rx.search(c)]]
        if X.shape[1] == 0:
            raise ValueError("--exclude %r leaves no feature" % exclude)
    cats = sorted({category_of(f) for f in X.columns})
    report = {"target": target, "target_meaning": TARGETS[target] + ", fit on its log",
              "rows_without_bandwidth": int((~keep).sum()),
              "rows": int(len(df)), "workloads": int(len(set(groups))), "seed": seed,
              "with_bytes": with_bytes, "exclude": exclude, "categories": {}}
    for cat in cats:
        cols = [f for f in X.columns if category_of(f) == cat]
        if len(cols) < 1 or len(df) < min_rows:
            continue
        _, res, _, _ = fit_eval(X[cols], y, groups, seed, test_size, trees, jobs)
        if res is None:
            report.setdefault("skipped", {})[cat] = "no feature varies among training workloads"
            continue
        res.pop("_oof", None)
        report["categories"][cat] = res
        log.info("%-12s %3d features: held-out R^2 %.3f MAPE %.3f, OOB R^2(log) %.3f",
                 cat, len(cols), res["heldout"]["r2"], res["heldout"]["mape"],
                 res["oob_r2_log"])
    m, res, te, p = fit_eval(X, y, groups, seed, test_size, trees, jobs)
    if m is None:
        raise ValueError("no feature varies among the training workloads")
    oof = res.pop("_oof", None)
    report["all"] = res
    log.info("%-12s %3d features: held-out R^2 %.3f MAPE %.3f, OOB R^2(log) %.3f", "all",
             X.shape[1], res["heldout"]["r2"], res["heldout"]["mape"], res["oob_r2_log"])
    sub = df.iloc[te]
    pred = pd.DataFrame({"workload": sub["workload"].values, "host": sub["host"].values,
                         "window": sub["window"].values, "ts_start": sub["ts_start"].values,
                         "measured": y[te], "predicted": p})
    if oof is not None:
        pred["set"] = "heldout"
        cv = pd.DataFrame({"workload": df["workload"].values, "host": df["host"].values,
                           "window": df["window"].values, "ts_start": df["ts_start"].values,
                           "measured": y, "predicted": oof, "set": "cv"})
        pred = pd.concat([pred, cv], ignore_index=True)
    return report, pred, {"model": m, "features": m.dc_features, "with_bytes": with_bytes}


def save(outdir, report, pred, model):
    os.makedirs(outdir, exist_ok=True)
    with open(os.path.join(outdir, "report.json"), "w") as f:
        json.dump(report, f, indent=1, default=lambda v: None if isinstance(v, float) and
                  math.isnan(v) else v)
    pred.to_csv(os.path.join(outdir, "predictions.csv"), index=False)
    with open(os.path.join(outdir, "model.pkl"), "wb") as f:
        pickle.dump(model, f)


def load_model(path):
    with open(path, "rb") as f:
        return pickle.load(f)


def predict(model, df):
    # every column: filtering on variation would zero a window's own features
    X = feature_frame(df, model["with_bytes"], all_columns=True).reindex(
        columns=model["features"], fill_value=0.0)
    return np.exp(model["model"].predict(X.values))


def table(report):
    """The report as text, one line per category: features kept for 99%, R^2, MAPE."""
    lines = ["held-out workloads: one split (R2, R2log, MAPE) and %s-fold by workload (cv-*)"
             % report["all"].get("cv", {}).get("folds", "-"),
             "%-12s %8s %7s %9s %7s %7s %7s %7s %7s %7s" % (
                 "category", "features", "99%imp", "OOB-R2log", "R2", "R2log", "MAPE",
                 "cv-R2", "cv-R2log", "cv-MAPE")]
    items = list(report["categories"].items()) + [("all", report["all"])]
    for cat, r in items:
        h = r["heldout"]
        cv = r.get("cv", {"r2": float("nan"), "r2_log": float("nan"), "mape": float("nan")})
        lines.append("%-12s %8d %7d %9.3f %7.3f %7.3f %7.3f %7.3f %7.3f %7.3f" % (
            cat, r["features"], len(r["important"]), r["oob_r2_log"], h["r2"], h["r2_log"],
            h["mape"], cv["r2"], cv["r2_log"], cv["mape"]))
    b = report["all"]["mean_predictor"]
    cb = report["all"].get("cv_mean_predictor", {"r2": float("nan"), "r2_log": float("nan"),
                                                  "mape": float("nan")})
    lines.append("%-12s %8s %7s %9s %7.3f %7.3f %7.3f %7.3f %7.3f %7.3f" % (
        "mean-pred", "", "", "", b["r2"], b["r2_log"], b["mape"], cb["r2"], cb["r2_log"],
        cb["mape"]))
    return "\n".join(lines)

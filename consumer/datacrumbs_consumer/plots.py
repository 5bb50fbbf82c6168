# SPDX-License-Identifier: Apache-2.0
"""PNG pictures: bandwidth over time per workload, predicted against measured, importance."""
import math

import matplotlib
matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt  # noqa: E402


def bandwidth_over_time(df, bw, path, max_workloads=16):
    """Per workload: the bytes/s its records show per window (the agent's view)."""
    fig, ax = plt.subplots(figsize=(10, 5.5))
    t0 = df["ts_start"].min()
    top = (df.assign(bw=bw).groupby("workload")["bw"].mean()
           .sort_values(ascending=False).index[:max_workloads])
    for wl in top:
        d = df[df["workload"] == wl].sort_values("ts_start")
        t = (d["ts_end"] - t0) / 1e6
        ax.plot(t, bw[d.index] / 1e6, marker=".", label=str(wl)[-40:])
    ax.set_xlabel("time (s, window end)")
    ax.set_ylabel("MB/s in the window (records' data-call bytes)")
    ax.set_yscale("symlog", linthresh=1)
    ax.set_title("Bandwidth over time per workload (%d of %d)"
                 % (len(top), df["workload"].nunique()))
    if len(top) <= 16:
        ax.legend(fontsize=6, loc="best")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def predicted_vs_measured(pred, report, path):
    fig, ax = plt.subplots(figsize=(6.5, 6))
    if "set" not in pred:
        pred = pred.assign(set="heldout")
    m, p = pred["measured"] / 1e6, pred["predicted"] / 1e6
    for name, style in (("cv", dict(s=10, alpha=0.45, c="tab:gray")),
                        ("heldout", dict(s=16, alpha=0.85, c="tab:blue"))):
        sel = pred["set"] == name
        if sel.any():
            lab = ("held-out split" if name == "heldout" else
                   "every workload, out of fold (%s-fold by workload)"
                   % report["all"].get("cv", {}).get("folds", "?"))
            ax.scatter(m[sel], p[sel], label=lab, **style)
    ax.legend(fontsize=8, loc="upper left")
    lo = max(1e-3, float(min(m.min(), p.min())) / 1.5)
    hi = float(max(m.max(), p.max())) * 1.5
    ax.plot([lo, hi], [lo, hi], "k--", lw=1)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    ax.set_ylim(lo, hi)
    h = report["all"]["heldout"]
    cv = report["all"].get("cv")
    ax.set_title("Held-out workloads (%d): R$^2$ %.3f, MAPE %.2f%s"
                 % (report["all"]["test_workloads"], h["r2"], h["mape"],
                    "\nout of fold (%d): R$^2$ %.3f, MAPE %.2f" % (report["workloads"], cv["r2"],
                                                                   cv["mape"]) if cv else ""),
                 fontsize=10)
    ax.set_xlabel("measured MB/s (generator)")
    ax.set_ylabel("predicted MB/s (all-feature model)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def importance(report, path, top=8):
    cats = list(report["categories"].items()) + [("all", report["all"])]
    cats = [(c, r) for c, r in cats if r["important"]]
    n = len(cats)
    cols = 2
    rows = max(1, math.ceil(n / cols))
    fig, axes = plt.subplots(rows, cols, figsize=(12, 2.6 * rows), squeeze=False)
    for ax in axes.flat[n:]:
        ax.axis("off")
    for ax, (cat, r) in zip(axes.flat, cats):
        fi = r["important"][:top][::-1]
        ax.barh([f for f, _ in fi], [v for _, v in fi])
        ax.tick_params(axis="y", labelsize=7)
        ax.set_title("%s: %d features for 99%%, held-out R$^2$ %.2f"
                     % (cat, len(r["important"]), r["heldout"]["r2"]), fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def is_png(path):
    with open(path, "rb") as f:
        return f.read(8) == b"\x89PNG\r\n\x1a\n"

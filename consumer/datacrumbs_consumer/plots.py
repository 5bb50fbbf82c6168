# SPDX-License-Identifier: Apache-2.0
"""PNG pictures: bandwidth over time per workload, predicted against measured, importance."""
import math

import matplotlib
matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt  # noqa: E402


def bandwidth_over_time(df, bw, path, measured=None, max_workloads=12):
    """Per workload, from its first window: the bytes/s its records show per window
    (the agent's view, solid) and, for generated runs, what the generator
    measured in the same windows (dashed). Workloads spread over the range."""
    fig, ax = plt.subplots(figsize=(10, 5.5))
    mean = df.assign(bw=bw).groupby("workload")["bw"].mean().sort_values()
    if len(mean) > max_workloads:
        pick = [mean.index[int(round(i * (len(mean) - 1) / (max_workloads - 1)))]
                for i in range(max_workloads)]
    else:
        pick = list(mean.index)
    for n, wl in enumerate(dict.fromkeys(pick)):
        d = df[df["workload"] == wl].sort_values("ts_start")
        t = (d["ts_end"] - d["ts_start"].min()) / 1e6
        color = "C%d" % (n % 10)
        name = str(wl)
        name = name.split("-", 1)[1] if name[:8].isalnum() and "-" in name else name
        ax.plot(t, bw[d.index] / 1e6, marker=".", color=color, label=name[-38:])
        if measured is not None:
            ax.plot(t, measured[d.index] / 1e6, ls="--", color=color, lw=1)
    ax.set_xlabel("seconds since the workload's first window (window end)")
    ax.set_ylabel("MB/s in the window")
    ax.set_yscale("log")
    ax.set_title("Bandwidth over time, %d of %d workloads: records (solid)%s"
                 % (len(dict.fromkeys(pick)), len(mean),
                    ", generator (dashed)" if measured is not None else ""), fontsize=10)
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.0, 0.5))
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

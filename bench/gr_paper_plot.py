#!/usr/bin/env python3
"""Plot benchmark JSON files written by ``bench/gr_paper.py`` (runs on the CPU machine).

    python bench/gr_paper_plot.py bench/results/gr_h100.json -o bench/results/gr_h100.png

One column per (dtype, mode). Rows: median time against n (log-log), accuracy
(residual for full SVDs, singular value error for values only, both in units of ε), and
orthogonality (full SVDs). Square n×n shapes are solid lines with circles, tall m×n
shapes (m fixed) dashed with triangles; the grey dotted line is the nominal GEMM floor
(Golub–Van Loan flop count over the measured GEMM ceiling). Failed and skipped cases
are left out; an accuracy of exactly 0 (a method identical to the reference) is drawn
at 1e-2. Several files are merged; when they come from different GPUs, the GPU
name is added to each series' label.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections import defaultdict

COLORS = {
    "gpusvd": "#d62728",
    "cupy_gesvd": "#1f77b4",
    "torch_gesvd": "#2ca02c",
    "torch_gesvdj": "#9467bd",
    "jax_polar": "#ff7f0e",
}
EXTRA_COLORS = ["#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"]


def num(x):
    """A positive finite float, or None (non-numbers, 'nan', 'inf', 0 are missing)."""
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        return None
    x = float(x)
    if x != x or x in (float("inf"), float("-inf")) or x <= 0:
        return None
    return x


ZERO_AT = 1e-2  # an exact 0 (e.g. a method that *is* the reference) is drawn here


def acc_num(x):
    """Like ``num`` but an exact zero is kept, drawn at ``ZERO_AT`` on the log axis."""
    if isinstance(x, (int, float)) and not isinstance(x, bool) and x == 0:
        return ZERO_AT
    return num(x)


def load(paths):
    runs = []
    for path in paths:
        with open(path) as f:
            data = json.load(f)
        dev = data.get("device_info") or {}
        runs.append({"path": path, "gpu": dev.get("gpu") or "unknown GPU",
                     "date": dev.get("date") or "", "records": data.get("records") or []})
    return runs


def series_key(rec, gpu, tag_gpu):
    m, n = int(rec["m"]), int(rec["n"])
    fam = "square" if m == n else f"tall m={max(m, n)}"
    return (rec["method"], fam, gpu if tag_gpu else None)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description="Plot gpusvd benchmark JSON.")
    p.add_argument("json", nargs="+", help="one or more JSON files from gr_paper.py")
    p.add_argument("-o", "--out", help="PNG path (default: first JSON with .png)")
    p.add_argument("--dpi", type=int, default=130)
    args = p.parse_args(argv)

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D

    runs = load(args.json)
    gpus = sorted({r["gpu"] for r in runs})
    tag_gpu = len(gpus) > 1

    # panel (dtype, mode) -> series key -> list of (n, time, acc, orth, floor)
    panels: dict[tuple, dict[tuple, list]] = defaultdict(lambda: defaultdict(list))
    floors: dict[tuple, dict[str, dict[int, float]]] = defaultdict(lambda: defaultdict(dict))
    methods: list[str] = []
    clipped: set[tuple] = set()
    for run in runs:
        for rec in run["records"]:
            try:
                dt, mode, meth = rec["dtype"], rec["mode"], rec["method"]
                m, n = int(rec["m"]), int(rec["n"])
            except (KeyError, TypeError, ValueError):
                continue
            if meth not in methods:
                methods.append(meth)
            t = num(rec.get("median_s"))
            if t is None or rec.get("skipped"):
                continue
            acc = acc_num(rec.get("residual") if mode == "full" else rec.get("sv_error"))
            orth = acc_num(rec.get("orthogonality")) if mode == "full" else None
            if ZERO_AT in (acc, orth):
                clipped.add((dt, mode))
            key = series_key(rec, run["gpu"], tag_gpu)
            panels[(dt, mode)][key].append((min(m, n), t, acc, orth))
            fl = num(rec.get("gemm_floor_s"))
            if fl is not None:
                floors[(dt, mode)][key[1]][min(m, n)] = fl

    if not panels:
        print("no timed records in " + ", ".join(args.json), file=sys.stderr)
        return 1

    dt_order = {"float64": 0, "float32": 1, "complex128": 2, "complex64": 3}
    cols = sorted(panels, key=lambda k: (dt_order.get(k[0], 9), k[0], k[1] != "full"))
    ncol = len(cols)
    fig, axes = plt.subplots(3, ncol, figsize=(4.6 * ncol, 11), squeeze=False,
                             sharex="col")
    color = {}
    for i, meth in enumerate(methods):
        color[meth] = COLORS.get(meth, EXTRA_COLORS[i % len(EXTRA_COLORS)])
    gpu_styles = ["-", "-."]

    for j, col in enumerate(cols):
        dt, mode = col
        ax_t, ax_a, ax_o = axes[0][j], axes[1][j], axes[2][j]
        for key, pts in sorted(panels[col].items(), key=lambda kv: (kv[0][0], kv[0][1])):
            meth, fam, gpu = key
            pts.sort()
            ns = [q[0] for q in pts]
            tall = fam != "square"
            ls = "--" if tall else (gpu_styles[gpus.index(gpu) % 2] if gpu else "-")
            mk = "^" if tall else "o"
            label = meth + (f" ({fam})" if tall else "") + (f" [{gpu}]" if gpu else "")
            kw = dict(color=color[meth], ls=ls, marker=mk, ms=4, lw=1.3)
            ax_t.plot(ns, [q[1] for q in pts], label=label, **kw)
            acc = [(q[0], q[2]) for q in pts if q[2] is not None]
            if acc:
                ax_a.plot([a[0] for a in acc], [a[1] for a in acc], **kw)
            orth = [(q[0], q[3]) for q in pts if q[3] is not None]
            if orth:
                ax_o.plot([o[0] for o in orth], [o[1] for o in orth], **kw)
        for fam, fl in floors[col].items():
            xs = sorted(fl)
            ax_t.plot(xs, [fl[x] for x in xs], color="0.5", ls=":", lw=1,
                      marker="^" if fam != "square" else None, ms=3)
        ax_t.set_title(f"{dt}, {'full SVD (U, S, Vh)' if mode == 'full' else 'values only'}")
        ax_t.set_ylabel("median time (s)")
        ax_a.set_ylabel("residual / (k ε)" if mode == "full" else "max|s − s_ref| / (σ₁ ε)")
        ax_o.set_ylabel("orthogonality / (k ε)")
        for ax in (ax_t, ax_a, ax_o):
            ax.set_xscale("log", base=2)
            ax.set_yscale("log")
            ax.grid(True, which="both", alpha=0.3)
        if col in clipped:
            ax_a.text(0.02, 0.02, "exact 0 drawn at 1e-2", transform=ax_a.transAxes,
                      fontsize=8, color="0.4")
        if mode != "full":
            ax_o.text(0.5, 0.5, "no vectors in values-only mode", ha="center",
                      va="center", transform=ax_o.transAxes, color="0.5")
            ax_o.set_yscale("linear")
            ax_o.set_yticks([])
        ax_o.set_xlabel("n (columns; k = min(m, n))")

    # One legend for the whole figure: methods (colour) and shape families (line style).
    handles = [Line2D([], [], color=color[m], lw=2, label=m) for m in methods]
    handles += [Line2D([], [], color="k", ls="-", marker="o", label="n × n"),
                Line2D([], [], color="k", ls="--", marker="^", label="tall m × n"),
                Line2D([], [], color="0.5", ls=":", label="nominal GEMM floor")]
    if tag_gpu:
        handles += [Line2D([], [], color="k", ls=gpu_styles[i % 2], label=g)
                    for i, g in enumerate(gpus)]
    fig.legend(handles=handles, loc="lower center", ncol=min(len(handles), 6),
               frameon=False)
    dates = sorted({r["date"][:10] for r in runs if r["date"]})
    fig.suptitle(f"gpusvd Golub–Reinsch vs peers — {', '.join(gpus)}"
                 + (f" — {', '.join(dates)}" if dates else ""))
    fig.tight_layout(rect=(0, 0.06, 1, 0.97))
    out = args.out or os.path.splitext(args.json[0])[0] + ".png"
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    fig.savefig(out, dpi=args.dpi)
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())

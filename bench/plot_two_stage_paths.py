#!/usr/bin/env python3
"""Plot the JSON files of ``bench/bench_two_stage_paths.py`` (runs on the CPU machine).

    python bench/plot_two_stage_paths.py bench/results/two_stage_paths_h100_s10.json \\
        -o bench/results/two_stage_paths_h100_s10.png

One column per mode (values, full, eigh), one row per dtype: median seconds against n,
log-log, one line per variant; gpusvd's two-stage path is drawn thick. Several files are
merged (a later record of the same n, dtype, mode and variant replaces an earlier one).
"""

from __future__ import annotations

import argparse
import json


def load(paths):
    """{(dtype, mode, variant): {n: seconds}} of the files' records."""
    series = {}
    for path in paths:
        with open(path) as f:
            for rec in json.load(f)["records"]:
                key = (rec["dtype"], rec["mode"], rec["variant"])
                series.setdefault(key, {})[rec["n"]] = rec["median_s"]
    return series


def plot(series, out):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    dtypes = sorted({k[0] for k in series}, reverse=True)
    modes = [m for m in ("values", "full", "eigh") if any(k[1] == m for k in series)]
    fig, axes = plt.subplots(len(dtypes), len(modes), figsize=(5 * len(modes),
                                                               4 * len(dtypes)),
                             squeeze=False)
    for row, dtype in enumerate(dtypes):
        for col, mode in enumerate(modes):
            ax = axes[row][col]
            for (dt, md, variant), points in sorted(series.items()):
                if (dt, md) != (dtype, mode):
                    continue
                ns = sorted(points)
                ax.loglog(ns, [points[n] for n in ns], marker="o", label=variant,
                          linewidth=3 if variant == "two_stage" else 1.2)
            ax.set_title(f"{mode}, {dtype}")
            ax.set_xlabel("n (n×n Gaussian)")
            ax.set_ylabel("median seconds")
            ax.grid(True, which="both", alpha=0.3)
            ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out, dpi=100)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("files", nargs="+")
    p.add_argument("-o", "--out", required=True)
    args = p.parse_args(argv)
    plot(load(args.files), args.out)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Plot bench_polar.py's results: seconds against n for each method, one panel per dtype
and mode (square matrices), marking results whose residual is not at gesvd's level.

    python bench/plot_polar.py bench/results/polar_h100_s7.json \\
        bench/results/polar_h100_s7_16384.json -o bench/results/polar_h100_s7.png
"""

import argparse
import json

BAD_RESIDUAL = 100.0  # n·ε units: gesvd's is below 0.1 on these matrices


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("files", nargs="+")
    p.add_argument("-o", "--out", required=True)
    args = p.parse_args(argv)

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cases = [c for f in args.files for c in json.load(open(f))["cases"] if c["m"] == c["n"]]
    panels = [(dt, uv) for dt in ("float64", "float32") for uv in (True, False)]
    fig, axes = plt.subplots(1, 4, figsize=(17, 4.2), sharey=True)
    for ax, (dt, uv) in zip(axes, panels):
        series = {}
        for c in cases:
            if c["dtype"] != dt or c["compute_uv"] != uv:
                continue
            for name, run in c["runs"].items():
                if "seconds" in run:
                    bad = (run.get("residual") or 0) > BAD_RESIDUAL or run["sv_error"] > 1e5
                    series.setdefault(name, []).append((c["n"], run["seconds"], bad))
        for name, pts in sorted(series.items()):
            pts.sort()
            line, = ax.plot([p[0] for p in pts], [p[1] for p in pts], "o-", label=name)
            wrong = [p for p in pts if p[2]]
            if wrong:
                ax.plot([p[0] for p in wrong], [p[1] for p in wrong], "x", ms=12,
                        color=line.get_color())
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_title(f"{dt}, {'U, S, Vh' if uv else 'values only'}")
        ax.set_xlabel("n (square, Gaussian)")
        ax.grid(True, which="both", alpha=0.3)
    axes[0].set_ylabel("seconds (H100, median)")
    axes[0].legend(fontsize=8)
    fig.suptitle("gpusvd polar against cuSOLVER gesvd, gesvdj (torch), gesvdp (JAX) and gr; "
                 "x: wrong results (residual > 100 n·ε)")
    fig.tight_layout()
    fig.savefig(args.out, dpi=110)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

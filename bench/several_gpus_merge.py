#!/usr/bin/env python3
"""Merge several ``several_gpus.py`` JSON files of one machine kind into one, and plot it.

    python bench/several_gpus_merge.py --out bench/results/distributed_h200x4_s5.json \\
        --plot bench/results/distributed_h200x4_s5.png bench/results/dist_x4_*.json

A device call is limited to 10 minutes, so the grid of sizes, modes, GPU counts and
variants is measured in several calls. Runs of the same (n, mode) are gathered into one
case (a run named ``gpus_<g>`` gets its variant appended, as when several variants run);
``speedup`` is recomputed as ``several_gpus.py`` computes it, against the case's best
one-GPU time, which may come from another call on another machine of the same kind.
Prints one line per run.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)

import several_gpus  # noqa: E402
import common  # noqa: E402


def merge(paths):
    cases, device, gpus = {}, None, set()
    for path in paths:
        with open(path) as f:
            d = json.load(f)
        device = device or d["device"]
        gpus.update(d["gpus"])
        for c in d["cases"]:
            case = cases.setdefault((c["n"], c["mode"]), {
                "n": c["n"], "mode": c["mode"], "dtype": c["dtype"], "runs": {}})
            for name, run in c["runs"].items():
                if name.startswith("gpus_") and name.count("_") == 1 and "variant" in run:
                    name = f"{name}_{run['variant']}"
                case["runs"][name] = run
    for case in cases.values():
        several_gpus.speedups(case["runs"])
    return {"schema": several_gpus.SCHEMA, "gpus": sorted(gpus), "device": device,
            "sources": [os.path.basename(p) for p in paths],
            "cases": [cases[k] for k in sorted(cases)]}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("files", nargs="+")
    p.add_argument("--out", required=True)
    p.add_argument("--plot", default=None)
    args = p.parse_args(argv)
    payload = merge(args.files)
    common.write_json(args.out, payload)
    if args.plot:
        several_gpus._plot(payload, args.plot)
    for c in payload["cases"]:
        for name, run in c["runs"].items():
            if "seconds" in run:
                acc = run.get("accuracy", {})
                print(f"n={c['n']} {c['mode']} {name}: {run['seconds']:.2f} s, comm "
                      f"{run.get('comm_seconds', 0):.2f} s, x{run.get('speedup', 0):.2f}, "
                      f"orth {acc.get('orthogonality') or 0:.2f}, sv {acc.get('sv_error') or 0:.0f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

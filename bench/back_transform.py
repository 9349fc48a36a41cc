#!/usr/bin/env python3
"""Where gr's back-transformations spend their time on the GPU, and which block sizes
make them fastest.

The two-stage SVD with vectors ends with U = Q₁·Q₂·U_B and V = P₁·P₂·V_B: stage 2's
reflectors (the bulge chase's, applied by ``condensed/chase_back.py`` in a wavefront of
groups of g sweeps) and stage 1's (one compact WY block a panel of b columns, merged into
blocks of up to ``back_transform_block_columns`` reflectors by ``condensed/band.py``).
Each of the four products is 2n³ flops of GEMM on an n×n C; the floor is that count at
the GEMM rate measured here on n×n×n.

For each n and dtype, on one Gaussian A reduced as gr reduces it (bandwidth
``two_stage_bandwidth``), C an n×n Gaussian: stage 2's Q₂·C and P₂·C as gr computes them
(``q2``, ``p2``: by passes, on the GPU for real C the kernel of
``condensed/kernels/chase_back.cu``) and by
the wavefront of GEMMs at each ``--groups`` g, stage 1's Q₁·C and P₁·C at each
``--block-columns``; median seconds of
``--repeat`` calls after a warm-up, the device synchronized around each
(``bench/common.py``; ``--cpu``: NumPy on the host), and each product's distance from
the wavefront's first setting's (max |X − X_ref| / max |X_ref|: all compute one product).

    PYTHONPATH=src python3 bench/back_transform.py --sizes 4096 8192 \\
        --out bench/results/back_transform_h200.json
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from unittest import mock

import numpy as np

_HERE = os.path.dirname(os.path.abspath(__file__))
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)

import common  # noqa: E402  (bench/common.py)

SCHEMA = "gpusvd-bench-back-transform/1"


def run_case(n, dtype, repeat, seed, groups, block_columns, xp):
    from gpusvd._core import tunables
    from gpusvd.condensed import band, bulge, chase_back

    rs = np.random.default_rng(seed)
    a = xp.asarray(rs.standard_normal((n, n)).astype(dtype), order="F")
    c = xp.asarray(rs.standard_normal((n, n)).astype(dtype))
    b = tunables.get().two_stage_bandwidth
    red = band.reduce_to_band(a, bandwidth=b)
    refl = bulge.band_to_bidiagonal(band.band_of(red), record=True).reflectors
    del a

    def timed(fn):
        return common.time_gpu(fn, warmup=1, repeat=repeat, max_seconds=120.0).median

    def distance(x, ref):
        return float(xp.abs(x - ref).max() / xp.abs(ref).max())

    out = {"n": n, "dtype": dtype, "bandwidth": b}
    out["gemm"] = timed(lambda: c @ c)  # each product's floor: 2n³ flops, one such GEMM
    for side, apply in (("q2", chase_back.apply_q), ("p2", chase_back.apply_p)):
        ref = None
        with mock.patch.object(chase_back, "_pass_group", lambda *_: None):
            for g in groups:  # the wavefront of GEMMs
                out[f"{side}_g{g}"] = timed(lambda: apply(refl, c, group=g))
                x = apply(refl, c, group=g)
                ref = x if ref is None else ref
                out[f"{side}_g{g}_distance"] = distance(x, ref)
        out[side] = timed(lambda: apply(refl, c))  # as gr calls it
        out[f"{side}_distance"] = distance(apply(refl, c), ref)
    for side, apply in (("q1", band.apply_q), ("p1", band.apply_p)):
        ref = None
        for cols in block_columns:
            with tunables.override(back_transform_block_columns=cols,
                                   back_transform_merge_min_n_gpu=0):
                out[f"{side}_c{cols}"] = timed(lambda: apply(red, xp.array(c, order="F")))
                x = apply(red, xp.array(c, order="F"))
            ref = x if ref is None else ref
            out[f"{side}_c{cols}_distance"] = distance(x, ref)
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", type=int, nargs="+", default=[4096, 8192])
    p.add_argument("--dtypes", nargs="+", default=["float64", "float32"],
                   choices=["float32", "float64", "complex64", "complex128"])
    p.add_argument("--groups", type=int, nargs="+", default=[32, 64, 128],
                   help="stage 2's sweeps a group, g (the first is the reference)")
    p.add_argument("--block-columns", type=int, nargs="+", default=[32, 128, 256, 512],
                   help="stage 1's reflectors a block (the first is the reference; "
                        "at most b: one panel a block)")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--seed", type=int, default=20261129)
    p.add_argument("--cpu", action="store_true",
                   help="NumPy on the host instead of CuPy (a check where there is no GPU)")
    p.add_argument("--out", default="back_transform.json")
    args = p.parse_args()
    if args.cpu:
        xp = np
    else:
        import cupy as xp
    records, started = [], time.time()
    payload = {"schema": SCHEMA, "device_info": common.device_info(), "args": vars(args),
               "units": "seconds; distances relative to the first setting's product",
               "records": records}
    for n in args.sizes:
        for dtype in args.dtypes:
            try:
                rec = run_case(n, dtype, args.repeat, args.seed + n, args.groups,
                               args.block_columns, xp)
            except Exception as exc:  # one case's failure is recorded, the rest still run
                rec = {"n": n, "dtype": dtype, "error": common.short_error(exc)}
            records.append(rec)
            print(f"{n:6d} {dtype:10s} " + "  ".join(
                f"{k}={v:.4f}" for k, v in rec.items()
                if isinstance(v, float) and not k.endswith("distance")), flush=True)
            payload["elapsed_s"] = time.time() - started
            common.write_json(args.out, payload)


if __name__ == "__main__":
    main()

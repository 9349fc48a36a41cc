#!/usr/bin/env python3
"""The building blocks of the polar method's steps, timed one by one on the GPU.

Run on the device from the repository root::

    PYTHONPATH=src python bench/profile_polar.py --n 8192 --dtypes float64 float32

For one n×n Gaussian X (scaled to ‖X‖₂ ≈ 1): the Gram matrix XᴴX by GEMM and by cuBLAS
syrk, the Cholesky factorization, the two triangular solves of the Cholesky step
(cupyx's solve_triangular), the reduced QR of [√c·X; I] of the QR step, the LU
factorization and the estimates of ‖A‖₂ and ‖A⁻¹‖₂, and the eigendecomposition of a
symmetric matrix with and without vectors. Median seconds after a warm-up, each beside
its flop count over the fp64/fp32 GEMM ceiling of DESIGN.md (60 / 51 TFLOP/s).
"""

from __future__ import annotations

import argparse
import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)

import common  # noqa: E402

GEMM_CEILING = {"float64": 60e12, "float32": 51e12}  # DESIGN.md, measured on the H100


def _blocks(x, cp):
    import cupy.cublas  # noqa: F401  (a submodule CuPy does not import itself)
    import cupyx.scipy.linalg as sla

    from gpusvd.polar import qdwh

    n = x.shape[0]
    z = x.T @ x
    z[cp.diag_indices(n)] += 1
    low = cp.linalg.cholesky(z)
    stacked = cp.concatenate([x * 1e3, cp.eye(n, dtype=x.dtype)])
    blocks = {
        "gram_gemm": (lambda: x.T @ x, 2 * n**3),
        "gram_syrk": (lambda: cp.cublas.syrk("T", x), n**3),
        "cholesky": (lambda: cp.linalg.cholesky(z), n**3 / 3),
        "trsm_left": (lambda: sla.solve_triangular(low, x.T, lower=True), n**3),
        "trsm_left_conj": (lambda: sla.solve_triangular(low, x.T, lower=True, trans="C"),
                           n**3),
        "qr_stacked_reduced": (lambda: cp.linalg.qr(stacked, mode="reduced"),
                               2 * (2 * 2 * n * n**2 - 2 * n**3 / 3)),
        "qr_stacked_r": (lambda: cp.linalg.qr(stacked, mode="r"), 2 * 2 * n * n**2 - 2 * n**3 / 3),
        "gemm_nn": (lambda: x @ x, 2 * n**3),
        "lu_factor": (lambda: sla.lu_factor(x, check_finite=False), 2 * n**3 / 3),
        "norm2_estimate": (lambda: qdwh.norm2_estimate(x, cp), 4 * qdwh.NORM_STEPS * n**2),
        "lower_bound": (lambda: qdwh.lower_bound(x, 1.0, cp), 2 * n**3 / 3),
        "eigh": (lambda: cp.linalg.eigh(z), 9 * n**3),
        "eigvalsh": (lambda: cp.linalg.eigvalsh(z), 4 * n**3 / 3),
        "frobenius_change": (lambda: cp.linalg.norm(x - z), 0),
    }
    return blocks


def _schedules(args, dt, cp, np):
    """QDWH's steps on Gaussian matrices of several seeds for each σ_min safety factor:
    the estimate l₀ against σ_min/‖A‖₂ (from gesvd), the step kinds and the time."""
    from gpusvd._core import profile
    from gpusvd.polar import qdwh

    rows = []
    for seed in range(args.seeds):
        a = cp.asarray(np.random.default_rng(100 + seed).standard_normal((args.n, args.n))
                       .astype(dt))
        s = cp.linalg.svd(a.astype(cp.float64), compute_uv=False)
        true_l = float(s[-1] / s[0])
        for safety in args.safeties:
            qdwh.SIGMA_MIN_SAFETY = safety
            common.synchronize()
            with profile.recording() as phases:
                alpha = qdwh.NORM_SAFETY * qdwh.norm2_estimate(a, cp)
                l0 = qdwh.lower_bound(a, alpha, cp)
                _, steps, converged = qdwh.qdwh(a, cp, alpha=alpha, l0=l0)
            row = {"seed": seed, "safety": safety, "alpha_over_norm": alpha / float(s[0]),
                   "l0": l0, "true_l": true_l, "steps": steps, "converged": converged,
                   "phases": dict(phases)}
            rows.append(row)
            print(f"{dt} seed {seed} safety {safety}: l0 {l0:.3g} (sigma_min/norm "
                  f"{true_l:.3g}, alpha/norm {row['alpha_over_norm']:.4f}), {steps} steps, "
                  + ", ".join(f"{k} {v:.3f}" for k, v in phases.items()), flush=True)
    return rows


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=8192)
    p.add_argument("--dtypes", nargs="+", default=["float64", "float32"])
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--safeties", type=float, nargs="+", default=[2.0, 1.0])
    p.add_argument("--skip-blocks", action="store_true")
    p.add_argument("--out", default="bench/results/polar_blocks.json")
    args = p.parse_args(argv)

    import cupy as cp
    import numpy as np

    payload = {"device": common.device_info(0), "n": args.n, "blocks": {}}
    for dt in args.dtypes:
        rng = np.random.default_rng(0)
        x = cp.asarray(rng.standard_normal((args.n, args.n)).astype(dt))
        x /= 2 * np.sqrt(args.n)
        rows = {}
        for name, (fn, flops) in ({} if args.skip_blocks else _blocks(x, cp)).items():
            try:
                t = common.time_gpu(fn, warmup=1, repeat=args.repeat).median
                floor = flops / GEMM_CEILING[dt]
                rows[name] = {"seconds": t, "flops": flops, "floor_seconds": floor}
                print(f"{dt} {name:20s} {t * 1e3:8.2f} ms  floor {floor * 1e3:7.2f} ms",
                      flush=True)
            except Exception as exc:
                rows[name] = {"error": common.short_error(exc)}
                print(f"{dt} {name:20s} error {common.short_error(exc, 120)}", flush=True)
            common.free_gpu_memory()
        rows["qdwh"] = _schedules(args, dt, cp, np)
        payload["blocks"][dt] = rows
        common.write_json(args.out, payload)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

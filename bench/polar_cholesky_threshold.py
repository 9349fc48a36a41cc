#!/usr/bin/env python3
"""Where QDWH switches from QR-based to Cholesky-based steps: NH's c ≤ 100 against larger
bounds, in time and accuracy, on the GPU.

Run on the device from the repository root::

    PYTHONPATH=src python bench/polar_cholesky_threshold.py --n 8192 16384 \\
        --bounds 100 1000 --out "$OUT/polar_threshold.json"

The second QDWH step has c between 100 and a few hundred whenever l₀ lies between about
10⁻¹⁴ and 7·10⁻⁶ (κ(A) from 10⁵ to 10¹⁴), so NH's bound 100 (κ(I + c·XᴴX) ≤ 101) makes it
a QR step, the most expensive kind. For each matrix (Gaussian; geometric spectra of
condition 10⁶ and 10¹²) and each bound: the step kinds, seconds, the residual and
orthogonality of the SVD (n·ε units, ``bench/common.py``), the asymmetry ‖H − Hᴴ‖_F /
(‖H‖_F·n·ε) of H = U_pᴴ·A before it is symmetrized (where an unstable step would show),
and the singular values against cuSOLVER gesvd's float64 values (s_max·ε units).
"""

from __future__ import annotations

import argparse
import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)

import common  # noqa: E402


def _matrix(kind, n, cp, np):
    rng = np.random.default_rng(n)
    if kind == "gaussian":
        return cp.asarray(rng.standard_normal((n, n)))
    cond = {"cond1e6": 1e6, "cond1e12": 1e12}[kind]
    # U·diag(s)·Vᵀ with Haar-like factors from QRs of Gaussian matrices, on the GPU.
    u, _ = cp.linalg.qr(cp.asarray(rng.standard_normal((n, n))))
    v, _ = cp.linalg.qr(cp.asarray(rng.standard_normal((n, n))))
    s = cp.asarray(np.geomspace(1.0, 1.0 / cond, n))
    return (u * s) @ v.T


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, nargs="+", default=[8192])
    p.add_argument("--bounds", type=float, nargs="+", default=[100.0, 1000.0])
    p.add_argument("--kinds", nargs="+", default=["gaussian", "cond1e6", "cond1e12"])
    p.add_argument("--out", default="bench/results/polar_threshold.json")
    args = p.parse_args(argv)

    import cupy as cp
    import numpy as np

    import gpusvd
    from gpusvd._core import profile
    from gpusvd.polar import qdwh

    payload = {"device": common.device_info(0), "rows": []}
    for n in args.n:
        for kind in args.kinds:
            a = _matrix(kind, n, cp, np)
            s_ref = cp.linalg.svd(a, compute_uv=False)
            for bound in args.bounds:
                qdwh.CHOLESKY_MAX_C = bound
                timing = common.time_gpu(lambda: gpusvd.svd(a, method="polar",
                                                            full_matrices=False),
                                         warmup=1, repeat=2)
                u, s, vh = timing.result
                acc = common.svd_accuracy(a, u, s, vh, s_ref, "float64")
                with profile.recording() as phases:
                    alpha = qdwh.NORM_SAFETY * qdwh.norm2_estimate(a, cp)
                    l0 = qdwh.lower_bound(a, alpha, cp)
                    up, steps, _ = qdwh.qdwh(a, cp, alpha=alpha, l0=l0)
                h = up.T @ a
                asym = float(cp.linalg.norm(h - h.T) / cp.linalg.norm(h)) / (n * 2.2e-16)
                row = {"n": n, "kind": kind, "bound": bound, "seconds": timing.median,
                       "steps": steps, "l0": l0, "asymmetry": asym,
                       "qr_seconds": phases.get("qdwh_qr", 0.0),
                       "cholesky_seconds": phases.get("qdwh_cholesky", 0.0), **acc}
                payload["rows"].append(row)
                common.write_json(args.out, payload)
                print(f"n={n} {kind:9s} c<={bound:6g}: {timing.median:.3f} s, {steps} steps "
                      f"(qr {row['qr_seconds']:.3f} s, chol {row['cholesky_seconds']:.3f} s), "
                      f"res {acc['residual']:.3g} orth {acc['orthogonality']:.3g} "
                      f"sv {acc['sv_error']:.3g} asym(H) {asym:.3g}", flush=True)
                del u, s, vh, up, h
                common.free_gpu_memory()
            del a, s_ref
            common.free_gpu_memory()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

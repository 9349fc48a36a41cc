#!/usr/bin/env python3
"""Tall matrices on the GPU, up to past 2³¹ entries.

Run on the device from the repository root::

    PYTHONPATH=src python bench/tall.py --rows 1000000 2200000 --n 1000 \\
        --out "$OUT/tall_h100.json"
    PYTHONPATH=src python bench/tall.py --rows 200000 --n 256 --dtype float32 \\
        --methods gpusvd_auto jax_gesvdp --out "$OUT/tall_256.json"
    PYTHONPATH=src python bench/tall.py --rows 8192 16384 65536 --n 4096 --dtype float64 \\
        --values --methods gpusvd_auto gpusvd_gr gpusvd_polar --out "$OUT/tall_4096.json"

For each m×n Gaussian matrix (made on the GPU, ``--dtype``): the economy SVD by gpusvd's
default (``method="auto"``), by ``method="gr"`` and ``method="polar"`` (each QR first), by
torch's QR followed by the SVD of the small factor (U = Q·U_R), by cuSOLVER gesvd through
CuPy and by gesvdp through JAX (POLAR); with ``--values`` the singular values alone
(gpusvd's ``svdvals`` by each method, the peers' values-only calls where they have one),
accuracy then the values' only. Median seconds after a warm-up call, and
accuracy computed in float64 in row chunks: the singular values against the square roots
of the eigenvalues of the float64 Gram matrix AᵀA (κ(A) ≈ 1.1, so squaring costs nothing
here), in units of s_max·ε; the residual ‖A − U·S·Vh‖_F/(‖A‖_F·m·ε) (the unit of
``gpusvd.testing``); ‖UᵀU − I‖_F/(n·ε), ε of ``--dtype``.
"""

from __future__ import annotations

import argparse
import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)

import common  # noqa: E402

CHUNK_ROWS = 1 << 18


def _torch_qr_svd(a):
    import torch

    t = torch.from_dlpack(a)
    q, r = torch.linalg.qr(t)
    u_r, s, vh = torch.linalg.svd(r, full_matrices=False)
    return q @ u_r, s, vh


def _methods(values=False):
    import cupy as cp

    import gpusvd

    if values:
        return {
            "gpusvd_auto": gpusvd.svdvals,
            "gpusvd_gr": lambda a: gpusvd.svdvals(a, method="gr"),
            "gpusvd_polar": lambda a: gpusvd.svdvals(a, method="polar"),
            "cupy_gesvd": lambda a: cp.linalg.svd(a, compute_uv=False),
            "jax_gesvdp": common.jax_polar_svd(False),
        }
    return {
        "gpusvd_auto": lambda a: gpusvd.svd(a, full_matrices=False),
        "gpusvd_gr": lambda a: gpusvd.svd(a, method="gr", full_matrices=False),
        "gpusvd_polar": lambda a: gpusvd.svd(a, method="polar", full_matrices=False),
        "torch_qr_svd": _torch_qr_svd,
        "cupy_gesvd": lambda a: cp.linalg.svd(a, full_matrices=False),
        "jax_gesvdp": common.jax_polar_svd(True),
    }


def _values_accuracy(a, s, s_ref):
    """The values' error against the Gram matrix's, in units of s_max·ε of ``a``."""
    import cupy as cp

    s = common.to_cupy(s)
    eps = float(cp.finfo(a.dtype).eps)
    return {"sv_error": float(cp.abs(s.astype(cp.float64) - s_ref).max() / s_ref[0]) / eps}


def _accuracy(a, u, s, vh, s_ref):
    """Float64 accuracy of an economy SVD of a very tall ``a``, row chunk by chunk, in
    units of ``a``'s ε."""
    import cupy as cp

    u, s, vh = (common.to_cupy(x) for x in (u, s, vh))
    m, n = a.shape
    eps = float(cp.finfo(a.dtype).eps)
    sv = (s.astype(cp.float64) * vh.astype(cp.float64).T).T      # S·Vh
    res2 = norm2 = 0.0
    gram_u = cp.zeros((n, n), cp.float64)
    for r0 in range(0, m, CHUNK_ROWS):
        a64 = a[r0:r0 + CHUNK_ROWS].astype(cp.float64)
        u64 = u[r0:r0 + CHUNK_ROWS].astype(cp.float64)
        res2 += float(cp.linalg.norm(a64 - u64 @ sv) ** 2)
        norm2 += float(cp.linalg.norm(a64) ** 2)
        gram_u += u64.T @ u64
    orth = float(cp.linalg.norm(gram_u - cp.eye(n))) / (n * eps)
    return {"residual": (res2 / norm2) ** 0.5 / (m * eps), "orthogonality": orth,
            **_values_accuracy(a, s, s_ref)}


def _gram_values(a):
    import cupy as cp

    n = a.shape[1]
    gram = cp.zeros((n, n), cp.float64)
    for r0 in range(0, a.shape[0], CHUNK_ROWS):
        block = a[r0:r0 + CHUNK_ROWS].astype(cp.float64)
        gram += block.T @ block
    return cp.sqrt(cp.maximum(cp.linalg.eigvalsh(gram), 0))[::-1]


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rows", type=int, nargs="+", default=[1_000_000, 2_200_000])
    p.add_argument("--n", type=int, default=1000)
    p.add_argument("--dtype", choices=["float32", "float64"], default="float32")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--methods", nargs="+", default=None)
    p.add_argument("--values", action="store_true", help="the singular values alone")
    p.add_argument("--out", default="bench/results/tall.json")
    args = p.parse_args(argv)

    import cupy as cp

    payload = {"device": common.device_info(0), "cases": []}
    for m in args.rows:
        a = cp.random.default_rng(m).standard_normal((m, args.n), dtype=args.dtype)
        s_ref = _gram_values(a)
        case = {"m": m, "n": args.n, "dtype": args.dtype, "entries": m * args.n,
                "values_only": args.values, "runs": {}}
        for name, fn in _methods(args.values).items():
            if args.methods and name not in args.methods:
                continue
            try:
                timing = common.time_gpu(lambda: fn(a), warmup=1, repeat=args.repeat,
                                         max_seconds=30)
                run = {"seconds": timing.median, "times": timing.times}
                run.update(_values_accuracy(a, timing.result, s_ref) if args.values
                           else _accuracy(a, *timing.result, s_ref))
            except Exception as exc:  # a peer that fails is recorded, not fatal
                run = {"error": common.short_error(exc)}
            case["runs"][name] = run
            common.free_gpu_memory()
            accuracy = ("" if args.values or "seconds" not in run else
                        f"res {run['residual']:.3g}, orth {run['orthogonality']:.3g}, ")
            print(f"{m}x{args.n} {args.dtype} {name}: " + (
                f"{run['seconds']:.3f} s, {accuracy}sv {run['sv_error']:.3g}"
                if "seconds" in run else run["error"]), flush=True)
        payload["cases"].append(case)
        common.write_json(args.out, payload)
        del a
        common.free_gpu_memory()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

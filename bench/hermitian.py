#!/usr/bin/env python3
"""The SVD of a Hermitian matrix on the GPU: ``gpusvd.svd(a, hermitian=True)`` against
gpusvd's general SVD and the peers' Hermitian SVD.

Run on the device from the repository root::

    PYTHONPATH=src python bench/hermitian.py --sizes 1024 4096 8192 \\
        --dtypes float64 float32 --out "$OUT/hermitian_h200.json"

For each n and dtype: A = B + Bᵀ of a Gaussian n×n B (entries exact in float32), its
economy SVD by ``gpusvd.svd(a, hermitian=True)`` (the eigendecomposition),
``gpusvd.svd(a)`` (the general SVD, ``method="auto"``), ``jnp.linalg.svd(a,
hermitian=True)`` (JAX's, through its eigh) and ``cupy.linalg.svd`` (cuSOLVER gesvd),
CuPy arrays in (JAX through DLPack); median seconds after a warm-up call, with residual,
orthogonality (in units of n·ε) and sv_error (in units of s_max·ε) against cuSOLVER's
float64 values (``bench/common.py``). ``--stack`` adds a stack of that many 128² matrices.
Importable without a GPU.
"""

from __future__ import annotations

import argparse
import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)

import common  # noqa: E402

SCHEMA = "gpusvd-bench-hermitian/1"
METHODS = ("gpusvd_hermitian", "gpusvd_auto", "jax_hermitian", "cupy_gesvd")


def _methods():
    import cupy as cp

    import gpusvd

    def jax_hermitian(a):
        import jax
        jax.config.update("jax_enable_x64", True)
        return jax.numpy.linalg.svd(jax.dlpack.from_dlpack(a), full_matrices=False,
                                    hermitian=True)

    return {
        "gpusvd_hermitian": lambda a: gpusvd.svd(a, full_matrices=False, hermitian=True),
        "gpusvd_auto": lambda a: gpusvd.svd(a, full_matrices=False),
        "jax_hermitian": jax_hermitian,
        "cupy_gesvd": lambda a: cp.linalg.svd(a, full_matrices=False),
    }


def _case(cp, np, host, dt, methods, args, label):
    """Every method on the Hermitian ``host`` (float64, (…, n, n)) in dtype ``dt``."""
    a = cp.asarray(host.astype(dt))
    s_ref = cp.linalg.svd(cp.asarray(host), compute_uv=False)
    case = {"case": label, "dtype": dt, "runs": {}}
    for name, fn in methods.items():
        try:
            timing = common.time_gpu(lambda: fn(a), warmup=1, repeat=args.repeat,
                                     max_seconds=args.max_seconds)
            u, s, vh = (common.to_cupy(x) for x in timing.result)
            run = {"seconds": timing.median, "times": timing.times}
            if a.ndim == 2:
                run.update(common.svd_accuracy(a, u, s, vh, s_ref, dt))
            else:
                run["sv_error"] = float(cp.abs(s - s_ref).max() / (s_ref.max()
                                                                   * np.finfo(dt).eps))
        except Exception as exc:  # a peer that fails is recorded, not fatal
            run = {"error": common.short_error(exc)}
        case["runs"][name] = run
        common.free_gpu_memory()
    return case


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", type=int, nargs="+", default=[1024, 4096, 8192])
    p.add_argument("--dtypes", nargs="+", default=["float64", "float32"],
                   choices=["float64", "float32", "complex128", "complex64"])
    p.add_argument("--stack", type=int, default=0,
                   help="also a stack of this many 128² matrices (default: none)")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--max-seconds", type=float, default=20.0,
                   help="stop repeating a method once its timed calls pass this")
    p.add_argument("--methods", nargs="+", default=None, choices=METHODS,
                   help="a subset of the methods (default: all)")
    p.add_argument("--out", default="bench/results/hermitian.json")
    args = p.parse_args(argv)

    import cupy as cp
    import numpy as np

    payload = {"schema": SCHEMA, "device": common.device_info(0), "cases": []}
    methods = {k: v for k, v in _methods().items() if not args.methods or k in args.methods}
    shapes = [((n, n), f"{n}x{n}") for n in args.sizes]
    if args.stack:
        shapes.append(((args.stack, 128, 128), f"{args.stack}x128x128"))
    for shape, label in shapes:
        rng = np.random.default_rng(shape[-1])
        b = rng.standard_normal(shape).astype(np.float32).astype(np.float64)
        host = b + np.swapaxes(b, -1, -2)
        for dt in args.dtypes:
            case = _case(cp, np, host, dt, methods, args, label)
            payload["cases"].append(case)
            common.write_json(args.out, payload)
            print(f"{label} {dt}: " + ", ".join(
                f"{k} {v['seconds']:.4f} s (sv {v['sv_error']:.1f}"
                + (f", res {v['residual']:.2f}, orth {v['orthogonality']:.2f}"
                   if "residual" in v else "") + ")" if "seconds" in v
                else f"{k} error" for k, v in case["runs"].items()), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

#!/usr/bin/env python3
"""Complex SVD on the GPU: gpusvd's Golub–Reinsch and Jacobi against cuSOLVER and PyTorch.

Run on the device from the repository root::

    PYTHONPATH=src python bench/complex.py --sizes 1024 2048 4096 \\
        --dtypes complex128 complex64 --out "$OUT/complex_svd_h100.json"

For each n and dtype: an n×n matrix of Gaussian real and imaginary parts (entries exact in
complex64), its economy SVD (U, S, Vh) by ``gpusvd.svd(method="gr")``,
``gpusvd.svd(method="jacobi")``, ``cupy.linalg.svd`` (cuSOLVER gesvd) and
``torch.linalg.svd`` (its default cuSOLVER driver), CuPy or torch arrays in, on the GPU;
median seconds after a warm-up call, with residual, orthogonality (in units of n·ε) and
sv_error (in units of s_max·ε) against cuSOLVER's complex128 values (``bench/common.py``).
This is what ``method="auto"`` chooses between for complex input. Importable without a GPU.
"""

from __future__ import annotations

import argparse
import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)

import common  # noqa: E402

SCHEMA = "gpusvd-bench-complex-svd/1"


def _methods():
    import cupy as cp

    import gpusvd

    def torch_svd(a):
        import torch
        u, s, vh = torch.linalg.svd(torch.from_dlpack(a), full_matrices=False)
        return u, s, vh.resolve_conj()  # Vh is a lazy conjugate, which DLPack refuses

    return {
        "gpusvd_gr": lambda a: gpusvd.svd(a, method="gr", full_matrices=False),
        "gpusvd_jacobi": lambda a: gpusvd.svd(a, method="jacobi", full_matrices=False),
        "cupy_gesvd": lambda a: cp.linalg.svd(a, full_matrices=False),
        "torch": torch_svd,
    }


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", type=int, nargs="+", default=[1024, 2048, 4096])
    p.add_argument("--dtypes", nargs="+", default=["complex128", "complex64"],
                   choices=["complex128", "complex64"])
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--max-seconds", type=float, default=20.0,
                   help="stop repeating a method once its timed calls pass this")
    p.add_argument("--methods", nargs="+", default=None,
                   help="a subset of gpusvd_gr gpusvd_jacobi cupy_gesvd torch (default: all)")
    p.add_argument("--out", default="bench/results/complex_svd.json")
    args = p.parse_args(argv)

    import cupy as cp
    import numpy as np

    payload = {"schema": SCHEMA, "device": common.device_info(0), "cases": []}
    methods = {k: v for k, v in _methods().items() if not args.methods or k in args.methods}
    for n in args.sizes:
        rng = np.random.default_rng(n)
        host = (rng.standard_normal((n, n)) + 1j * rng.standard_normal((n, n)))
        host = host.astype(np.complex64).astype(np.complex128)
        s_ref = cp.linalg.svd(cp.asarray(host), compute_uv=False)
        for dt in args.dtypes:
            a = cp.asarray(host.astype(dt))
            case = {"n": n, "dtype": dt, "runs": {}}
            for name, fn in methods.items():
                try:
                    timing = common.time_gpu(lambda: fn(a), warmup=1, repeat=args.repeat,
                                             max_seconds=args.max_seconds)
                    u, s, vh = timing.result
                    run = {"seconds": timing.median, "times": timing.times}
                    run.update(common.svd_accuracy(a, u, s, vh, s_ref, dt))
                except Exception as exc:  # a peer that fails is recorded, not fatal
                    run = {"error": common.short_error(exc)}
                case["runs"][name] = run
                common.free_gpu_memory()
            payload["cases"].append(case)
            common.write_json(args.out, payload)
            print(f"n={n} {dt}: " + ", ".join(
                f"{k} {v['seconds']:.3f} s (res {v['residual']:.2f}, orth "
                f"{v['orthogonality']:.2f}, sv {v['sv_error']:.1f})" if "seconds" in v
                else f"{k} error" for k, v in case["runs"].items()), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

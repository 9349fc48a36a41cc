#!/usr/bin/env python3
"""The polar SVD on the GPU against cuSOLVER's gesvd, gesvdj and gesvdp and our gr.

Run on the device from the repository root::

    PYTHONPATH=src python bench/bench_polar.py --sizes 1024 2048 4096 8192 \\
        --tall 256 1024 4096 --dtypes float64 float32 --out "$OUT/polar_h100.json"

For each shape and dtype: a Gaussian matrix (entries exact in float32), its economy SVD
(U, S, Vh) and its values only, by ``gpusvd.svd(method="polar")``, ``gpusvd.svd(method=
"gr")``, ``cupy.linalg.svd`` (cuSOLVER gesvd), ``torch.linalg.svd(driver="gesvdj")`` and
``jax.lax.linalg.svd(algorithm=SvdAlgorithm.POLAR)`` (cuSOLVER gesvdp), CuPy, torch or
JAX arrays in, on the GPU; median seconds after a warm-up call, with residual and
orthogonality in units of n·ε and sv_error in units of s_max·ε against float64 reference
values (cuSOLVER gesvd's; above ``--ref-gesvd-max`` gpusvd gr's dqds values), as in
``bench/common.py``. A separate call of the polar method with the phase recorder on gives
its phase table. ``--max-n METHOD=N`` skips a method above N (its time grows as n³).
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

SCHEMA = "gpusvd-bench-polar/1"
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")  # JAX shares the GPU


def _jax_svd(compute_uv):
    import jax
    jax.config.update("jax_enable_x64", True)
    from jax.lax import linalg as lax_linalg

    def run(a):
        x = jax.dlpack.from_dlpack(a)
        return lax_linalg.svd(x, full_matrices=False, compute_uv=compute_uv,
                              algorithm=lax_linalg.SvdAlgorithm.POLAR)
    return run


def _torch_svd(compute_uv):
    def run(a):
        import torch
        t = torch.from_dlpack(a)
        if not compute_uv:
            return torch.linalg.svdvals(t, driver="gesvdj")
        u, s, vh = torch.linalg.svd(t, full_matrices=False, driver="gesvdj")
        return u, s, vh.resolve_conj()
    return run


def _methods(compute_uv):
    import cupy as cp

    import gpusvd

    if compute_uv:
        ours = {name: (lambda a, name=name: gpusvd.svd(a, method=name, full_matrices=False))
                for name in ("polar", "gr")}
    else:
        ours = {name: (lambda a, name=name: gpusvd.svdvals(a, method=name))
                for name in ("polar", "gr")}
    return {
        "gpusvd_polar": ours["polar"],
        "gpusvd_gr": ours["gr"],
        "cupy_gesvd": lambda a: cp.linalg.svd(a, full_matrices=False, compute_uv=compute_uv),
        "torch_gesvdj": _torch_svd(compute_uv),
        "jax_gesvdp": _jax_svd(compute_uv),
    }


def _phases(a, compute_uv):
    """The polar method's phase table for one call (the recorder synchronizes per phase)."""
    import gpusvd
    from gpusvd._core import profile

    with profile.recording() as phases:
        common.synchronize()
        if compute_uv:
            gpusvd.svd(a, method="polar", full_matrices=False)
        else:
            gpusvd.svdvals(a, method="polar")
        common.synchronize()
    return dict(phases)


def _reference(a64, args):
    import cupy as cp

    import gpusvd
    if max(a64.shape) <= args.ref_gesvd_max:
        return cp.linalg.svd(a64, compute_uv=False), "cupy_gesvd_float64"
    return gpusvd.svdvals(a64, method="gr"), "gpusvd_gr_float64"


def _run_case(a, dt, s_ref, compute_uv, methods, args):
    case_runs = {}
    m, n = a.shape
    for name, fn in methods.items():
        if max(m, n) > args.max_n.get(name, 1 << 40):
            case_runs[name] = {"skipped": f"above --max-n {args.max_n[name]}"}
            continue
        try:
            timing = common.time_gpu(lambda: fn(a), warmup=1, repeat=args.repeat,
                                     max_seconds=args.max_seconds)
            run = {"seconds": timing.median, "times": timing.times}
            if compute_uv:
                u, s, vh = timing.result
                run.update(common.svd_accuracy(a, u, s, vh, s_ref, dt))
            else:
                run.update(common.values_accuracy(timing.result, s_ref, dt))
        except Exception as exc:  # a peer that fails is recorded, not fatal
            run = {"error": common.short_error(exc)}
        case_runs[name] = run
        common.free_gpu_memory()
    return case_runs


def _line(case):
    def one(k, v):
        if "seconds" not in v:
            return f"{k} {'skip' if 'skipped' in v else 'error'}"
        acc = (f"res {v['residual']:.2g} orth {v['orthogonality']:.2g} "
               if v.get("residual") is not None else "")
        return f"{k} {v['seconds']:.3f}s ({acc}sv {v['sv_error']:.3g})"
    head = f"{case['m']}x{case['n']} {case['dtype']} {'full' if case['compute_uv'] else 'vals'}"
    return head + ": " + ", ".join(one(k, v) for k, v in case["runs"].items())


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", type=int, nargs="+", default=[1024, 2048, 4096, 8192])
    p.add_argument("--tall", type=int, nargs="*", default=[],
                   help="column counts of 8192-row tall matrices")
    p.add_argument("--dtypes", nargs="+", default=["float64", "float32"],
                   choices=["float64", "float32", "complex128", "complex64"])
    p.add_argument("--modes", nargs="+", default=["full", "values"], choices=["full", "values"])
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--max-seconds", type=float, default=20.0,
                   help="stop repeating a method once its timed calls pass this")
    p.add_argument("--methods", nargs="+", default=None,
                   help="a subset of gpusvd_polar gpusvd_gr cupy_gesvd torch_gesvdj jax_gesvdp")
    p.add_argument("--max-n", nargs="*", default=[], metavar="METHOD=N")
    p.add_argument("--ref-gesvd-max", type=int, default=8192)
    p.add_argument("--out", default="bench/results/polar.json")
    args = p.parse_args(argv)
    args.max_n = {k: int(v) for k, v in (item.split("=") for item in args.max_n)}

    import cupy as cp
    import numpy as np

    payload = {"schema": SCHEMA, "device": common.device_info(0), "cases": []}
    shapes = [(n, n) for n in args.sizes] + [(8192, k) for k in args.tall]
    for m, n in shapes:
        rng = np.random.default_rng(m * 7 + n)
        host = rng.standard_normal((m, n)).astype(np.float32)
        if any(dt.startswith("complex") for dt in args.dtypes):
            host = host + 1j * rng.standard_normal((m, n)).astype(np.float32)
        a64 = cp.asarray(host.astype(np.complex128 if host.dtype.kind == "c" else np.float64))
        s_ref, ref_name = _reference(a64, args)
        del a64
        for dt in args.dtypes:
            a = cp.asarray(host.astype(dt))
            for mode in args.modes:
                compute_uv = mode == "full"
                methods = {k: v for k, v in _methods(compute_uv).items()
                           if not args.methods or k in args.methods}
                case = {"m": m, "n": n, "dtype": dt, "compute_uv": compute_uv,
                        "reference": ref_name,
                        "runs": _run_case(a, dt, s_ref, compute_uv, methods, args)}
                if "gpusvd_polar" in methods:
                    case["polar_phases"] = _phases(a, compute_uv)
                payload["cases"].append(case)
                common.write_json(args.out, payload)
                print(_line(case), flush=True)
                if "polar_phases" in case:
                    print("   polar phases: " + ", ".join(
                        f"{k} {v:.3f}" for k, v in case["polar_phases"].items()), flush=True)
            del a
            common.free_gpu_memory()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

#!/usr/bin/env python3
"""Blocked Jacobi SVD of gpusvd (paper 003) against its peers, side by side, in one run.

Run on the GPU machine from the repository root::

    PYTHONPATH=src python3 bench/relative_accuracy.py --out "$OUT/jacobi_h100.json" --budget 540

Parts (``--parts``; all by default), every case a full economy SVD (U, S, Vh):

==========  ===============================================================================
square      n = 1024·{1, 2, 4, 8, 16}, float64 (the paper's Table 2): ``gpusvd.jacobi_svd``
            against cuSOLVER gesvdj (``torch.linalg.svd(driver="gesvdj")``), gesvd (CuPy),
            gesvdp (JAX, ``SvdAlgorithm.POLAR``) and LAPACK dgejsv on the host's CPUs
            (SciPy; gesdd with a note where SciPy has no dgejsv), up to ``--host-max``
strategies  every parallel pivot strategy at ``--strategy-sizes`` (the paper's Fig. 7)
variants    full-block against block-oriented at ``--variant-sizes`` (the paper's Table 3)
batched     ``--batch`` matrices of 32×32 in float64 and float32: ``gpusvd.jacobi_svd`` on
            the stack, and ``inner`` (the bare pStep core: ``inner_cuda.inner_jacobi``,
            then σ = column norms, U = G/σ, sorted) for each ``--lanes``, against
            ``torch.linalg.svd`` (cuSOLVER gesvdjBatched) and ``cupy.linalg.svd``
inner       the bare inner kernel on the blocked driver's shapes, n/(2b) Gaussian 2b×2b
            matrices per launch (b = tunable ``jacobi_block_width_gpu``) for each ``--lanes``,
            one sweep (block-oriented) and to convergence (full-block): the per-launch
            cost of a p-step's orthogonalize, to choose ``jacobi_inner_lanes``
==========  ===============================================================================

Inputs are Gaussian, drawn on the GPU in float32 and upcast exactly (``gr_paper.make_matrix``).
Accuracy is measured in float64 on the GPU (``bench/common.py``): residual and
orthogonality in units of k·ε, sv_error against cuSOLVER gesvd values in units of σ₁·ε
(square: up to ``--reference-max``). Times are medians after a warm-up call. A case is
skipped when its time predicted from the method's previous size (n³ scaling) passes
``--max-call`` or what is left of ``--budget``. The JSON is rewritten after every case;
``summary`` holds the issue's targets (n = 4096 against gesvdj, n = 16384, batched against
gesvdjBatched). Importable without a GPU: CuPy, PyTorch, JAX and gpusvd load lazily.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

_HERE = os.path.dirname(os.path.abspath(__file__))
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)

import numpy as np  # noqa: E402

import gr_paper  # noqa: E402  (JAX's environment, make_matrix, peers' runners)
import common  # noqa: E402

PARTS = ("square", "strategies", "variants", "batched", "inner")
SQUARE_METHODS = ("gpusvd", "torch_gesvdj", "cupy_gesvd", "jax_polar", "host_gejsv")
BATCHED_METHODS = ("gpusvd", "inner", "torch_svd", "cupy_svd")
PAPER_SIZES = [1024, 2048, 4096, 8192, 16384]   # the paper's Table 2
SCHEMA = "gpusvd-bench-jacobi/1"


# --------------------------------------------------------------------------- runners

def _result_info(result) -> dict:
    """The scalar fields of a result beyond (U, S, Vh): sweeps, rotations, ..."""
    fields = getattr(result, "_fields", ())[3:]
    return {f: getattr(result, f) for f in fields
            if isinstance(getattr(result, f), (int, float, str, bool))}


def jacobi_runner(a, **options):
    gpusvd = gr_paper._import_gpusvd()
    return lambda: gpusvd.jacobi_svd(a, **options)


def host_runner(a):
    """LAPACK dgejsv (preconditioned Jacobi, DGEJSV) on the host, gesdd without it."""
    import scipy.linalg
    import scipy.linalg.lapack as lapack

    host = common.to_cupy(a).get()
    if not hasattr(lapack, "dgejsv"):
        return (lambda: scipy.linalg.svd(host, full_matrices=False)), "gesdd: SciPy has no dgejsv"

    def run():
        sva, u, v, work, _, info = lapack.dgejsv(host)
        if info != 0:
            raise RuntimeError(f"dgejsv info={info}")
        return u, (work[0] / work[1]) * sva, v.T

    return run, "dgejsv (joba='A', jobr='R', jobp='P'), S = (work[0]/work[1])·sva"


def kernel_runner(a, lanes, max_sweeps):
    """The bare inner kernel on a copy of the stack ``a``: run() -> (g, v, rotations, sweeps)."""
    import cupy

    from gpusvd._core import tunables
    from gpusvd.jacobi import inner_cuda
    from gpusvd.jacobi.rotations import orthogonality_tol
    from gpusvd.jacobi.strategies import pivot_strategy

    batch, m, k = a.shape
    real = a.real.dtype
    signs = cupy.ones(k, real)
    pairs = cupy.asarray(pivot_strategy("row-reverse", k))
    eye = cupy.eye(k, dtype=a.dtype)
    tol = orthogonality_tol(real, m)

    def run():
        g = a.copy()
        v = cupy.broadcast_to(eye, (batch, k, k)).copy()
        with tunables.override(jacobi_inner_lanes=lanes):
            rotations, sweeps = inner_cuda.inner_jacobi(g, v, signs, pairs, max_sweeps, tol)
        return g, v, rotations, sweeps

    return run


def inner_runner(a, lanes):
    """The bare pStep core on a (batch, k, k) stack, completed to an SVD."""
    import cupy

    kernel = kernel_runner(a, lanes, 30)

    def run():
        g, v, _, _ = kernel()
        s = cupy.linalg.norm(g, axis=1)
        order = cupy.argsort(-s, axis=1)
        s = cupy.take_along_axis(s, order, 1)
        u = cupy.take_along_axis(g, order[:, None, :], 2) / cupy.where(s > 0, s, 1)[:, None]
        vh = cupy.take_along_axis(v, order[:, None, :], 2).conj().swapaxes(1, 2)
        return u, s, vh

    return run


def batched_runner(method, a, lanes):
    if method == "gpusvd":
        return jacobi_runner(a)
    if method == "inner":
        return inner_runner(a, lanes)
    if method == "torch_svd":
        import torch
        t = torch.from_dlpack(a)
        return lambda: torch.linalg.svd(t, full_matrices=False)  # gesvdjBatched (<= 32)
    if method == "cupy_svd":
        import cupy
        return lambda: cupy.linalg.svd(a, full_matrices=False)
    raise ValueError(f"unknown batched method {method!r}")


# --------------------------------------------------------------------------- accuracy

def batched_accuracy(a, u, s, vh, s_ref, dtype) -> dict:
    """The worst matrix of the stack by each measure of ``common`` (float64, GPU)."""
    import cupy as cp
    wide = cp.complex128 if cp.iscomplexobj(a) else cp.float64
    a, u, vh = (common.to_cupy(x).astype(wide) for x in (a, u, vh))
    s = common.to_cupy(s).astype(cp.float64)
    k = a.shape[-1]
    eps = common.eps_of(dtype)
    eye = cp.eye(k)
    res = (cp.linalg.norm((a - (u * s[:, None, :]) @ vh).reshape(len(a), -1), axis=1)
           / cp.linalg.norm(a.reshape(len(a), -1), axis=1))
    orth_u = cp.linalg.norm((u.conj().swapaxes(1, 2) @ u - eye).reshape(len(a), -1), axis=1)
    orth_v = cp.linalg.norm((vh @ vh.conj().swapaxes(1, 2) - eye).reshape(len(a), -1), axis=1)
    sv = cp.max(cp.abs(s - s_ref), axis=1) / s_ref[:, 0]
    return {"residual": float(res.max()) / (k * eps),
            "orthogonality": float(cp.maximum(orth_u, orth_v).max()) / (k * eps),
            "sv_error": float(sv.max()) / eps,
            "finite": bool(cp.isfinite(s).all())}


def square_accuracy(a, out, s_ref, dtype) -> dict:
    u, s, vh = out[0], out[1], out[2]
    if s_ref is None:  # no reference at this size: residual and orthogonality only
        acc = common.svd_accuracy(a, u, s, vh, common.to_cupy(s), dtype)
        acc.update(sv_error=None, sv_error_raw=None)
        return acc
    return common.svd_accuracy(a, u, s, vh, s_ref, dtype)


# --------------------------------------------------------------------------- the run

class Run:
    """Budget, predictions and the JSON of one benchmark run."""

    def __init__(self, args, payload):
        self.args, self.payload = args, payload
        self.start = time.perf_counter()
        self.seen: dict[tuple, tuple[float, float]] = {}   # key -> (size, median)

    def left(self) -> float:
        return self.args.budget - (time.perf_counter() - self.start)

    def save(self):
        self.payload["elapsed_s"] = time.perf_counter() - self.start
        common.write_json(self.args.out, self.payload)

    def case(self, rec: dict, key: tuple, size: float, build, accuracy, exponent=3):
        """Time ``build()``'s runner unless predicted too long (time ∝ size**exponent);
        record it with its accuracy."""
        if self.left() <= 0:
            rec["skipped"] = "budget exhausted"
        elif key in self.seen:
            size0, t0 = self.seen[key]
            pred = t0 * (size / size0) ** exponent
            if pred > self.args.max_call or 2 * pred > self.left():
                rec["skipped"] = f"predicted {pred:.3g} s per call, {self.left():.0f} s left"
        if not rec.get("skipped"):
            try:
                warmup = self.args.warmup if size <= self.args.warmup_max else 0
                timing = common.time_gpu(build(), warmup=warmup,
                                         repeat=self.args.repeat,
                                         max_seconds=self.args.case_seconds)
                rec.update(median_s=timing.median, times_s=timing.times,
                           warmup_s=timing.warmup_times)
                self.seen[key] = (size, timing.median)
                rec.update(_result_info(timing.result))
                rec.update(accuracy(timing.result))
            except Exception as exc:  # recorded, the run goes on
                rec["error"] = common.short_error(exc)
            common.free_gpu_memory()
        self.payload["records"].append(rec)
        self.save()
        t = rec.get("median_s")
        acc = " ".join(f"{f} {rec[f]:.3g}" for f in ("residual", "orthogonality", "sv_error")
                       if isinstance(rec.get(f), float))
        label = " ".join(f"{f}={rec[f]}" if f in ("lanes", "max_sweeps") else str(rec[f])
                         for f in ("part", "method", "n", "dtype", "strategy", "variant",
                                   "lanes", "max_sweeps") if rec.get(f) is not None)
        status = rec.get("skipped") or rec.get("error") or f"{t:.4g} s  {acc}"
        print(f"{label:<48} {status}", flush=True)


def run_square(run, a, n, s_ref):
    for method in run.args.methods:
        if method == "host_gejsv" and n > run.args.host_max:
            continue
        rec = {"part": "square", "method": method, "n": n, "dtype": "float64"}

        def build(method=method):
            if method == "gpusvd":
                return jacobi_runner(a)
            if method == "host_gejsv":
                fn, rec["note"] = host_runner(a)
                return fn
            fn, extract = gr_paper.build_runner(method, "full", a)
            return lambda: extract(fn())

        run.case(rec, ("square", method), n, build,
                 lambda out: square_accuracy(a, out, s_ref, "float64"))


def run_options(run, part, a, n, s_ref, name, values):
    for value in values:
        rec = {"part": part, "method": "gpusvd", "n": n, "dtype": "float64", name: value}
        run.case(rec, (part, value), n, lambda: jacobi_runner(a, **{name: value}),
                 lambda out: square_accuracy(a, out, s_ref, "float64"))


def batch_matrix(batch, dtype, seed, k=32):
    """``batch`` Gaussian k×k matrices, float32-representable like ``make_matrix``."""
    import cupy as cp
    rs = cp.random.RandomState(seed)
    a = rs.standard_normal((batch, k, k), dtype=cp.float32).astype(dtype)
    if np.dtype(dtype).kind == "c":
        a += 1j * rs.standard_normal((batch, k, k), dtype=cp.float32)
    return a


def run_inner(run, n):
    """The inner kernel alone on one p-step's block pairs of an n×n float64 problem."""
    import cupy as cp

    from gpusvd._core import tunables
    k = 2 * tunables.get().jacobi_block_width_gpu
    a = batch_matrix(max(1, n // k), "float64", run.args.seed, k)
    for max_sweeps in (1, 30):
        for lanes in run.args.lanes:
            rec = {"part": "inner", "method": "inner", "n": n, "batch": len(a), "k": k,
                   "dtype": "float64", "lanes": lanes, "max_sweeps": max_sweeps}
            run.case(rec, ("inner", lanes, max_sweeps), n,
                     lambda lanes=lanes, max_sweeps=max_sweeps: kernel_runner(a, lanes,
                                                                              max_sweeps),
                     lambda out: {"sweeps_median": float(cp.median(out[3])),
                                  "rotations": int(out[2].sum())}, exponent=1)


def run_batched(run, batch, dtype):
    import cupy as cp
    a = batch_matrix(batch, dtype, run.args.seed)
    s_ref = cp.linalg.svd(a.astype(cp.complex128 if a.dtype.kind == "c" else cp.float64),
                          compute_uv=False)
    for method in run.args.batched_methods:
        for lanes in (run.args.lanes if method == "inner" else [None]):
            rec = {"part": "batched", "method": method, "n": 32, "batch": batch,
                   "dtype": dtype, "lanes": lanes}
            run.case(rec, ("batched", method, dtype, lanes), 32,
                     lambda method=method, lanes=lanes: batched_runner(method, a, lanes),
                     lambda out: batched_accuracy(a, out[0], out[1], out[2], s_ref, dtype))


def summary(records) -> dict:
    """The issue's targets from the records (None where a case is missing)."""
    def best(part, method, n, dtype="float64"):
        """The fastest timed record of a case (over lanes), or {}."""
        found = [r for r in records if (r["part"], r["method"], r["n"], r["dtype"])
                 == (part, method, n, dtype) and r.get("median_s")]
        return min(found, key=lambda r: r["median_s"], default={})

    def ratio(slow, fast):
        return slow["median_s"] / fast["median_s"] if slow and fast else None

    ours = best("square", "gpusvd", 4096)
    out = {"n4096_speedup_vs_gesvdj (target >= 3)":
           ratio(best("square", "torch_gesvdj", 4096), ours),
           "n4096_orthogonality_raw (max of U, V; Frobenius)": ours.get("orthogonality_raw"),
           "n4096_v_orthogonality_2norm (target < 1e-13)": ours.get("orthogonality_v_2norm"),
           "n4096_gesvdj_v_orthogonality_2norm":
           best("square", "torch_gesvdj", 4096).get("orthogonality_v_2norm"),
           "n16384_seconds (target <= 60)": best("square", "gpusvd", 16384).get("median_s")}
    for dtype in ("float64", "float32"):
        for method in ("gpusvd", "inner"):
            out[f"batched_{method}_{dtype}_speedup_vs_gesvdjBatched (target >= 1.5)"] = \
                ratio(best("batched", "torch_svd", 32, dtype), best("batched", method, 32, dtype))
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--parts", nargs="+", default=list(PARTS), choices=PARTS)
    p.add_argument("--sizes", nargs="+", type=int, default=PAPER_SIZES,
                   help="square orders n (float64)")
    p.add_argument("--methods", nargs="+", default=list(SQUARE_METHODS), choices=SQUARE_METHODS)
    p.add_argument("--host-max", type=int, default=2048,
                   help="largest n for LAPACK on the host (dgejsv: ~n³, minutes at 4096)")
    p.add_argument("--reference-max", type=int, default=8192,
                   help="largest n with a gesvd reference for the singular value error")
    p.add_argument("--strategy-sizes", nargs="*", type=int, default=[2048])
    p.add_argument("--variant-sizes", nargs="*", type=int, default=[2048, 4096])
    p.add_argument("--batch", type=int, default=20000, help="matrices of 32x32 (batched part)")
    p.add_argument("--batched-dtypes", nargs="+", default=["float64", "float32"],
                   choices=["float64", "float32", "complex64", "complex128"])
    p.add_argument("--batched-methods", nargs="+", default=list(BATCHED_METHODS),
                   choices=BATCHED_METHODS)
    p.add_argument("--lanes", nargs="+", type=int, default=[4, 8, 16, 32],
                   help="lanes per pivot pair tried for the bare inner kernel")
    default_out = os.path.join(os.environ.get("OUT") or os.path.join(_HERE, "results"),
                               "jacobi.json")
    p.add_argument("--out", default=default_out, help="JSON output path")
    p.add_argument("--budget", type=float, default=540.0,
                   help="seconds for the whole run; no case starts that is predicted not to fit")
    p.add_argument("--max-call", type=float, default=60.0,
                   help="skip a case whose single call is predicted longer")
    p.add_argument("--case-seconds", type=float, default=20.0,
                   help="stop repeating a case after this many seconds (>= 1 timed call)")
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--warmup", type=int, default=1,
                   help="untimed calls before the timed ones (0 for the largest sizes; "
                        "a smaller size first then compiles the kernels)")
    p.add_argument("--warmup-max", type=float, default=float("inf"),
                   help="no warm-up call for cases larger than this size")
    p.add_argument("--seed", type=int, default=20261122)
    args = p.parse_args(argv)

    import cupy as cp  # the GPU side starts here

    units = {"residual": "||A - U diag(S) Vh||_F / (||A||_F * k * eps_dtype), worst matrix",
             "orthogonality": "max(||U^H U - I||_F, ||Vh Vh^H - I||_F) / (k * eps_dtype)",
             "sv_error": "max|S - S_ref| / (S_ref[0] * eps_dtype), S_ref float64 gesvd",
             "times": "seconds, wall clock after device synchronization"}
    payload = {"schema": SCHEMA, "benchmark": "jacobi", "device_info": common.device_info(),
               "args": vars(args), "config": {"units": units}, "records": [],
               "complete": False}
    run = Run(args, payload)
    print(f"# {payload['device_info'].get('gpu')} -> {args.out}", flush=True)
    sizes = sorted(set(args.sizes) | ({*args.strategy_sizes} if "strategies" in args.parts
                                      else set()) | ({*args.variant_sizes} if "variants"
                                                     in args.parts else set()))
    for n in sizes:
        a = gr_paper.make_matrix(n, n, args.seed, "gaussian")
        s_ref = cp.linalg.svd(a, compute_uv=False) if n <= args.reference_max else None
        if "square" in args.parts and n in args.sizes:
            run_square(run, a, n, s_ref)
        if "strategies" in args.parts and n in args.strategy_sizes:
            from gpusvd.jacobi.strategies import PARALLEL
            run_options(run, "strategies", a, n, s_ref, "strategy", PARALLEL)
        if "variants" in args.parts and n in args.variant_sizes:
            run_options(run, "variants", a, n, s_ref, "variant", ("full-block", "block-oriented"))
        del a, s_ref
        common.free_gpu_memory()
    if "inner" in args.parts:
        for n in args.sizes:
            run_inner(run, n)
    if "batched" in args.parts:
        for dtype in args.batched_dtypes:
            run_batched(run, args.batch, dtype)
    payload["summary"] = summary(payload["records"])
    payload["complete"] = True
    run.save()
    for name, value in payload["summary"].items():
        print(f"{name}: {value if value is None else f'{value:.4g}'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

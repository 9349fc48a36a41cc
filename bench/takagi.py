#!/usr/bin/env python3
"""Takagi factorization of gpusvd against SVD plus matrix square root, side by side.

Run on the GPU machine from the repository root::

    PYTHONPATH=src python3 bench/takagi.py --out "$OUT/takagi_h100.json" --budget 480

Methods (each returns Takagi values S, descending, and vectors U with A = U diag(S) Uᵀ):

==============  ============================================================================
gpusvd          ``gpusvd.takagi.takagi(a)`` on the GPU (CuPy input), ``method="auto"``
gpusvd_jacobi   ``method="jacobi"``: Jacobi with chess-tournament ordering (paper 002),
                n ≤ 64 in one launch, blocked for large n
gpusvd_eigh     ``method="eigh"``: the real symmetric eigenproblem of order 2n, then a QR
svdsqrt_gpu     thewalrus's ``takagi`` algorithm through CuPy: ``u, d, vh = svd(A)``,
                ``U = u @ sqrtm((vh @ conj(u)).T)``. CuPy has no ``sqrtm``; the argument W is
                unitary, so its square root is taken through ``eigh`` of the Cayley
                transform i(I + W')⁻¹(I − W'), W' = e^{iα} W, whose eigenvalues tan(θ/2)
                are distinct where W's are; α turns the widest gap of W's diagonal phases
                to −1, away from the transform's pole. Any primary square root serves.
svdsqrt_cpu     the same algorithm exactly as thewalrus writes it, on the host:
                ``numpy.linalg.svd`` and ``scipy.linalg.sqrtm`` (all host cores)
svd_gpu         not a Takagi factorization: ``gpusvd.svd(A)`` alone on the GPU, the time
                a Takagi factorization should not exceed (its values only are checked)
==============  ============================================================================

thewalrus itself is not needed (its real-input branch, ``eigh``, is not used: inputs are
complex). Inputs: for each n one complex symmetric Gaussian matrix A = (G + Gᵀ)/2 drawn
in complex64 and upcast exactly, so both dtypes factor the same matrix; the reference
values are the float64 singular values of A (``cupy.linalg.svd``). Accuracy is computed
on the GPU in complex128, in units of the method's ε:

* residual       ‖A − U diag(S) Uᵀ‖_F / (‖A‖_F · n · ε)
* orthogonality  ‖Uᴴ U − I‖_F / (n · ε)
* sv_error       max_i |S_i − S_ref,i| / (S_ref,0 · ε)

Budget: sizes run in increasing order; a method is skipped at a size when its time
predicted from the last size by n³ scaling is over ``--max-call`` or (warm-up plus one
call) over what is left of ``--budget``. The JSON is rewritten after every case.

Importable without a GPU: CuPy, SciPy and gpusvd are imported inside functions.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time

import numpy as np

_HERE = os.path.dirname(os.path.abspath(__file__))
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)

import common  # noqa: E402  (bench/common.py)

METHODS = ("gpusvd", "gpusvd_jacobi", "gpusvd_eigh", "svdsqrt_gpu", "svdsqrt_cpu", "svd_gpu")
# gpusvd is "auto": the Jacobi sweeps on the GPU
DEFAULT_METHODS = ("gpusvd", "svdsqrt_gpu", "svdsqrt_cpu", "svd_gpu")
SIZES = [16, 32, 64, 128, 256, 512, 1024, 2048, 4096]  # paper 002 Table I, and 4096
DTYPES = ("complex128", "complex64")
SCHEMA = "gpusvd-bench-takagi/1"


def _takagi():
    try:
        from gpusvd.takagi import takagi
    except ImportError:
        sys.path.insert(0, os.path.join(os.path.dirname(_HERE), "src"))
        from gpusvd.takagi import takagi
    return takagi


def make_matrix(n: int, seed: int):
    """Complex symmetric (G + Gᵀ)/2, complex64-representable, as complex128 NumPy."""
    rng = np.random.default_rng(seed)
    g = (rng.standard_normal((n, n)) + 1j * rng.standard_normal((n, n))).astype(np.complex64)
    return ((g + g.T) / np.float32(2)).astype(np.complex128)


# --------------------------------------------------------------------------- peers

def _widest_gap_turn(phases, xp):
    """α such that e^{iα}·e^{iθ} keeps every angle θ of ``phases`` away from π."""
    theta = xp.sort(xp.angle(phases))
    gaps = xp.diff(xp.concatenate((theta, theta[:1] + 2 * math.pi)))
    k = int(xp.argmax(gaps))
    middle = float(theta[k]) + float(gaps[k]) / 2
    return math.pi - middle


def sqrtm_unitary(w, xp):
    """A primary square root of the unitary ``w`` by eigh of its Cayley transform."""
    n = w.shape[0]
    alpha = _widest_gap_turn(xp.diagonal(w), xp)
    turned = w * w.dtype.type(complex(math.cos(alpha), math.sin(alpha)))
    eye = xp.eye(n, dtype=w.dtype)
    k = 1j * xp.linalg.solve(eye + turned, eye - turned)     # eigenvalues tan(θ/2)
    mu, q = xp.linalg.eigh((k + k.conj().T) / 2)
    root = xp.exp(1j * (xp.arctan(mu) - alpha / 2)).astype(w.dtype)  # e^{i(θ−α)/2}
    return (q * root) @ q.conj().T


def svdsqrt_gpu(a):
    import cupy as cp
    u, d, vh = cp.linalg.svd(a)
    return d, u @ sqrtm_unitary((vh @ u.conj()).T, cp)


def svdsqrt_cpu(a):
    """thewalrus.decompositions.takagi (svd_order=True), complex branch, verbatim."""
    import scipy.linalg
    u, d, v = np.linalg.svd(a)
    return d, u @ scipy.linalg.sqrtm((v @ np.conjugate(u)).T)


def build_runner(method: str, a_host):
    """fn() -> (S, U) for ``a_host``; the input is moved to its device here, untimed."""
    if method.startswith("gpusvd"):
        import cupy as cp
        takagi = _takagi()
        a = cp.asarray(a_host)
        how = {"gpusvd": "auto", "gpusvd_jacobi": "jacobi", "gpusvd_eigh": "eigh"}[method]
        return lambda: takagi(a, device="gpu", method=how)
    if method == "svdsqrt_gpu":
        import cupy as cp
        a = cp.asarray(a_host)
        return lambda: svdsqrt_gpu(a)
    if method == "svdsqrt_cpu":
        return lambda: svdsqrt_cpu(a_host)
    if method == "svd_gpu":
        import cupy as cp
        import gpusvd
        a = cp.asarray(a_host)
        return lambda: gpusvd.svd(a)[1::-1]  # (S, U): only S is a Takagi quantity
    raise ValueError(f"unknown method {method!r}")


def accuracy(a_host, s, u, s_ref, dtype) -> dict:
    """Residual and orthogonality (units of n·ε) and value error, in complex128 on the GPU."""
    import cupy as cp
    a = cp.asarray(a_host).astype(cp.complex128)
    n = a.shape[0]
    u = common.to_cupy(u).astype(cp.complex128)
    s64 = common.to_cupy(s).astype(cp.float64)
    eps = common.eps_of(dtype)
    norm = float(cp.linalg.norm(a))
    residual = float(cp.linalg.norm(a - (u * s64) @ u.T)) / (norm or 1.0)
    gram = u.conj().T @ u
    gram[cp.diag_indices(n)] -= 1
    orth = float(cp.linalg.norm(gram))
    out = {"residual": residual / (n * eps), "residual_raw": residual,
           "orthogonality": orth / (n * eps), "orthogonality_raw": orth,
           "finite": bool(cp.isfinite(u).all() and cp.isfinite(s64).all())}
    out.update(common.sv_error(s64, s_ref, dtype))
    return out


# --------------------------------------------------------------------------- main

def format_table(records, methods) -> str:
    rows, order = {}, []
    for r in records:
        key = (r["n"], r["dtype"])
        if key not in rows:
            rows[key] = {}
            order.append(key)
        if r.get("skipped"):
            cell = "skip"
        elif r.get("median_s") is None:
            cell = "ERR"
        else:
            t = r["median_s"]
            res = r.get("residual")
            cell = (f"{t * 1e3:.3g}ms" if t < 1 else f"{t:.3g}s") + \
                (f" {res:.2g}" if isinstance(res, float) else " ?")
        rows[key][r["method"]] = cell
    head = "n / dtype".ljust(18) + "".join(m.rjust(20) for m in methods)
    lines = [head, "-" * len(head)]
    for n, dt in order:
        lines.append(f"{n} {dt}".ljust(18) + "".join(rows[(n, dt)].get(m, "").rjust(20)
                                                   for m in methods))
    lines.append("cells: median time, residual in units of n·eps; skip = budget")
    return "\n".join(lines)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", nargs="+", type=int, default=SIZES)
    p.add_argument("--dtypes", nargs="+", default=list(DTYPES), choices=list(DTYPES))
    p.add_argument("--methods", nargs="+", default=list(DEFAULT_METHODS), choices=list(METHODS))
    default_out = os.path.join(os.environ["OUT"], "takagi.json") if os.environ.get("OUT") \
        else os.path.join(_HERE, "results", "takagi.json")
    p.add_argument("--out", default=default_out, help="JSON output path")
    p.add_argument("--budget", type=float, default=480.0,
                   help="seconds for the whole run; no case starts that is predicted not to fit")
    p.add_argument("--max-call", type=float, default=60.0,
                   help="skip a method at a size whose call is predicted longer (n³ scaling)")
    p.add_argument("--case-seconds", type=float, default=20.0,
                   help="stop repeating a case after this many seconds (>= 1 timed call)")
    p.add_argument("--warmup", type=int, default=1)
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--seed", type=int, default=20261122)
    args = p.parse_args(argv)

    t_start = time.perf_counter()
    deadline = t_start + args.budget
    import cupy as cp  # the GPU side starts here

    payload = {"schema": SCHEMA, "benchmark": "takagi", "device_info": common.device_info(),
               "args": vars(args),
               "units": {"residual": "||A - U diag(S) U^T||_F / (||A||_F n eps_dtype)",
                         "orthogonality": "||U^H U - I||_F / (n eps_dtype)",
                         "sv_error": "max|S - S_ref| / (S_ref[0] eps_dtype), S_ref float64 SVD",
                         "times": "seconds, wall clock after device synchronization"},
               "records": [], "complete": False}
    print(f"# {payload['device_info'].get('gpu')} -> {args.out}", flush=True)

    def save():
        payload["elapsed_s"] = time.perf_counter() - t_start
        common.write_json(args.out, payload)

    last = {}  # (method, dtype) -> (n, median)
    for n in sorted(args.sizes):
        a64 = make_matrix(n, args.seed + n)
        s_ref = cp.linalg.svd(cp.asarray(a64), compute_uv=False)
        for dt in args.dtypes:
            a = a64.astype(dt)
            for meth in args.methods:
                rec = {"n": n, "dtype": dt, "method": meth, "median_s": None, "times_s": [],
                       "error": None, "skipped": None}
                left = deadline - time.perf_counter()
                prev = last.get((meth, dt))
                pred = prev[1] * (n / prev[0]) ** 3 if prev else None
                rec["predicted_s"] = pred
                if left <= 0:
                    rec["skipped"] = "budget exhausted"
                elif pred is not None and pred > args.max_call:
                    rec["skipped"] = f"predicted {pred:.3g} s > --max-call {args.max_call:g}"
                elif pred is not None and (args.warmup + 1) * pred > left:
                    rec["skipped"] = (f"predicted {(args.warmup + 1) * pred:.3g} s, "
                                      f"{left:.3g} s left")
                if not rec["skipped"]:
                    try:
                        timing = common.time_gpu(build_runner(meth, a), warmup=args.warmup,
                                                 repeat=args.repeat,
                                                 max_seconds=min(args.case_seconds, left))
                        rec.update(median_s=timing.median, times_s=timing.times,
                                   warmup_s=timing.warmup_times)
                        last[(meth, dt)] = (n, timing.median)
                        if meth == "svd_gpu":
                            rec.update(common.sv_error(timing.result[0], s_ref, dt),
                                       residual=None, orthogonality=None)
                        else:
                            rec.update(accuracy(a, *timing.result, s_ref, dt))
                    except Exception as exc:
                        rec["error"] = common.short_error(exc)
                    timing = None
                    common.free_gpu_memory()
                payload["records"].append(rec)
                msg = rec["skipped"] or rec["error"] or (
                    f"{rec['median_s']:.4g}s res {rec['residual'] or 0:.3g} "
                    f"orth {rec['orthogonality'] or 0:.3g} sverr {rec['sv_error']:.3g}")
                print(f"{n:>6} {dt:<11}{meth:<13}{msg}", flush=True)
                save()
    payload["complete"] = True
    save()
    print(format_table(payload["records"], args.methods))
    return 0


if __name__ == "__main__":
    sys.exit(main())

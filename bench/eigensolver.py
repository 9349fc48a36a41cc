#!/usr/bin/env python3
"""Where the eigendecomposition of the polar method's H goes on the GPU: cuSOLVER's syevd
whole, and the two of its steps cuSOLVER exposes, timed alone.

The question: which step of syevd sets its time at n = 4096–16384, and what must a route
that replaces it beat? syevd is sytrd (dense → tridiagonal by Householder reflectors,
half of its flops in matrix-vector products, bound by memory), then the tridiagonal's
divide and conquer (eigenvectors from the identity), then ormtr (those vectors times
sytrd's Q). cuSOLVER exposes sytrd and ormtr (``{S,D}sytrd``, ``{S,D}ormtr``, called
here through ctypes on the library CuPy loaded, as :mod:`gpusvd._core.libraries` calls
it) but not its divide and conquer (no ``stedc`` among its symbols, CUDA 13): that step
is syevd's time less the other two. Beside them one n×n×n GEMM and one SYRK, the rates
a GEMM-rich step can reach, and syevd itself (``cupy.linalg.eigh``), its residual
‖H·V − V·Λ‖_F / (‖H‖_F·n·ε) and orthogonality ‖VᵀV − I‖_F / (n·ε).

Inputs: for each n and dtype one Gaussian symmetric (G + Gᵀ)/2; median of ``--repeat``
calls after one warm-up, the device synchronized around each (``bench/common.py``).

    PYTHONPATH=src python3 bench/eigensolver.py --sizes 4096 8192 16384 \\
        --out bench/results/eigensolver_h200.json
"""

from __future__ import annotations

import argparse
import ctypes
import os
import sys
import time

import numpy as np

_HERE = os.path.dirname(os.path.abspath(__file__))
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)

import common  # noqa: E402  (bench/common.py)

SCHEMA = "gpusvd-bench-eigensolver/1"
_LETTER = {"float32": "S", "float64": "D"}
# cublasFillMode_t LOWER, cublasSideMode_t LEFT, cublasOperation_t N
_LOWER, _LEFT, _NO_TRANSPOSE = 0, 0, 0
_VOID, _INT = ctypes.c_void_p, ctypes.c_int


class Steps:
    """The steps of syevd that cuSOLVER exposes, on one real dtype."""

    def __init__(self, dtype):
        import cupy
        from gpusvd._core import libraries

        self.cp, self.lib = cupy, libraries.cusolver()
        self.libraries = libraries
        self.dtype = np.dtype(dtype)
        self.letter = _LETTER[self.dtype.name]

    def _call(self, name, *args):
        self.libraries.check(getattr(self.lib, name)(*args), name)

    def sytrd(self, a):
        """a (n×n, symmetric, overwritten by the reflectors): (d, e, τ)."""
        cp, n = self.cp, a.shape[0]
        d, e, tau = (cp.empty(max(k, 1), self.dtype) for k in (n, n - 1, n - 1))
        handle = self.libraries.solver_handle()
        head = (_VOID(handle), _LOWER, _INT(n), _VOID(a.data.ptr), _INT(n),
                _VOID(d.data.ptr), _VOID(e.data.ptr), _VOID(tau.data.ptr))
        lwork = _INT(0)
        self._call(f"cusolverDn{self.letter}sytrd_bufferSize", *head, ctypes.byref(lwork))
        work, info = cp.empty(max(lwork.value, 1), self.dtype), cp.empty(1, np.int32)
        self._call(f"cusolverDn{self.letter}sytrd", *head, _VOID(work.data.ptr),
                   _INT(lwork.value), _VOID(info.data.ptr))
        return d[:n], e[:max(n - 1, 0)], tau, info

    def ormtr(self, reflectors, tau, c):
        """c ← Q·c (column-major c, overwritten), Q from :meth:`sytrd`'s reflectors."""
        cp, n = self.cp, c.shape[0]
        handle = self.libraries.solver_handle()
        head = (_VOID(handle), _LEFT, _LOWER, _NO_TRANSPOSE, _INT(n), _INT(n),
                _VOID(reflectors.data.ptr), _INT(n), _VOID(tau.data.ptr), _VOID(c.data.ptr),
                _INT(n))
        lwork = _INT(0)
        self._call(f"cusolverDn{self.letter}ormtr_bufferSize", *head, ctypes.byref(lwork))
        work, info = cp.empty(max(lwork.value, 1), self.dtype), cp.empty(1, np.int32)
        self._call(f"cusolverDn{self.letter}ormtr", *head, _VOID(work.data.ptr),
                   _INT(lwork.value), _VOID(info.data.ptr))
        return c, info


def run_case(n, dtype, repeat, seed):
    import cupy as cp

    rng = np.random.default_rng(seed)
    g = cp.asarray(rng.standard_normal((n, n)))
    h = ((g + g.T) * 0.5).astype(dtype)
    del g
    steps = Steps(dtype)
    def timed(fn):
        return common.time_gpu(fn, warmup=1, repeat=repeat, max_seconds=120.0)

    out = {"n": n, "dtype": dtype}
    out["syevd"] = timed(lambda: cp.linalg.eigh(h)).median
    out["sytrd"] = timed(lambda: steps.sytrd(h.copy())).median
    reflectors = h.copy()
    _, _, tau, info_trd = steps.sytrd(reflectors)
    # ormtr's time depends on the shapes only: the identity stands in for the vectors.
    identity = cp.eye(n, dtype=dtype)
    out["ormtr"] = timed(lambda: steps.ormtr(reflectors, tau, identity.copy())).median
    _, info_mtr = steps.ormtr(reflectors, tau, identity.copy())
    out["divide_and_conquer"] = out["syevd"] - out["sytrd"] - out["ormtr"]
    out["gemm"] = timed(lambda: h @ h).median
    from cupy import cublas  # a submodule CuPy does not import itself
    out["syrk"] = timed(lambda: cublas.syrk("T", h, lower=True)).median
    out["gemm_tflops"] = 2 * n ** 3 / out["gemm"] / 1e12
    out["info"] = [int(x.get()[0]) for x in (info_trd, info_mtr)]
    lam, v = cp.linalg.eigh(h)
    h64, v64 = h.astype(np.float64), v.astype(np.float64)
    eps = float(np.finfo(dtype).eps)
    residual = cp.linalg.norm(h64 @ v64 - v64 * lam.astype(np.float64))
    out["residual"] = float(residual / (cp.linalg.norm(h64) * n * eps))
    out["orthogonality"] = float(cp.linalg.norm(v64.T @ v64 - cp.eye(n)) / (n * eps))
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", type=int, nargs="+", default=[4096, 8192])
    p.add_argument("--dtypes", nargs="+", default=["float64", "float32"],
                   choices=sorted(_LETTER))
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--seed", type=int, default=20261128)
    p.add_argument("--out", default="eigensolver.json")
    args = p.parse_args()
    records, started = [], time.time()
    payload = {"schema": SCHEMA, "device_info": common.device_info(), "args": vars(args),
               "units": "seconds; residual, orthogonality and value_error in n·ε",
               "records": records}
    print(f"{'n':>6s} {'dtype':8s} {'syevd':>8s} {'sytrd':>8s} {'d&c':>8s} {'ormtr':>8s} "
          f"{'gemm':>8s} {'syrk':>8s} {'res':>6s} {'orth':>6s}", flush=True)
    for n in args.sizes:
        for dtype in args.dtypes:
            try:
                rec = run_case(n, dtype, args.repeat, args.seed + n)
            except Exception as exc:  # one case's failure is recorded, the rest still run
                rec = {"n": n, "dtype": dtype, "error": common.short_error(exc)}
                print(f"{n:6d} {dtype:8s} error: {rec['error']}", flush=True)
            else:
                print(f"{n:6d} {dtype:8s} {rec['syevd']:8.4f} {rec['sytrd']:8.4f} "
                      f"{rec['divide_and_conquer']:8.4f} {rec['ormtr']:8.4f} "
                      f"{rec['gemm']:8.4f} {rec['syrk']:8.4f} {rec['residual']:6.2f} "
                      f"{rec['orthogonality']:6.2f}", flush=True)
            records.append(rec)
            payload["elapsed_s"] = time.time() - started
            common.write_json(args.out, payload)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Small matrices and Takagi on the CPU: per-call overheads of auto, gr, Takagi and Jacobi.

Once, ``svd(method="gr")`` padded every block to 128 reflectors (about 1 ms
for a 2×2, NumPy about 10 µs), the CPU Takagi ran hundreds of tiny ``np.matmul`` calls
per factorization, and the CPU Jacobi should be within 3× of LAPACK's relatively
accurate dgejsv. Run from the repository root with one thread for everything::

    NUMBA_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 PYTHONPATH=src \\
        python bench/cpu_small.py gr --label after

Before/after side by side: run the same command with ``PYTHONPATH`` pointing at a copy
of the earlier ``src`` (``git archive <commit> src``), alternating the two, and compare
the medians. Suites (float64 unless said):

- ``auto``: ``gpusvd.svd(a, full_matrices=False)`` and ``gpusvd.svdvals(a)`` (LAPACK's
  gesdd behind the front end's check) against NumPy's and SciPy's SVD; n×n Gaussian,
  n = 2, 4, 8, 16, 32, 64, and a stack of 1000 × 3×3 (``--sizes 3`` means that stack).

- ``polar``: ``gpusvd.polar(a)`` (LAPACK's SVD on the CPU) and ``method="qdwh"`` against
  ``scipy.linalg.polar``; n = 3, 8, 64, 256, 1000 and a stack of 1000 × 3×3 (``--sizes 1``).
- ``gr``: ``gpusvd.svd(a, method="gr", device="cpu")``, economy U, S, Vh, against
  ``numpy.linalg.svd`` (gesdd); n×n Gaussian, n = 2, 8, 32, 100, 500.
- ``takagi``: ``gpusvd.takagi(a, device="cpu")`` (``method="auto"``: the real symmetric
  eigenproblem) and ``method="jacobi"`` (the paper's sweeps) against thewalrus's
  algorithm (``svdsqrt_cpu`` of ``bench/takagi.py``: SVD, then ``scipy.linalg.sqrtm``),
  of a complex128 symmetric Gaussian, n = 8, 64, 160, 500.
- ``jacobi``: ``gpusvd.jacobi_svd(a, device="cpu")`` against SciPy's
  ``scipy.linalg.lapack.dgejsv`` (U and V), n×n with singular values geometric from 1
  to 1e-6 (as ``cpu.py``), n = 200, 500, 1000.

Each time is the median of ``--repeat`` calls after one untimed call. Results are
printed and appended to ``--out`` (JSON) under ``--label``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time

import numpy as np
import scipy.linalg
import scipy.linalg.lapack

import gpusvd
from gpusvd import testing

SCHEMA = "gpusvd-bench-cpu-small/1"
SIZES = {"auto": (2, 4, 8, 16, 32, 64, 3), "polar": (3, 8, 64, 256, 1000, 1),
         "gr": (2, 8, 32, 100, 500), "takagi": (8, 64, 160, 500), "jacobi": (200, 500, 1000)}
COND = 1e6


def _median_time(fn, repeat, max_seconds):
    fn()
    times, start = [], time.perf_counter()
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
        if time.perf_counter() - start > max_seconds:
            break
    return float(np.median(times)), times, out


def _auto_case(n, rng):
    a = rng.standard_normal((1000, 3, 3) if n == 3 else (n, n))
    return a, {
        "gpusvd_svd": lambda: gpusvd.svd(a, full_matrices=False),
        "gpusvd_svdvals": lambda: (None, gpusvd.svdvals(a), None),
        "numpy_svd": lambda: np.linalg.svd(a, full_matrices=False),
        "numpy_values": lambda: (None, np.linalg.svd(a, compute_uv=False), None),
        "scipy_svd": lambda: scipy.linalg.svd(a, full_matrices=False),
    }, lambda out: {"residual": max(testing.svd_residual(x, *o) for x, *o in zip(
        a.reshape(-1, *a.shape[-2:]), *(y.reshape(-1, *y.shape[-2:]) if y.ndim == a.ndim
                                        else y.reshape(-1, y.shape[-1]) for y in out)))
        if out[0] is not None else 0.0}


def _polar_case(n, rng):
    a = rng.standard_normal((1000, 3, 3) if n == 1 else (n, n))

    def check(out):
        u, p = out
        back = np.matmul(u, p)
        return {"residual": float(np.linalg.norm(back - a) / (np.linalg.norm(a) * max(n, 3)
                                                              * np.finfo(float).eps))}
    stacked = a.ndim == 3
    return a, {
        "gpusvd_polar": lambda: gpusvd.polar(a),
        "gpusvd_qdwh": lambda: gpusvd.polar(a, method="qdwh"),
        **({} if stacked else {"scipy_polar": lambda: scipy.linalg.polar(a)}),
    }, check


def _gr_case(n, rng):
    a = rng.standard_normal((n, n))
    return a, {
        "gpusvd_gr": lambda: gpusvd.svd(a, full_matrices=False, method="gr", device="cpu"),
        "numpy_gesdd": lambda: np.linalg.svd(a, full_matrices=False),
    }, lambda out: {"residual": testing.svd_residual(a, *out)}


def _takagi_case(n, rng):
    a = rng.standard_normal((n, n)) + 1j * rng.standard_normal((n, n))
    a = (a + a.T) / 2

    from takagi import svdsqrt_cpu  # bench/takagi.py, beside this script

    def check(out):
        s, u = out
        return {"residual": testing.svd_residual(a, u, s, u.T),
                "orthogonality": testing.orthogonality(u)}
    return a, {"gpusvd_takagi": lambda: gpusvd.takagi(a, device="cpu"),
               "gpusvd_jacobi": lambda: gpusvd.takagi(a, method="jacobi", device="cpu"),
               "thewalrus_svd_sqrtm": lambda: svdsqrt_cpu(a)}, check


def _dgejsv(a):
    # SciPy's integer codes: joba=0, jobu=0 and jobv=0 (economy U and V); SVA scaled
    # back by WORK(1)/WORK(2) as dgejsv documents.
    sva, u, v, work, iwork, info = scipy.linalg.lapack.dgejsv(a, joba=0, jobu=0, jobv=0)
    if info != 0:
        raise RuntimeError(f"dgejsv info={info}")
    return u, sva * work[0] / work[1], v.T


def _jacobi_case(n, rng):
    s = np.geomspace(1.0, 1.0 / COND, n)
    a = testing.with_singular_values(s, n, n, seed=rng)
    return a, {
        "gpusvd_jacobi": lambda: tuple(gpusvd.jacobi_svd(a, device="cpu"))[:3],
        "lapack_dgejsv": lambda: _dgejsv(a),
    }, lambda out: {"residual": testing.svd_residual(a, *out[:3]),
                    "sv_error": testing.sv_error(np.asarray(out[1]), s)}


CASES = {"auto": _auto_case, "polar": _polar_case, "gr": _gr_case, "takagi": _takagi_case,
         "jacobi": _jacobi_case}


def run(suite, sizes, repeat, max_seconds):
    records = []
    for n in sizes:
        _, methods, check = CASES[suite](n, np.random.default_rng(n))
        for name, fn in methods.items():
            median, times, out = _median_time(fn, repeat, max_seconds)
            record = {"suite": suite, "n": n, "method": name, "seconds": median,
                      "times": times, **check(out)}
            records.append(record)
            print(f"{suite:>7} {n:>5} {name:<14} {median * 1e3:10.3f} ms  "
                  f"res {record['residual']:.2f}", flush=True)
    return records


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("suite", choices=CASES)
    p.add_argument("--label", required=True, help="this run's key in the JSON")
    p.add_argument("--sizes", type=int, nargs="+")
    p.add_argument("--repeat", type=int, default=7)
    p.add_argument("--max-seconds", type=float, default=60.0)
    p.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                 "results", "cpu_small_s7.json"))
    args = p.parse_args(argv)
    records = run(args.suite, args.sizes or SIZES[args.suite], args.repeat, args.max_seconds)
    payload = {"schema": SCHEMA, "runs": {}}
    if os.path.exists(args.out):
        with open(args.out) as f:
            payload = json.load(f)
    payload["runs"].setdefault(args.label, []).append({
        "date": time.strftime("%Y-%m-%dT%H:%M:%S"), "host": platform.node(),
        "cpu_count": os.cpu_count(), "gpusvd": os.path.dirname(gpusvd.__file__),
        "threads": {k: os.environ.get(k) for k in ("NUMBA_NUM_THREADS", "OPENBLAS_NUM_THREADS")},
        "records": records})
    with open(args.out, "w") as f:
        json.dump(payload, f, indent=1)


if __name__ == "__main__":
    main()

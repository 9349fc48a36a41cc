#!/usr/bin/env python3
"""The CPU default (``gpusvd.svd``, ``method="auto"``) against NumPy's and SciPy's LAPACK.

Run from the repository root on a machine without a GPU (or with ``device="cpu"`` forced
here anyway)::

    PYTHONPATH=src python bench/cpu.py --label after

The question: is the CPU default no slower than ``numpy.linalg.svd`` at every size
and shape, with LAPACK's accuracy? For each case, float64, economy U, S, Vh:
``gpusvd.svd`` (auto), ``gpusvd.svd(method="gr")`` (single matrices: our own
Golub–Reinsch beside the rule's choice), ``numpy.linalg.svd`` (LAPACK gesdd, stacks in
one call) and ``scipy.linalg.svd`` with ``lapack_driver="gesdd"`` and ``"gesvd"``
(``check_finite=False``; stacks through SciPy's batched call). Cases: 500×500, 4000×1000,
2000×2000, and stacks 1000 × 8×8 and 200 × 32×32, each under two thread settings: one
thread for BLAS, OpenMP and Numba (``threadpoolctl`` and ``numba.set_num_threads``), and
the defaults (one per core). Time: the median of ``--repeat`` calls after one untimed
call of every method on a small input of the same kind (compilation stays out). The
matrices have the singular values of ``gpusvd bench`` (geometric from 1 to 1/COND, as
LAPACK's xLATMS mode 3) and Haar vectors, so the accuracy is measured against the imposed
values: ``sv_error`` in units of s_max·ε, ``residual`` and ``orthogonality`` in units of
n·ε (:mod:`gpusvd.testing`), the largest over a stack.

The JSON (``--out``) keeps one entry per ``--label`` ("before", "after"), so a run before
a change and one after sit in one file.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

import numba
import numpy as np
import scipy.linalg
from threadpoolctl import threadpool_limits

import gpusvd
from gpusvd import testing

_HERE = os.path.dirname(os.path.abspath(__file__))
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)

import common  # noqa: E402

SCHEMA = "gpusvd-bench-cpu-default/1"
COND = 1e6  # as gpusvd bench's svd matrices (_bench.COND)
CASES = {"500x500": (1, 500, 500), "4000x1000": (1, 4000, 1000), "2000x2000": (1, 2000, 2000),
         "1000x8x8": (1000, 8, 8), "200x32x32": (200, 32, 32)}


def _scipy(driver):
    return lambda a: scipy.linalg.svd(a, full_matrices=False, lapack_driver=driver,
                                      check_finite=False)


METHODS = {
    "gpusvd_auto": lambda a: gpusvd.svd(a, full_matrices=False, device="cpu"),
    "gpusvd_gr": lambda a: gpusvd.svd(a, full_matrices=False, method="gr", device="cpu"),
    "gpusvd_polar": lambda a: gpusvd.svd(a, full_matrices=False, method="polar", device="cpu"),
    "gpusvd_svdvals_gr": lambda a: gpusvd.svdvals(a, method="gr", device="cpu"),
    "numpy_gesdd": lambda a: np.linalg.svd(a, full_matrices=False),
    "scipy_gesdd": _scipy("gesdd"),
    "scipy_gesvd": _scipy("gesvd"),
}
# gr and polar of a stack go matrix by matrix here: seconds, and not asked.
SINGLE_ONLY = {"gpusvd_gr", "gpusvd_polar", "gpusvd_svdvals_gr"}
VALUES_ONLY = {"gpusvd_svdvals_gr"}


def _matrices(batch, m, n, seed):
    """(a, s): ``batch`` matrices m×n with the imposed singular values ``s`` (descending)."""
    s = np.geomspace(1.0, 1.0 / COND, min(m, n))
    rng = np.random.default_rng(seed)
    a = np.stack([testing.with_singular_values(s, m, n, seed=rng) for _ in range(batch)])
    return (a[0] if batch == 1 else a), s


def _accuracy(a, out, s):
    """Largest residual, orthogonality and sv_error over the matrices of ``a`` (values
    only: sv_error, the others None)."""
    if not isinstance(out, tuple):
        return {"residual": None, "orthogonality": None,
                "sv_error": testing.sv_error(np.asarray(out), s)}
    u, values, vh = (np.asarray(x) for x in out)
    flat = [x.reshape(-1, *x.shape[-2:]) if x.ndim > 1 else x for x in (a, u, vh)]
    values = values.reshape(-1, values.shape[-1])
    return {"residual": max(testing.svd_residual(x, y, v, z)
                            for x, y, v, z in zip(flat[0], flat[1], values, flat[2])),
            "orthogonality": max(max(testing.orthogonality(y), testing.orthogonality(z, rows=True))
                                 for y, z in zip(flat[1], flat[2])),
            "sv_error": max(testing.sv_error(v, s) for v in values)}


def _threads(setting):
    """The thread limits of ``setting`` ("one" or "default") as a context manager."""
    if setting == "default":
        numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
        return threadpool_limits(limits=None)
    numba.set_num_threads(1)
    return threadpool_limits(limits=1)


def _warm_up():
    """One call of every method on small inputs of each kind: compilation out of the times."""
    for batch, m, n in {(1, 40, 30), (1, 30, 40), (4, 8, 8), (4, 32, 32)}:
        a, _ = _matrices(batch, m, n, seed=0)
        for name, fn in METHODS.items():
            if batch == 1 or name not in SINGLE_ONLY:
                fn(a)


def run(args):
    _warm_up()
    records = []
    for case in args.cases:
        batch, m, n = CASES[case]
        a, s = _matrices(batch, m, n, seed=1)
        for setting in args.threads:
            with _threads(setting):
                for name, fn in METHODS.items():
                    if (batch > 1 and name in SINGLE_ONLY) or name not in args.methods:
                        continue
                    timing = common.time_gpu(lambda: fn(a), warmup=0, repeat=args.repeat,
                                             max_seconds=args.max_seconds)
                    record = {"case": case, "threads": setting, "method": name,
                              "seconds": timing.median, "times": timing.times}
                    record.update(_accuracy(a, timing.result, s))
                    records.append(record)
                    shown = " ".join(f"{k[:4]} {record[k]:6.2f}" for k in
                                     ("residual", "orthogonality", "sv_error")
                                     if record[k] is not None)
                    print(f"{case:>10} {setting:>7} {name:<17} {timing.median:9.4f} s  "
                          f"{shown}", flush=True)
    return records


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--label", required=True, help="this run's key in the JSON: before, after")
    p.add_argument("--cases", nargs="+", choices=CASES, default=list(CASES))
    p.add_argument("--threads", nargs="+", choices=("one", "default"),
                   default=["one", "default"])
    p.add_argument("--methods", nargs="+", choices=METHODS, default=list(METHODS))
    p.add_argument("--repeat", type=int, default=3, help="timed calls (median; default 3)")
    p.add_argument("--max-seconds", type=float, default=120.0,
                   help="stop repeating a method past this (default 120)")
    p.add_argument("--out", default=os.path.join(_HERE, "results", "cpu_default_s7.json"))
    args = p.parse_args(argv)
    records = run(args)
    payload = {"schema": SCHEMA, "runs": {}}
    if os.path.exists(args.out):
        with open(args.out) as f:
            payload = json.load(f)
    payload["runs"][args.label] = {"device": common.device_info(), "cond": COND,
                                   "repeat": args.repeat, "numba_threads_default":
                                   numba.config.NUMBA_NUM_THREADS, "records": records}
    common.write_json(args.out, payload)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()

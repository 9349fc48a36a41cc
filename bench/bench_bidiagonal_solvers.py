#!/usr/bin/env python3
"""SVD of a bidiagonal with vectors: divide and conquer (dbdsdc) against the QR.

Issue 18: ``gpusvd.condensed.bidiagonal_dc.bidiagonal_svd`` (LAPACK's dbdsdc, its merges
GEMMs in SciPy's threaded BLAS) against ``gpusvd.golub_reinsch.bidiagonal_qr.
bidiagonal_svd`` (the implicit-shift QR of Demmel & Kahan, a sequential Numba loop whose
rotations a parallel Numba kernel applies to X = Y = I), on the host, both with vectors,
float64. From the repository root, at several thread counts in one run::

    PYTHONPATH=src python bench/bench_bidiagonal_solvers.py --sizes 500 1000 2000 \\
        --threads 1 2 --out bench/results/cpu_bidiagonal_solvers.json

On the GPU machine's 16-core host::

    PYTHONPATH=src python bench/bench_bidiagonal_solvers.py --sizes 4096 8192 \\
        --threads 1 16 --out bench/results/h100_host_bidiagonal_solvers.json

A thread setting k limits every BLAS pool to k threads (threadpoolctl) and Numba to k
(``numba.set_num_threads``; leave ``NUMBA_NUM_THREADS`` unset or at least max k).
Families of B: ``random`` and ``graded`` of :func:`gpusvd.testing.bidiagonal`
(i.i.d. normal entries, whose vectors are localized, so dbdsdc deflates much; entries
falling geometrically over 20 decades), and ``gaussian-matrix``, the bidiagonal of an
n×n Gaussian matrix (d_i ~ χ_{n−i+1}, e_i ~ χ_{n−i}, as in bench_dqds.py), which is what
``gpusvd.svd`` meets and deflates least.

On a shared machine the load changes from second to second, so the solvers run side by
side: each round calls every (threads, solver) pair once, in turn, on the same B, and
each QR time is divided by the dbdsdc time of its round and setting. The table gives the
median time of each over ``--rounds`` rounds after one untimed round (Numba's compilation
and the first BLAS call), that ratio's median, and, from the untimed round, the
residual, the orthogonality of U and Vᵀ (``max``) in units of n·ε and the values' error
against dqds in units of n·ε·σ₁ (:mod:`gpusvd.testing`).
"""

from __future__ import annotations

import argparse
import os
import pathlib
import sys
import time

import numba
import numpy as np
from threadpoolctl import threadpool_limits

from gpusvd import testing
from gpusvd.condensed import bidiagonal_dc
from gpusvd.golub_reinsch import bidiagonal_qr
from gpusvd.golub_reinsch.dqds import bidiagonal_singular_values

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import common  # noqa: E402

SCHEMA = "gpusvd-bench-bidiagonal-solvers/1"


def _gaussian_matrix(n, rng):
    """The bidiagonal of an n×n Gaussian matrix, in distribution (Householder's)."""
    return (np.sqrt(rng.chisquare(np.arange(n, 0, -1))),
            np.sqrt(rng.chisquare(np.arange(n - 1, 0, -1))))


FAMILIES = {
    "random": lambda n, rng: testing.bidiagonal(n, kind="random", seed=rng),
    "graded": lambda n, rng: testing.bidiagonal(n, kind="graded", seed=rng),
    "gaussian-matrix": _gaussian_matrix,
}


def _dbdsdc(d, e):
    return bidiagonal_dc.bidiagonal_svd(d, e)


def _qr(d, e):
    s, x, y = bidiagonal_qr.bidiagonal_svd(d, e)
    return x, s, y.T


SOLVERS = {"dbdsdc": _dbdsdc, "qr": _qr}


def _accuracy(d, e, u, s, vt):
    n = len(d)
    b = np.diag(d) + np.diag(e, 1)
    return {"residual": testing.svd_residual(b, u, s, vt),
            "orthogonality": max(testing.orthogonality(u), testing.orthogonality(vt, rows=True)),
            "sv_error_n_eps": testing.sv_error(s, bidiagonal_singular_values(d, e)) / n}


def _measure(family, n, threads, rounds, rng):
    d, e = FAMILIES[family](n, rng)
    pairs = [(k, name) for k in threads for name in SOLVERS]
    times = {pair: [] for pair in pairs}
    accuracy = {}
    for r in range(rounds + 1):
        for k, name in pairs:
            numba.set_num_threads(k)
            with threadpool_limits(limits=k, user_api="blas"):
                t0 = time.perf_counter()
                u, s, vt = SOLVERS[name](d, e)
                dt = time.perf_counter() - t0
            if r:
                times[k, name].append(dt)
            elif name not in accuracy:
                accuracy[name] = _accuracy(d, e, u, s, vt)
    records = []
    for k, name in pairs:
        ratio = np.array(times[k, "qr"]) / np.array(times[k, "dbdsdc"])
        records.append({"family": family, "n": n, "threads": k, "solver": name,
                        "median_s": float(np.median(times[k, name])), "times_s": times[k, name],
                        "qr_over_dbdsdc": float(np.median(ratio)), **accuracy[name]})
    return records


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[500, 1000, 2000])
    parser.add_argument("--families", nargs="+", choices=list(FAMILIES), default=list(FAMILIES))
    parser.add_argument("--threads", type=int, nargs="+", default=[os.cpu_count()])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out")
    args = parser.parse_args(argv)
    if max(args.threads) > numba.config.NUMBA_NUM_THREADS:
        parser.error(f"--threads up to {max(args.threads)} needs NUMBA_NUM_THREADS >= that "
                     f"(it is {numba.config.NUMBA_NUM_THREADS})")
    rng = np.random.default_rng(args.seed)
    records = []
    print(f"{'family':>16} {'n':>6} {'thr':>4} {'solver':>7} {'median s':>9} "
          f"{'qr/dc':>6} {'resid':>6} {'orth':>6} {'sv err':>7}")
    for family in args.families:
        for n in args.sizes:
            for rec in _measure(family, n, args.threads, args.rounds, rng):
                records.append(rec)
                print(f"{family:>16} {n:>6} {rec['threads']:>4} {rec['solver']:>7} "
                      f"{rec['median_s']:>9.4f} {rec['qr_over_dbdsdc']:>6.2f} "
                      f"{rec['residual']:>6.2f} {rec['orthogonality']:>6.2f} "
                      f"{rec['sv_error_n_eps']:>7.3f}", flush=True)
    if args.out:
        common.write_json(args.out, {
            "schema": SCHEMA, "machine": common.device_info(), "cpu_count": os.cpu_count(),
            "load_average": os.getloadavg(), "records": records})


if __name__ == "__main__":
    main()

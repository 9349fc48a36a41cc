#!/usr/bin/env python3
"""dqds on four families of bidiagonals: steps per value, time, and accuracy.

Run from the repository root (CPU only; the GPU paths call the same host code)::

    PYTHONPATH=src python bench/bench_dqds.py --sizes 500 2000 --out bench/results/dqds_cpu.json

Families: the bidiagonal of a Gaussian matrix (chi-distributed entries, what
``gpusvd.svdvals`` meets), i.i.d. Gaussian and uniform entries (vectors localized inside
the block, values down to exp(-c·√n)), and a graded one (30 decades). Per family and n:
dqds steps per singular value, median seconds of ``bidiagonal_singular_values`` over
``--repeat`` runs after a warm-up, and the largest relative error against LAPACK's
bisection (dstebz) on the Golub–Kahan tridiagonal, in units of ε (that reference is itself
a few n·ε from the truth, so small numbers here are an upper bound).
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np
import scipy.linalg

_HERE = os.path.dirname(os.path.abspath(__file__))
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)

import common  # noqa: E402

SCHEMA = "gpusvd-bench-dqds/1"


def _gaussian(n, rng):
    return (np.sqrt(rng.chisquare(np.arange(n, 0, -1))),
            np.sqrt(rng.chisquare(np.arange(n - 1, 0, -1))))


def _iid(n, rng):
    return rng.standard_normal(n), rng.standard_normal(n - 1)


def _uniform(n, rng):
    return rng.random(n), rng.random(n - 1)


def _graded(n, rng):
    g = np.geomspace(1, 1e-30, n)
    return g * (1 + rng.random(n)), g[:-1] * rng.random(n - 1)


FAMILIES = {"gaussian-matrix": _gaussian, "iid": _iid, "uniform": _uniform, "graded": _graded}


def _bisection(d, e):
    n = len(d)
    off = np.empty(2 * n - 1)
    off[0::2], off[1::2] = np.abs(d), np.abs(e)
    w = scipy.linalg.eigh_tridiagonal(np.zeros(2 * n), off, eigvals_only=True, select="i",
                                      select_range=(n, 2 * n - 1), lapack_driver="stebz",
                                      tol=np.finfo(float).tiny)
    return np.sort(w)[::-1]


def run(sizes, repeat, seed):
    from gpusvd.golub_reinsch import dqds
    from gpusvd.golub_reinsch.dqds import bidiagonal_singular_values

    bidiagonal_singular_values(*_iid(8, np.random.default_rng(0)))   # compile
    cases = []
    for name, make in FAMILIES.items():
        for n in sizes:
            d, e = make(n, np.random.default_rng(seed))
            times = []
            for _ in range(repeat + 1):
                start = time.perf_counter()
                s = bidiagonal_singular_values(d, e)
                times.append(time.perf_counter() - start)
            ref = _bisection(d, e)
            error = float(np.max(np.abs(s - ref) / ref) / np.finfo(float).eps)
            steps = dqds._values_and_steps(np.abs(d), np.abs(e))[1]
            cases.append({"family": name, "n": n, "steps_per_value": steps / n,
                          "seconds": float(np.median(times[1:])), "times": times[1:],
                          "error_vs_bisection_eps": error})
            print(f"{name:16s} n={n:6d}: {cases[-1]['steps_per_value']:5.2f} steps/value, "
                  f"{cases[-1]['seconds'] * 1e3:8.2f} ms, error {error:7.1f} ε", flush=True)
    return cases


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", type=int, nargs="+", default=[500, 2000])
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--seed", type=int, default=3)
    p.add_argument("--out", default=None)
    args = p.parse_args(argv)
    cases = run(args.sizes, args.repeat, args.seed)
    if args.out:
        common.write_json(args.out, {"schema": SCHEMA, "device": common.device_info(),
                                     "cases": cases})


if __name__ == "__main__":
    main()

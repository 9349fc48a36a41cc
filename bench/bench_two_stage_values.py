#!/usr/bin/env python3
"""Singular values: the one-stage Golub–Reinsch reduction against the two-stage one.

Chooses the tunables ``two_stage_values_min_n_cpu`` and ``two_stage_values_min_n_gpu``
(issue 18): ``svdvals(method="gr")`` with ``reduction="one-stage"`` (Householder
bidiagonalization, then dqds on the host) against ``reduction="two-stage"`` (dense → band
→ bidiagonal, then dqds on the CPU or bisection on the GPU) at several bandwidths b, on
n×n Gaussian matrices. On the CPU, from the repository root, with one thread::

    NUMBA_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 PYTHONPATH=src \\
        python bench/bench_two_stage_values.py --out bench/results/cpu_two_stage_values.json

On the GPU (CuPy input, the device synchronized after each call)::

    PYTHONPATH=src python bench/bench_two_stage_values.py --device gpu \\
        --sizes 2048 4096 8192 16384 --dtype float32 --out bench/results/...json

On a shared machine the load changes from second to second, so the variants run side by
side: each round calls every variant once, in turn, on the same matrix, and each
two-stage time is divided by the one-stage time of its round. The table gives the median
time of each variant and the median of the per-round ratios, after one untimed round
(which also compiles the Numba loops and loads the CUDA kernels), and each variant's
error against LAPACK's float64 values in units of n·ε·σ₁ (ε of the dtype).
"""

from __future__ import annotations

import argparse
import os
import pathlib
import sys
import time

import numpy as np

import gpusvd
from gpusvd import testing
from gpusvd._core import tunables
from gpusvd._core.backend import to_host

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import common  # noqa: E402

SCHEMA = "gpusvd-bench-two-stage-values/1"


def _placement(device):
    """(array namespace, synchronize) for ``device``."""
    if device == "cpu":
        return np, lambda: None
    import cupy
    return cupy, cupy.cuda.Device().synchronize


def _variants(a, bandwidths, device, synchronize):
    def call(reduction, b=None):
        def run():
            with tunables.override(**({} if b is None else {"two_stage_bandwidth": b})):
                s = gpusvd.svdvals(a, method="gr", reduction=reduction, device=device)
            synchronize()
            return s
        return run
    return {"one-stage": call("one-stage"),
            **{f"two-stage b={b}": call("two-stage", b) for b in bandwidths}}


def _measure(n, dtype, bandwidths, rounds, device, rng):
    xp, synchronize = _placement(device)
    a = rng.standard_normal((n, n)).astype(dtype)
    variants = _variants(xp.asarray(a), bandwidths, device, synchronize)
    # LAPACK's (cuSOLVER's on the GPU) float64 values
    ref = to_host(xp.linalg.svd(xp.asarray(a, np.float64), compute_uv=False))
    times = {name: [] for name in variants}
    errors = {}
    for r in range(rounds + 1):
        for name, run in variants.items():
            t0 = time.perf_counter()
            s = run()
            dt = time.perf_counter() - t0
            if r:
                times[name].append(dt)
            else:
                errors[name] = testing.sv_error(to_host(s), ref.astype(dtype)) / n
    base = np.array(times["one-stage"])
    return [{"n": n, "dtype": np.dtype(dtype).name, "variant": name,
             "median_s": float(np.median(t)), "times_s": t,
             "ratio_to_one_stage": float(np.median(np.array(t) / base)),
             "error_n_eps": float(errors[name])} for name, t in times.items()]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", choices=["cpu", "gpu"], default="cpu")
    parser.add_argument("--sizes", type=int, nargs="+", default=[200, 500, 1000, 2000])
    parser.add_argument("--dtype", choices=["float64", "float32"], default="float64")
    parser.add_argument("--bandwidths", type=int, nargs="+", default=[16, 32, 64])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    records = []
    print(f"{'n':>6} {'variant':>16} {'median s':>10} {'ratio':>7} {'error n·ε':>10}")
    for n in args.sizes:
        for rec in _measure(n, args.dtype, args.bandwidths, args.rounds, args.device, rng):
            records.append(rec)
            print(f"{n:>6} {rec['variant']:>16} {rec['median_s']:>10.4f} "
                  f"{rec['ratio_to_one_stage']:>7.2f} {rec['error_n_eps']:>10.2f}", flush=True)
    if args.out:
        common.write_json(args.out, {
            "schema": SCHEMA, "device": args.device, "machine": common.device_info(),
            "load_average": os.getloadavg(),
            "threads": {k: os.environ.get(k) for k in ("NUMBA_NUM_THREADS",
                                                        "OPENBLAS_NUM_THREADS")},
            "records": records})


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Singular values by the two-stage reduction on the GPU, phase by phase, against cuSOLVER.

Run on the device from the repository root::

    PYTHONPATH=src python bench/bench_two_stage.py --out bench/results/two_stage_h100.json

Per n (``--sizes``), dtype (``--dtypes``) and bandwidth b (``--bandwidths``), on one
Gaussian n×n matrix (float32, and the same numbers in float64): median seconds of

* ``stage1``: dense → band on the GPU (``band.reduce_to_band`` on CuPy, then ``band_of``),
  against its floor, 8n³/3 flops at the GEMM ceiling of DESIGN.md;
* ``stage2_gpu``: band → bidiagonal on the GPU (``bulge.band_to_bidiagonal`` on CuPy: the
  kernel of ``kernels/bulge.cu``, with the packing into 3b−1 diagonals and the sign fix);
* ``stage2_host``: the same on the host (the Numba loop, one call, up to ``--host-max-n``);
* ``dqds``: the bidiagonal's values on the host (golub_reinsch.dqds);
* ``two_stage``: ``condensed.driver.two_stage_singular_values`` end to end;
* ``gesvd``: ``cupy.linalg.svd(a, compute_uv=False)`` (cuSOLVER gesvd, values only),

and the error of the two-stage values against float64 gesvd of the same matrix, in units
of ε of the dtype times σ_max (bench/common.py), with the distance of stage 2's GPU
bidiagonal from the host's in units of n·ε·max|band|. A phase table is printed and the
records written as JSON (``--out``).
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

_HERE = os.path.dirname(os.path.abspath(__file__))
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)

import common  # noqa: E402

SCHEMA = "gpusvd-bench-two-stage/1"
# GEMM ceilings measured on the H100 (DESIGN.md, "Ceilings"), flop/s.
GEMM_CEILING = {"float64": 60e12, "float32": 51e12}
PHASES = ("stage1", "stage2_gpu", "stage2_host", "dqds", "two_stage", "gesvd")


def _host_seconds(fn, repeat):
    """Median wall time of ``fn()`` on the host (no device work), and the last result."""
    times, out = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - start)
    return float(np.median(times)), times, out


def _case(a, b, s_ref, gesvd_seconds, args):
    import cupy

    from gpusvd.condensed import bulge
    from gpusvd.condensed.band import band_of, reduce_to_band
    from gpusvd.condensed.driver import two_stage_singular_values
    from gpusvd.golub_reinsch.dqds import bidiagonal_singular_values

    n = a.shape[0]
    dtype = np.dtype(a.dtype)
    eps = float(np.finfo(dtype).eps)
    timing = dict(warmup=1, repeat=args.repeat, max_seconds=args.max_seconds)
    rec = {"n": n, "dtype": dtype.name, "bandwidth": b, "seconds": {}, "times": {}}
    fortran = cupy.asfortranarray(a)
    t = common.time_gpu(lambda: band_of(reduce_to_band(fortran, bandwidth=b)), **timing)
    band = t.result
    rec["seconds"]["stage1"], rec["times"]["stage1"] = t.median, t.times
    rec["stage1_floor_s"] = 8 * n ** 3 / 3 / GEMM_CEILING[dtype.name]
    t = common.time_gpu(lambda: bulge.band_to_bidiagonal(band), **timing)
    bd = t.result
    rec["seconds"]["stage2_gpu"], rec["times"]["stage2_gpu"] = t.median, t.times
    rec["stage2_flops"] = 8.0 * n * n * b   # bulge.py's count
    d, e = bd.d.get().astype(np.float64), bd.e.get().astype(np.float64)
    if n <= args.host_max_n:
        host_band = band.get()
        bulge.band_to_bidiagonal(host_band[:64])   # Numba's compilation or cache load
        seconds, times, host = _host_seconds(lambda: bulge.band_to_bidiagonal(host_band), 1)
        rec["seconds"]["stage2_host"], rec["times"]["stage2_host"] = seconds, times
        scale = float(np.abs(host_band).max()) * n * eps
        rec["gpu_vs_host_n_eps"] = float(max(np.abs(host.d - bd.d.get()).max(),
                                             np.abs(host.e - bd.e.get()).max()) / scale)
    bidiagonal_singular_values(d[:64], e[:63])
    seconds, times, _ = _host_seconds(lambda: bidiagonal_singular_values(d, e), args.repeat)
    rec["seconds"]["dqds"], rec["times"]["dqds"] = seconds, times
    t = common.time_gpu(lambda: two_stage_singular_values(a, bandwidth=b), **timing)
    rec["seconds"]["two_stage"], rec["times"]["two_stage"] = t.median, t.times
    rec["seconds"]["gesvd"] = gesvd_seconds
    rec["speedup_vs_gesvd"] = gesvd_seconds / t.median
    rec.update(common.values_accuracy(t.result, s_ref, dtype))
    return rec


def _print_header():
    cells = "".join(f"{p:>12s}" for p in PHASES)
    print(f"{'dtype':8s}{'n':>7s}{'b':>5s}{cells}{'stage1 floor':>14s}{'x gesvd':>9s}"
          f"{'sv err ε':>10s}{'gpu-host nε':>13s}", flush=True)


def _print_row(rec):
    cells = "".join(f"{rec['seconds'][p]:12.4f}" if p in rec["seconds"] else f"{'-':>12s}"
                    for p in PHASES)
    host = rec.get("gpu_vs_host_n_eps")
    print(f"{rec['dtype']:8s}{rec['n']:7d}{rec['bandwidth']:5d}{cells}"
          f"{rec['stage1_floor_s']:14.4f}{rec['speedup_vs_gesvd']:9.2f}"
          f"{rec['sv_error']:10.1f}{'-' if host is None else f'{host:.2g}':>13s}", flush=True)


def run(args):
    import cupy

    records = []
    _print_header()
    for n in args.sizes:
        a32 = cupy.random.default_rng(args.seed).standard_normal((n, n), dtype=np.float32)
        a64 = a32.astype(np.float64)    # the same numbers: one float64 reference for both
        t = common.time_gpu(lambda: cupy.linalg.svd(a64, compute_uv=False), warmup=1,
                            repeat=args.repeat, max_seconds=args.max_seconds)
        gesvd = {"float64": t.median}
        s_ref = t.result
        for dtype in args.dtypes:
            a = a64 if dtype == "float64" else a32
            if dtype == "float32":
                gesvd["float32"] = common.time_gpu(
                    lambda: cupy.linalg.svd(a32, compute_uv=False), warmup=1,
                    repeat=args.repeat, max_seconds=args.max_seconds).median
            for b in args.bandwidths:
                try:
                    rec = _case(a, b, s_ref, gesvd[dtype], args)
                except Exception as exc:   # record and go on: one failure loses one row
                    rec = {"n": n, "dtype": dtype, "bandwidth": b,
                           "error": common.short_error(exc)}
                    print(f"{dtype:8s}{n:7d}{b:5d}  failed: {rec['error']}", flush=True)
                else:
                    _print_row(rec)
                records.append(rec)
                common.free_gpu_memory()
        del a32, a64, s_ref
        common.free_gpu_memory()
    return records


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", type=int, nargs="+", default=[4096, 8192, 16384])
    p.add_argument("--dtypes", nargs="+", default=["float64", "float32"],
                   choices=["float64", "float32"])
    p.add_argument("--bandwidths", type=int, nargs="+", default=[16, 32, 64])
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--max-seconds", type=float, default=20.0,
                   help="stop repeating a phase once this much time is spent on it")
    p.add_argument("--host-max-n", type=int, default=8192,
                   help="largest n whose stage 2 is also timed on the host (one call)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default=None)
    args = p.parse_args(argv)
    records = run(args)
    if args.out:
        common.write_json(args.out, {"schema": SCHEMA, "device": common.device_info(),
                                     "args": vars(args), "cases": records})


if __name__ == "__main__":
    main()

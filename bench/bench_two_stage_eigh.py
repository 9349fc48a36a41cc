#!/usr/bin/env python3
"""Hermitian eigenvalues by the two-stage reduction against cuSOLVER's syevd (issue 18).

The eigensolver that the polar method's ``eigh`` of H is to become: dense → Hermitian band
(condensed/sym_band.py, GEMMs on the device), band → real tridiagonal (sym_bulge.py, the
Numba chase on the host, the band crossing), tridiagonal eigenvalues (LAPACK on the host).
For each n and dtype: the whole of ``condensed.driver.two_stage_eigenvalues`` and its three
phases (the driver's profile.phase marks, the device synchronized around each), against
``cupy.linalg.eigvalsh`` (cuSOLVER syevd, values only) and, for scale, ``eigh`` with
vectors; the values' error in
units of n·ε·‖A‖ against float64 LAPACK on the host (n ≤ ``--ref-max``). On the GPU::

    PYTHONPATH=src python bench/bench_two_stage_eigh.py --sizes 4096 8192 \\
        --dtypes float64 float32 --out bench/results/two_stage_eigh_h100.json

``--device cpu`` runs the same on NumPy (against ``numpy.linalg.eigvalsh``).
"""

from __future__ import annotations

import argparse
import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)

import common  # noqa: E402
import numpy as np  # noqa: E402
import scipy.linalg  # noqa: E402

from gpusvd._core import profile  # noqa: E402
from gpusvd._core.backend import to_host  # noqa: E402
from gpusvd.condensed import driver  # noqa: E402


def _phases(a, b):
    """Seconds of stage 1, stage 2 (with the band's copy to the host) and the solver: the
    driver's own phases (gpusvd._core.profile), the device synchronized around each."""
    with profile.recording() as phases:
        driver.two_stage_eigenvalues(a, bandwidth=b)
    return phases


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", choices=("gpu", "cpu"), default="gpu")
    parser.add_argument("--sizes", type=int, nargs="+", default=[2048, 4096, 8192])
    parser.add_argument("--dtypes", nargs="+", default=["float64", "float32"])
    parser.add_argument("--bandwidths", type=int, nargs="+", default=[32, 64])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--ref-max", type=int, default=8192,
                        help="largest n whose values are checked against LAPACK on the host")
    parser.add_argument("--out")
    args = parser.parse_args()
    if args.device == "gpu":
        import cupy as xp
        sync = common.synchronize
        peers = {"syevd_values": xp.linalg.eigvalsh, "syevd_vectors": xp.linalg.eigh}
    else:
        xp, sync = np, (lambda: None)
        peers = {"lapack_values": np.linalg.eigvalsh, "lapack_vectors": np.linalg.eigh}
    records = []
    for dtype in args.dtypes:
        for n in args.sizes:
            g = np.random.default_rng(n).standard_normal((n, n)).astype(dtype)
            a_host = (g + g.T) / 2
            a = xp.asarray(a_host)
            ref = scipy.linalg.eigvalsh(a_host.astype(np.float64)) if n <= args.ref_max else None
            unit = n * np.finfo(dtype).eps * (np.abs(ref).max() if ref is not None else 1)
            row = {"n": n, "dtype": dtype, "device": args.device}
            for name, fn in peers.items():
                t = common.time_gpu(lambda: fn(a), repeat=args.repeat, sync=sync)
                row[name] = t.median
            for b in args.bandwidths:
                t = common.time_gpu(lambda: driver.two_stage_eigenvalues(a, bandwidth=b),
                                      repeat=args.repeat, sync=sync)
                row[f"two_stage_b{b}"] = t.median
                row[f"phases_b{b}"] = _phases(a, b)
                if ref is not None:
                    w = to_host(t.result).astype(np.float64)
                    row[f"error_b{b}_n_eps"] = float(np.abs(w - ref).max() / unit)
            records.append(row)
            print(" ".join(f"{k} {v:.3f}" if isinstance(v, float) else f"{k} {v}"
                           for k, v in row.items() if not k.startswith("phases")), flush=True)
            for b in args.bandwidths:
                print(f"   b={b} phases: " + ", ".join(
                    f"{k} {v:.3f}" for k, v in row[f"phases_b{b}"].items()), flush=True)
            if args.out:
                common.write_json(args.out, {"schema": "gpusvd-bench-two-stage-eigh/1",
                                             "machine": common.device_info(),
                                             "threads": {k: os.environ.get(k) for k in (
                                                 "NUMBA_NUM_THREADS", "OPENBLAS_NUM_THREADS")},
                                             "records": records})


if __name__ == "__main__":
    main()

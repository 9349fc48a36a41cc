#!/usr/bin/env python3
"""Hermitian eigenvalues, and with ``--vectors`` eigenvectors, by the two-stage reduction
against cuSOLVER's syevd (issue 18).

The eigensolver that the polar method's ``eigh`` of H is to become: dense → Hermitian band
(condensed/sym_band.py, GEMMs on the device), band → real tridiagonal (sym_bulge.py, the
CUDA chase for a real band), then the tridiagonal's values (LAPACK on the host) or, with
``--vectors``, its values and vectors (tridiagonal_dc.py, GEMMs on the device) and the two
back-transformations (chase_back.py, sym_band.apply_q). For each n and dtype: the whole of
``condensed.driver.two_stage_eigenvalues`` (``two_stage_eigh`` with ``--vectors``) and its
phases (the driver's profile.phase marks, the device synchronized around each), against
``cupy.linalg.eigvalsh`` and ``eigh`` (cuSOLVER syevd; with ``--vectors`` ``eigh`` only).
Accuracy in gpusvd.testing's units: the values' error in units of n·ε·‖A‖ against float64
LAPACK on the host (n ≤ ``--ref-max``); with vectors, for ours and syevd alike, the
residual ‖A − V·W·Vᴴ‖_F/(‖A‖_F·n·ε) and ‖VᴴV − I‖_F/(n·ε). On the GPU::

    PYTHONPATH=src python bench/bench_two_stage_eigh.py --sizes 4096 8192 \\
        --dtypes float64 float32 --out bench/results/two_stage_eigh_h100.json
    PYTHONPATH=src python bench/bench_two_stage_eigh.py --vectors --sizes 4096 8192 \\
        --dtypes float64 --bandwidths 32 --out bench/results/two_stage_eigh_vectors_h100.json

``--device cpu`` runs the same on NumPy (against ``numpy.linalg.eigvalsh`` and ``eigh``).
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

from gpusvd import testing  # noqa: E402
from gpusvd._core import profile  # noqa: E402
from gpusvd._core.backend import to_host  # noqa: E402
from gpusvd.condensed import driver  # noqa: E402


def _phases(solver, a, b):
    """Seconds of each phase of one call of the driver ``solver``: its own phases
    (gpusvd._core.profile), the device synchronized around each."""
    with profile.recording() as phases:
        solver(a, bandwidth=b)
    return phases


def _accuracy(a, result, ref, unit):
    """The values' error in n·ε·‖A‖ and, for (w, V), the residual and orthogonality in
    n·ε (gpusvd.testing's units, in the result's precision)."""
    w, v = result if isinstance(result, tuple) else (result, None)
    out = {}
    if ref is not None:
        out["error_n_eps"] = float(np.abs(to_host(w).astype(np.float64) - ref).max() / unit)
    if v is not None:
        out["residual_n_eps"] = testing.svd_residual(a, v, w, v.conj().T)
        out["orthogonality_n_eps"] = testing.orthogonality(v)
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    parser.add_argument("--device", choices=("gpu", "cpu"), default="gpu")
    parser.add_argument("--vectors", action="store_true",
                        help="eigenvectors too: two_stage_eigh against syevd's eigh")
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
    if args.vectors:
        peers = {name: fn for name, fn in peers.items() if name.endswith("vectors")}
    solver = driver.two_stage_eigh if args.vectors else driver.two_stage_eigenvalues
    records = []
    for dtype in args.dtypes:
        for n in args.sizes:
            rng = np.random.default_rng(n)
            g = rng.standard_normal((n, n))
            if np.dtype(dtype).kind == "c":
                g = g + 1j * rng.standard_normal((n, n))
            a_host = ((g + g.conj().T) / 2).astype(dtype)
            a = xp.asarray(a_host)
            ref = scipy.linalg.eigvalsh(a_host) if n <= args.ref_max else None
            unit = n * np.finfo(dtype).eps * (np.abs(ref).max() if ref is not None else 1)
            row = {"n": n, "dtype": dtype, "device": args.device, "vectors": args.vectors}
            for name, fn in peers.items():
                t = common.time_gpu(lambda: fn(a), repeat=args.repeat, sync=sync)
                row[name] = t.median
                if args.vectors:
                    row.update({f"{name}_{k}": v for k, v in
                                _accuracy(a, t.result, ref, unit).items()})
            for b in args.bandwidths:
                t = common.time_gpu(lambda: solver(a, bandwidth=b), repeat=args.repeat,
                                    sync=sync)
                row[f"two_stage_b{b}"] = t.median
                row[f"phases_b{b}"] = _phases(solver, a, b)
                row.update({f"b{b}_{k}": v for k, v in _accuracy(a, t.result, ref, unit).items()})
            records.append(row)
            print(" ".join(f"{k} {v:.3f}" if isinstance(v, float) else f"{k} {v}"
                           for k, v in row.items() if not k.startswith("phases")), flush=True)
            for b in args.bandwidths:
                print(f"   b={b} phases: " + ", ".join(
                    f"{k} {v:.3f}" for k, v in row[f"phases_b{b}"].items()), flush=True)
            if args.out:
                common.write_json(args.out, {"schema": "gpusvd-bench-two-stage-eigh/2",
                                             "machine": common.device_info(),
                                             "threads": {k: os.environ.get(k) for k in (
                                                 "NUMBA_NUM_THREADS", "OPENBLAS_NUM_THREADS")},
                                             "records": records})


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""The exact SVD (and values only, and eigh) of one square matrix on the GPU: gpusvd's
paths against the GPU's peers, phase by phase, each phase against its floor.

Run on the device from the repository root (each n and dtype is one process-level loop;
``--max-seconds`` skips a variant at the next n once one call of it took longer)::

    PYTHONPATH=src python bench/exact.py --sizes 1024 2048 4096 8192 16384 \\
        --modes full values --out bench/results/exact_h100.json

Per n, dtype and mode, on one Gaussian n×n matrix (complex: real and imaginary parts
Gaussian), median seconds of plain calls and the phases of one more call under the phase
recorder (gpusvd's variants); each variant is warmed up by one call at each n (CuPy
compiles some of its elementwise and reduction kernels anew at a new size: gr's first call
at 8192² after one at 4096² took 2.97 s, the next ones 1.15, H200; ``bench/first_call.py``
asks what a first call costs) (``--variants`` picks some by name):

* ``values``: ``svdvals`` with ``method="auto"`` (``auto``), ``"gr"`` (``gr``: the
  two-stage reduction from n = 4096, phases ``values_stage1``, ``values_stage2``,
  ``values_solver``) and ``"polar"``; cuSOLVER gesvd (``cupy.linalg.svd(compute_uv=
  False)``), JAX's POLAR (cuSOLVER gesvdp), torch's gesvdj (``torch_gesvdj``:
  ``svdvals(driver="gesvdj")``);
* ``full``: economy ``svd`` with ``method="auto"``, ``"gr"`` (phases ``svd_stage1``,
  ``svd_stage2``, ``svd_solver``, ``svd_back_transform`` where two-stage) and ``"polar"``
  (phases ``qdwh_estimates``, ``qdwh_qr``, ``qdwh_cholesky``, ``polar_h``, ``eigh``,
  ``polar_u``); gesvd, gesvdp, gesvdj;
* ``eigh``: of (A + Aᴴ)/2, cuSOLVER syevd alone (``cupy.linalg.eigvalsh``, ``eigh``), the
  polar method's eigensolver.

Floors, from docs/design.md's "Ceilings and targets": stage 1 8n³/3 flops (LAPACK's
count), at the GEMM ceiling; the back-transformations 8n³ flops (stage 2's blocked reflectors ≈ 2·2n³, stage
1's 2·2n³) at the GEMM ceiling; the polar method's H = U_pᴴA and U = U_p·V 2n³ each at
the GEMM ceiling; stage 2, the solvers, QDWH's iterations (their count depends on the
matrix) and syevd are reported without a floor. Accuracy of each result by
gpusvd._bench.accuracy (residual, orthogonality, value error in units of n·ε) against
float64 cuSOLVER values of the same matrix.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np

_HERE = os.path.dirname(os.path.abspath(__file__))
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)

import common  # noqa: E402

SCHEMA = "gpusvd-bench-two-stage-paths/1"
# flop/s (docs/design.md, "Ceilings and targets")
GEMM_CEILING = {"float64": 60e12, "float32": 51e12}
# Each phase's floor in flops as a function of n (None: a latency-bound chain).
FLOORS = {"values_stage1": lambda n: 8 * n ** 3 / 3, "svd_stage1": lambda n: 8 * n ** 3 / 3,
          "svd_back_transform": lambda n: 8 * n ** 3,
          "polar_h": lambda n: 2 * n ** 3, "polar_u": lambda n: 2 * n ** 3}


# The peers' variants (no phases to record).
PEERS = ("cupy_gesvd", "jax_gesvdp", "torch_gesvdj", "syevd_values", "syevd")
# Not recorded either: ``auto`` takes the path of ``polar`` (full) or ``gr`` (values).
UNRECORDED = PEERS + ("auto",)


def _variants(mode):
    import cupy

    import gpusvd

    if mode == "values":
        return {"auto": lambda a: gpusvd.svdvals(a),
                "gr": lambda a: gpusvd.svdvals(a, method="gr"),
                "polar": lambda a: gpusvd.svdvals(a, method="polar"),
                "cupy_gesvd": lambda a: cupy.linalg.svd(a, compute_uv=False),
                "jax_gesvdp": common.jax_polar_svd(False),
                "torch_gesvdj": common.torch_gesvdj_svd(False)}
    if mode == "full":
        def svd(**kw):
            return lambda a: gpusvd.svd(a, full_matrices=False, **kw)
        return {"auto": svd(), "gr": svd(method="gr"), "polar": svd(method="polar"),
                "cupy_gesvd": lambda a: cupy.linalg.svd(a, full_matrices=False),
                "jax_gesvdp": common.jax_polar_svd(True),
                "torch_gesvdj": common.torch_gesvdj_svd(True)}
    return {"syevd_values": cupy.linalg.eigvalsh, "syevd": cupy.linalg.eigh}


def _accuracy(mode, a, out, ref, dtype):
    """gpusvd._bench.accuracy's metrics (units of n·ε) of one result against the float64
    reference values ``ref`` (eigenvalues ascending for eigh; its "sorted" flag is then
    about descending order and means nothing)."""
    from gpusvd._bench import accuracy

    if not isinstance(out, tuple):
        return accuracy.values_accuracy(out, ref, dtype)
    if mode == "eigh":
        w, v = out
        return accuracy.svd_accuracy(a, v, w, v.conj().T, ref, dtype)
    return accuracy.svd_accuracy(a, *out, ref, dtype)


def _reference(mode, x):
    """Float64 values of ``x``: cuSOLVER's gesvd (descending) or syevd (ascending)."""
    import cupy

    x64 = x.astype(np.complex128 if x.dtype.kind == "c" else np.float64)
    if mode == "eigh":
        return cupy.linalg.eigvalsh(x64)
    return cupy.linalg.svd(x64, compute_uv=False)


def _time(fn, a, repeat, phases, record_max_seconds=float("inf")):
    """(median seconds, last result, phases) of ``fn(a)``: a warm-up call first; the timed
    calls run without the phase recorder (it synchronizes the device around every phase,
    which would serialize the host's and the device's work of the divide and conquer),
    then, with ``phases`` and a median of at most ``record_max_seconds``, one more call
    with it."""
    from gpusvd._core import profile

    fn(a)
    common.synchronize()
    times, out = [], None
    for _ in range(repeat):
        common.synchronize()
        t0 = time.perf_counter()
        out = fn(a)
        common.synchronize()
        times.append(time.perf_counter() - t0)
    recorded = {}
    if phases and np.median(times) <= record_max_seconds:
        del out
        with profile.recording() as recorded:
            out = fn(a)
            common.synchronize()
    return float(np.median(times)), out, dict(recorded)


def run(args):
    import cupy

    rng = np.random.default_rng(args.seed)
    records, slow = [], set()
    for n in args.sizes:
        for dtype in args.dtypes:
            a = rng.standard_normal((n, n))
            if np.dtype(dtype).kind == "c":
                a = a + 1j * rng.standard_normal((n, n))
            a = cupy.asarray(a.astype(dtype))
            refs = {}  # the values' and the full SVD's reference is one gesvd
            for mode in args.modes:
                x = (a + a.conj().T) / 2 if mode == "eigh" else a
                kind = "eigh" if mode == "eigh" else "svd"
                if kind not in refs:
                    refs[kind] = _reference(mode, x)
                ref = refs[kind]
                for name, fn in _variants(mode).items():
                    if (mode, dtype, name) in slow or (args.variants
                                                      and name not in args.variants):
                        continue
                    # Each variant starts from CuPy's pool emptied: JAX's gesvdp at 16384
                    # ran out of memory beside the blocks the variants before it had left.
                    cupy.get_default_memory_pool().free_all_blocks()
                    seconds, out, phases = _time(fn, x, args.repeat, name not in UNRECORDED,
                                                 args.record_max_seconds)
                    if seconds > args.max_seconds:
                        slow.add((mode, dtype, name))
                    # Floors of real dtypes only (a complex flop count is 4× the real).
                    floors = {k: FLOORS[k](n) / GEMM_CEILING[dtype] for k in phases
                              if k in FLOORS and dtype in GEMM_CEILING}
                    rec = {"n": n, "dtype": dtype, "mode": mode, "variant": name,
                           "median_s": seconds, "phases": phases, "floors_s": floors,
                           **_accuracy(mode, x, out, ref, dtype)}
                    records.append(rec)
                    if args.out:  # after every record: a run cut short keeps what it did
                        _write(args.out, records)
                    print(f"{n:>6} {dtype:>8} {mode:>6} {name:>16} {seconds:9.3f} s  "
                          + "  ".join(f"{k}={v:.3f}"
                                      + (f"(floor {floors[k]:.3f})" if k in floors else "")
                                      for k, v in sorted(phases.items())), flush=True)
                    del out
            del a
    return records


def load(paths):
    """{(dtype, mode, variant): {n: seconds}} of the files' records."""
    series = {}
    for path in paths:
        with open(path) as f:
            for rec in json.load(f)["records"]:
                key = (rec["dtype"], rec["mode"], rec["variant"])
                series.setdefault(key, {})[rec["n"]] = rec["median_s"]
    return series


def plot(series, out):
    """One column per mode, one row per dtype: median seconds against n, log-log, one line
    per variant; gpusvd's auto drawn thick. Several files are merged."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    dtypes = sorted({k[0] for k in series}, reverse=True)
    modes = [m for m in ("values", "full", "eigh") if any(k[1] == m for k in series)]
    fig, axes = plt.subplots(len(dtypes), len(modes), figsize=(5 * len(modes),
                                                               4 * len(dtypes)),
                             squeeze=False)
    for row, dtype in enumerate(dtypes):
        for col, mode in enumerate(modes):
            ax = axes[row][col]
            if not any(k[:2] == (dtype, mode) for k in series):
                ax.axis("off")  # not measured (eigh of complex input)
                continue
            for (dt, md, variant), points in sorted(series.items()):
                if (dt, md) != (dtype, mode):
                    continue
                ns = sorted(points)
                ax.loglog(ns, [points[n] for n in ns], marker="o", label=variant,
                          linewidth=3 if variant == "auto" else 1.2)
            ax.set_title(f"{mode}, {dtype}")
            ax.set_xlabel("n (n×n Gaussian)")
            ax.set_ylabel("median seconds")
            ax.grid(True, which="both", alpha=0.3)
            ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out, dpi=100)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", type=int, nargs="+", default=[2048, 4096, 8192, 16384])
    p.add_argument("--dtypes", nargs="+", default=["float64", "float32"])
    p.add_argument("--modes", nargs="+", default=["values", "full", "eigh"],
                   choices=["values", "full", "eigh"])
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--variants", nargs="+", help="only these variants (by name)")
    p.add_argument("--max-seconds", type=float, default=15.0,
                   help="skip a variant at larger n once one call of it took longer")
    p.add_argument("--record-max-seconds", type=float, default=float("inf"),
                   help="record no phases where the plain calls' median took longer")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out")
    p.add_argument("--plot", metavar="PNG",
                   help="plot the JSON files of --inputs into PNG and stop (no GPU needed)")
    p.add_argument("--inputs", nargs="+", default=[], help="JSON files for --plot")
    args = p.parse_args(argv)
    if args.plot:
        plot(load(args.inputs or [args.out]), args.plot)
        return
    records = run(args)
    if args.out:
        _write(args.out, records)


def _write(path, records):
    common.write_json(path, {"schema": SCHEMA, "machine": common.device_info(),
                             "records": records})


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""The GPU bulge chasing kernel (condensed/kernels/bulge.cu) run many times on one band.

Run on the device from the repository root::

    PYTHONPATH=src python bench/stress_bulge.py --out bench/results/stress_bulge_h100.json

The kernel is deterministic by design (every entry gets the same operations in the same
order whatever the schedule: the kernel's comment), so every run of a band must give the
same bits; a run that differs, or a NaN, is a race or an uninitialised read. Per case
(n, b, dtype), one random band (``gpusvd.testing.random_matrix``, seed n·b as in
tests/condensed/test_bulge_cuda.py) is copied to the device once and chased up to
``--repeats`` times within ``--seconds``, through ``bulge.band_to_bidiagonal`` with the
kernel switched on (tunable ``chase_on_gpu``). Reported per case:

* ``runs``; ``nan_runs``: runs with a non-finite d or e; ``differing_runs``: runs whose
  d, e or phases are not bitwise the first run's; ``distinct``: distinct results;
* ``sv_error``: the largest, over the distinct finite results, of max|s_gpu − s_numba|
  in units of max(s_numba)·ε of the dtype (``testing.sv_error``; ``sv_max_rel`` the same
  without ε), s by dqds on the host, s_numba from the Numba twin's bidiagonal;
* ``numba_nonfinite``: the Numba twin's non-finite d, e entries (0 since the dlarfg
  rescaling of bulge._reflector; 271 of 5998 at 3000/16 float64 before it);
* ``ms_per_run``: median milliseconds of one chase, packing and sign fix included.

``--kernel-source FILE`` chases with another version of bulge.cu, compiled by NVRTC (the
launch arguments must be this version's), to compare before and after a change::

    git show 243b76f:src/gpusvd/condensed/kernels/bulge.cu > /tmp/bulge_before.cu
    PYTHONPATH=src python bench/stress_bulge.py --kernel-source /tmp/bulge_before.cu \\
        --out bench/results/stress_bulge_before_h100.json

``--kernel-env KEY=VALUE`` (repeatable) is set before gpusvd loads a kernel, e.g.
``GPUSVD_KERNELS=nvrtc`` to compile the package's source instead of the shipped fatbin.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
import time

import numpy as np

_HERE = os.path.dirname(os.path.abspath(__file__))
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)

SCHEMA = "gpusvd-bench-stress-bulge/1"
# The cases of the race report (NaN once at 3000/16 float64 on the H100), then wider b,
# a power of two, float32 and a small one.
CASES = ((3000, 16, "float64"), (3000, 32, "float64"), (4096, 64, "float64"),
         (2000, 16, "float32"), (1000, 8, "float64"))
MAX_SV_CHECKS = 4  # distinct results whose values are computed (dqds, host) per case


def _case(text):
    n, b, dtype = text.split(":")
    return int(n), int(b), np.dtype(dtype).name


def _random_cases(count, seed):
    rng = np.random.default_rng(seed)
    return [(int(rng.integers(300, 4097)), int(rng.choice([2, 3, 5, 8, 12, 16, 24, 32, 48, 64])),
             str(rng.choice(["float32", "float64"]))) for _ in range(count)]


def _use_kernel_source(path):
    """Route the bulge kernel's look-up to ``path``, compiled by NVRTC."""
    import cupy

    from gpusvd._core import kernels
    from gpusvd.condensed import bulge_cuda

    entry = kernels.REGISTRY[bulge_cuda._KERNEL_FILE]
    module = cupy.RawModule(code=open(path).read(), options=kernels.COMPILE_OPTIONS,
                            name_expressions=entry.names)
    shipped = kernels.get_kernel

    def get_kernel(relpath, name_expression):
        if relpath == bulge_cuda._KERNEL_FILE:
            return module.get_function(name_expression)
        return shipped(relpath, name_expression)

    kernels.get_kernel = get_kernel


def _values(d, e):
    from gpusvd.golub_reinsch.dqds import bidiagonal_singular_values

    return bidiagonal_singular_values(np.asarray(d, np.float64), np.asarray(e, np.float64))


def _stress(n, b, dtype, args):
    import cupy

    from gpusvd import testing
    from gpusvd.condensed import bulge

    band = testing.random_matrix(n, b + 1, dtype=np.dtype(dtype), seed=n * b)
    host = bulge.band_to_bidiagonal(band)
    numba_nonfinite = int((~np.isfinite(host.d)).sum() + (~np.isfinite(host.e)).sum())
    s_numba = _values(host.d, host.e) if numba_nonfinite == 0 else None
    device_band = cupy.asarray(band)
    first, distinct, times = None, {}, []
    runs = nan_runs = differing_runs = 0
    sv_error = sv_max_rel = 0.0
    start = time.perf_counter()
    while runs < args.repeats and (runs == 0 or time.perf_counter() - start < args.seconds):
        cupy.cuda.Device().synchronize()
        t0 = time.perf_counter()
        bd = bulge.band_to_bidiagonal(device_band, record=args.record)
        d, e = bd.d.get(), bd.e.get()
        times.append(time.perf_counter() - t0)
        fields = [d, e, bd.phase_left.get(), bd.phase_right.get()]
        if args.record:
            fields += [x.get() for x in bd.reflectors[:4]]
        digest = hashlib.sha256(b"".join(np.ascontiguousarray(x).tobytes()
                                         for x in fields)).hexdigest()
        runs += 1
        finite = bool(np.isfinite(d).all() and np.isfinite(e).all())
        nan_runs += not finite
        first = first or digest
        differing_runs += digest != first
        if digest not in distinct:
            distinct[digest] = finite
            if finite and s_numba is not None and len(distinct) <= MAX_SV_CHECKS:
                s_gpu = _values(d, e)
                sv_error = max(sv_error, testing.sv_error(s_gpu.astype(dtype), s_numba))
                sv_max_rel = max(sv_max_rel,
                                 float(np.abs(s_gpu - s_numba).max() / s_numba.max()))
    return {"n": n, "b": b, "dtype": dtype, "runs": runs, "nan_runs": nan_runs,
            "differing_runs": differing_runs, "distinct": len(distinct),
            "sv_error": sv_error if s_numba is not None else None,
            "sv_max_rel": sv_max_rel if s_numba is not None else None,
            "numba_nonfinite": numba_nonfinite,
            "ms_per_run": 1e3 * float(np.median(times)), "ms_runs": [1e3 * t for t in times]}


def _table(records):
    head = (f"{'n':>5} {'b':>3} {'dtype':>7} {'runs':>5} {'nan':>4} {'differ':>6} "
            f"{'distinct':>8} {'sv_err(eps)':>11} {'numba_nf':>8} {'ms/run':>8}")
    lines = [head, "-" * len(head)]
    for r in records:
        sv = "-" if r["sv_error"] is None else f"{r['sv_error']:.2f}"
        lines.append(f"{r['n']:>5} {r['b']:>3} {r['dtype']:>7} {r['runs']:>5} "
                     f"{r['nan_runs']:>4} {r['differing_runs']:>6} {r['distinct']:>8} "
                     f"{sv:>11} {r['numba_nonfinite']:>8} {r['ms_per_run']:>8.2f}")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", nargs="*", type=_case, default=list(CASES),
                        metavar="N:B:DTYPE", help="the bands (default: the race report's)")
    parser.add_argument("--random", type=int, default=3, help="random cases added")
    parser.add_argument("--seed", type=int, default=2026, help="of the random cases")
    parser.add_argument("--repeats", type=int, default=200, help="chases per case, at most")
    parser.add_argument("--seconds", type=float, default=30.0,
                        help="per case: no new chase starts after this")
    parser.add_argument("--record", action="store_true",
                        help="record the reflectors too, and compare them")
    parser.add_argument("--kernel-source", help="chase with this bulge.cu (NVRTC)")
    parser.add_argument("--kernel-env", action="append", default=[], metavar="KEY=VALUE",
                        help="environment set before the kernel is loaded")
    parser.add_argument("--out", help="JSON file written at the end")
    args = parser.parse_args()
    for item in args.kernel_env:
        key, _, value = item.partition("=")
        os.environ[key] = value

    import common  # noqa: E402  (after --kernel-env: it imports gpusvd)
    from gpusvd._core import tunables

    if args.kernel_source:
        _use_kernel_source(args.kernel_source)
    cases = list(args.cases) + _random_cases(args.random, args.seed)
    records = []
    with tunables.override(chase_on_gpu=True):
        for n, b, dtype in cases:
            record = _stress(n, b, dtype, args)
            records.append(record)
            print(f"{n}/{b} {dtype}: {record['runs']} runs, {record['nan_runs']} with NaN, "
                  f"{record['differing_runs']} differing, sv_error {record['sv_error']}, "
                  f"{record['ms_per_run']:.2f} ms", flush=True)
    if args.out:
        common.write_json(args.out, {"schema": SCHEMA, "device": common.device_info(),
                                     "args": vars(args) | {"cases": cases},
                                     "records": records})
    print(_table(records))


if __name__ == "__main__":
    main()

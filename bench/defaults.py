#!/usr/bin/env python3
"""Are the tunables' defaults the fastest choice on this GPU? Each default that was set
from a count of passes or launches is timed against its alternatives, on one case each.

Run on the device from the repository root::

    PYTHONPATH=src python bench/defaults.py --out "$OUT/defaults_h200.json"
    PYTHONPATH=src python bench/defaults.py --only jacobi_inner_lanes takagi_blocked_min_n_128

For each study: the tunable, the values tried (the default first), the case (matrix,
shape, dtype, made on the GPU from a fixed seed) and the call; the median seconds of
``--repeat`` calls after a warm-up call with the tunable overridden
(:func:`gpusvd._core.tunables.override`), and the largest singular value's relative
difference from the default's, a check that every choice computes the same thing. The
table printed last gives each value's time over the default's.
"""

import argparse
import sys


def _gaussian(shape, dtype, seed):
    import cupy as cp

    rng = cp.random.default_rng(seed)
    a = rng.standard_normal(shape, dtype=cp.float64)
    if cp.dtype(dtype).kind == "c":
        a = a + 1j * rng.standard_normal(shape, dtype=cp.float64)
    return a.astype(dtype)


def _low_rank(m, n, rank, dtype, seed):
    import cupy as cp

    rng = cp.random.default_rng(seed)
    left = rng.standard_normal((m, rank), dtype=cp.float64)
    right = rng.standard_normal((rank, n), dtype=cp.float64)
    weights = cp.logspace(0.0, -3.0, rank)
    return ((left * weights) @ right).astype(dtype)


def _studies():
    """name → (tunable, values with the default first, case label, make input, call);
    the call returns the singular values (or Takagi values) of its input."""
    import gpusvd
    from gpusvd._core import tunables

    defaults = tunables.get()

    def values(tunable, *others):
        return (getattr(defaults, tunable), *others)

    def lowrank(a):
        return gpusvd.svd_lowrank(a, eps=1e-4, seed=0)[1]

    def jacobi(a):
        return gpusvd.jacobi_svd(a, compute_uv=True)[1]

    def takagi(a):
        return gpusvd.takagi(a, method="jacobi")[0]

    def symmetric(n, dtype, seed):
        def make():
            a = _gaussian((n, n), dtype, seed)
            return a + a.T
        return make

    def gr_values(a):
        return gpusvd.svdvals(a, method="gr")

    return {
        "quic_gs_block_gpu": ("quic_gs_block_gpu", values("quic_gs_block_gpu", 20, 64),
                              "svd_lowrank 20000×4000 rank 400 float32",
                              lambda: _low_rank(20000, 4000, 400, "float32", 1), lowrank),
        "jacobi_inner_lanes": ("jacobi_inner_lanes", values("jacobi_inner_lanes", 4, 8, 16, 32),
                               "jacobi_svd 2048² float64",
                               lambda: _gaussian((2048, 2048), "float64", 2), jacobi),
        "jacobi_block_width_gpu": ("jacobi_block_width_gpu",
                                   values("jacobi_block_width_gpu", 16),
                                   "jacobi_svd 2048² float64",
                                   lambda: _gaussian((2048, 2048), "float64", 2), jacobi),
        "takagi_blocked_min_n_128": ("takagi_blocked_min_n",
                                     values("takagi_blocked_min_n", 1 << 30, 0),
                                     "takagi 128 complex128",
                                     symmetric(128, "complex128", 4), takagi),
        "takagi_blocked_min_n_512": ("takagi_blocked_min_n",
                                     values("takagi_blocked_min_n", 1 << 30),
                                     "takagi 512 complex128",
                                     symmetric(512, "complex128", 5), takagi),
        "bisection_threads_per_block": ("bisection_threads_per_block",
                                        values("bisection_threads_per_block", 64, 128, 256),
                                        "svdvals gr 4096² float64",
                                        lambda: _gaussian((4096, 4096), "float64", 6),
                                        gr_values),
        "chase_blocks_per_sm": ("chase_blocks_per_sm", values("chase_blocks_per_sm", 2, 8),
                                "svdvals gr 8192² float64",
                                lambda: _gaussian((8192, 8192), "float64", 6), gr_values),
    }


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--only", nargs="+", help="only these studies (by name)")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--out", default="defaults.json")
    args = p.parse_args(argv)

    import cupy as cp

    import common
    from gpusvd._core import tunables

    studies = _studies()
    unknown = set(args.only or ()) - set(studies)
    if unknown:
        p.error(f"unknown studies {sorted(unknown)}; known: {sorted(studies)}")
    records = []
    for name, (tunable, choices, case, make, call) in studies.items():
        if args.only and name not in args.only:
            continue
        a = make()
        reference = None
        for value in choices:
            record = {"study": name, "tunable": tunable, "value": value, "case": case,
                      "default": value == choices[0]}
            try:
                with tunables.override(**{tunable: value}):
                    timing = common.time_gpu(lambda: call(a), warmup=1, repeat=args.repeat,
                                             max_seconds=30)
                top = float(cp.asarray(timing.result).max())
                reference = top if reference is None else reference
                record.update(seconds=timing.median, times=timing.times,
                              top_difference=abs(top - reference) / reference)
            except Exception as exc:  # a value that fails is recorded, not fatal
                record["error"] = common.short_error(exc)
            records.append(record)
            print(f"{name} = {value!r}: " + (f"{record['seconds']:.4f} s" if "seconds" in record
                                             else record["error"]), flush=True)
            common.free_gpu_memory()
        common.write_json(args.out, {"device": common.device_info(0), "records": records})
    print("\nstudy | value | seconds | over the default | top value's difference")
    base = {}
    for r in records:
        if "seconds" not in r:
            print(f"{r['study']} | {r['value']!r} | {r['error']}")
            continue
        base.setdefault(r["study"], r["seconds"])
        print(f"{r['study']} | {r['value']!r}{' (default)' if r['default'] else ''} | "
              f"{r['seconds']:.4f} | {r['seconds'] / base[r['study']]:.3f} | "
              f"{r['top_difference']:.1e}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

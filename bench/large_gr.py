"""Large Golub–Reinsch runs on the GPU: time, phases, peak device memory and accuracy.

    python bench/large_gr.py --n 16384 --dtype float64 [--warm]
Prints one line starting with "large" (scripts/gpu-tests collects them). The run is the
process's first call unless ``--warm`` first decomposes a 512×512 matrix of the same dtype
and mode, so that kernel compilation and lazy module loading stay out of the timing (a
cold 4096 float64 run took 30 s on a fresh H100, 2026-11-22; earlier sessions: 2.2–3.4 s).
"""

import argparse
import time

import numpy as np

import gpusvd
from gpusvd import testing
from gpusvd._core import profile


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, required=True)
    p.add_argument("--dtype", default="float64")
    p.add_argument("--values-only", action="store_true")
    p.add_argument("--warm", action="store_true", help="a 512×512 call first")
    args = p.parse_args()
    import cupy  # after the options: --help works without a GPU

    n, dtype = args.n, np.dtype(args.dtype)
    if args.warm:
        small = cupy.random.default_rng(1).standard_normal((512, 512)).astype(dtype)
        if args.values_only:
            gpusvd.svdvals(small, method="gr")
        else:
            gpusvd.svd(small, full_matrices=False, method="gr")
        cupy.cuda.Device().synchronize()
    pool = cupy.get_default_memory_pool()
    a = cupy.random.default_rng(0).standard_normal((n, n), dtype=np.float64).astype(dtype)
    cupy.cuda.Device().synchronize()
    base = pool.total_bytes()
    with profile.recording() as phases:
        t0 = time.perf_counter()
        if args.values_only:
            s = gpusvd.svdvals(a, method="gr")
        else:
            u, s, vh = gpusvd.svd(a, full_matrices=False, method="gr")
        cupy.cuda.Device().synchronize()
        elapsed = time.perf_counter() - t0
    peak = (pool.total_bytes() - base) / 2**30
    acc = ""
    if not args.values_only:
        acc = (f" residual={testing.svd_residual(a, u, s, vh):.2f}"
               f" orth_u={testing.orthogonality(u):.2f}"
               f" orth_v={testing.orthogonality(vh, rows=True):.2f}")
    detail = " ".join(f"{k}={v:.2f}s" for k, v in phases.items())
    print(f"large n={n} {dtype} {'values' if args.values_only else 'full'}"
          f"{' (warm)' if args.warm else ''}: "
          f"{elapsed:.2f} s, pool peak {peak:.1f} GiB{acc} | {detail}")


if __name__ == "__main__":
    main()

"""Large Golub–Reinsch runs on the GPU: time, phases, peak device memory and accuracy.

    python bench/large_gr.py --n 16384 --dtype float64
Prints one line starting with "large" (scripts/gpu-tests collects them).
"""

import argparse
import time

import cupy
import numpy as np

import gpusvd
from gpusvd import testing
from gpusvd._core import profile


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--n", type=int, required=True)
    p.add_argument("--dtype", default="float64")
    p.add_argument("--values-only", action="store_true")
    args = p.parse_args()
    n, dtype = args.n, np.dtype(args.dtype)
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
    print(f"large n={n} {dtype} {'values' if args.values_only else 'full'}: "
          f"{elapsed:.2f} s, pool peak {peak:.1f} GiB{acc} | {detail}")


if __name__ == "__main__":
    main()

"""Where svd_lowrank's time goes on the GPU: driver phases and the top host functions.

    python bench/profile_quic.py --n 16384 --rank 500 --dtype float32 --eps 1e-8
"""

import argparse
import cProfile
import pstats
import time

import cupy
import numpy as np

import gpusvd
from gpusvd._core import profile


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=16384)
    p.add_argument("--rank", type=int, default=500)
    p.add_argument("--dtype", default="float32")
    p.add_argument("--eps", type=float, default=1e-8)
    p.add_argument("--top", type=int, default=25)
    args = p.parse_args()
    rng = cupy.random.default_rng(0)
    dtype = np.dtype(args.dtype)
    a = (rng.uniform(size=(args.n, args.rank), dtype=dtype)
         @ rng.uniform(size=(args.rank, args.n), dtype=dtype))  # the paper's generator
    gpusvd.svd_lowrank(a[:2048, :2048], eps=args.eps, seed=0)  # warm-up: kernels, cuBLAS
    cupy.cuda.Device().synchronize()
    prof = cProfile.Profile()
    with profile.recording() as phases:
        t0 = time.perf_counter()
        prof.enable()
        r = gpusvd.svd_lowrank(a, eps=args.eps, seed=0)
        cupy.cuda.Device().synchronize()
        prof.disable()
        elapsed = time.perf_counter() - t0
    print(f"quic n={args.n} rank={args.rank} {dtype}: {elapsed:.3f} s, rank {r.rank}, "
          f"basis {r.basis_size}, bound {r.error_bound:.2e}, passes {r.passes}, "
          f"growth steps {r.growth_steps} | "
          + " ".join(f"{k}={v:.3f}s" for k, v in phases.items()))
    pstats.Stats(prof).sort_stats("cumulative").print_stats(args.top)
    pstats.Stats(prof).sort_stats("tottime").print_stats(args.top)


if __name__ == "__main__":
    main()

"""Where svd_lowrank's time goes on the GPU: driver phases and the top host functions.

    python bench/profile_quic.py --n 16384 --rank 500 --dtype float32 --eps 1e-8 \\
        --extract-svd host64 host device gram

One line per ``--extract-svd`` choice (``tunables.quic_extract_svd``): the median total
and extraction times of ``--repeat`` calls after a warm-up on the same matrix, the rank,
basis size, reported bound and the true squared relative error (float64, row blocks);
then the cProfile tables of one call with the first choice (``--top 0``: none).
"""

import argparse
import cProfile
import pstats
import statistics
import time

import cupy
import numpy as np

import gpusvd
from gpusvd._core import profile, tunables
from gpusvd.quic.extraction import SMALL_SVD

# Rows of A per block of the float64 true-error check (2048 × 16384 × 8 B = 256 MiB).
ERROR_BLOCK_ROWS = 2048


def true_error(a, r):
    """‖A − U·diag(S)·Vh‖²_F / ‖A‖²_F in float64, row block by row block."""
    us = r.U.astype(cupy.float64) * r.S.astype(cupy.float64)
    vh = r.Vh.astype(cupy.float64)
    res = tot = 0.0
    for r0 in range(0, a.shape[0], ERROR_BLOCK_ROWS):
        blk = a[r0:r0 + ERROR_BLOCK_ROWS].astype(cupy.float64)
        res += float(cupy.sum((blk - us[r0:r0 + ERROR_BLOCK_ROWS] @ vh) ** 2))
        tot += float(cupy.sum(blk * blk))
    return res / tot if tot else 0.0


def timed(a, eps):
    """One synchronized call: (result, seconds, phases)."""
    with profile.recording() as phases:
        t0 = time.perf_counter()
        r = gpusvd.svd_lowrank(a, eps=eps, seed=0)
        cupy.cuda.Device().synchronize()
        elapsed = time.perf_counter() - t0
    return r, elapsed, dict(phases)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=16384)
    p.add_argument("--rank", type=int, default=500)
    p.add_argument("--dtype", default="float32")
    p.add_argument("--eps", type=float, default=1e-8)
    p.add_argument("--extract-svd", nargs="+", choices=sorted(SMALL_SVD),
                   default=[tunables.get().quic_extract_svd])
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--top", type=int, default=25)
    args = p.parse_args()
    rng = cupy.random.default_rng(0)
    dtype = np.dtype(args.dtype)
    a = (rng.uniform(size=(args.n, args.rank), dtype=dtype)
         @ rng.uniform(size=(args.rank, args.n), dtype=dtype))  # the paper's generator
    for how in args.extract_svd:
        with tunables.override(quic_extract_svd=how):
            timed(a, args.eps)  # warm-up on the same matrix: kernels, cuBLAS, cuSOLVER
            runs = [timed(a, args.eps) for _ in range(max(args.repeat, 1))]
        r = runs[-1][0]
        total = statistics.median(t for _, t, _ in runs)
        extract = statistics.median(ph.get("quic_extract", 0.0) for _, _, ph in runs)
        phases = {k: statistics.median(ph.get(k, 0.0) for _, _, ph in runs)
                  for k in runs[-1][2]}
        print(f"quic n={args.n} rank={args.rank} {dtype} extract_svd={how}: "
              f"total {total:.4f} s, extraction {extract:.4f} s, rank {r.rank}, "
              f"basis {r.basis_size}, bound {r.error_bound:.3e}, "
              f"true error {true_error(a, r):.3e}, passes {r.passes}, "
              f"growth steps {r.growth_steps} | "
              + " ".join(f"{k}={v:.4f}s" for k, v in phases.items()), flush=True)
    if args.top > 0:
        with tunables.override(quic_extract_svd=args.extract_svd[0]):
            prof = cProfile.Profile()
            prof.enable()
            gpusvd.svd_lowrank(a, eps=args.eps, seed=0)
            cupy.cuda.Device().synchronize()
            prof.disable()
        print(f"cProfile, extract_svd={args.extract_svd[0]}:")
        pstats.Stats(prof).sort_stats("cumulative").print_stats(args.top)
        pstats.Stats(prof).sort_stats("tottime").print_stats(args.top)


if __name__ == "__main__":
    main()

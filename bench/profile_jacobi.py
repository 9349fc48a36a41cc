#!/usr/bin/env python3
"""Where the GPU blocked Jacobi spends a block sweep: each phase of a p-step timed alone.

Run on the GPU machine from the repository root::

    PYTHONPATH=src python3 bench/profile_jacobi.py --n 4096 --out "$OUT/jacobi_profile.txt"

For an n×n Gaussian float64 matrix: the whole ``jacobi_svd`` timed once; then one block
sweep of :func:`gpusvd.jacobi.blocked.blocked_jacobi`'s loop replayed phase by phase
(gather, Gram GEMM, the shortening kernel, inner Jacobi, postmultiplication of G, of V),
each phase synchronized and summed over the sweep's p-steps; then the same sweep
unsynchronized (wall time of issuing it against the time until the GPU is done: when the
two are close the host is the bottleneck). Prints one table.
"""

from __future__ import annotations

import argparse
import time

import numpy as np


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=4096)
    p.add_argument("--out", default=None)
    args = p.parse_args(argv)

    import cupy as cp

    import gpusvd
    from gpusvd.jacobi import blocked
    from gpusvd.jacobi.driver import DEFAULTS
    from gpusvd.jacobi.rotations import orthogonality_tol
    from gpusvd.jacobi.strategies import block_count, padded_order, pivot_strategy

    n = args.n
    rng = cp.random.default_rng(0)
    a = rng.standard_normal((n, n), dtype=cp.float32).astype(cp.float64)
    lines = []

    def say(text):
        print(text, flush=True)
        lines.append(text)

    # The whole SVD first (compiles the kernels), then timed.
    gpusvd.jacobi_svd(a[:256, :256])
    cp.cuda.Device().synchronize()
    t0 = time.perf_counter()
    u, s, vh = gpusvd.jacobi_svd(a, full_matrices=False)
    cp.cuda.Device().synchronize()
    say(f"jacobi_svd n={n} float64: {time.perf_counter() - t0:.3f} s")
    del u, vh

    width = blocked.block_width(cp)
    blocks = block_count(-(-n // width))
    k = 2 * width
    strategy = DEFAULTS.strategy
    k_inner = padded_order(blocked.inner_name(strategy), k)
    inner_pairs = blocked.inner_strategy(strategy, k_inner, cp)
    tol = orthogonality_tol(np.float64, k)
    shift = k * n * float(np.finfo(np.float64).eps) / 2
    table = pivot_strategy(strategy, blocks)
    cols_host = (table[..., None] * width + np.arange(width)).reshape(len(table), -1, k)
    cols_dev = [(cp.asarray(c), cp.asarray(t.reshape(-1).astype(np.int32)))
                for c, t in zip(cols_host, table)]
    say(f"b={width} blocks={blocks} p-steps/sweep={len(table)} pairs/step={cols_host.shape[1]}"
        f" k_inner={k_inner} strategy={strategy}")
    gt = cp.ascontiguousarray(a.T)
    vt = cp.eye(n, dtype=a.dtype)
    ones = cp.ones(k_inner, a.dtype)
    eye = cp.repeat(cp.eye(k_inner, dtype=a.dtype)[None], cols_host.shape[1], axis=0)
    inner = blocked.inner_for(cp)

    def step(pair, clock):
        cols, blks = pair
        clock("start")
        x = blocked._gather(cp, gt, cols, blks, width)
        clock("gather G")
        h = blocked._gram(cp, x)
        clock("Gram GEMM")
        r, vloc = blocked._shorten(cp, x, "cholesky", shift, eye)
        clock("Gram+Cholesky kernel")
        rot, _ = inner(r, vloc, ones, inner_pairs, 1, tol)
        clock("inner (1 sweep)")
        total = rot.sum()
        vloc_t = vloc.transpose(0, 2, 1)
        blocked._scatter(cp, gt, cols, blks, width, cp.matmul(vloc_t, x))
        clock("postmultiply G + scatter")
        blocked._scatter(cp, vt, cols, blks, width,
                         cp.matmul(vloc_t, blocked._gather(cp, vt, cols, blks, width)))
        clock("gather+postmultiply+scatter V")
        return total, h

    sums = {}

    def synced(label, state={"t": 0.0}):
        cp.cuda.Device().synchronize()
        now = time.perf_counter()
        if label != "start":
            sums[label] = sums.get(label, 0.0) + now - state["t"]
        state["t"] = time.perf_counter()

    for cols in cols_dev:       # warm-up sweep
        step(cols, lambda label: None)
    for cols in cols_dev:
        step(cols, synced)
    say("phase (synchronized, summed over one sweep):")
    for label, t in sums.items():
        say(f"  {label:34s} {t * 1e3:8.2f} ms  ({t / len(cols_dev) * 1e6:7.1f} us/p-step)")
    say(f"  {'sum':34s} {sum(sums.values()) * 1e3:8.2f} ms")
    # "Gram+Cholesky kernel" includes a second Gram GEMM; the difference is the kernel.

    cp.cuda.Device().synchronize()
    t0 = time.perf_counter()
    for cols in cols_dev:
        step(cols, lambda label: None)
    issued = time.perf_counter() - t0
    cp.cuda.Device().synchronize()
    done = time.perf_counter() - t0
    say(f"unsynchronized sweep: issued in {issued * 1e3:.1f} ms, done in {done * 1e3:.1f} ms"
        f" (host-bound if the two are close)")
    if args.out:
        with open(args.out, "w") as f:
            f.write("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

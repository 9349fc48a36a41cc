"""Where the bidiagonal-QR phase of the Golub–Reinsch SVD spends its time.

Times, for the bidiagonal of a Gaussian n×n matrix (Golub–Kahan: chi-distributed
entries), the host QR alone (values only, and writing the rotation log) and the GPU
application of the whole pre-computed log to X and Y for each rotation window, and
reports the kernel's rate against the 6 flops a rotation costs per row.

    python bench/rotations_gr.py --n 4096 8192 --dtype float64
"""

import argparse
import time

import numpy as np

from gpusvd._core import tunables
from gpusvd.golub_reinsch.bidiagonal_qr import BidiagonalQR


def gaussian_bidiagonal(n, seed=0):
    rng = np.random.default_rng(seed)
    d = np.sqrt(rng.chisquare(np.arange(n, 0, -1)))
    e = np.sqrt(rng.chisquare(np.arange(n - 1, 0, -1)))
    return d, e


def host_qr(d, e, record, chunk):
    qr = BidiagonalQR(d, e, eps=np.finfo(np.float64).eps, compute_rotations=record)
    n = len(d)
    cap = chunk if record else 0
    sweeps, left, right = (np.empty((cap, 3), np.int64), np.empty((cap * n, 2)),
                           np.empty((cap * n, 2)))
    log = []
    t0 = time.perf_counter()
    while not qr.done:
        k, r = qr.run(sweeps, left, right)
        if record:
            log.append((sweeps[:k].copy(), left[:r].copy(), right[:r].copy()))
    return time.perf_counter() - t0, log


def gpu_apply(n, dtype, log, window):
    import cupy

    from gpusvd.golub_reinsch.rotations_cuda import RotationPipeline

    x = cupy.asfortranarray(cupy.eye(n, dtype=dtype))
    y = cupy.asfortranarray(cupy.eye(n, dtype=dtype))
    cap_sweeps = max(len(s) for s, _, _ in log)
    cap_rot = max(len(l) for _, l, _ in log)
    with tunables.override(rotation_window=window):
        pipeline = RotationPipeline(x, y, cap_sweeps, cap_rot)
    cupy.cuda.Device().synchronize()
    t0 = time.perf_counter()
    for sweeps, left, right in log:
        bs, bl, br = pipeline.buffers()
        bs[:len(sweeps)], bl[:len(left)], br[:len(right)] = sweeps, left, right
        pipeline.submit(len(sweeps), len(left))
    pipeline.finish()
    return time.perf_counter() - t0


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, nargs="+", default=[4096])
    p.add_argument("--dtype", nargs="+", default=["float64"])
    p.add_argument("--windows", type=int, nargs="+", default=[8, 16])
    args = p.parse_args()
    chunk = tunables.get().qr_chunk_sweeps
    for n in args.n:
        d, e = gaussian_bidiagonal(n)
        host_qr(d[:64], e[:63], True, chunk)  # compile
        t_values, _ = host_qr(d, e, False, chunk)
        t_log, log = host_qr(d, e, True, chunk)
        rotations = sum(len(l) for _, l, _ in log)
        print(f"rot n={n} host QR values {t_values:.3f} s, with log {t_log:.3f} s, "
              f"{rotations / n**2:.2f} n² rotations in {sum(len(s) for s, _, _ in log)} sweeps")
        for dtype in map(np.dtype, args.dtype):
            for window in args.windows:
                gpu_apply(min(n, 256), dtype, [(s[:0], l[:0], r[:0]) for s, l, r in log[:1]],
                          window)  # compile
                t = gpu_apply(n, dtype, log, window)
                rate = 6.0 * 2 * n * rotations / t / 1e12
                print(f"rot n={n} {dtype} W={window}: GPU apply {t:.3f} s, {rate:.2f} TFLOP/s")


if __name__ == "__main__":
    main()

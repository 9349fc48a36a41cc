"""The ``gpusvd`` command: decompose a generated matrix and report time and accuracy.

``gpusvd`` (or ``python -m gpusvd``) with no arguments runs a 2000×2000 float64 SVD on the
GPU if one is usable, else on the CPU.
"""

import argparse
import time

import numpy as np


def _parser():
    p = argparse.ArgumentParser(prog="gpusvd", description=__doc__.splitlines()[0])
    p.add_argument("--m", type=int, default=2000, help="rows (default 2000)")
    p.add_argument("--n", type=int, default=None, help="columns (default: m)")
    p.add_argument("--dtype", choices=("float32", "float64"), default="float64")
    p.add_argument("--device", default="auto", help="auto, cpu, gpu or a GPU index")
    p.add_argument("--method", default="auto")
    p.add_argument("--values-only", action="store_true", help="singular values only")
    p.add_argument("--cond", type=float, default=1e6, help="condition number of the matrix")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--repeat", type=int, default=2, help="runs; the first warms up")
    return p


def main(argv=None):
    import gpusvd
    from gpusvd import testing
    from gpusvd._core.arrays import place

    args = _parser().parse_args(argv)
    m, n = args.m, args.n or args.m
    device = int(args.device) if args.device.isdigit() else args.device
    a_host = testing.with_condition(m, n, args.cond, dtype=np.dtype(args.dtype),
                                    seed=args.seed)
    a, placement = place(a_host, device)
    where = f"GPU {placement.device_id}" if placement.on_gpu else "CPU"
    times = []
    for _ in range(max(args.repeat, 1)):
        if placement.on_gpu:
            placement.xp.cuda.Device(placement.device_id).synchronize()
        t0 = time.perf_counter()
        if args.values_only:
            s = gpusvd.svdvals(a, method=args.method, device=device)
        else:
            u, s, vh = gpusvd.svd(a, full_matrices=False, method=args.method, device=device)
        if placement.on_gpu:
            placement.xp.cuda.Device(placement.device_id).synchronize()
        times.append(time.perf_counter() - t0)
    print(f"gpusvd {gpusvd.__version__}: {m}x{n} {args.dtype} on {where}, "
          f"method={args.method}, {'values only' if args.values_only else 'U, S, Vh'}")
    print(f"time: {times[-1]:.3f} s (first run {times[0]:.3f} s, compilation included)")
    s_ref = np.linalg.svd(a_host.astype(np.float64), compute_uv=False)
    print(f"singular values: max |s - s_ref| / (s_max eps) = {testing.sv_error(s, s_ref):.2f}")
    if not args.values_only:
        print(f"residual ||A - U S Vh|| / (||A|| n eps) = "
              f"{testing.svd_residual(a, u, s, vh):.2f}")
        print(f"orthogonality ||U'U - I|| / (n eps) = {testing.orthogonality(u):.2f}, "
              f"||V'V - I|| / (n eps) = {testing.orthogonality(vh, rows=True):.2f}")
    return 0

"""Where takagi's time goes on the GPU: driver phases, sweeps, launches, top host functions.

    PYTHONPATH=src python bench/profile_takagi.py --n 2048 --dtype complex128 --update strided

``--update`` picks the blocked step's update (tunable ``takagi_update``: "strided", batched
GEMMs on block offsets, or "gather"); ``--no-overlap`` keeps U's GEMMs of the strided
update on the current stream (tunable ``takagi_update_overlap``). ``--threads T ...``
times the inner solve's threads per block (tunable ``takagi_solve_threads``), each the
median of ``--repeat`` runs; the profile uses the first.

Two runs of the same matrix (bench_takagi's generator): one timed plainly (the number to
compare with the bench), one under cProfile with ``gpusvd._core.profile`` recording. The
recording synchronizes the device around every phase (a blocked step's inner solve,
``takagi_solve``, and its GEMMs and gathers, ``takagi_update``), so the second run is
slower; its split is what to read. Call counts from cProfile give the sweeps
(``_Blocked.sweep`` / ``_Pointwise.sweep``), the kernel launches of ``steps_cuda`` and the
CuPy matmuls and fancy-index gathers per sweep.
"""

import argparse
import cProfile
import os
import pstats
import sys
import time

import cupy
import numpy as np

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, _HERE)

from bench_takagi import make_matrix  # noqa: E402
from gpusvd._core import profile, tunables  # noqa: E402
from gpusvd.takagi import takagi  # noqa: E402

# Functions whose call counts are printed per sweep: (file suffix, function name).
_COUNTED = [("takagi/driver.py", "sweep"), ("takagi/driver.py", "_off_norm"),
            ("takagi/steps_cuda.py", "solve_block_pairs"),
            ("takagi/steps_cuda.py", "jacobi_step"), ("takagi/block_update_cuda.py", "_launch"),
            ("", "matmul"), ("", "__getitem__"),
            ("", "synchronize")]


def _timed(a):
    cupy.cuda.Device().synchronize()
    t0 = time.perf_counter()
    s, u = takagi(a)
    cupy.cuda.Device().synchronize()
    return time.perf_counter() - t0, s, u


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=2048)
    p.add_argument("--dtype", default="complex128")
    p.add_argument("--top", type=int, default=25)
    p.add_argument("--update", choices=["strided", "gather"], default="strided")
    p.add_argument("--no-overlap", action="store_true")
    p.add_argument("--threads", type=int, nargs="+",
                   default=[tunables.get().takagi_solve_threads])
    p.add_argument("--repeat", type=int, default=3)
    args = p.parse_args()
    with tunables.override(takagi_update=args.update, takagi_update_overlap=not args.no_overlap):
        _profile(args)


def _profile(args):
    dtype = np.dtype(args.dtype)
    a = cupy.asarray(make_matrix(args.n, seed=args.n).astype(dtype))
    _timed(a[:256, :256])  # warm-up: kernels compiled, cuBLAS handles, memory pool
    _timed(a[:64, :64])
    eps = float(np.finfo(dtype).eps)
    for threads in args.threads:
        with tunables.override(takagi_solve_threads=threads):
            runs = [_timed(a) for _ in range(args.repeat)]
        elapsed = float(np.median([r[0] for r in runs]))
        _, s, u = runs[-1]
        residual = float(cupy.linalg.norm(a - (u * s) @ u.T) / cupy.linalg.norm(a)) / (args.n * eps)
        print(f"takagi n={args.n} {dtype} update={args.update} overlap={not args.no_overlap} "
              f"threads={threads}: {elapsed:.3f} s (median of {args.repeat}), "
              f"residual {residual:.2f} n·eps")
    prof = cProfile.Profile()
    with tunables.override(takagi_solve_threads=args.threads[0]), \
            profile.recording() as phases:
        prof.enable()
        recorded, _, _ = _timed(a)
        prof.disable()
    print(f"recorded (synchronized phases): {recorded:.3f} s | "
          + " ".join(f"{k}={v:.3f}s" for k, v in sorted(phases.items())))
    stats = pstats.Stats(prof)
    sweeps = sum(v[1] for k, v in stats.stats.items()
                 if k[0].endswith("takagi/driver.py") and k[2] == "sweep")
    print(f"sweeps: {sweeps}")
    for suffix, name in _COUNTED:
        calls = sum(v[1] for k, v in stats.stats.items() if k[0].endswith(suffix) and k[2] == name)
        print(f"  {suffix or '*'}:{name}: {calls} calls, {calls / max(sweeps, 1):.1f} per sweep")
    stats.sort_stats("cumulative").print_stats(args.top)
    stats.sort_stats("tottime").print_stats(args.top)


if __name__ == "__main__":
    main()

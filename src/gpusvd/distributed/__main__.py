"""``mpiexec -n 2 python -m gpusvd.distributed --n 512``: the exact SVD over MPI ranks, timed.

Root makes an m×n test matrix with known singular values (geometric, condition number
``--cond``), every rank takes part in :func:`gpusvd.distributed.svd` (``--method auto``,
``gr`` or ``polar``) or :func:`gpusvd.distributed.jacobi_svd` (``--method jacobi``, with
its options), and root prints the time, for the Jacobi SVD the outer sweeps and the
pairs (of root) ended by the orthogonality test, the relative error of the singular
values and, for the full SVD, the residual and the orthogonality of U and V in units of
n·ε (``gpusvd.testing.metrics``).
"""

import argparse
import time

import numpy as np


def _parser():
    p = argparse.ArgumentParser(prog="mpiexec -n RANKS python -m gpusvd.distributed",
                                description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=512, help="columns (default 512)")
    p.add_argument("--m", type=int, default=None, help="rows (default n)")
    p.add_argument("--dtype", default="float64",
                   choices=["float32", "float64", "complex64", "complex128"])
    p.add_argument("--cond", type=float, default=1e6, help="condition number (default 1e6)")
    p.add_argument("--values-only", action="store_true", help="singular values only")
    p.add_argument("--method", default="auto", choices=["auto", "gr", "polar", "jacobi"],
                   help="distributed.svd's method, or the Jacobi SVD (default auto)")
    p.add_argument("--variant", default="block-oriented",
                   choices=["block-oriented", "full-block"], help="--method jacobi only")
    p.add_argument("--pair-sweeps", type=int, default=1,
                   help="block sweeps per shortened pair (default 1; --method jacobi)")
    p.add_argument("--pairs-per-rank", type=int, default=None,
                   help="pivot block-pairs per rank and outer step (default: 1 on CPU "
                        "ranks, on GPUs the most that keep pairs 4096 columns wide; "
                        "--method jacobi)")
    p.add_argument("--no-skip", action="store_true",
                   help="run every outer step in full (no orthogonality test; --method jacobi)")
    p.add_argument("--device", default="auto", choices=["auto", "cpu", "gpu"])
    p.add_argument("--seed", type=int, default=0)
    return p


def main(argv=None):
    from mpi4py import MPI

    from .._core.backend import to_host
    from ..testing import with_condition
    from ..testing.metrics import orthogonality, relative_sv_error, svd_residual
    from .comm import Comm
    from .exact import svd
    from .jacobi import jacobi_svd

    args = _parser().parse_args(argv)
    world = MPI.COMM_WORLD
    m = args.n if args.m is None else args.m
    a = None
    if world.rank == 0:
        a = with_condition(m, args.n, args.cond, dtype=np.dtype(args.dtype), seed=args.seed)
    comm = Comm(world, args.device)
    world.Barrier()
    start = time.perf_counter()
    if args.method == "jacobi":
        out = jacobi_svd(a, compute_uv=not args.values_only, variant=args.variant,
                         comm=comm, pair_sweeps=args.pair_sweeps,
                         pairs_per_rank=args.pairs_per_rank, skip_orthogonal=not args.no_skip)
    else:
        out = svd(a, full_matrices=False, compute_uv=not args.values_only, comm=comm,
                  method=args.method)
    seconds = time.perf_counter() - start
    comm.close()
    if world.rank != 0:
        return 0
    s = out if args.values_only else out.S
    s = to_host(s)
    k = min(m, args.n)
    ref = np.geomspace(1.0, 1.0 / args.cond, k) if k > 1 else np.ones(k)
    run = comm.last_run if args.method == "jacobi" else None   # None for an empty matrix
    line = (f"{world.size} rank(s), {args.method}, {m}x{args.n} {args.dtype}: "
            f"{seconds:.3f} s, "
            + ("" if run is None else f"{run.sweeps} outer sweeps, {run.skipped}/"
               f"{run.steps} pairs tested only, ")
            + f"relative sv error {relative_sv_error(s, ref):.2e}")
    if not args.values_only:
        u, vh = to_host(out.U), to_host(out.Vh)
        line += (f", residual {svd_residual(a, u, s, vh):.2f}, orthogonality U "
                 f"{orthogonality(u):.2f} V {orthogonality(vh.conj().T):.2f} (units of n·eps)")
    print(line, flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Low-rank SVD of a matrix on disk, read in row blocks, with a guaranteed error.

The matrix is written block by block to a ``.npy`` file in a temporary folder (it never
has to be in memory whole), then ``gpusvd.svd_lowrank(path, eps, partitions=4)`` runs
QUIC-SVD over 4 row partitions, reading only row blocks of the file. The result's
``error_bound`` is ‖A − U·diag(S)·Vh‖²_F / ‖A‖²_F, which is at most ``eps``; here it is
checked against the true error, computed by a second streaming pass over the file, and
the rank against the smallest rank any method could reach (the truncated exact SVD,
Eckart–Young), computed at this small size by ``numpy.linalg.svd``.

The test matrix is A = Z·diag(σ)·Vᵀ with Z Gaussian, V orthogonal and σ_i = decay^i, so
its spectrum decays geometrically and the rank needed depends on ``eps``.
Run ``python examples/out_of_core_lowrank.py`` (``--rows 2000000`` writes 3.2 GB).
With ``--distributed``, under ``mpiexec -n 4``, ``gpusvd.distributed.svd_lowrank`` runs
instead, one row partition per rank (a GPU each where there are GPUs): root writes the
file, every rank reads its own rows of it, and root checks the result.
"""

import argparse
import pathlib
import tempfile
import time

import numpy as np

import gpusvd
from gpusvd.testing import haar_orthogonal

BLOCK_ROWS = 4096  # rows written, and read back for the check, at a time


def write_matrix(path, rows, cols, decay, seed):
    """Write Z·diag(decay^i)·Vᵀ to ``path`` as a .npy file, BLOCK_ROWS rows at a time."""
    mix = decay ** np.arange(cols)[:, None] * haar_orthogonal(cols, seed=seed).T
    out = np.lib.format.open_memmap(path, mode="w+", dtype=np.float64, shape=(rows, cols))
    for start in range(0, rows, BLOCK_ROWS):
        stop = min(start + BLOCK_ROWS, rows)
        z = np.random.default_rng([seed, start]).standard_normal((stop - start, cols))
        out[start:stop] = z @ mix
    out.flush()
    del out


def true_error(path, r):
    """‖A − U·diag(S)·Vh‖²_F / ‖A‖²_F and ‖A‖²_F, reading the file in row blocks."""
    a = np.load(path, mmap_mode="r")
    residual = total = 0.0
    for start in range(0, len(a), BLOCK_ROWS):
        block = np.asarray(a[start:start + BLOCK_ROWS])
        approx = (r.U[start:start + BLOCK_ROWS] * r.S) @ r.Vh
        residual += float(np.sum((block - approx) ** 2))
        total += float(np.sum(block ** 2))
    return residual / total, total


def optimal_rank(path, eps):
    """Smallest k with Σ_{i>k} σ_i² ≤ eps·Σ σ_i² (reads the whole file: small sizes only)."""
    power = np.linalg.svd(np.load(path), compute_uv=False) ** 2
    tail = np.cumsum(power[::-1])[::-1] / power.sum()  # tail[k] = Σ_{i≥k} σ_i² / Σ σ_i²
    return int(np.argmax(np.append(tail, 0.0) <= eps))


def _parser():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rows", type=int, default=20000, help="rows (default 20000)")
    p.add_argument("--cols", type=int, default=200, help="columns (default 200)")
    p.add_argument("--decay", type=float, default=0.9, help="σ_i = decay^i (default 0.9)")
    p.add_argument("--eps", type=float, default=1e-6,
                   help="bound on the squared relative error (default 1e-6)")
    p.add_argument("--partitions", type=int, default=4)
    p.add_argument("--device", default="auto", type=lambda d: int(d) if d.isdigit() else d,
                   help="auto, cpu, gpu or a GPU index")
    p.add_argument("--exact", action=argparse.BooleanOptionalAction, default=None,
                   help="compare with the exact SVD (default: when the file is < 1 GB)")
    p.add_argument("--distributed", action="store_true",
                   help="gpusvd.distributed.svd_lowrank over the MPI ranks (mpiexec)")
    p.add_argument("--seed", type=int, default=0)
    return p


def _decompose(path, args):
    """(result, what ran) on this process; the result is None on ranks other than root."""
    if not args.distributed:
        r = gpusvd.svd_lowrank(str(path), eps=args.eps, partitions=args.partitions,
                               seed=args.seed, device=args.device)
        return r, f"svd_lowrank(eps={args.eps:g}, partitions={args.partitions})"
    from mpi4py import MPI

    from gpusvd import distributed

    world = MPI.COMM_WORLD
    device = "gpu" if isinstance(args.device, int) else args.device
    r = distributed.svd_lowrank(str(path) if world.rank == 0 else None, eps=args.eps,
                                seed=args.seed, device=device)
    return r, f"distributed.svd_lowrank(eps={args.eps:g}) on {world.size} rank(s)"


def main(argv=None):
    args = _parser().parse_args(argv)
    if args.distributed:
        from mpi4py import MPI
        if MPI.COMM_WORLD.rank != 0:  # root writes the file and checks; the others compute
            _decompose(MPI.COMM_WORLD.bcast(None, root=0), args)
            return None
    with tempfile.TemporaryDirectory() as folder:
        path = pathlib.Path(folder) / "a.npy"
        write_matrix(path, args.rows, args.cols, args.decay, args.seed)
        if args.distributed:
            MPI.COMM_WORLD.bcast(path, root=0)
        size = path.stat().st_size
        print(f"wrote {path.name}: {args.rows} x {args.cols} float64, {size / 1e6:.1f} MB")
        start = time.perf_counter()
        r, what = _decompose(path, args)
        seconds = time.perf_counter() - start
        print(f"{what}: rank {r.rank} "
              f"(basis {r.basis_size}), {r.partitions} partitions, {r.passes} passes over "
              f"the file, {seconds:.2f} s")
        error, _ = true_error(path, r)
        print(f"error bound {r.error_bound:.4e}, true error {error:.4e} "
              f"(difference {abs(error - r.error_bound):.1e}; eps {args.eps:g})")
        exact = size < 1e9 if args.exact is None else args.exact
        best = optimal_rank(path, args.eps) if exact else None
        if best is not None:
            print(f"smallest rank that meets eps (exact SVD): {best}")
    return {"rank": r.rank, "error_bound": r.error_bound, "true_error": error,
            "partitions": r.partitions, "passes": r.passes, "optimal_rank": best, "eps": args.eps}


if __name__ == "__main__":
    try:
        main()
    except (ValueError, MemoryError) as exc:  # a bad option, no GPU: one line, as argparse
        raise SystemExit(f"{_parser().prog}: error: {exc}") from None

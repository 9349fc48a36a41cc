#!/usr/bin/env python3
"""A tall matrix larger than one GPU's working set, decomposed over several
(``gpusvd.distributed.svd(rows=True)``), and the same matrix tried on one GPU.

Run on a device kind of several GPUs from the repository root, one rank per GPU::

    mpiexec -n 2 env PYTHONPATH=src python bench/several_gpus_large.py \\
        --shape 800000x8192 --out "$OUT/several_gpus_large.json"

Each rank makes its own consecutive rows of a Gaussian float64 M×N matrix on its GPU
(seeded by rank: no rank ever holds A whole), then ``distributed`` is
``gpusvd.distributed.svd(mine, full_matrices=False, rows=True)`` on every rank, timed
between a barrier and device synchronizations, with the device memory that CuPy's pool
holds on each rank afterwards (about the peak). Accuracy without gathering anything:
‖A − U·diag(S)·Vh‖_F / (‖A‖_F·N·ε) and ‖UᴴU − I‖_F / (N·ε), each a sum over the ranks
of their rows' parts. ``one_gpu`` (unless ``--no-one-gpu``) then makes the whole A on
root's GPU, where it fits, and calls ``gpusvd.svd(a, full_matrices=False)``: its time,
or the error it stopped with (out of memory: the point of the case). ``--device cpu``
runs the same on CPU ranks (a smoke test at a small shape). Importable, and ``--help`` works, without a GPU or MPI.
"""

from __future__ import annotations

import argparse
import functools
import os
import sys

import numpy as np

_HERE = os.path.dirname(os.path.abspath(__file__))
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)

import common  # noqa: E402
from several_gpus import _timed  # noqa: E402  (barrier, synchronize, median)

SCHEMA = "gpusvd-bench-several-gpus-large/1"
# Rows per chunk of the residual: its temporaries stay small beside A's rows and U's.
CHUNK_ROWS = 65536


def _parser():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default="bench/results/several_gpus_large.json")
    p.add_argument("--shape", default="800000x8192", help="M x N of A, as MxN (M >= N)")
    p.add_argument("--repeat", type=int, default=1)
    p.add_argument("--device", default="auto", choices=["auto", "cpu", "gpu"])
    p.add_argument("--no-one-gpu", action="store_true", help="skip the one-GPU attempt")
    p.add_argument("--seed", type=int, default=0)
    return p


def _own_rows(xp, m, n, rank, ranks, seed):
    """This rank's consecutive rows of A, made where the rank computes."""
    r0, r1 = m * rank // ranks, m * (rank + 1) // ranks
    if xp is np:
        return np.random.default_rng([seed, rank]).standard_normal((r1 - r0, n))
    return xp.random.default_rng(seed * 1000 + rank).standard_normal((r1 - r0, n))


def _accuracy(comm, mine, out, n):
    """Residual and orthogonality of the ranks' rows of U (in units of N·ε), summed over
    the ranks: nothing is gathered."""
    xp, eps = comm.xp, float(np.finfo(np.float64).eps)
    u, s, vh = out
    parts = np.zeros(2)   # ‖A_r − U_r·S·Vh‖_F² and ‖A_r‖_F² of this rank, by row chunks
    for i in range(0, len(mine), CHUNK_ROWS):
        rows = mine[i:i + CHUNK_ROWS]
        parts += [float(xp.linalg.norm(rows - (u[i:i + CHUNK_ROWS] * s) @ vh)) ** 2,
                  float(xp.linalg.norm(rows)) ** 2]
    residual2, norm2 = comm.summed(xp.asarray(parts), 0).tolist()
    gram = comm.summed(u.conj().T @ u, 0)
    gram[xp.arange(n), xp.arange(n)] -= 1
    return {"residual": (residual2 / norm2) ** 0.5 / (n * eps),
            "orthogonality": float(xp.linalg.norm(gram)) / (n * eps)}


def _pool_bytes(xp):
    """What CuPy's pool holds: it keeps the blocks that arrays give back, so after a call
    that started from an empty pool, about the call's peak (None on the CPU)."""
    return int(xp.get_default_memory_pool().total_bytes()) if xp is not np else None


def main(argv=None):
    args = _parser().parse_args(argv)
    from mpi4py import MPI

    import gpusvd
    from gpusvd import distributed
    from gpusvd.distributed.comm import Comm

    world = MPI.COMM_WORLD
    root = world.rank == 0
    m, n = (int(x) for x in args.shape.lower().split("x"))
    with Comm(world, args.device) as comm, comm.device_context():
        xp = comm.xp
        on_gpu = xp is not np
        payload = {"schema": SCHEMA, "ranks": world.size, "m": m, "n": n,
                   "dtype": "float64", "bytes": m * n * 8, "transport": comm.transport,
                   "device": common.device_info(comm.device_id) if on_gpu else "cpu",
                   "runs": {}}
        mine = _own_rows(xp, m, n, world.rank, world.size, args.seed)
        common.free_gpu_memory()
        call = functools.partial(distributed.svd, mine, full_matrices=False, rows=True,
                                 comm=comm)
        seconds, times, out = _timed(world, call, args.repeat)
        peaks = world.gather(_pool_bytes(xp), root=0)   # before the accuracy's temporaries
        accuracy = _accuracy(comm, mine, out, n)
        if root:
            payload["runs"]["distributed"] = {"seconds": seconds, "times": times,
                                              "ranks": world.size, "pool_bytes": peaks,
                                              **accuracy}
            print(f"{m}x{n} float64 ({m * n * 8 / 1e9:.1f} GB) on {world.size} ranks: "
                  f"{seconds:.2f} s, residual {accuracy['residual']:.3f}, orthogonality "
                  f"{accuracy['orthogonality']:.3f} N·ε"
                  + (", pool " + ", ".join(f"{p / 1e9:.1f}" for p in peaks) + " GB"
                     if on_gpu else ""), flush=True)
        del call, mine, out
        common.free_gpu_memory()
        world.Barrier()
        if root and not args.no_one_gpu:
            payload["runs"]["one_gpu"] = _one_gpu(gpusvd, xp, m, n, world.size, args.seed)
            print(f"one GPU: {payload['runs']['one_gpu']}", flush=True)
        world.Barrier()
        if root:
            common.write_json(args.out, payload)
    return 0


def _one_gpu(gpusvd, xp, m, n, ranks, seed):
    """The whole A (the same rows) on root's device and ``gpusvd.svd`` of it: its time,
    or the error it stopped with."""
    import time

    try:
        a = xp.concatenate([_own_rows(xp, m, n, r, ranks, seed) for r in range(ranks)])
    except Exception as exc:   # A itself does not fit
        return {"error": f"{type(exc).__name__}: {str(exc)[:300]}", "stage": "making A"}
    try:
        common.synchronize()
        start = time.perf_counter()
        gpusvd.svd(a, full_matrices=False)
        common.synchronize()
        return {"seconds": time.perf_counter() - start}
    except Exception as exc:
        return {"error": f"{type(exc).__name__}: {str(exc)[:300]}", "stage": "svd",
                "pool_bytes": _pool_bytes(xp)}
    finally:
        del a
        common.free_gpu_memory()


if __name__ == "__main__":
    raise SystemExit(main())

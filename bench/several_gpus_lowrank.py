#!/usr/bin/env python3
"""QUIC-SVD over 1, 2, 4 … GPUs (``gpusvd.distributed.svd_lowrank``) against one GPU.

Run on a device kind of several GPUs from the repository root, one rank per GPU::

    mpiexec -n 4 env PYTHONPATH=src python bench/several_gpus_lowrank.py \\
        --gpus 1 2 4 --shapes 65536x4096 131072x4096 --rank 200 --out "$OUT/dlr.json"

For each shape m×n (float32 by default: a rank-``--rank`` product of Gaussian factors,
plus Gaussian noise of relative size ``--noise``, made on root), ``single`` is
``gpusvd.svd_lowrank`` on root's GPU, ``ranks_<g>`` is ``gpusvd.distributed.svd_lowrank``
on the first g ranks (a sub-communicator; the others wait at the barrier), root sending
each rank its rows; each is timed between a barrier and device synchronizations (median
of ``--repeat``), with the rank found, the merged basis size and ``error_bound``, the
error computed by the final pass (the guarantee is error_bound <= eps). ``--device cpu``
runs the same on CPU ranks (a smoke test). The JSON is rewritten after every case.
Importable, and ``--help`` works, without a GPU or MPI.
"""

from __future__ import annotations

import argparse
import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)

import common  # noqa: E402
from several_gpus import _timed  # noqa: E402  (barrier, synchronize, median)

SCHEMA = "gpusvd-bench-distributed-lowrank/1"


def _parser():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default="bench/results/distributed_lowrank.json")
    p.add_argument("--shapes", nargs="+", default=["65536x4096"],
                   help="m x n of each case, as MxN")
    p.add_argument("--rank", type=int, default=200, help="rank of the test matrix")
    p.add_argument("--noise", type=float, default=1e-3, help="relative Gaussian noise")
    p.add_argument("--eps", type=float, default=1e-4)
    p.add_argument("--dtype", default="float32", choices=["float32", "float64"])
    p.add_argument("--gpus", type=int, nargs="+", default=None,
                   help="rank counts to run (default: 1 and the number of ranks)")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--device", default="auto", choices=["auto", "cpu", "gpu"])
    p.add_argument("--seed", type=int, default=0)
    return p


def _matrix(m, n, rank, noise, dtype, seed):
    import numpy as np

    rng = np.random.default_rng(seed)
    a = rng.standard_normal((m, rank)).astype(dtype) @ rng.standard_normal((rank, n)).astype(dtype)
    a /= np.sqrt(rank * n)
    a += (noise / np.sqrt(n)) * rng.standard_normal((m, n)).astype(dtype)
    return a


def main(argv=None):
    args = _parser().parse_args(argv)
    from mpi4py import MPI

    import gpusvd
    from gpusvd import distributed
    from gpusvd.distributed.comm import Comm

    world = MPI.COMM_WORLD
    root = world.rank == 0
    args.gpus = sorted(set(args.gpus or [1, world.size]))
    comms = {}
    for g in args.gpus:
        sub = world.Split(0 if world.rank < g else MPI.UNDEFINED, world.rank)
        comms[g] = Comm(sub, args.device) if sub != MPI.COMM_NULL else None
    mine = comms[max(args.gpus)]
    on_gpu = mine.xp is not __import__("numpy")
    payload = {"schema": SCHEMA, "ranks": world.size, "gpus": args.gpus,
               "transport": mine.transport, "dtype": args.dtype, "eps": args.eps,
               "device": common.device_info(mine.device_id) if on_gpu else "cpu",
               "cases": []}
    with mine.device_context():
        for shape in args.shapes:
            m, n = (int(x) for x in shape.lower().split("x"))
            a = _matrix(m, n, args.rank, args.noise, args.dtype, args.seed) if root else None
            if on_gpu and root:
                a = mine.xp.asarray(a)
            case = {"m": m, "n": n, "rank": args.rank, "runs": {}}
            runs = [("single", None)] + [(f"ranks_{g}", g) for g in args.gpus]
            for name, g in runs:
                comm = comms.get(g) if g else None

                def call(comm=comm, g=g, a=a):
                    if g is None:
                        return (gpusvd.svd_lowrank(a, args.eps, seed=args.seed,
                                                   device="cpu" if not on_gpu else "auto")
                                if root else None)
                    if comm is None:
                        return None
                    return distributed.svd_lowrank(a, args.eps, comm=comm, seed=args.seed)
                seconds, times, out = _timed(world, call, args.repeat)
                if root:
                    case["runs"][name] = {"seconds": seconds, "times": times,
                                          "ranks": g or 1, "rank_found": out.rank,
                                          "basis_size": out.basis_size,
                                          "error_bound": out.error_bound,
                                          "passes": out.passes}
                del out
                common.free_gpu_memory()
            if root:
                best = case["runs"]["single"]["seconds"]
                for run in case["runs"].values():
                    run["speedup"] = best / run["seconds"]
                payload["cases"].append(case)
                common.write_json(args.out, payload)
                print(f"{m}x{n}: " + ", ".join(
                    f"{k} {v['seconds']:.3f} s (x{v['speedup']:.2f}, rank {v['rank_found']}, "
                    f"basis {v['basis_size']}, err {v['error_bound']:.1e})"
                    for k, v in case["runs"].items()), flush=True)
            del a
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

#!/usr/bin/env python3
"""Multi-GPU blocked Jacobi SVD (paper 003, §5): 2 GPUs against 1, with communication time.

Run on the device kind ``nvidia-h200-x2`` from the repository root::

    mpiexec -n 2 env PYTHONPATH=src python bench/bench_distributed.py \\
        --out "$OUT/distributed_h200x2.json" --sizes 4096 8192 16384 --modes full values

For each size n (float64, Gaussian n×n, entries exact in float32: ``bench_gr.make_matrix``)
and mode (``full``: economy U, S, Vh; ``values``: S only), timed between a barrier and
device synchronizations on every rank:

==============  ===========================================================================
one_gpu         ``gpusvd.distributed.jacobi_svd`` on root alone (``MPI.COMM_SELF``): the same
                code on 1 GPU (one pair: the whole matrix is shortened, then the single-GPU
                Jacobi); the other rank waits
single_driver   ``gpusvd.jacobi_svd`` on root (the single-process driver, its default
                full-block variant): the best 1-GPU time gpusvd has
two_gpus        ``gpusvd.distributed.jacobi_svd`` on both ranks (NCCL between the GPUs)
==============  ===========================================================================

``comm_seconds`` is the wall time root spent in the exchanges of block-columns (and the
scatter and gather), measured between device synchronizations (phases (4)–(6) of §5);
``speedup`` is the faster 1-GPU time over the 2-GPU time (the target at n = 16384 is
1.7; the paper's 4 GPUs were 2.7× faster than 1). Accuracy (root, float64 on the GPU,
``bench/common.py``): residual, orthogonality, and sv_error against cuSOLVER gesvd values
up to ``--reference-max``, above it against the 1-GPU run. The JSON is rewritten after
every case. Importable, and ``--help`` works, without a GPU or MPI.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

_HERE = os.path.dirname(os.path.abspath(__file__))
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)

import common  # noqa: E402

SCHEMA = "gpusvd-bench-distributed/1"
RUNS = ("one_gpu", "single_driver", "two_gpus")
# Size of the warm-up decomposition: compiles every kernel and sets up NCCL and cuBLAS.
WARMUP_N = 1024


def _parser():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default="bench/results/distributed.json")
    p.add_argument("--sizes", type=int, nargs="+", default=[4096, 8192, 16384])
    p.add_argument("--modes", nargs="+", default=["full", "values"], choices=["full", "values"])
    p.add_argument("--runs", nargs="+", default=list(RUNS), choices=RUNS)
    p.add_argument("--repeat", type=int, default=1, help="timed calls per run (median)")
    p.add_argument("--variant", default="block-oriented",
                   choices=["block-oriented", "full-block"])
    p.add_argument("--reference-max", type=int, default=8192,
                   help="largest n whose singular values are checked against gesvd")
    p.add_argument("--seed", type=int, default=0)
    return p


def _timed(world, fn, repeat):
    """Median seconds of ``fn()`` between a barrier and device synchronizations."""
    times, out = [], None
    for _ in range(repeat):
        out = None
        common.synchronize()
        world.Barrier()
        start = time.perf_counter()
        out = fn()
        common.synchronize()
        world.Barrier()
        times.append(time.perf_counter() - start)
    return sorted(times)[len(times) // 2], times, out


def _case(world, comms, n, mode, args):
    import cupy as cp

    import bench_gr
    import gpusvd
    from gpusvd import distributed

    root = world.rank == 0
    full = mode == "full"
    a = bench_gr.make_matrix(n, n, args.seed, "gaussian") if root else None
    kw = dict(compute_uv=full, full_matrices=False)
    calls = {
        "one_gpu": lambda: distributed.jacobi_svd(a, comm=comms["self"],
                                                  variant=args.variant, **kw) if root else None,
        "single_driver": lambda: gpusvd.jacobi_svd(a, **kw) if root else None,
        "two_gpus": lambda: distributed.jacobi_svd(a, comm=comms["world"],
                                                   variant=args.variant, **kw),
    }
    rec = {"n": n, "mode": mode, "dtype": "float64", "variant": args.variant, "runs": {}}
    s_one = None
    for name in args.runs:
        before = comms["world"].comm_seconds
        seconds, times, out = _timed(world, calls[name], args.repeat)
        run = {"seconds": seconds, "times": times}
        if name == "two_gpus":
            run["comm_seconds"] = (comms["world"].comm_seconds - before) / len(times)
        if root:
            s = out.S if full else out
            if name != "two_gpus":
                s_one = s
            run["accuracy"] = _accuracy(a, out, s, full, n, args, s_one)
        rec["runs"][name] = run
        del out
        common.free_gpu_memory()
    if root:
        one = [rec["runs"][r]["seconds"] for r in ("one_gpu", "single_driver")
               if r in rec["runs"]]
        if one and "two_gpus" in rec["runs"]:
            rec["speedup"] = min(one) / rec["runs"]["two_gpus"]["seconds"]
    del a
    cp.get_default_memory_pool().free_all_blocks()
    return rec if root else None


def _accuracy(a, out, s, full, n, args, s_one):
    import cupy as cp

    if n <= args.reference_max:
        ref, against = cp.linalg.svd(a, compute_uv=False), "gesvd"
    else:
        ref, against = (s_one if s_one is not None else s), "one_gpu"
    acc = (common.svd_accuracy(a, out.U, s, out.Vh, ref, "float64") if full
           else common.values_accuracy(s, ref, "float64"))
    acc["sv_reference"] = against
    return acc


def main(argv=None):
    args = _parser().parse_args(argv)
    from mpi4py import MPI

    from gpusvd.distributed.comm import Comm

    world = MPI.COMM_WORLD
    # The 1-GPU runs are root's alone, on its GPU (rank 0 within COMM_SELF too).
    comms = {"world": Comm(world, "gpu"),
             "self": Comm(MPI.COMM_SELF, "gpu") if world.rank == 0 else None}
    payload = {"schema": SCHEMA, "ranks": world.size, "transport": comms["world"].transport,
               "device": common.device_info(comms["world"].device_id), "cases": []}
    with comms["world"].device_context():
        warm = argparse.Namespace(**{**vars(args), "repeat": 1})
        for mode in args.modes:
            _case(world, comms, WARMUP_N, mode, warm)
        for n in args.sizes:
            for mode in args.modes:
                rec = _case(world, comms, n, mode, args)
                if world.rank == 0:
                    payload["cases"].append(rec)
                    common.write_json(args.out, payload)
                    print(f"n={n} {mode}: " + ", ".join(
                        f"{k} {v['seconds']:.2f} s" for k, v in rec["runs"].items())
                        + f", comm {rec['runs'].get('two_gpus', {}).get('comm_seconds', 0):.2f}"
                        f" s, speedup {rec.get('speedup', float('nan')):.2f}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

#!/usr/bin/env python3
"""The exact SVD on 1, 2, 4 … GPUs (MPI ranks): the blocked Jacobi SVD (paper 003, §5) and
the polar method, with communication time.

Run on a device kind of several GPUs from the repository root, one rank per GPU::

    mpiexec -n 2 env PYTHONPATH=src python bench/several_gpus.py \\
        --out "$OUT/distributed_h200x2.json" --sizes 4096 8192 16384 --modes full values
    mpiexec -n 4 env PYTHONPATH=src python bench/several_gpus.py --gpus 1 2 4 \\
        --variants block-oriented full-block --sizes 8192 16384 24576 --out "$OUT/x4.json"
    mpiexec -n 2 env PYTHONPATH=src python bench/several_gpus.py --gpus 2 \\
        --settings paper default pairs2 --sizes 8192 --out "$OUT/settings.json"

For each size n (float64, Gaussian n×n, entries exact in float32: ``gr_paper.make_matrix``),
mode (``full``: economy U, S, Vh; ``values``: S only), variant and setting of the outer
level's options (:data:`SETTINGS`: ``default``, the defaults; ``paper``, every outer step
in full as paper 003 does, the default before 2026-11-23; ``pairs2``/``pairs4``, 2 or 4
pivot block-pairs per rank; ``sweeps2``, 2 block sweeps per shortened pair), timed
between a barrier and device synchronizations on every rank:

===============  ==========================================================================
single_driver    ``gpusvd.jacobi_svd`` on root (the single-process driver, its default
                 full-block variant): the best 1-GPU time gpusvd has; once per n and mode
gpus_<g>         ``gpusvd.distributed.jacobi_svd`` on the first g ranks (a sub-communicator;
                 the others wait), for each g of ``--gpus``; g = 1 is the same code on
                 one GPU (one pair: the whole matrix shortened, then the single-GPU Jacobi)
default_single   with ``--methods polar``: ``gpusvd.svd(a)`` on root, the one-GPU default
                 (``method="auto"``: the Golub–Reinsch SVD for vectors from 8192 in
                 float64, docs/guide.md)
polar_single     ``gpusvd.svd(a, method="polar")`` on root: the one-GPU polar method
polar_gpus_<g>   ``gpusvd.distributed.svd(method="polar")`` (a block of rows per rank)
                 on the first g ranks
gr_gpus_<g>      with ``--methods gr``: ``gpusvd.distributed.svd(method="gr")`` on the first
                 g ranks (the two-stage reduction on root, the back-transformations
                 shared out by columns)
rows_gpus_<g>    with ``--methods polar_rows``: ``gpusvd.distributed.svd(rows=True)``, each
                 of the first g ranks holding its own rows before the clock starts (no
                 scatter of A, no gather of U; U is gathered for the accuracy only)
quic_single      with ``--methods quic``: ``gpusvd.svd_lowrank(a, eps)`` on root's GPU, a
                 the paper's n×n product G·H of rank ``--quic-rank`` (QUIC-SVD's matrix,
                 not the Gaussian one), from host memory
quic_gpus_<g>    ``gpusvd.distributed.svd_lowrank`` on the first g ranks, the same matrix
                 sent by root a block of rows per rank
===============  ==========================================================================

With ``--phases``, ``phases`` is root's time per phase of the timed calls (the project's
phase recorder, ``gpusvd._core.profile``: QDWH's steps, H, its eigendecomposition, U),
which synchronizes the device around each phase.
``comm_seconds`` is the wall time root spent in the exchanges of block-columns (and the
scatter and gather), measured between device synchronizations (phases (4)–(6) of §5);
``outer`` is root's count of the outer iteration (:class:`gpusvd.distributed.outer.OuterInfo`:
outer sweeps, pairs per rank, pairs processed and of them ended by the orthogonality test);
``speedup`` of a run is the best 1-GPU time of its case (any method's; QUIC-SVD's, on its
own matrix, apart) over its time (targets at n = 16384: 1.7 for 2 GPUs, 3 for 4; the
paper's 4 GPUs were 2.7× faster than 1). A run predicted (n³ from the previous size) to
pass ``--max-call`` seconds is skipped and recorded so. Accuracy (root, float64 on the
GPU, ``bench/common.py``): residual, orthogonality, and sv_error against cuSOLVER gesvd
values up to ``--reference-max``, above it against the case's first run. The JSON is
rewritten after every case; ``--plot`` draws time against GPUs (the paper's Fig. 9).
``GPUSVD_NCCL=0`` runs the exchanges through host buffers (several ranks may then share
one GPU: a smoke test of the multi-rank GPU path).
Importable, and ``--help`` works, without a GPU or MPI.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import time

import numpy as np

_HERE = os.path.dirname(os.path.abspath(__file__))
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)

import common  # noqa: E402

SCHEMA = "gpusvd-bench-distributed/3"
VARIANTS = ("block-oriented", "full-block")
# Options of the outer level (gpusvd.distributed.jacobi_svd) compared by --settings.
# "paper" and "pairs1" were "paper" and "default" before pairs_per_rank=None (S4).
SETTINGS = {"default": {}, "paper": {"skip_orthogonal": False, "pairs_per_rank": 1},
            "pairs1": {"pairs_per_rank": 1},
            "pairs2": {"pairs_per_rank": 2}, "pairs4": {"pairs_per_rank": 4},
            "sweeps2": {"pair_sweeps": 2}}
# Size of the warm-up decomposition: compiles every kernel and sets up NCCL and cuBLAS;
# run with precompile's tunables for the divide and conquer, so that its merges of both
# forms (the support-split ones otherwise only from 4096 rows) compile there.
WARMUP_N = 1024


def _parser():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default="bench/results/distributed.json")
    p.add_argument("--sizes", type=int, nargs="+", default=[4096, 8192, 16384])
    p.add_argument("--modes", nargs="+", default=["full", "values"], choices=["full", "values"])
    p.add_argument("--gpus", type=int, nargs="+", default=None,
                   help="GPU counts to run (default: 1 and the number of ranks)")
    p.add_argument("--methods", nargs="+", default=["jacobi"],
                   choices=["jacobi", "polar", "polar_rows", "gr", "quic"])
    p.add_argument("--quic-rank", type=int, default=500,
                   help="rank of QUIC-SVD's matrix (--methods quic)")
    p.add_argument("--quic-eps", type=float, default=1e-8,
                   help="QUIC-SVD's bound on the squared relative error")
    p.add_argument("--variants", nargs="+", default=["block-oriented"], choices=VARIANTS)
    p.add_argument("--settings", nargs="+", default=["default"], choices=list(SETTINGS),
                   help="options of the outer level to compare (default: default)")
    p.add_argument("--no-single-driver", action="store_true",
                   help="skip gpusvd.jacobi_svd (the single-process driver)")
    p.add_argument("--repeat", type=int, default=1, help="timed calls per run (median)")
    p.add_argument("--phases", action="store_true",
                   help="record root's phases of each timed call (profile.recording)")
    p.add_argument("--max-call", type=float, default=240.0,
                   help="skip a run predicted (n^3 from the previous size) to take longer")
    p.add_argument("--reference-max", type=int, default=8192,
                   help="largest n whose singular values are checked against gesvd")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--plot", default=None, help="PNG of time against GPUs (root)")
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


def _runs(args):
    """(name, variant, setting, g) of every run of a case, in order; the polar method's
    runs have the variant "polar"."""
    runs = []
    if "jacobi" in args.methods:
        runs += [] if args.no_single_driver else [("single_driver", None, None, 1)]
        for variant in args.variants:
            for setting in args.settings:
                for g in args.gpus:
                    name = f"gpus_{g}"
                    name += f"_{variant}" if len(args.variants) > 1 else ""
                    name += f"_{setting}" if len(args.settings) > 1 else ""
                    runs.append((name, variant, setting, g))
    if "polar" in args.methods:
        runs += [("default_single", "polar", None, 1), ("polar_single", "polar", None, 1)]
        runs += [(f"polar_gpus_{g}", "polar", None, g) for g in args.gpus]
    if "gr" in args.methods:
        runs += [(f"gr_gpus_{g}", "gr", None, g) for g in args.gpus]
    if "polar_rows" in args.methods:
        runs += [(f"rows_gpus_{g}", "rows", None, g) for g in args.gpus]
    if "quic" in args.methods:
        runs += [("quic_single", "quic", None, 1)]
        runs += [(f"quic_gpus_{g}", "quic", None, g) for g in args.gpus]
    return runs


def _low_rank(n, rank, seed):
    """QUIC-SVD's test matrix (paper 001 §3): (n × r)·(r × n), entries uniform in [−1, 1],
    float64, on the host."""
    rng = np.random.default_rng(seed)
    return rng.uniform(-1.0, 1.0, (n, rank)) @ rng.uniform(-1.0, 1.0, (rank, n))


def _low_rank_accuracy(a, out):
    """QUIC's rank, its bound and the true squared relative error, in float64 on the GPU."""
    import cupy as cp

    u, s, vh = (cp.asarray(x) for x in out)
    a = cp.asarray(a)
    error = float(cp.linalg.norm(a - (u * s) @ vh) ** 2 / cp.linalg.norm(a) ** 2)
    return {"rank": int(s.shape[0]), "error_bound": float(out.error_bound),
            "error": error}


def _own_rows(n, seed, comm):
    """This rank's rows of the case's matrix (every rank of ``comm`` builds it, the same
    seed, and keeps its block as root would send it), on its GPU."""
    import cupy as cp

    import gr_paper

    r0, r1 = n * comm.rank // comm.size, n * (comm.rank + 1) // comm.size
    return cp.asarray(gr_paper.make_matrix(n, n, seed, "gaussian")[r0:r1])


def _rows_on_root(world, comm, out, full):
    """The rows form's result with U assembled on root (for the accuracy), None elsewhere."""
    import cupy as cp

    from gpusvd._core.results import SVDResult

    if not full:
        return out if world.rank == 0 else None
    # Through the run's own transport: an MPI gather of pickled blocks stops at 2 GiB.
    shapes = comm.world.allgather(out.U.shape)
    blocks = comm.gather(out.U, 0, shapes, out.U.dtype)
    if world.rank != 0:
        return None
    return SVDResult(cp.concatenate(blocks), out.S, out.Vh)


def _case(world, comms, n, mode, args, previous):
    """One size and mode: every run, root's record (None elsewhere). ``previous`` maps
    a run's name to (n, seconds) of its last size, to skip runs predicted too long."""
    import cupy as cp

    import gr_paper
    import gpusvd
    from gpusvd import distributed
    from gpusvd._core import profile

    root = world.rank == 0
    full = mode == "full"
    a = gr_paper.make_matrix(n, n, args.seed, "gaussian") if root else None
    low = (_low_rank(n, args.quic_rank, args.seed) if root and full
           and "quic" in args.methods else None)
    kw = dict(compute_uv=full, full_matrices=False)
    rec = {"n": n, "mode": mode, "dtype": "float64", "runs": {}}
    ref = None      # (singular values, what they are), once per case
    for name, variant, setting, g in _runs(args):
        last = previous.get((name, mode))
        predicted = None if last is None else last[1] * (n / last[0]) ** 3
        # Root's prediction (``previous`` is root's), sent so that every rank skips alike.
        skip = world.bcast(predicted if predicted is not None and predicted > args.max_call
                           else None, root=0)
        if skip is not None:
            rec["runs"][name] = {"skipped": f"predicted {skip:.0f} s > --max-call"}
            continue
        if variant == "quic" and not full:     # QUIC-SVD returns vectors: full mode only
            continue
        if name == "quic_single":
            def call(low=low):
                return (gpusvd.svd_lowrank(low, args.quic_eps, seed=0, device="gpu")
                        if root else None)
            comm = None
        elif variant == "quic":
            comm = comms[g]

            def call(low=low, comm=comm):
                if comm is None:
                    return None
                return distributed.svd_lowrank(low, args.quic_eps, comm=comm, seed=0,
                                               device="gpu")
        elif name == "single_driver":
            def call(a=a):
                return gpusvd.jacobi_svd(a, **kw) if root else None
            comm = None
        elif name in ("default_single", "polar_single"):
            method = "polar" if name == "polar_single" else "auto"

            def call(a=a, method=method):
                return gpusvd.svd(a, method=method, **kw) if root else None
            comm = None
        elif variant in ("polar", "gr"):     # distributed.svd by that method, A on root
            comm = comms[g]

            def call(a=a, comm=comm, method=variant):
                if comm is None:
                    return None
                return distributed.svd(a, comm=comm, method=method, **kw)
        elif variant == "rows":
            comm = comms[g]
            mine = _own_rows(n, args.seed, comm) if comm is not None else None

            def call(mine=mine, comm=comm):
                if comm is None:
                    return None
                return distributed.svd(mine, comm=comm, rows=True, **kw)
        else:
            comm = comms[g]

            def call(a=a, comm=comm, variant=variant, setting=setting):
                if comm is None:      # a rank outside this run's GPUs waits at the barrier
                    return None
                return distributed.jacobi_svd(a, comm=comm, variant=variant,
                                              **SETTINGS[setting], **kw)
        before = comm.comm_seconds if comm is not None else 0.0
        with profile.recording() if args.phases else contextlib.nullcontext() as phases:
            seconds, times, out = _timed(world, call, args.repeat)
        if variant == "rows":
            out = _rows_on_root(world, comm, out, full) if comm is not None else None
        run = {"seconds": seconds, "times": times, "gpus": g, "variant": variant,
               "setting": setting}
        if phases and root:
            run["phases"] = {k: v / len(times) for k, v in phases.items()}
        if comm is not None and root:
            run["comm_seconds"] = (comm.comm_seconds - before) / len(times)
            if variant not in ("polar", "rows", "quic", "gr"):
                run["outer"] = comm.last_run._asdict()
        if root and variant == "quic":
            run["accuracy"] = _low_rank_accuracy(low, out)
        elif root:
            previous[(name, mode)] = (n, seconds)
            s = out.S if full else out
            if ref is None:
                ref = ((cp.linalg.svd(a, compute_uv=False), "gesvd")
                       if n <= args.reference_max else (s, "first run of this case"))
            run["accuracy"] = _accuracy(a, out, s, full, ref)
        rec["runs"][name] = run
        if root:   # progress, so that a run that fails later leaves the earlier ones
            print(f"  n={n} {mode} {name}: {seconds:.3f} s", flush=True)
        del out
        common.free_gpu_memory()
    if root:
        speedups(rec["runs"])
    del a, low
    cp.get_default_memory_pool().free_all_blocks()
    return rec if root else None


def speedups(runs):
    """Set each timed run's ``speedup``: the best one-GPU time of its case over its time,
    the exact methods and QUIC-SVD (whose matrix is another one) apart."""
    for quic in (False, True):
        mine = [r for r in runs.values()
                if "seconds" in r and (r.get("variant") == "quic") == quic]
        ones = [r["seconds"] for r in mine if r.get("gpus") == 1]
        for r in mine if ones else []:
            r["speedup"] = min(ones) / r["seconds"]


def _accuracy(a, out, s, full, reference):
    ref, against = reference
    acc = (common.svd_accuracy(a, out.U, s, out.Vh, ref, "float64") if full
           else common.values_accuracy(s, ref, "float64"))
    acc["sv_reference"] = against
    return acc


def _plot(payload, path):
    """Time against GPUs, one panel per mode (the paper's Fig. 9): one colour per n, one
    line style and hollow marker per method (solid the Jacobi SVD, block-oriented; dashed
    the others), a filled marker of its own for each one-process run at 1 GPU."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    singles = {"single_driver": ("*", "Jacobi, one process"),
               "default_single": ("s", "gpusvd.svd, one GPU"),
               "polar_single": ("D", "polar, one GPU"),
               "quic_single": ("^", "QUIC-SVD, one GPU")}
    styles = {"block-oriented": "-", "full-block": "-.", "polar": "--", "rows": ":",
              "gr": (0, (3, 1)), "quic": (0, (5, 1, 1, 1))}
    markers = {"block-oriented": "o", "full-block": "o", "polar": "D", "rows": "P",
               "gr": "v", "quic": "^"}
    names = {"block-oriented": "Jacobi", "full-block": "Jacobi, full-block",
             "polar": "polar, A on root", "rows": "polar, rows on every rank",
             "gr": "Golub–Reinsch, back-transformations shared", "quic": "QUIC-SVD"}
    modes = sorted({c["mode"] for c in payload["cases"]})
    sizes = sorted({c["n"] for c in payload["cases"]})
    colour = {n: f"C{i}" for i, n in enumerate(sizes)}
    fig, axes = plt.subplots(1, len(modes), figsize=(7.5 * len(modes), 4.5), squeeze=False)
    for ax, mode in zip(axes[0], modes):
        for case in (c for c in payload["cases"] if c["mode"] == mode):
            n = case["n"]
            series = {}
            for name, run in case["runs"].items():
                if "seconds" in run and name not in singles:
                    key = (run["variant"], run.get("setting") or "default")
                    series.setdefault(key, []).append((run["gpus"], run["seconds"]))
            for (variant, setting), pts in series.items():
                pts.sort()
                ax.plot([p[0] for p in pts], [p[1] for p in pts], color=colour[n],
                        marker=markers.get(variant, "o"), markerfacecolor="none",
                        markersize=8,
                        linestyle=styles.get(variant, "-"),
                        label=f"n={n} {names.get(variant, variant)}"
                        + ("" if setting == "default" else f" {setting}"))
            for name, (marker, label) in singles.items():
                seconds = case["runs"].get(name, {}).get("seconds")
                if seconds:
                    ax.plot([1], [seconds], marker=marker, markersize=10, linestyle="none",
                            color=colour[n], label=f"n={n} {label}")
        ax.set_xscale("log", base=2)
        ticks = sorted({1, *payload["gpus"]})
        ax.set_xticks(ticks, [str(g) for g in ticks])
        ax.set_yscale("log")
        ax.set_xlabel("GPUs")
        ax.set_ylabel("seconds")
        ax.set_title(f"the exact SVD on several GPUs, float64, {mode} "
                     f"({payload['device'].get('gpu', '?')})")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))  # off the data
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main(argv=None):
    args = _parser().parse_args(argv)
    from mpi4py import MPI

    from gpusvd._core import precompile, tunables
    from gpusvd.distributed.comm import Comm

    world = MPI.COMM_WORLD
    args.gpus = sorted(set(args.gpus or [1, world.size]))
    if max(args.gpus) > world.size:
        raise SystemExit(f"--gpus {args.gpus} needs at least {max(args.gpus)} ranks")
    comms = {}
    for g in args.gpus:     # the first g ranks; the others get no communicator
        sub = world.Split(0 if world.rank < g else MPI.UNDEFINED, world.rank)
        comms[g] = Comm(sub, "gpu") if sub != MPI.COMM_NULL else None
    mine = comms[max(args.gpus)]
    payload = {"schema": SCHEMA, "ranks": world.size, "gpus": args.gpus,
               "transport": mine.transport, "device": common.device_info(mine.device_id),
               "cases": []}
    previous = {}
    with mine.device_context():
        warm = argparse.Namespace(**{**vars(args), "repeat": 1})
        with tunables.override(**precompile.DIVIDE_AND_CONQUER_MERGES):
            for mode in args.modes:
                _case(world, comms, WARMUP_N, mode, warm, {})
        for n in args.sizes:
            for mode in args.modes:
                rec = _case(world, comms, n, mode, args, previous)
                if world.rank == 0:
                    payload["cases"].append(rec)
                    common.write_json(args.out, payload)
                    print(f"n={n} {mode}: " + ", ".join(
                        f"{k} {v['seconds']:.2f} s (comm {v.get('comm_seconds', 0):.2f}, "
                        f"x{v.get('speedup', float('nan')):.2f}"
                        + (f", {v['outer']['sweeps']} sweeps, {v['outer']['skipped']}/"
                           f"{v['outer']['steps']} pairs tested only" if "outer" in v else "")
                        + ")" if "seconds" in v else
                        f"{k} skipped" for k, v in rec["runs"].items()), flush=True)
                    if args.plot:
                        _plot(payload, args.plot)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

#!/usr/bin/env python3
"""QUIC-SVD (``gpusvd.svd_lowrank``) against its peers, side by side, on the same inputs.

Run on the GPU machine from the repository root::

    PYTHONPATH=src python3 bench/lowrank.py --sizes 1000 4000 8000 16384 22000 \
        --ranks 100 500 1000 --dtypes float32 float64 --budget 480 --out "$OUT/quic.json"
    PYTHONPATH=src python3 bench/lowrank.py --ooc-host 120000x20000 --ooc-rank 500
    PYTHONPATH=src python3 bench/lowrank.py --ooc-disk /scratch/a.npy --ooc-gb 32

In-core cases (the paper's Fig. 2 and 3): the paper's generator, A = G·H with G (n × r)
and H (r × n) uniform in [−1, 1], drawn on the GPU. Methods, each timed by
``common.time_gpu`` (warm-up, synchronized, median):

==============  ==========================================================================
quic            ``gpusvd.svd_lowrank(a, eps, delta, seed=0)`` on the CuPy array
torch_lowrank   ``torch.svd_lowrank(t, q=rank_quic + 10)`` (its default niter=2): given
                QUIC's rank, as the issue asks; ``--torch-true-rank`` gives it the true r
sklearn         ``sklearn.utils.extmath.randomized_svd(a_host, rank_quic)`` on the host
exact           ``cupy.linalg.svd(a, full_matrices=False)`` (cuSOLVER gesvd), truncated
==============  ==========================================================================

Each row reports time, rank and the true squared relative error
‖A − U·diag(S)·Vh‖²_F/‖A‖²_F, computed in float64 on the GPU in row blocks.

Out of core: ``--ooc-host MxN`` keeps a float32 matrix in host memory larger than the
GPU's (rank ``--ooc-rank``) and streams it with ``partitions=None``; ``--ooc-disk PATH``
writes (once) a ``.npy`` memmap of ``--ooc-gb`` GB and decomposes it from disk. Both
report the achieved host→device throughput (bytes streamed / time of the passes, from
``gpusvd._core.profile``) against the pinned bandwidth measured here first.

Importable without a GPU: CuPy, PyTorch, scikit-learn and gpusvd load inside functions.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time

_HERE = os.path.dirname(os.path.abspath(__file__))
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)

import common  # noqa: E402  (bench/common.py)

METHODS = ("quic", "torch_lowrank", "sklearn", "exact")
SCHEMA = "gpusvd-bench-quic/1"
# Extra columns torch.svd_lowrank gets beyond the rank (the q = 510 for rank 500 of the
# peers' measurement in BENCHMARKS.md).
OVERSAMPLE = 10


def _import_gpusvd():
    try:
        import gpusvd
    except ImportError:
        sys.path.insert(0, os.path.join(os.path.dirname(_HERE), "src"))
        import gpusvd
    return gpusvd


def paper_matrix(n, rank, dtype, seed):
    """Paper 001 §3: (n × r)·(r × n) with entries uniform in [−1, 1], on the GPU."""
    import cupy as cp
    rs = cp.random.RandomState(seed)
    g = rs.uniform(-1.0, 1.0, (n, rank)).astype(dtype)
    h = rs.uniform(-1.0, 1.0, (rank, n)).astype(dtype)
    return g @ h


def true_error(a, u, s, vh, block_rows=2048):
    """‖A − U diag(S) Vh‖²_F / ‖A‖²_F in float64, row block by row block (GPU)."""
    import cupy as cp
    u, s, vh = (common.to_cupy(x).astype(cp.float64) for x in (u, s, vh))
    us = u * s[None, :]
    res = tot = 0.0
    for r0 in range(0, a.shape[0], block_rows):
        blk = cp.asarray(a[r0:r0 + block_rows]).astype(cp.float64)
        res += float(cp.sum((blk - us[r0:r0 + block_rows] @ vh) ** 2))
        tot += float(cp.sum(blk * blk))
    return res / tot if tot else 0.0


def runner(method, a, rank, eps, delta):
    """(fn, extract): fn() runs one decomposition; extract(out) -> (U, S, Vh)."""
    if method == "quic":
        gpusvd = _import_gpusvd()
        return (lambda: gpusvd.svd_lowrank(a, eps, delta, seed=0)), (lambda r: r[:3])
    if method == "torch_lowrank":
        import torch
        t = torch.from_dlpack(a)
        q = min(rank + OVERSAMPLE, min(a.shape))
        def fn():
            u, s, v = torch.svd_lowrank(t, q=q)
            return u[:, :rank], s[:rank], v[:, :rank].mT
        return fn, (lambda r: r)
    if method == "sklearn":
        from sklearn.utils.extmath import randomized_svd
        host = a.get()
        return (lambda: randomized_svd(host, rank, random_state=0)), (lambda r: r)
    if method == "exact":
        import cupy as cp
        def fn():
            u, s, vh = cp.linalg.svd(a, full_matrices=False)
            return u[:, :rank], s[:rank], vh[:rank]
        return fn, (lambda r: r)
    raise ValueError(f"unknown method {method!r}")


def pinned_bandwidth(nbytes=1 << 30):
    """Host→device GB/s from a pinned buffer (median of 5 copies of ``nbytes``)."""
    import cupy as cp
    import cupyx
    import numpy as np
    host = cupyx.empty_pinned((nbytes,), np.uint8)
    host[:] = 1
    dev = cp.empty(nbytes, cp.uint8)
    t = common.time_gpu(lambda: dev.set(host), warmup=1, repeat=5)
    return nbytes / t.median / 1e9


def in_core(args, payload, save, deadline):
    import cupy as cp
    for dt in args.dtypes:
        for n in args.sizes:
            for rank in args.ranks:
                if rank >= n:
                    continue
                if time.perf_counter() > deadline:
                    payload["records"].append({"n": n, "rank": rank, "dtype": dt,
                                               "skipped": "budget exhausted"})
                    continue
                a = paper_matrix(n, rank, dt, args.seed + n + rank)
                base = {"n": n, "rank_true": rank, "dtype": dt, "eps": args.eps,
                        "delta": args.delta}
                quic_rank = rank
                for meth in args.methods:
                    rec = dict(base, method=meth)
                    if meth == "exact" and n > args.exact_max:
                        rec["skipped"] = f"n > --exact-max {args.exact_max}"
                        payload["records"].append(rec)
                        continue
                    given = rank if (meth == "torch_lowrank" and args.torch_true_rank) \
                        else quic_rank
                    try:
                        fn, extract = runner(meth, a, given, args.eps, args.delta)
                        left = max(deadline - time.perf_counter(), 1.0)
                        timing = common.time_gpu(fn, warmup=1, repeat=args.repeat,
                                                 max_seconds=min(args.case_seconds, left))
                        u, s, vh = extract(timing.result)
                        rec.update(median_s=timing.median, times_s=timing.times,
                                   rank=int(s.shape[0]), error=true_error(a, u, s, vh))
                        if meth == "quic":
                            quic_rank = max(int(timing.result.rank), 1)
                            rec["error_bound"] = timing.result.error_bound
                            rec["basis_size"] = timing.result.basis_size
                    except Exception as exc:  # keep going: one failure is one record
                        rec["error_message"] = f"{type(exc).__name__}: {exc}"[:400]
                    timing = fn = extract = None
                    common.free_gpu_memory()
                    payload["records"].append(rec)
                    print(f"{n:>6} r{rank:<5}{dt:<8}{meth:<14}"
                          f"{rec.get('median_s', float('nan')):>9.4g}s rank {rec.get('rank')}"
                          f" err {rec.get('error', float('nan')):.2e}"
                          f" {rec.get('error_message', '')}", flush=True)
                    save()
                del a
                cp.get_default_memory_pool().free_all_blocks()


def _tunable_specs(specs):
    """``["quic_stream_depth=2,quic_reader_threads=16", ""]`` -> list of override dicts."""
    out = []
    for spec in specs:
        pairs = [item.split("=", 1) for item in spec.split(",") if item]
        out.append({k: _type_of(k)(v) for k, v in pairs} if pairs else {})
    return out


def _type_of(name):
    _import_gpusvd()
    from gpusvd._core import tunables
    return type(getattr(tunables.get(), name))


def _streamed(source, args, nbytes, label, payload, save, bandwidth):
    """Decompose an out-of-core ``source`` once per ``--ooc-tunables`` setting; record
    throughput against ``bandwidth``."""
    _import_gpusvd()
    from gpusvd._core import tunables
    for override in _tunable_specs(args.ooc_tunables):
        with tunables.override(**override):
            _streamed_once(source, args, nbytes,
                           " ".join([label] + [f"{k}={v}" for k, v in override.items()]),
                           payload, save, bandwidth)


def _streamed_once(source, args, nbytes, label, payload, save, bandwidth):
    gpusvd = _import_gpusvd()
    from gpusvd._core import profile
    t0 = time.perf_counter()
    with profile.recording() as phases:
        r = gpusvd.svd_lowrank(source, args.eps, args.delta, seed=0, device="gpu",
                               progress=args.progress)
    wall = time.perf_counter() - t0
    streamed = phases.get("quic_grow", 0.0) + phases.get("quic_project", 0.0)
    achieved = r.passes * nbytes / streamed / 1e9 if streamed else float("nan")
    rec = {"mode": label, "bytes": nbytes, "rank": r.rank, "error_bound": r.error_bound,
           "partitions": r.partitions, "passes": r.passes, "wall_s": wall,
           "phases_s": dict(phases), "achieved_GBps": achieved,
           "pinned_GBps": bandwidth, "fraction_of_pinned": achieved / bandwidth}
    payload["records"].append(rec)
    save()
    print(f"{label}: {nbytes / 1e9:.1f} GB rank {r.rank} err<={r.error_bound:.2e} "
          f"{r.partitions} partitions, {r.passes} passes, {wall:.1f} s; "
          f"{achieved:.1f} GB/s = {100 * achieved / bandwidth:.0f}% of pinned "
          f"{bandwidth:.1f} GB/s", flush=True)


def out_of_core(args, payload, save):
    import numpy as np
    bandwidth = pinned_bandwidth()
    payload["pinned_GBps"] = bandwidth
    if args.ooc_host:
        m, n = (int(x) for x in args.ooc_host.lower().split("x"))
        rng = np.random.default_rng(args.seed)
        g = rng.uniform(-1, 1, (m, args.ooc_rank)).astype(np.float32)
        h = rng.uniform(-1, 1, (args.ooc_rank, n)).astype(np.float32)
        a = np.empty((m, n), np.float32)
        for r0 in range(0, m, 8192):
            np.matmul(g[r0:r0 + 8192], h, out=a[r0:r0 + 8192])
        _streamed(a, args, a.nbytes, "host", payload, save, bandwidth)
        del a
    if args.ooc_disk:
        n = int(math.sqrt(args.ooc_gb * 1e9 / 4))
        if not os.path.exists(args.ooc_disk):
            rng = np.random.default_rng(args.seed + 1)
            h = rng.uniform(-1, 1, (args.ooc_rank, n)).astype(np.float32)
            mm = np.lib.format.open_memmap(args.ooc_disk, "w+", np.float32, (n, n))
            for r0 in range(0, n, 8192):
                g = rng.uniform(-1, 1, (min(8192, n - r0), args.ooc_rank))
                mm[r0:r0 + 8192] = g.astype(np.float32) @ h
            mm.flush()
            del mm
        src = np.load(args.ooc_disk, mmap_mode="r")
        _streamed(src, args, src.nbytes, "disk", payload, save, bandwidth)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", nargs="*", type=int, default=[1000, 2000, 4000, 7500, 16384],
                   help="square sizes n (paper: 1000 ... 22000)")
    p.add_argument("--ranks", nargs="*", type=int, default=[100, 500, 1000])
    p.add_argument("--dtypes", nargs="+", default=["float32", "float64"],
                   choices=["float32", "float64"])
    p.add_argument("--methods", nargs="+", default=list(METHODS), choices=list(METHODS))
    p.add_argument("--eps", type=float, default=1e-8)
    p.add_argument("--delta", type=float, default=1e-6)
    p.add_argument("--torch-true-rank", action="store_true",
                   help="give torch.svd_lowrank the true rank, not QUIC's")
    p.add_argument("--exact-max", type=int, default=8192, help="largest n for 'exact'")
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--case-seconds", type=float, default=20.0)
    p.add_argument("--budget", type=float, default=480.0,
                   help="seconds for the whole run; cases past it are recorded as skipped")
    p.add_argument("--seed", type=int, default=20261122)
    p.add_argument("--ooc-host", default=None, metavar="MxN",
                   help="out of core from host memory: an M x N float32 matrix")
    p.add_argument("--ooc-disk", default=None, metavar="PATH",
                   help="out of core from disk: a .npy memmap (written if absent)")
    p.add_argument("--ooc-gb", type=float, default=32.0, help="size of --ooc-disk, GB")
    p.add_argument("--ooc-rank", type=int, default=500)
    p.add_argument("--ooc-tunables", nargs="+", default=[""], metavar="K=V[,K=V]",
                   help="run each out-of-core case once per setting of gpusvd tunables, "
                        "e.g. quic_stream_depth=2 quic_stream_depth=8,quic_reader_threads=16")
    p.add_argument("--progress", action="store_true", help="progress bars (out of core)")
    default_out = os.path.join(os.environ["OUT"], "quic.json") if os.environ.get("OUT") \
        else os.path.join(_HERE, "results", "quic.json")
    p.add_argument("--out", default=default_out, help="JSON output path")
    args = p.parse_args(argv)

    t_start = time.perf_counter()
    deadline = t_start + args.budget
    payload = {"schema": SCHEMA, "benchmark": "quic", "device_info": common.device_info(),
               "args": vars(args), "records": [], "complete": False,
               "units": {"error": "||A - U diag(S) Vh||_F^2 / ||A||_F^2, float64",
                         "times": "seconds after device synchronization"}}

    def save():
        payload["elapsed_s"] = time.perf_counter() - t_start
        common.write_json(args.out, payload)

    if args.ooc_host or args.ooc_disk:
        out_of_core(args, payload, save)
    else:
        in_core(args, payload, save, deadline)
    payload["complete"] = True
    save()
    print(f"# {len(payload['records'])} records in {time.perf_counter() - t_start:.1f} s "
          f"-> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

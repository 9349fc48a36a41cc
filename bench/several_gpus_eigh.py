#!/usr/bin/env python3
"""The Hermitian eigendecomposition of the polar method's H on 1, 2, 4 … GPUs of one host:
cuSOLVERMg's syevd against cuSOLVER's syevd on one GPU.

The question: how much of the eigendecomposition, the largest step of the polar SVD at
16384² (3.8 of 7.5 s on one GPU), do the GPUs of one host take off, through the
multi-GPU engine that ships with cuSOLVER (``libcusolverMg``, one process driving every
GPU)? Before any of it is wired into ``gpusvd.distributed.svd``.

For each n and GPU count g, one Gaussian symmetric float64 H = (G + Gᵀ)/2 on GPU 0:

==============  ==========================================================================
syevd           ``cupy.linalg.eigh(H)`` on GPU 0
mg_<g>          ``cusolverMgSyevd`` on GPUs 0 … g−1: H's columns in a 1-D block-cyclic
                layout of ``--tile`` columns (the layout cuSOLVERMg's syevd takes), copied
                from GPU 0 to each GPU's tiles and the eigenvectors back (peer copies),
                timed with the copies (``seconds``) and without (``solver_seconds``)
==============  ==========================================================================

Accuracy of every result on GPU 0 in float64: ‖H·V − V·Λ‖_F / (‖H‖_F·n·ε) and
‖VᵀV − I‖_F / (n·ε). Run in one process on a machine of several GPUs (no MPI)::

    PYTHONPATH=src python3 bench/several_gpus_eigh.py --sizes 8192 16384 --gpus 1 2 4 \\
        --out "$OUT/several_gpus_eigh.json"
"""

from __future__ import annotations

import argparse
import ctypes
import glob
import os
import sys
import time

import numpy as np

_HERE = os.path.dirname(os.path.abspath(__file__))
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)

import common  # noqa: E402

SCHEMA = "gpusvd-bench-several-gpus-eigh/1"
_VOID, _INT, _I64 = ctypes.c_void_p, ctypes.c_int, ctypes.c_int64
_CUDA_R_64F = 1
_EIG_MODE_VECTOR, _LOWER, _GRID_COL_MAJOR = 1, 0, 0


def _library():
    """libcusolverMg: by its soname, else from the NVIDIA wheels beside CuPy's."""
    for name in ("libcusolverMg.so.12", "libcusolverMg.so.11", "libcusolverMg.so"):
        try:
            return ctypes.CDLL(name)
        except OSError:
            pass
    for root in sys.path:
        for path in sorted(glob.glob(os.path.join(root, "nvidia", "*", "lib",
                                                  "libcusolverMg.so*"))):
            return ctypes.CDLL(path)
    raise OSError("libcusolverMg not found (the nvidia-cusolver wheel ships it)")


def _check(status, what):
    if status != 0:
        raise RuntimeError(f"{what} returned status {status}")


class MultiGpuEigh:
    """cusolverMgSyevd on ``devices``: H (on the current GPU) in, (λ, V) out on it."""

    def __init__(self, devices, tile):
        import cupy as cp

        self.cp, self.lib, self.devices, self.tile = cp, _library(), list(devices), tile
        for d in self.devices:      # peer access between every pair, as cuSOLVERMg needs
            with cp.cuda.Device(d):
                for peer in self.devices:
                    if peer != d and cp.cuda.runtime.deviceCanAccessPeer(d, peer):
                        try:
                            cp.cuda.runtime.deviceEnablePeerAccess(peer)
                        except cp.cuda.runtime.CUDARuntimeError:
                            pass    # already enabled
        self.handle = _VOID()
        _check(self.lib.cusolverMgCreate(ctypes.byref(self.handle)), "cusolverMgCreate")
        ids = (_INT * len(self.devices))(*self.devices)
        _check(self.lib.cusolverMgDeviceSelect(self.handle, _INT(len(self.devices)), ids),
               "cusolverMgDeviceSelect")
        self.grid = _VOID()
        _check(self.lib.cusolverMgCreateDeviceGrid(ctypes.byref(self.grid), 1,
                                                   len(self.devices), ids, _GRID_COL_MAJOR),
               "cusolverMgCreateDeviceGrid")

    def _blocks(self, n):
        """(device index, local block, global block) of every tile of n columns."""
        count = -(-n // self.tile)
        return [(b % len(self.devices), b // len(self.devices), b) for b in range(count)]

    def prepare(self, n):
        """Each device's local columns (C-ordered: a row per local column, n long), the
        descriptor and the workspace for order n."""
        cp, p = self.cp, len(self.devices)
        count = -(-n // self.tile)
        self.local = []
        for i, d in enumerate(self.devices):
            mine = len(range(i, count, p))
            with cp.cuda.Device(d):
                self.local.append(cp.zeros((max(mine, 1) * self.tile, n), np.float64))
        self.desc = _VOID()
        _check(self.lib.cusolverMgCreateMatrixDesc(ctypes.byref(self.desc), _I64(n), _I64(n),
                                                   _I64(n), _I64(self.tile), _CUDA_R_64F,
                                                   self.grid), "cusolverMgCreateMatrixDesc")
        self.pointers = (_VOID * p)(*[a.data.ptr for a in self.local])
        self.w = np.empty(n, np.float64)
        lwork = _I64(0)
        _check(self.lib.cusolverMgSyevd_bufferSize(
            self.handle, _EIG_MODE_VECTOR, _LOWER, _INT(n), self.pointers, _INT(1), _INT(1),
            self.desc, self.w.ctypes.data_as(_VOID), _CUDA_R_64F, _CUDA_R_64F,
            ctypes.byref(lwork)), "cusolverMgSyevd_bufferSize")
        self.work = []
        for d in self.devices:
            with cp.cuda.Device(d):
                self.work.append(cp.empty(max(lwork.value, 1), np.float64))
        self.work_pointers = (_VOID * p)(*[w.data.ptr for w in self.work])
        self.lwork, self.n = lwork.value, n

    def scatter(self, h):
        """H's tiles to their devices (H symmetric: its rows are its columns)."""
        t = self.tile
        for i, lb, b in self._blocks(self.n):
            rows = min(t, self.n - b * t)
            self.local[i][lb * t:lb * t + rows].data.copy_from_device(
                h[b * t:b * t + rows].data, rows * self.n * 8)

    def solve(self):
        info = _INT(0)
        _check(self.lib.cusolverMgSyevd(
            self.handle, _EIG_MODE_VECTOR, _LOWER, _INT(self.n), self.pointers, _INT(1),
            _INT(1), self.desc, self.w.ctypes.data_as(_VOID), _CUDA_R_64F, _CUDA_R_64F,
            self.work_pointers, _I64(self.lwork), ctypes.byref(info)), "cusolverMgSyevd")
        return info.value

    def gather(self, v):
        """The eigenvectors back into ``v`` (C-ordered: row j is vector j)."""
        t = self.tile
        for i, lb, b in self._blocks(self.n):
            rows = min(t, self.n - b * t)
            v[b * t:b * t + rows].data.copy_from_device(
                self.local[i][lb * t:lb * t + rows].data, rows * self.n * 8)
        return v

    def synchronize(self):
        for d in self.devices:
            self.cp.cuda.Device(d).synchronize()


def _accuracy(h, lam, vectors):
    import cupy as cp

    n = h.shape[0]
    eps = float(np.finfo(np.float64).eps)
    residual = cp.linalg.norm(h @ vectors - vectors * lam) / (cp.linalg.norm(h) * n * eps)
    orth = cp.linalg.norm(vectors.T @ vectors - cp.eye(n)) / (n * eps)
    return {"residual": float(residual), "orthogonality": float(orth)}


def run_case(n, gpus, tile, repeat, seed):
    import cupy as cp

    rng = np.random.default_rng(seed)
    g = cp.asarray(rng.standard_normal((n, n)))
    h = (g + g.T) * 0.5
    del g
    rec = {"n": n, "dtype": "float64", "runs": {}}
    timing = common.time_gpu(lambda: cp.linalg.eigh(h), warmup=1, repeat=repeat)
    lam, v = timing.result
    rec["runs"]["syevd"] = {"seconds": timing.median, **_accuracy(h, lam, v)}
    del lam, v, timing
    for count in gpus:
        solver = MultiGpuEigh(range(count), tile)
        solver.prepare(n)
        v = cp.empty((n, n), np.float64)
        times, solver_times, info = [], [], None
        for _ in range(repeat + 1):     # the first call is the warm-up
            solver.synchronize()
            start = time.perf_counter()
            solver.scatter(h)
            solver.synchronize()
            middle = time.perf_counter()
            info = solver.solve()
            solver.synchronize()
            end = time.perf_counter()
            solver.gather(v)
            solver.synchronize()
            times.append(time.perf_counter() - start)
            solver_times.append(end - middle)
        run = {"seconds": float(np.median(times[1:])),
               "solver_seconds": float(np.median(solver_times[1:])), "info": info,
               **_accuracy(h, cp.asarray(solver.w), v.T)}
        run["speedup"] = rec["runs"]["syevd"]["seconds"] / run["seconds"]
        rec["runs"][f"mg_{count}"] = run
        del solver, v
    return rec


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", type=int, nargs="+", default=[8192, 16384])
    p.add_argument("--gpus", type=int, nargs="+", default=None,
                   help="GPU counts to run (default: 1 and every GPU)")
    p.add_argument("--tile", type=int, default=256, help="columns per tile of the layout")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--seed", type=int, default=20261128)
    p.add_argument("--out", default="several_gpus_eigh.json")
    args = p.parse_args()
    import cupy as cp

    available = cp.cuda.runtime.getDeviceCount()
    gpus = sorted(set(args.gpus or [1, available]))
    if max(gpus) > available:
        raise SystemExit(f"--gpus {gpus}: this machine has {available} GPUs")
    payload = {"schema": SCHEMA, "device_info": common.device_info(), "args": vars(args),
               "gpus": gpus, "cases": []}
    for n in args.sizes:
        try:
            rec = run_case(n, gpus, args.tile, args.repeat, args.seed + n)
        except Exception as exc:   # recorded; the next size still runs
            rec = {"n": n, "error": common.short_error(exc)}
        payload["cases"].append(rec)
        common.write_json(args.out, payload)
        print(f"n={n}: " + (rec["error"] if "error" in rec else ", ".join(
            f"{k} {r['seconds']:.3f} s (res {r['residual']:.2f}, orth "
            f"{r['orthogonality']:.2f})" for k, r in rec["runs"].items())), flush=True)
        common.free_gpu_memory()


if __name__ == "__main__":
    main()

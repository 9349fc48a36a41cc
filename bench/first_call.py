"""The first call of every public function in a fresh process.

Each (function, device, cache state) runs in its own interpreter, which times its import,
its first call and a second one, and counts what it compiled: gpusvd's Numba functions
(compile events), CuPy's NVRTC compilations (its own elementwise kernels, and ours when a
shipped binary was not used) and how each gpusvd kernel file was loaded.

Cache states, each with its own temporary NUMBA_CACHE_DIR and CUPY_CACHE_DIR:
  empty        nothing cached; the shipped CUDA binaries are used (the package's state
               after ``pip install`` without the precompile step)
  nvrtc        empty, and GPUSVD_KERNELS=nvrtc: every gpusvd kernel compiled at run time
               (the state before the binaries shipped); GPU only
  precompiled  Numba's and CuPy's caches filled by ``gpusvd precompile`` (timed once):
               a clean install with the install-time step of the README
  warm         both caches filled by an earlier process making the same call

Targets (docs/design.md, "Ceilings and targets"): first call <= 2 s on the GPU; <= 1 s of
compilation on the CPU (first call minus second).

    python bench/first_call.py --device cpu --out bench/results/cold_start_cpu.json
    python bench/first_call.py --device gpu --out bench/results/cold_start_h100.json
"""

import argparse
import json
import os
import pathlib
import platform
import subprocess
import sys
import tempfile
import time

FUNCTIONS = ("svd_gr", "svd_jacobi", "svd_polar", "svdvals", "jacobi_svd", "hsvd",
             "eigh_factored", "takagi", "svd_lowrank")
STATES = {"cpu": ("empty", "precompiled", "warm"),
          "gpu": ("nvrtc", "empty", "precompiled", "warm")}

# The child: one first call, measured. argv: function, device, n.
CHILD = r"""
import json, sys, time
t0 = time.perf_counter()
import numpy as np
import gpusvd
from gpusvd._core import kernels
from gpusvd._core.precompile import jit_compilations
t_import = time.perf_counter() - t0
name, device, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
nvrtc = []
if device == "gpu":
    import cupy
    from cupy.cuda import compiler
    original = compiler.compile_using_nvrtc
    def timed(*args, **kwargs):
        start = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            nvrtc.append(time.perf_counter() - start)
    compiler.compile_using_nvrtc = timed
    xp, sync = cupy, cupy.cuda.Device().synchronize
    cupy.cuda.Device().synchronize()
else:
    xp, sync = np, lambda: None
rng = np.random.default_rng(0)
m = n + n // 2
a = xp.asarray(rng.standard_normal((m, n)))
signs = xp.asarray(np.where(np.arange(n) < n // 2, 1.0, -1.0))
k = n // 2
z = rng.standard_normal((k, k)) + 1j * rng.standard_normal((k, k))
sym = xp.asarray(z + z.T)
low = xp.asarray(rng.standard_normal((2 * n, 20)) @ rng.standard_normal((20, n)))
calls = {
    "svd_gr": lambda: gpusvd.svd(a, method="gr"),
    "svd_jacobi": lambda: gpusvd.svd(a, method="jacobi"),
    "svd_polar": lambda: gpusvd.svd(a, method="polar"),
    "svdvals": lambda: gpusvd.svdvals(a),
    "jacobi_svd": lambda: gpusvd.jacobi_svd(a),
    "hsvd": lambda: gpusvd.hsvd(a, signs),
    "eigh_factored": lambda: gpusvd.eigh_factored(a, signs),
    "takagi": lambda: gpusvd.takagi(sym),
    "svd_lowrank": lambda: gpusvd.svd_lowrank(low, eps=1e-6),
}
call = calls[name]
with jit_compilations() as numba_compiled:
    t0 = time.perf_counter(); call(); sync(); first = time.perf_counter() - t0
t0 = time.perf_counter(); call(); sync(); second = time.perf_counter() - t0
print(json.dumps({"import_s": t_import, "first_s": first, "second_s": second,
                  "numba_compiled": len(numba_compiled),
                  "nvrtc_compiles": len(nvrtc), "nvrtc_s": sum(nvrtc),
                  "kernel_files": {f"{r}@{d}": o for (r, d), o in kernels.LOADED.items()}}))
"""


def _env(numba_cache, cupy_cache, nvrtc):
    env = {**os.environ, "NUMBA_CACHE_DIR": str(numba_cache),
           "CUPY_CACHE_DIR": str(cupy_cache)}
    env.pop("GPUSVD_KERNELS", None)
    if nvrtc:
        env["GPUSVD_KERNELS"] = "nvrtc"
    return env


def _child(function, device, n, env):
    run = subprocess.run([sys.executable, "-c", CHILD, function, device, str(n)],
                         capture_output=True, text=True, env=env, timeout=900)
    if run.returncode != 0:
        return {"error": (run.stderr or run.stdout).strip().splitlines()[-1]}
    return json.loads(run.stdout.strip().splitlines()[-1])


def _precompile(numba_cache):
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "gpusvd", "precompile"], check=True,
                   capture_output=True, env=_env(numba_cache, numba_cache, False),
                   timeout=3600)
    return time.perf_counter() - start


def measure(device, n, functions, states):
    rows, precompile_s = [], None
    with tempfile.TemporaryDirectory() as root:
        root = pathlib.Path(root)
        prepared = root / "numba-precompiled"
        if "precompiled" in states:
            precompile_s = _precompile(prepared)
        for function in functions:
            for state in states:
                numba = root / f"{function}-{state}-numba"
                cupy_cache = root / f"{function}-{state}-cupy"
                cupy_cache.mkdir()
                if state == "precompiled":
                    numba = cupy_cache = prepared
                env = _env(numba, cupy_cache, state == "nvrtc")
                if state == "warm":
                    _child(function, device, n, env)
                row = {"function": function, "device": device, "state": state, "n": n,
                       **_child(function, device, n, env)}
                rows.append(row)
                _print_row(row)
    return rows, precompile_s


def _print_row(row):
    if "error" in row:
        print(f"{row['function']:14s} {row['device']:4s} {row['state']:12s} error: "
              f"{row['error']}", flush=True)
        return
    print(f"{row['function']:14s} {row['device']:4s} {row['state']:12s} "
          f"{row['import_s']:7.2f} {row['first_s']:8.2f} {row['second_s']:8.3f} "
          f"{row['first_s'] - row['second_s']:9.2f} {row['numba_compiled']:6d} "
          f"{row['nvrtc_compiles']:6d} {row['nvrtc_s']:7.2f} "
          f"{sum(o == 'shipped' for o in row['kernel_files'].values())}/"
          f"{len(row['kernel_files'])}", flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", choices=("cpu", "gpu", "both"), default="both")
    parser.add_argument("--n", type=int, default=0,
                        help="columns (rows 1.5 n); default 200 on the CPU, 1000 on the GPU")
    parser.add_argument("--functions", nargs="+", default=FUNCTIONS, choices=FUNCTIONS)
    parser.add_argument("--states", nargs="+", default=None,
                        choices=("empty", "nvrtc", "precompiled", "warm"),
                        help="cache states to run (default: all of the device's)")
    parser.add_argument("--out", type=pathlib.Path, help="JSON file for the results")
    args = parser.parse_args()
    devices = ("cpu", "gpu") if args.device == "both" else (args.device,)
    print(f"{'function':14s} {'dev':4s} {'caches':12s} {'import':>7s} {'first':>8s} "
          f"{'second':>8s} {'overhead':>9s} {'numba':>6s} {'nvrtc':>6s} {'nvrtc_s':>7s} "
          f"shipped")
    result = {"date": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "machine": platform.node(),
              "cpus": os.cpu_count(), "python": platform.python_version(), "runs": []}
    for device in devices:
        n = args.n or (1000 if device == "gpu" else 200)
        states = [s for s in STATES[device] if not args.states or s in args.states]
        rows, precompile_s = measure(device, n, args.functions, states)
        result["runs"] += rows
        result[f"precompile_s_{device}"] = precompile_s
        if precompile_s is not None:
            print(f"precompile step ({device} run): {precompile_s:.1f} s")
    if "gpu" in devices:
        import cupy
        result["gpu"] = cupy.cuda.runtime.getDeviceProperties(0)["name"].decode()
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()

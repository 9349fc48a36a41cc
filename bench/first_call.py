"""The first call of every public function in a fresh process.

Each (function, device, cache state) runs in its own interpreter, which times its import,
its first call and a second one, and counts what it compiled: gpusvd's Numba functions
(compile events), CuPy's NVRTC compilations (its own elementwise kernels, and ours when a
shipped binary was not used) and how each gpusvd kernel file was loaded.

Cases: each public function at ``--n``; ``svd`` of the shapes a user's first call meets
on each path ``auto`` takes (``SHAPES``: one matrix, stacks of 32² to 512², a tall
matrix); ``many_small``: 140 distinct small LAPACK test matrices (xDRVBD's types, sizes
1-60, square, tall and wide, the four dtypes), NumPy input, in one process. Each row
names the kernels NVRTC compiled during the first call, and the Numba functions.

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
    python bench/first_call.py --device gpu --states precompiled empty \
        --functions stack_2000x128_float32 many_small
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
# The shapes a user's first call meets on each path "auto" takes (svd, economy).
SHAPES = {"one_300_float64": ((300, 300), "float64"),
          "one_300_float32": ((300, 300), "float32"),
          "stack_2000x128_float32": ((2000, 128, 128), "float32"),
          "stack_2000x128_float64": ((2000, 128, 128), "float64"),
          "stack_1000x128_complex128": ((1000, 128, 128), "complex128"),
          "stack_200x512_float64": ((200, 512, 512), "float64"),
          "stack_20000x32_float32": ((20000, 32, 32), "float32"),
          "tall_200000x256_float32": ((200000, 256), "float32")}
CASES = FUNCTIONS + tuple(SHAPES) + ("many_small",)
STATES = {"cpu": ("empty", "precompiled", "warm"),
          "gpu": ("nvrtc", "empty", "precompiled", "warm")}

# The child: one first call, measured. argv: case, device, n.
CHILD = r"""
import json, re, sys, time
t0 = time.perf_counter()
import numpy as np
import gpusvd
from gpusvd import testing
from gpusvd._core import kernels
from gpusvd._core.precompile import jit_compilations
t_import = time.perf_counter() - t0
name, device, n, shapes = sys.argv[1], sys.argv[2], int(sys.argv[3]), json.loads(sys.argv[4])
nvrtc = []
if device == "gpu":
    import cupy
    from cupy.cuda import compiler
    # CuPy's cached compilation calls the first where it has it (CuPy 14), else the second
    hook = next(n for n in ("_compile_using_nvrtc_no_warning", "compile_using_nvrtc")
                if hasattr(compiler, n))
    original = getattr(compiler, hook)
    def timed(*args, **kwargs):
        start = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            names = re.findall(r"__global__\s+void\s+(\w+)", str(args[0])) or ["?"]
            nvrtc.append((names[0], time.perf_counter() - start))
    setattr(compiler, hook, timed)
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
if name in shapes:
    shape, dtype = shapes[name]
    x = rng.standard_normal(shape)
    if dtype.startswith("complex"):
        x = x + 1j * rng.standard_normal(shape)
    x = xp.asarray(x.astype(dtype))
    calls[name] = lambda: gpusvd.svd(x, full_matrices=False)
kinds = ("zero", "identity", "evenly_spaced", "near_underflow", "near_overflow")
small = []  # many_small: 140 distinct small shapes, NumPy input computed on the device
sizes = (1, 2, 3, 4, 5, 7, 8, 10, 13, 16, 20, 25, 31, 40, 45, 50, 60)
pairs = [(p, q) for p in sizes for q in sizes if p >= q][::-1]
for i, dtype in enumerate(("float32", "float64", "complex64", "complex128")):
    for j, (p, q) in enumerate(pairs[i::4][:35]):
        shape = (p, q) if j % 3 else (q, p)
        small.append(testing.lapack_type(kinds[j % 5], *shape, dtype=dtype, seed=j))
def many():
    for b in small:
        gpusvd.svd(b, device=device)
calls["many_small"] = many
call = calls[name]
with jit_compilations() as numba_compiled:
    t0 = time.perf_counter(); call(); sync(); first = time.perf_counter() - t0
t0 = time.perf_counter(); call(); sync(); second = time.perf_counter() - t0
compiled = {}
for kernel, seconds in nvrtc:
    compiled[kernel] = compiled.get(kernel, 0.0) + seconds
print(json.dumps({"import_s": t_import, "first_s": first, "second_s": second,
                  "numba_compiled": len(numba_compiled),
                  "numba_names": sorted(set(numba_compiled)),
                  "nvrtc_compiles": len(nvrtc), "nvrtc_s": sum(s for _, s in nvrtc),
                  "nvrtc_kernels": compiled, "calls": len(small) if name == "many_small" else 1,
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
    run = subprocess.run([sys.executable, "-c", CHILD, function, device, str(n),
                          json.dumps(SHAPES)],
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
    compiled = sorted(row["nvrtc_kernels"].items(), key=lambda kv: -kv[1])
    if compiled:
        print("    compiled: " + ", ".join(f"{k} {s:.2f}" for k, s in compiled[:12]),
              flush=True)
    if row["numba_names"]:
        print("    numba: " + ", ".join(row["numba_names"][:8]), flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", choices=("cpu", "gpu", "both"), default="both")
    parser.add_argument("--n", type=int, default=0,
                        help="columns (rows 1.5 n); default 200 on the CPU, 1000 on the GPU")
    parser.add_argument("--functions", nargs="+", default=FUNCTIONS, choices=CASES,
                        help="public functions (at --n), svd of the SHAPES each path of "
                             "'auto' meets, and many_small: 140 small LAPACK test "
                             "matrices of every dtype in one process")
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

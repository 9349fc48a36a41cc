"""Shared helpers for the benchmarks in ``bench/``: timing, device facts, JSON, accuracy.

Nothing here imports CuPy, PyTorch or JAX at module level, so the benchmark scripts can
be imported (and their ``--help`` read) on a machine without a GPU.

Timing follows the workplace's method: synchronize the device before and after every
call, read ``time.perf_counter`` only after synchronization, warm up first (module load,
NVRTC compilation, JIT tracing, handle and workspace creation stay out of the numbers),
repeat, report the median and keep every sample.

Accuracy is measured on the GPU with CuPy in float64, whatever the method's dtype, and
is reported in units of the method's own machine epsilon (``numpy.finfo(dtype).eps``):

* residual       ``‖A − U diag(S) Vh‖_F / (‖A‖_F · max(m, n) · ε)``
* orthogonality  ``max(‖Uᴴ U − I‖_F, ‖Vh Vhᴴ − I‖_F) / (k · ε)``; ``orthogonality_v_2norm``
  is ‖VᵀV − I‖₂ itself (power iteration)
* sv_error       ``max_i |S_i − S_ref,i| / (S_ref,0 · ε)`` against a float64 reference

with ``k = min(m, n)``: the units of :mod:`gpusvd.testing.metrics`, which defines them
for the whole project (results written before 2026-11-25 divided the residual by
k·ε; ``residual_unit`` in each record says which). Values of order 1 to 10 are what a
backward-stable SVD gives; the raw (unnormalized) numbers are kept alongside.
"""

from __future__ import annotations

import datetime
import json
import math
import os
import platform
import subprocess
import sys
import time
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np


# --------------------------------------------------------------------------- timing

def short_error(exc: BaseException, limit: int = 400) -> str:
    """One line for a JSON record or a log: the exception's type and message, cut."""
    s = f"{type(exc).__name__}: {exc}".replace("\n", " ")
    return s if len(s) <= limit else s[: limit - 3] + "..."


def synchronize() -> None:
    """Wait for all work queued on the current CUDA device by CuPy and PyTorch.

    Only frameworks that are already imported are touched (no import happens here).
    ``cudaDeviceSynchronize`` (CuPy's ``Device.synchronize``) waits for every stream of
    the device in this process, JAX's included; torch's synchronize is added as asked.
    """
    cp = sys.modules.get("cupy")
    if cp is not None:
        cp.cuda.Device().synchronize()
    torch = sys.modules.get("torch")
    if torch is not None:
        try:
            if torch.cuda.is_available() and torch.cuda.is_initialized():
                torch.cuda.synchronize()
        except Exception:  # a torch without CUDA: nothing to wait for
            pass


@dataclass
class Timing:
    median: float                 # seconds, median of ``times``
    times: list[float]            # every timed call, seconds, in order
    warmup_times: list[float]     # the untimed warm-up calls, seconds
    result: Any = field(default=None, repr=False)   # what the last call returned
    stopped_early: bool = False   # fewer than ``repeat`` timed calls (budget reached)

    @property
    def total(self) -> float:
        return sum(self.times) + sum(self.warmup_times)


def time_gpu(fn: Callable[[], Any], *, warmup: int = 1, repeat: int = 5,
             max_seconds: float = 60.0, sync: Callable[[], None] = synchronize) -> Timing:
    """Median wall time of ``fn()`` on the GPU, synchronized around each call.

    ``warmup`` untimed calls come first (their times are returned, not counted). Then up
    to ``repeat`` timed calls; after each, if the time spent so far in the timed loop plus
    one more call (the last one's time) would pass ``max_seconds``, repetition stops
    early. At least one timed call is made.
    ``fn``'s exceptions propagate. The last call's return value is kept in ``.result``
    (earlier results are dropped before the next call so memory pools can reuse them).
    """
    warm: list[float] = []
    out = None
    for _ in range(max(0, warmup)):
        out = None
        sync()
        t0 = time.perf_counter()
        out = fn()
        sync()
        warm.append(time.perf_counter() - t0)
    times: list[float] = []
    stopped = False
    t_begin = time.perf_counter()
    for i in range(max(1, repeat)):
        out = None
        sync()
        t0 = time.perf_counter()
        out = fn()
        sync()
        times.append(time.perf_counter() - t0)
        spent = time.perf_counter() - t_begin
        if i + 1 < repeat and spent + times[-1] > max_seconds:
            stopped = True
            break
    return Timing(float(np.median(times)), times, warm, out, stopped)


# --------------------------------------------------------------------------- device facts

def _version(modname: str) -> str | None:
    try:
        from importlib.metadata import version
        return version(modname)
    except Exception:
        mod = sys.modules.get(modname)
        return getattr(mod, "__version__", None) if mod else None


def _fmt_cuda_version(v: int) -> str:
    return f"{v // 1000}.{(v % 1000) // 10}"


def _git_revision(start: str) -> str | None:
    """The checked-out commit, read from ``.git`` files (no git command is run)."""
    d = os.path.abspath(start)
    while True:
        head = os.path.join(d, ".git", "HEAD")
        if os.path.isfile(head):
            try:
                ref = open(head).read().strip()
                if ref.startswith("ref: "):
                    p = os.path.join(d, ".git", ref[5:])
                    if os.path.isfile(p):
                        return open(p).read().strip()
                    packed = os.path.join(d, ".git", "packed-refs")
                    if os.path.isfile(packed):
                        for line in open(packed):
                            if line.strip().endswith(ref[5:]):
                                return line.split()[0]
                    return ref
                return ref
            except OSError:
                return None
        parent = os.path.dirname(d)
        if parent == d:
            return None
        d = parent


def device_info(device: int = 0) -> dict:
    """GPU name, driver/runtime versions, library versions, host and date.

    Every field is best effort: a failure is recorded as a string, never raised.
    """
    info: dict[str, Any] = {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "host": platform.node(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "cpu_count": os.cpu_count(),
        "git_commit": _git_revision(os.path.dirname(os.path.abspath(__file__))),
        "versions": {},
    }
    for name in ("numpy", "scipy", "cupy", "cupy-cuda13x", "cupy-cuda12x", "torch",
                 "jax", "jaxlib", "jax-cuda13-plugin", "jax-cuda12-plugin", "gpusvd"):
        v = _version(name)
        if v is not None:
            info["versions"][name] = v
    try:
        import cupy as cp
        rt = cp.cuda.runtime
        props = rt.getDeviceProperties(device)
        name = props["name"]
        info["gpu"] = name.decode() if isinstance(name, bytes) else str(name)
        info["gpu_index"] = device
        info["gpu_memory_bytes"] = int(props.get("totalGlobalMem", 0))
        info["multiprocessors"] = int(props.get("multiProcessorCount", 0))
        info["compute_capability"] = f"{props.get('major')}.{props.get('minor')}"
        info["l2_cache_bytes"] = int(props.get("l2CacheSize", 0))
        info["cuda_driver"] = _fmt_cuda_version(rt.driverGetVersion())
        info["cuda_runtime"] = _fmt_cuda_version(rt.runtimeGetVersion())
        info["versions"]["cupy"] = cp.__version__
        try:
            from cupy_backends.cuda.libs import cusolver
            info["cusolver"] = str(cusolver.getVersion())
        except Exception:
            pass
    except Exception as exc:  # no CuPy or no GPU
        info["gpu"] = None
        info["gpu_error"] = f"{type(exc).__name__}: {exc}"
    torch = sys.modules.get("torch")
    if torch is not None:
        info["versions"]["torch"] = torch.__version__
        info["torch_cuda"] = getattr(torch.version, "cuda", None)
    try:
        q = ("name,driver_version,clocks.sm,clocks.mem,clocks.max.sm,temperature.gpu,"
             "power.draw,power.limit,persistence_mode")
        r = subprocess.run(["nvidia-smi", f"--query-gpu={q}", "--format=csv,noheader"],
                           capture_output=True, text=True, timeout=20)
        if r.returncode == 0:
            info["nvidia_smi"] = {"query": q, "rows": r.stdout.strip().splitlines()}
    except Exception:
        pass
    return info


# --------------------------------------------------------------------------- JSON

def _clean(x):
    """JSON-safe copy: NumPy/CuPy scalars to Python, non-finite floats to strings."""
    if isinstance(x, dict):
        return {str(k): _clean(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_clean(v) for v in x]
    if isinstance(x, (bool, np.bool_)):
        return bool(x)
    if isinstance(x, (int, np.integer)):
        return int(x)
    if isinstance(x, (float, np.floating)):
        f = float(x)
        if math.isnan(f):
            return "nan"
        if math.isinf(f):
            return "inf" if f > 0 else "-inf"
        return f
    if isinstance(x, np.ndarray):
        return _clean(x.tolist())
    if x is None or isinstance(x, str):
        return x
    return str(x)


def write_json(path: str, payload: dict) -> None:
    """Write ``payload`` to ``path`` atomically (temporary file, then rename).

    NaN and infinities become the strings ``"nan"``, ``"inf"``, ``"-inf"`` so the file is
    strict JSON; readers treat any non-number as missing.
    """
    path = os.path.abspath(path)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "w") as f:
        json.dump(_clean(payload), f, indent=1, allow_nan=False)
        f.write("\n")
    os.replace(tmp, path)


# --------------------------------------------------------------------------- accuracy

def eps_of(dtype) -> float:
    return float(np.finfo(np.dtype(dtype)).eps)


def to_cupy(x):
    """A CuPy view of ``x`` (CuPy, PyTorch CUDA tensor, JAX GPU array, NumPy...)."""
    import cupy as cp
    if isinstance(x, cp.ndarray):
        return x
    if hasattr(x, "__dlpack__") and not isinstance(x, np.ndarray):
        try:
            return cp.from_dlpack(x)
        except Exception:
            if hasattr(x, "contiguous"):       # a strided torch view: retry dense
                return cp.from_dlpack(x.contiguous())
            if hasattr(x, "is_cuda") and x.is_cuda:
                raise
    return cp.asarray(np.asarray(x))


def _frob(x) -> float:
    import cupy as cp
    return float(cp.linalg.norm(x.ravel()))


def _defect(q, rows: bool):
    """Qᴴ Q − I (columns orthonormal) or Q Qᴴ − I (rows orthonormal)."""
    import cupy as cp
    g = q @ q.conj().T if rows else q.conj().T @ q
    g[cp.diag_indices(g.shape[0])] -= 1
    return g


def _two_norm(g, iterations: int = 40) -> float:
    """‖E‖₂ of a Hermitian defect E by power iteration (a lower estimate that converges to
    the 2-norm; 40 steps from a random start are within a few per cent for the defects
    seen here)."""
    import cupy as cp
    x = cp.random.default_rng(1).standard_normal(g.shape[0]).astype(g.dtype)
    est = 0.0
    for _ in range(iterations):
        nx = float(cp.linalg.norm(x))
        if nx == 0:
            return 0.0
        x = g @ (x / nx)
        est = float(cp.linalg.norm(x))
    return est


def sv_error(s, s_ref, dtype) -> dict:
    """max |s − s_ref| / (s_ref[0]·ε_dtype), plus whether ``s`` is descending."""
    import cupy as cp
    s64 = to_cupy(s).astype(cp.float64).ravel()
    r64 = to_cupy(s_ref).astype(cp.float64).ravel()
    if s64.shape != r64.shape:
        raise ValueError(f"got {s64.size} singular values, expected {r64.size}")
    out = {"sv_error": None, "sv_error_raw": None, "sorted": None}
    if s64.size == 0:
        return out
    raw = float(cp.max(cp.abs(s64 - r64)))
    scale = float(r64[0]) if float(r64[0]) > 0 else 1.0
    out["sv_error_raw"] = raw
    out["sv_error"] = raw / (scale * eps_of(dtype))
    out["sorted"] = bool(cp.all(s64[:-1] >= s64[1:])) if s64.size > 1 else True
    return out


def svd_accuracy(a, u, s, vh, s_ref, dtype) -> dict:
    """Residual, orthogonality and singular value error, computed in float64 on the GPU.

    ``a`` is the matrix the method was given (any dtype; it is upcast exactly), ``u``,
    ``s``, ``vh`` its economy SVD (any array type with DLPack), ``s_ref`` the float64
    reference singular values, ``dtype`` the method's dtype (sets ε).
    """
    import cupy as cp
    a64 = to_cupy(a).astype(cp.float64 if not cp.iscomplexobj(to_cupy(a)) else cp.complex128)
    m, n = a64.shape
    k = min(m, n)
    u64 = to_cupy(u).astype(a64.dtype)
    vh64 = to_cupy(vh).astype(a64.dtype)
    s64 = to_cupy(s).astype(cp.float64)
    if u64.shape != (m, k) or s64.shape != (k,) or vh64.shape != (k, n):
        raise ValueError(f"economy SVD of {m}x{n} expects U {(m, k)}, S {(k,)}, Vh {(k, n)}; "
                         f"got {u64.shape}, {s64.shape}, {vh64.shape}")
    eps = eps_of(dtype)
    kk = max(k, 1)
    norm_a = _frob(a64)
    r = a64 - (u64 * s64[None, :]) @ vh64
    res_raw = _frob(r) / (norm_a if norm_a > 0 else 1.0)
    del r
    v_defect = _defect(vh64, rows=True)                    # VᵀV − I
    orth_raw = max(_frob(_defect(u64, rows=False)), _frob(v_defect))
    out = {
        "residual": res_raw / (max(m, n, 1) * eps),
        "residual_raw": res_raw,
        "residual_unit": "max(m,n)*eps",
        "orthogonality": orth_raw / (kk * eps),
        "orthogonality_raw": orth_raw,
        "orthogonality_v_2norm": _two_norm(v_defect),
        "finite": bool(cp.isfinite(u64).all() and cp.isfinite(s64).all()
                       and cp.isfinite(vh64).all()),
    }
    out.update(sv_error(s64, s_ref, dtype))
    return out


def values_accuracy(s, s_ref, dtype) -> dict:
    """Singular value error only (values-only mode)."""
    import cupy as cp
    out = {"residual": None, "residual_raw": None,
           "orthogonality": None, "orthogonality_raw": None}
    s64 = to_cupy(s).astype(cp.float64)
    out["finite"] = bool(cp.isfinite(s64).all())
    out.update(sv_error(s64, s_ref, dtype))
    return out


def free_gpu_memory() -> None:
    """Return cached blocks of CuPy's pools and PyTorch's allocator to the device."""
    synchronize()
    cp = sys.modules.get("cupy")
    if cp is not None:
        cp.get_default_memory_pool().free_all_blocks()
        cp.get_default_pinned_memory_pool().free_all_blocks()
    torch = sys.modules.get("torch")
    if torch is not None:
        try:
            if torch.cuda.is_available() and torch.cuda.is_initialized():
                torch.cuda.empty_cache()
        except Exception:
            pass

"""``gpusvd bench`` and ``gpusvd info``: gpusvd against its peers on this machine.

``gpusvd bench ALGORITHM --sizes 256 512 --dtype float64`` decomposes one seeded n×n
matrix per size with gpusvd and with the peers that need no extra dependency:

==========  ===========================================================================
algorithm   peers
==========  ===========================================================================
svd         NumPy ``linalg.svd`` (LAPACK gesdd), SciPy ``linalg.svd(lapack_driver=
            "gesvd")``, CuPy ``linalg.svd`` (cuSOLVER gesvd) when a GPU is usable
svdvals     the same, values only
jacobi      ``gpusvd.jacobi_svd`` against the same peers as ``svd``
takagi      NumPy SVD + SciPy ``sqrtm`` (thewalrus's method: U·sqrtm((V·Ū)ᵀ))
lowrank     ``gpusvd.svd_lowrank`` against SciPy ``sparse.linalg.svds`` (ARPACK) and
            NumPy's full SVD truncated, both at the true rank of the test matrix
==========  ===========================================================================

Inputs: ``with_condition(n, n, 1e6)`` (svd, svdvals, jacobi), ``complex_symmetric(n)``
(takagi: a real ``--dtype`` means its complex counterpart), ``low_rank(n, n, n // 10)``
(lowrank), all from :mod:`gpusvd.testing`. Each method runs ``--warmup`` untimed calls
(Numba and NVRTC compilation stay out of the numbers), then ``--repeat`` timed calls,
synchronized around each when a GPU is involved; the median is reported with the
accuracy of the last result: residual and orthogonality in units of n·ε of the dtype, the
singular value error against LAPACK in float64 in units of s_max·ε, and for ``lowrank``
the squared relative Frobenius error (:mod:`gpusvd.testing.metrics`). Where a GPU is usable, gpusvd and CuPy get their input on it.

The results go to a JSON file and, when matplotlib is importable, to a PNG plot beside it
(time and accuracy against n). This module imports neither PyTorch, JAX nor scikit-learn.

It is also the one benchmark harness of the project: ``bench/common.py``, which the
scripts in ``bench/`` use (that folder is not part of the wheel), is a thin layer over
the functions of the first part below. Timing synchronizes the device before and after
every call and reads ``time.perf_counter`` only after synchronization, warms up first
(module load, NVRTC compilation, JIT tracing, handle and workspace creation stay out of
the numbers), repeats, reports the median and keeps every sample. Accuracy is in the
units of :mod:`gpusvd.testing.metrics`, their one definition.
"""

import datetime
import functools
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

import gpusvd
from gpusvd import testing
from gpusvd._core.backend import cupy_or_none, to_host
from gpusvd._core.kernels import REGISTRY

ALGORITHMS = ("svd", "svdvals", "jacobi", "takagi", "lowrank")
COND = 1e6             # condition number of the svd/svdvals/jacobi test matrices
RANK_FRACTION = 10     # lowrank test matrices have rank n // RANK_FRACTION
LOWRANK_EPS = 1e-10    # gpusvd.svd_lowrank's eps in the benchmark (well above rounding)
COMPLEX = {"float32": "complex64", "float64": "complex128"}


# ============================================================================ the harness
# (``gpusvd bench`` and ``bench/common.py``). Nothing here imports CuPy, PyTorch or JAX at
# module level; CuPy and PyTorch are only touched once the caller has imported them.

def short_error(exc: BaseException, limit: int = 400) -> str:
    """One line for a JSON record or a log: the exception's type and message, cut."""
    s = f"{type(exc).__name__}: {exc}".replace("\n", " ")
    return s if len(s) <= limit else s[: limit - 3] + "..."


@functools.lru_cache(maxsize=None)
def _gpu_usable() -> bool:
    return cupy_or_none() is not None


def synchronize() -> None:
    """Wait for all work queued on the current CUDA device by CuPy and PyTorch.

    Only frameworks that are already imported are touched (no import happens here), and
    CuPy only where it sees a device. ``cudaDeviceSynchronize`` (CuPy's
    ``Device.synchronize``) waits for every stream of the device in this process, JAX's
    included; torch's synchronize is added as asked.
    """
    cp = sys.modules.get("cupy")
    if cp is not None and _gpu_usable():
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


def _one_call(fn, sync):
    """(seconds, result) of one call of ``fn``, the device synchronized before and after."""
    sync()
    t0 = time.perf_counter()
    out = fn()
    sync()
    return time.perf_counter() - t0, out


def time_calls(fn: Callable[[], Any], *, warmup: int = 1, repeat: int = 5,
               max_seconds: float = 60.0, sync: Callable[[], None] = synchronize) -> Timing:
    """Median wall time of ``fn()``, the device synchronized around each call.

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
        seconds, out = _one_call(fn, sync)
        warm.append(seconds)
    times: list[float] = []
    stopped = False
    t_begin = time.perf_counter()
    for i in range(max(1, repeat)):
        out = None
        seconds, out = _one_call(fn, sync)
        times.append(seconds)
        spent = time.perf_counter() - t_begin
        if i + 1 < repeat and spent + times[-1] > max_seconds:
            stopped = True
            break
    return Timing(float(np.median(times)), times, warm, out, stopped)


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


# ---------------------------------------------------------------------------- this machine

def _version(name, *, load=False):
    """The version of ``name``: gpusvd's running one, else the installed distribution's,
    else the module's ``__version__`` if it is imported (or, with ``load``, importable);
    None where there is none."""
    if name == "gpusvd":
        return gpusvd.__version__
    try:
        from importlib.metadata import version
        return version(name)
    except Exception:
        pass
    module = sys.modules.get(name)
    if module is None and load:
        try:
            module = __import__(name)
        except Exception:  # not installed, or broken: reported as absent
            return None
    return None if module is None else getattr(module, "__version__", "?")


def _basics() -> dict:
    """Date, platform, Python and CPU count: the facts every record starts with."""
    return {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "platform": platform.platform(),
            "python": platform.python_version(),
            "cpu_count": os.cpu_count()}


def _device_name(props) -> str:
    name = props["name"]
    return name.decode() if isinstance(name, bytes) else str(name)


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
    """GPU name, driver/runtime versions, library versions, host, commit and date (the
    record of the scripts in ``bench/``).

    Every field is best effort: a failure is recorded as a string, never raised. The
    commit is that of the repository holding the gpusvd that runs (None for a wheel).
    """
    info: dict[str, Any] = _basics()
    info.update(host=platform.node(),
                git_commit=_git_revision(os.path.dirname(os.path.abspath(gpusvd.__file__))),
                versions={})
    for name in ("numpy", "scipy", "cupy", "cupy-cuda13x", "cupy-cuda12x", "torch",
                 "jax", "jaxlib", "jax-cuda13-plugin", "jax-cuda12-plugin", "gpusvd"):
        v = _version(name)
        if v is not None:
            info["versions"][name] = v
    try:
        import cupy as cp
        rt = cp.cuda.runtime
        props = rt.getDeviceProperties(device)
        info["gpu"] = _device_name(props)
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


def _tree_size(root, suffixes=None):
    """(files, bytes) under ``root``, counting only names ending in ``suffixes``."""
    files = size = 0
    for folder, _, names in os.walk(root):
        for name in names:
            if suffixes is None or name.endswith(suffixes):
                files += 1
                size += os.path.getsize(os.path.join(folder, name))
    return files, size


def _gpus():
    cp = cupy_or_none()
    if cp is None:
        return []
    out = []
    for index in range(cp.cuda.runtime.getDeviceCount()):
        props = cp.cuda.runtime.getDeviceProperties(index)
        with cp.cuda.Device(index):
            free, total = cp.cuda.Device(index).mem_info
        out.append({"index": index, "name": _device_name(props),
                    "memory_bytes": int(total), "free_bytes": int(free)})
    return out


def _host_memory():
    total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    available = None
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    available = int(line.split()[1]) * 1024
    except OSError:  # not Linux
        pass
    return {"total_bytes": total, "available_bytes": available}


def machine_info():
    """Versions, GPUs, host memory and kernel caches, as a JSON-ready dict.

    Examples
    --------
    >>> facts = machine_info()
    >>> sorted(facts)[:3], facts["versions"]["gpusvd"] == gpusvd.__version__
    (['cpu_count', 'date', 'gpus'], True)
    """
    package = os.path.dirname(os.path.abspath(gpusvd.__file__))
    cupy_cache = os.environ.get("CUPY_CACHE_DIR",
                                os.path.join(os.path.expanduser("~"), ".cupy", "kernel_cache"))
    numba_cache = os.environ.get("NUMBA_CACHE_DIR", package)
    numba_files, numba_bytes = _tree_size(numba_cache, (".nbi", ".nbc"))
    cupy_files, cupy_bytes = _tree_size(cupy_cache) if os.path.isdir(cupy_cache) else (0, 0)
    return {
        **_basics(),
        "versions": {name: _version(name, load=True) for name in
                     ("gpusvd", "numpy", "scipy", "numba", "cupy", "h5py", "matplotlib",
                      "mpi4py")},
        "package": package,
        "gpus": _gpus(),
        "host_memory": _host_memory(),
        "kernels": {"cuda_files": len(REGISTRY),
                    "cupy_cache": {"path": cupy_cache, "files": cupy_files,
                                   "bytes": cupy_bytes},
                    "numba_cache": {"path": numba_cache, "files": numba_files,
                                    "bytes": numba_bytes}},
    }


def _gib(nbytes):
    return "?" if nbytes is None else f"{nbytes / 2 ** 30:.1f} GiB"


def format_machine_info(facts):
    """The lines ``gpusvd info`` prints for :func:`machine_info`'s dict."""
    v = facts["versions"]
    lines = [f"gpusvd {v['gpusvd']} ({facts['package']})",
             f"python {facts['python']} on {facts['platform']}",
             "versions: " + ", ".join(f"{k} {v[k] or 'not installed'}" for k in v
                                      if k != "gpusvd")]
    gpus = facts["gpus"]
    if not gpus:
        why = "CuPy not installed" if v["cupy"] is None else "CuPy sees no usable device"
        lines.append(f"devices: no GPU ({why}); everything runs on the CPU")
    for g in gpus:
        lines.append(f"GPU {g['index']}: {g['name']}, {_gib(g['memory_bytes'])} "
                     f"({_gib(g['free_bytes'])} free)")
    mem = facts["host_memory"]
    lines.append(f"host: {facts['cpu_count']} CPU cores, {_gib(mem['total_bytes'])} memory "
                 f"({_gib(mem['available_bytes'])} available)")
    k = facts["kernels"]
    for label, cache in (("CUDA kernel cache (CuPy/NVRTC)", k["cupy_cache"]),
                         ("Numba cache", k["numba_cache"])):
        lines.append(f"{label}: {cache['path']}, {cache['files']} files, "
                     f"{cache['bytes'] / 2 ** 20:.1f} MiB")
    lines.append(f"CUDA kernel files in the package: {k['cuda_files']} "
                 "(compiled at first use on each GPU)")
    return "\n".join(lines)


# ---------------------------------------------------------------------------- JSON

def json_ready(x, nonfinite=str):
    """JSON-safe copy: NumPy scalars and arrays to Python, dict keys to strings, objects
    JSON cannot hold to their ``str``, and a non-finite float ``f`` to ``nonfinite(f)``
    (by default the strings ``"nan"``, ``"inf"``, ``"-inf"``)."""
    if isinstance(x, dict):
        return {str(k): json_ready(v, nonfinite) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [json_ready(v, nonfinite) for v in x]
    if isinstance(x, (bool, np.bool_)):
        return bool(x)
    if isinstance(x, (int, np.integer)):
        return int(x)
    if isinstance(x, (float, np.floating)):
        f = float(x)
        return f if math.isfinite(f) else nonfinite(f)
    if isinstance(x, np.ndarray):
        return json_ready(x.tolist(), nonfinite)
    if x is None or isinstance(x, str):
        return x
    return str(x)


def write_json(path: str, payload: dict, *, nonfinite=str) -> None:
    """Write ``payload`` to ``path`` atomically (temporary file, then rename).

    NaN and infinities become ``nonfinite(value)``, by default the strings ``"nan"``,
    ``"inf"``, ``"-inf"``, so the file is strict JSON; readers treat any non-number as
    missing.
    """
    path = os.path.abspath(path)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "w") as f:
        json.dump(json_ready(payload, nonfinite), f, indent=1, allow_nan=False)
        f.write("\n")
    os.replace(tmp, path)


# ---------------------------------------------------------------------------- accuracy
# Of results from any framework (CuPy, PyTorch, JAX, NumPy through DLPack), computed with
# CuPy in float64 whatever the method's dtype and reported in units of the method's own ε:
# the units of gpusvd.testing.metrics (residual max(m, n)·ε, orthogonality k·ε, values
# s_max·ε), its functions applied to the float64 copies (which measure in units of
# float64's ε) and rescaled by ε_float64/ε_dtype. The raw (unnormalized) numbers are kept
# alongside.

def eps_of(dtype) -> float:
    return float(np.finfo(np.dtype(dtype)).eps)


def _in_units_of(dtype, value_in_float64_units: float) -> float:
    return value_in_float64_units * eps_of(np.float64) / eps_of(dtype)


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


def sv_accuracy(s, s_ref, dtype) -> dict:
    """:func:`gpusvd.testing.sv_error` in units of ``dtype``'s ε, the raw max |s − s_ref|,
    and whether ``s`` is descending."""
    import cupy as cp
    s64 = to_cupy(s).astype(cp.float64).ravel()
    r64 = to_cupy(s_ref).astype(cp.float64).ravel()
    if s64.shape != r64.shape:
        raise ValueError(f"got {s64.size} singular values, expected {r64.size}")
    out = {"sv_error": None, "sv_error_raw": None, "sorted": None}
    if s64.size == 0:
        return out
    out["sv_error_raw"] = float(cp.max(cp.abs(s64 - r64)))
    out["sv_error"] = _in_units_of(dtype, testing.sv_error(s64, r64))
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
    residual = _in_units_of(dtype, testing.svd_residual(a64, u64, s64, vh64))
    orthogonality = _in_units_of(dtype, max(testing.orthogonality(u64),
                                            testing.orthogonality(vh64, rows=True)))
    out = {
        "residual": residual,
        "residual_raw": residual * max(m, n, 1) * eps,
        "residual_unit": "max(m,n)*eps",
        "orthogonality": orthogonality,
        "orthogonality_raw": orthogonality * max(k, 1) * eps,
        "orthogonality_v_2norm": _two_norm(_defect(vh64, rows=True)),   # ‖VᵀV − I‖₂
        "finite": bool(cp.isfinite(u64).all() and cp.isfinite(s64).all()
                       and cp.isfinite(vh64).all()),
    }
    out.update(sv_accuracy(s64, s_ref, dtype))
    return out


def values_accuracy(s, s_ref, dtype) -> dict:
    """Singular value error only (values-only mode)."""
    import cupy as cp
    out = {"residual": None, "residual_raw": None,
           "orthogonality": None, "orthogonality_raw": None}
    s64 = to_cupy(s).astype(cp.float64)
    out["finite"] = bool(cp.isfinite(s64).all())
    out.update(sv_accuracy(s64, s_ref, dtype))
    return out


# ============================================================================ gpusvd bench
# ---------------------------------------------------------------------------- methods

def _thewalrus_takagi(a, xp):
    """Takagi by SVD and a matrix square root (thewalrus's method; distinct values)."""
    import scipy.linalg
    u, s, vh = np.linalg.svd(a)
    return s, u @ scipy.linalg.sqrtm((vh @ u.conj()).T)


def _truncated_svd(rank):
    def run(a, xp):
        u, s, vh = xp.linalg.svd(a, full_matrices=False)
        return u[:, :rank], s[:rank], vh[:rank]
    return run


def _svds(rank):
    def run(a, xp):
        import scipy.sparse.linalg
        u, s, vh = scipy.sparse.linalg.svds(a, k=rank, random_state=0)
        order = np.argsort(s)[::-1]
        return u[:, order], s[order], vh[order]
    return run


def _methods(algorithm, n, device):
    """[(name, where, function(a, xp))] for one algorithm; ``where`` is cpu or gpu."""
    import scipy.linalg

    gpu = cupy_or_none() is not None and device != "cpu"
    mine = "gpu" if gpu else "cpu"
    rank = max(1, n // RANK_FRACTION)
    peers = {
        "svd": [("gpusvd", mine, lambda a, xp: gpusvd.svd(a, full_matrices=False,
                                                          device=device)),
                ("numpy_gesdd", "cpu", lambda a, xp: np.linalg.svd(a, full_matrices=False)),
                ("scipy_gesvd", "cpu", lambda a, xp: scipy.linalg.svd(
                    a, full_matrices=False, lapack_driver="gesvd")),
                ("cupy_gesvd", "gpu", lambda a, xp: xp.linalg.svd(a, full_matrices=False))],
        "svdvals": [("gpusvd", mine, lambda a, xp: gpusvd.svdvals(a, device=device)),
                    ("numpy_gesdd", "cpu", lambda a, xp: np.linalg.svd(a, compute_uv=False)),
                    ("scipy_gesvd", "cpu", lambda a, xp: scipy.linalg.svd(
                        a, compute_uv=False, lapack_driver="gesvd")),
                    ("cupy_gesvd", "gpu", lambda a, xp: xp.linalg.svd(a, compute_uv=False))],
        "takagi": [("gpusvd", mine, lambda a, xp: gpusvd.takagi(a, device=device)),
                   ("svd_sqrtm", "cpu", _thewalrus_takagi)],
        "lowrank": [("gpusvd", mine, lambda a, xp: gpusvd.svd_lowrank(
                        a, eps=LOWRANK_EPS, seed=0, device=device)[:3]),
                    ("scipy_svds", "cpu", _svds(rank)),
                    ("numpy_truncated", "cpu", _truncated_svd(rank)),
                    ("cupy_truncated", "gpu", _truncated_svd(rank))],
    }
    peers["jacobi"] = [("gpusvd", mine, lambda a, xp: gpusvd.jacobi_svd(
        a, full_matrices=False, device=device))] + peers["svd"][1:]
    return [m for m in peers[algorithm] if m[1] == "cpu" or gpu]


def _matrix(algorithm, n, dtype, seed):
    if algorithm == "takagi":
        return testing.complex_symmetric(n, dtype=dtype, seed=seed)
    if algorithm == "lowrank":
        return testing.low_rank(n, n, max(1, n // RANK_FRACTION), dtype=dtype, seed=seed)
    return testing.with_condition(n, n, COND, dtype=dtype, seed=seed)


def _accuracy(algorithm, a, out, s_ref):
    """Accuracy of one result in units of n·ε (lowrank: the squared relative error)."""
    if algorithm == "svdvals":
        return {"sv_error": testing.sv_error(out, s_ref)}
    if algorithm == "takagi":
        s, u = out
        return {"residual": testing.svd_residual(a, u, s, u.T),
                "orthogonality": testing.orthogonality(u)}
    u, s, vh = out
    if algorithm == "lowrank":
        host = [to_host(x) for x in (a, u, s, vh)]
        error = np.linalg.norm(host[0] - (host[1] * host[2]) @ host[3]) ** 2
        return {"error": float(error / np.linalg.norm(host[0]) ** 2), "rank": len(host[2])}
    return {"residual": testing.svd_residual(a, u, s, vh),
            "orthogonality": max(testing.orthogonality(u),
                                 testing.orthogonality(vh, rows=True)),
            "sv_error": testing.sv_error(s, s_ref)}


# ---------------------------------------------------------------------------- cases

def _case(algorithm, name, where, fn, a, s_ref, warmup, repeat):
    record = {"method": name, "where": where, "n": a.shape[-1]}
    xp = cupy_or_none() if where == "gpu" else np
    try:
        x = xp.asarray(a)
        timing = time_calls(lambda: fn(x, xp), warmup=warmup, repeat=repeat,
                            max_seconds=math.inf)
        record.update(seconds=timing.median, times=timing.times)
        record.update(_accuracy(algorithm, x, timing.result, s_ref))
    except (ValueError, np.linalg.LinAlgError, MemoryError) as exc:
        record["failed"] = short_error(exc)
    return record


# ---------------------------------------------------------------------------- report

# The accuracy columns of each algorithm; the first is plotted.
METRICS = {"svd": ("residual", "orthogonality", "sv_error"), "svdvals": ("sv_error",),
           "jacobi": ("residual", "orthogonality", "sv_error"),
           "takagi": ("residual", "orthogonality"), "lowrank": ("error", "rank")}
UNITS = {"residual": "residual (units of n eps)", "orthogonality": "orthogonality (n eps)",
         "sv_error": "sv error (units of s_max eps)", "error": "squared relative error",
         "rank": "rank"}


def plot(result, path):
    """Time and accuracy against n, one line per method; False without matplotlib."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    key = METRICS[result["algorithm"]][0]
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    for name in dict.fromkeys(r["method"] for r in result["records"]):
        rows = [r for r in result["records"] if r["method"] == name and "seconds" in r]
        sizes = [r["n"] for r in rows]
        left.plot(sizes, [r["seconds"] for r in rows], "o-", label=name)
        # As measured: an exact zero has no place on the log axis and is left out (the
        # table shows it).
        right.plot(sizes, [r[key] for r in rows], "o-", label=name)
    unit = UNITS[key]
    for axes, label in ((left, "median time (s)"), (right, unit)):
        axes.set(xscale="log", yscale="log", xlabel="n", ylabel=label)
        axes.set_xticks(result["sizes"], [str(n) for n in result["sizes"]])
        axes.minorticks_off()
    left.legend()
    gpu = ", ".join(g["name"] for g in result["machine"]["gpus"]) or "CPU only"
    fig.suptitle(f"gpusvd bench {result['algorithm']} {result['dtype']} ({gpu})")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return True


def _table(result):
    keys = METRICS[result["algorithm"]]
    print(f"{'n':>6}  {'method':<16} {'where':<5} {'median s':>10}"
          + "".join(f" {k:>13}" for k in keys))
    for r in result["records"]:
        head = f"{r['n']:>6}  {r['method']:<16} {r['where']:<5}"
        if "failed" in r:
            print(f"{head} failed: {r['failed']}")
        else:
            print(f"{head} {r['seconds']:>10.4g}" + "".join(f" {r[k]:>13.3g}" for k in keys))
    print("; ".join(UNITS[k] for k in keys))


# ---------------------------------------------------------------------------- command

def add_arguments(p):
    """The options of ``gpusvd bench`` on the argparse parser ``p``."""
    from gpusvd.cli import _device

    p.add_argument("algorithm", choices=ALGORITHMS)
    p.add_argument("--sizes", type=int, nargs="+", default=[256, 512, 1024],
                   help="n of the n x n matrices (default 256 512 1024)")
    p.add_argument("--dtype", choices=("float32", "float64", "complex64", "complex128"),
                   default="float64")
    p.add_argument("--repeat", type=int, default=5, help="timed calls (default 5)")
    p.add_argument("--warmup", type=int, default=1, help="untimed calls first (default 1)")
    p.add_argument("--device", type=_device, default="auto",
                   help="where gpusvd computes: auto (default), cpu, gpu or a GPU index")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("-o", "--out", default=None,
                   help="JSON file (default gpusvd-bench-ALGORITHM-DTYPE.json)")
    p.add_argument("--no-plot", dest="plot", action="store_false",
                   help="no PNG (by default one beside the JSON, if matplotlib is present)")


def run(args):
    """``gpusvd bench``: time every method at every size, write the JSON and the plot."""
    if min(args.sizes) < 1:
        raise ValueError(f"--sizes must be positive, got {args.sizes}")
    dtype = np.dtype(COMPLEX.get(args.dtype, args.dtype) if args.algorithm == "takagi"
                     else args.dtype)
    out = args.out or f"gpusvd-bench-{args.algorithm}-{args.dtype}.json"
    result = {"algorithm": args.algorithm, "dtype": str(dtype), "sizes": args.sizes,
              "warmup": args.warmup, "repeat": args.repeat, "device": str(args.device),
              "machine": machine_info(), "records": []}
    for n in args.sizes:
        a = _matrix(args.algorithm, n, dtype, args.seed + n)
        wide = np.result_type(dtype, np.float64)
        s_ref = np.linalg.svd(a.astype(wide), compute_uv=False)
        for name, where, fn in _methods(args.algorithm, n, args.device):
            print(f"n = {n}: {name} ...", file=sys.stderr, flush=True)
            result["records"].append(_case(args.algorithm, name, where, fn, a, s_ref,
                                           args.warmup, args.repeat))
    _table(result)
    write_json(out, result, nonfinite=lambda f: None)
    print(f"wrote {out}")
    if args.plot:
        png = os.path.splitext(out)[0] + ".png"
        if plot(result, png):
            print(f"wrote {png}")
        else:
            print("no plot: matplotlib is not installed (pip install gpusvd[bench])")
    return 0

"""The facts of this machine: versions, GPUs, memory, kernel caches, the commit.

:func:`device_info` heads the records of the scripts in ``bench/``, :func:`machine_info`
those of ``gpusvd bench``, and :func:`format_machine_info` is what ``gpusvd info``
prints.
"""

import datetime
import os
import platform
import subprocess
import sys
from typing import Any

import gpusvd
from gpusvd._core.backend import cupy_or_none
from gpusvd._core.kernels import REGISTRY, shipped


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
                    "cuda_shipped": sum(shipped(path) is not None for path in REGISTRY),
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
    lines.append(f"CUDA kernel files in the package: {k['cuda_files']}, "
                 f"{k['cuda_shipped']} shipped compiled for sm_90 (H100, H200); the others, "
                 "and all of them on other GPUs, compile at first use")
    return "\n".join(lines)

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
"""

import datetime
import json
import os
import platform
import statistics
import sys
import time

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


# ---------------------------------------------------------------------------- this machine

def _version(name):
    try:
        module = __import__(name)
    except Exception:  # not installed, or broken: reported as absent
        return None
    return getattr(module, "__version__", "?")


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
        name = props["name"]
        with cp.cuda.Device(index):
            free, total = cp.cuda.Device(index).mem_info
        out.append({"index": index, "name": name.decode() if isinstance(name, bytes) else name,
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
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "versions": {name: _version(name) for name in
                     ("gpusvd", "numpy", "scipy", "numba", "cupy", "h5py", "matplotlib",
                      "mpi4py")},
        "package": package,
        "gpus": _gpus(),
        "cpu_count": os.cpu_count(),
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


# ---------------------------------------------------------------------------- timing

def _sync():
    cp = cupy_or_none()
    if cp is not None:
        cp.cuda.Device().synchronize()


def _time(fn, warmup, repeat):
    """(median seconds, every timed sample, the last result)."""
    out = None
    for _ in range(warmup):
        out = fn()
    times = []
    for _ in range(max(repeat, 1)):
        out = None
        _sync()
        start = time.perf_counter()
        out = fn()
        _sync()
        times.append(time.perf_counter() - start)
    return statistics.median(times), times, out


def _case(algorithm, name, where, fn, a, s_ref, warmup, repeat):
    record = {"method": name, "where": where, "n": a.shape[-1]}
    xp = cupy_or_none() if where == "gpu" else np
    try:
        x = xp.asarray(a)
        median, times, out = _time(lambda: fn(x, xp), warmup, repeat)
        record.update(seconds=median, times=times)
        record.update(_accuracy(algorithm, x, out, s_ref))
    except (ValueError, np.linalg.LinAlgError, MemoryError) as exc:
        record["failed"] = f"{type(exc).__name__}: {exc}"
    return record


# ---------------------------------------------------------------------------- report

def _json_ready(x):
    if isinstance(x, dict):
        return {k: _json_ready(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_json_ready(v) for v in x]
    if isinstance(x, (float, np.floating)):
        return float(x) if np.isfinite(x) else None
    if isinstance(x, np.integer):
        return int(x)
    return x


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
    with open(out, "w") as f:
        json.dump(_json_ready(result), f, indent=1)
    print(f"wrote {out}")
    if args.plot:
        png = os.path.splitext(out)[0] + ".png"
        if plot(result, png):
            print(f"wrote {png}")
        else:
            print("no plot: matplotlib is not installed (pip install gpusvd[bench])")
    return 0

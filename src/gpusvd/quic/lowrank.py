"""``gpusvd.svd_lowrank``: validate, choose device and partitions, run QUIC-SVD.

The numeric work is in ``driver``; this layer turns the user's input into a row source,
decides where to compute and in how many row partitions, orients the matrix so that the
cosine tree runs over the larger dimension, and hands results back in the input's type.
"""

import contextlib
import math
import os

import numpy as np

from .._core import tunables, validation
from .._core.arrays import parse_device, place
from .._core.backend import cupy_or_none, eager_under_compile, simple_reductions, to_host
from .._core.memory import LOWRANK_HINT, free_device_bytes, hint_on_exhaustion
from .._core.results import LowRankSVD
from .driver import partition_bounds, quic_svd
from .sources import Source, open_source

WHAT = "svd_lowrank"
# Device bytes per byte of a streamed partition: two device buffers, plus the growth
# step's and projection's temporaries (row chunks, A·[pivots], P_i) — about one more.
STREAM_BUFFERS = 3


def _host_available_bytes():
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return 4 << 30


def _choose_partitions(source, nbytes, on_gpu, xp):
    """``partitions=None``: one if the matrix fits the memory that computes on it, else
    enough that STREAM_BUFFERS partitions fit the device and two the host's share."""
    t = tunables.get()
    host = t.quic_host_memory_fraction * _host_available_bytes()
    if source.kind == "device":
        return 1
    if on_gpu:
        device = t.quic_device_memory_fraction * free_device_bytes(xp)
        if nbytes <= device / 2:
            return 1
        per = min(device / STREAM_BUFFERS, host / 2)
    else:
        if source.kind == "memory":
            return 1
        per = host
    return max(1, math.ceil(nbytes / max(per, 1.0)))


def as_source(a, device):
    """(Source, restore, device context) for ``a``: arrays, paths, sliceable datasets.

    The front end of :func:`svd_lowrank` (and of the distributed one): an out-of-core
    source is read by row blocks and never placed whole; an array goes through
    :func:`gpusvd._core.arrays.place`.
    """
    source = open_source(a)
    if source is not None and source.kind != "device":
        kind, index = parse_device(device)
        cp = cupy_or_none()
        if kind != "cpu" and index is not None and cp is not None:
            return source, to_host, cp.cuda.Device(index)
        return source, to_host, contextlib.nullcontext()
    arr, placement = place(a, device, WHAT)
    if arr.ndim != 2:
        raise ValueError(f"{WHAT} expects a 2-D matrix; got shape {tuple(arr.shape)}")
    kind = "device" if placement.on_gpu else "memory"
    return Source(arr, kind), placement.to_output, placement.device_context()


def _placement_xp(source, device):
    """numpy or cupy: where the work runs for a source given ``device``."""
    cp = cupy_or_none()
    if source.kind == "device":
        return cp
    kind, _ = parse_device(device)
    if kind == "cpu":
        return np
    if kind == "auto":
        big = source.shape[0] * source.shape[1] >= tunables.get().auto_gpu_min_entries
        return cp if cp is not None and big else np
    if cp is None:
        raise ValueError("device='gpu' was asked for but no GPU is usable (CuPy missing, "
                         "no CUDA driver or no device)")
    return cp


@eager_under_compile
@hint_on_exhaustion(LOWRANK_HINT)
@simple_reductions
def svd_lowrank(a, eps=1e-6, delta=1e-6, *, max_rank=None, partitions=None, seed=None,
                device="auto", progress=False, **peer_options):
    """Low-rank SVD with a guaranteed error by QUIC-SVD (cosine trees, Monte Carlo).

    Finds U, S, Vh of the smallest rank it can such that

        ‖A − U·diag(S)·Vh‖²_F ≤ eps·‖A‖²_F,

    i.e. ``eps`` bounds the SQUARED relative Frobenius error (the definition of
    Holmes, Gray & Isbell 2008 and Foster, Mahadevan & Wang, paper 001). A basis is
    grown from cosine trees until a Monte Carlo bound says the error is below eps with
    probability at least 1 − ``delta``; the final pass then computes the error exactly
    (resuming growth in the rare case the estimate was optimistic), so ``error_bound``
    is a computed value, exact up to rounding, not only a probabilistic bound.

    Parameters
    ----------
    a : (M, N) array_like, ``.npy`` path, or row-sliceable dataset
        NumPy or CuPy array (or anything with ``__dlpack__``/``__array__``), a NumPy
        memmap, the path of a ``.npy`` file, an h5py dataset, a zarr or Dask array: any
        2-D object with ``shape``, ``dtype`` and row slicing. Only row blocks are read
        from out-of-core inputs. Integers are promoted to float64.
    eps : float in (0, 1), optional
        Bound on the squared relative Frobenius error.
    delta : float in (0, 1), optional
        Confidence of the Monte Carlo stopping rule (1 − delta).
    max_rank : int, optional
        Largest rank to return. The basis grows to at most twice this; if eps cannot be
        met within it, the result has rank ``max_rank`` and ``error_bound`` > eps.
    partitions : int, optional
        Number of row blocks processed in turn (paper 001 §2.3). None: one if the
        matrix fits the memory of the device that computes, else enough to stream it.
    seed : int or numpy.random.Generator, optional
        Seed of the sampling; the same seed and input give the same result.
    device : {"auto", "cpu", "gpu"} or int, optional
        Where to compute; "auto" uses a GPU when one is present and the matrix is not
        tiny. Host input larger than the GPU's memory is streamed through it.
    progress : bool, optional
        Print a progress bar on stderr.

    Returns
    -------
    LowRankSVD
        Unpacks as ``U, S, Vh``: ``U`` (M × rank), ``S`` (rank, descending), ``Vh``
        (rank × N) in the input's array type (NumPy for out-of-core input). Attributes
        ``error_bound`` (the squared relative error), ``rank``, ``basis_size``,
        ``mc_bound``, ``partitions``, ``passes``, ``growth_steps``.

    Raises
    ------
    ValueError
        eps or delta outside (0, 1), empty or non-2-D input, NaN or infinity, bad
        ``max_rank`` or ``partitions``.
    TypeError
        An unknown keyword; for the peers' (``q``, ``niter``, ``M``, ``n_components``,
        ``random_state``), what takes its place.

    Examples
    --------
    >>> import numpy as np, gpusvd
    >>> from gpusvd.testing import low_rank
    >>> a = low_rank(300, 200, 12, seed=0)
    >>> r = gpusvd.svd_lowrank(a, eps=1e-10, seed=0, device="cpu")
    >>> r.rank, r.error_bound <= 1e-10
    (12, True)
    >>> bool(np.linalg.norm(a - (r.U * r.S) @ r.Vh) ** 2 <= 1e-10 * np.linalg.norm(a) ** 2)
    True
    """
    validation.refuse_peer_options(peer_options, what=WHAT)
    eps = validation.check_eps(eps, what=WHAT)
    delta = validation.check_open_interval("delta", delta, what=WHAT)
    max_rank = validation.check_count("max_rank", max_rank, what=WHAT, optional=True)
    partitions = validation.check_count("partitions", partitions, what=WHAT, optional=True)
    source, restore, context = as_source(a, device)
    with context:
        return _svd_lowrank(source, restore, eps=eps, delta=delta, max_rank=max_rank,
                            partitions=partitions, seed=seed, device=device,
                            progress=progress)


def _svd_lowrank(source, restore, *, eps, delta, max_rank, partitions, seed, device,
                 progress):
    m, n = source.shape
    if m == 0 or n == 0:
        raise ValueError(f"{WHAT}: the matrix is empty (shape {source.shape}); "
                         "a low-rank approximation needs at least one entry")
    if partitions is not None and partitions > m:
        raise ValueError(f"{WHAT}: partitions must be at most the number of rows ({m}), "
                         f"got {partitions}")
    dtype = validation.working_dtype(source.dtype, allow_complex=False, what=WHAT)
    xp = _placement_xp(source, device)
    if partitions is None:
        nbytes = m * n * dtype.itemsize
        partitions = min(m, _choose_partitions(source, nbytes, xp is not np, xp))

    in_core = partitions == 1 or source.kind == "device"
    if in_core and xp is not np and source.kind != "device":
        source = Source(xp.asarray(source.block(0, m)).astype(dtype, copy=False), "device")
    transposed = in_core and m < n
    if transposed:
        source = Source(xp.ascontiguousarray(source.block(0, m).T), source.kind)
    bounds = partition_bounds(source.shape[0], 1 if in_core else partitions)

    out = quic_svd(source, eps=eps, delta=delta, max_rank=max_rank, bounds=bounds,
                   seed=seed, dtype=dtype, xp=xp, progress=progress)
    u, vh = out["U"], out["Vh"]
    if transposed:
        u, vh = xp.ascontiguousarray(vh.T), xp.ascontiguousarray(u.T)
    return LowRankSVD(restore(u), restore(out["S"]), restore(vh), out["error_bound"],
                      out["rank"], out["basis_size"], out["mc_bound"], len(bounds),
                      out["passes"], out["steps"])

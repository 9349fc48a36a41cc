"""``gpusvd bench``'s side-by-side cases: gpusvd and the peers that need no extra dependency.

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
(Numba and NVRTC compilation stay out of the numbers), then ``--repeat`` timed calls
(:func:`.timing.time_calls`); the median is reported with the accuracy of the last
result: residual and orthogonality in units of n·ε of the dtype, the singular value error
against LAPACK in float64 in units of s_max·ε, and for ``lowrank`` the squared relative
Frobenius error (:mod:`gpusvd.testing.metrics`). Where a GPU is usable, gpusvd and CuPy
get their input on it. This module imports neither PyTorch, JAX nor scikit-learn.
"""

import math

import numpy as np

import gpusvd
from gpusvd import testing
from gpusvd._core.backend import cupy_or_none, to_host

from .records import short_error
from .timing import time_calls

ALGORITHMS = ("svd", "svdvals", "jacobi", "takagi", "lowrank")
COND = 1e6             # condition number of the svd/svdvals/jacobi test matrices
RANK_FRACTION = 10     # lowrank test matrices have rank n // RANK_FRACTION
LOWRANK_EPS = 1e-10    # gpusvd.svd_lowrank's eps in the benchmark (well above rounding)
COMPLEX = {"float32": "complex64", "float64": "complex128"}


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


def methods(algorithm, n, device):
    """[(name, where, function(a, xp))] for one algorithm; ``where`` is cpu or gpu."""
    import scipy.linalg

    gpu = cupy_or_none() is not None and device != "cpu"
    mine = "gpu" if gpu else "cpu"
    # On the CPU svd's and svdvals' auto rule is LAPACK's gesdd itself: the legend says so,
    # or gpusvd's line would lie under gesdd's unexplained.
    auto = "gpusvd" if gpu else "gpusvd (= gesdd on the CPU)"
    rank = max(1, n // RANK_FRACTION)
    peers = {
        "svd": [(auto, mine, lambda a, xp: gpusvd.svd(a, full_matrices=False,
                                                          device=device)),
                ("numpy_gesdd", "cpu", lambda a, xp: np.linalg.svd(a, full_matrices=False)),
                ("scipy_gesvd", "cpu", lambda a, xp: scipy.linalg.svd(
                    a, full_matrices=False, lapack_driver="gesvd")),
                ("cupy_gesvd", "gpu", lambda a, xp: xp.linalg.svd(a, full_matrices=False))],
        "svdvals": [(auto, mine, lambda a, xp: gpusvd.svdvals(a, device=device)),
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


def matrix(algorithm, n, dtype, seed):
    """The seeded n×n test matrix of ``algorithm`` (the inputs of the module docstring)."""
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


def run_case(algorithm, name, where, fn, a, s_ref, warmup, repeat):
    """One record: ``fn`` timed on ``a`` (moved to the GPU where ``where`` says so) and the
    accuracy of its last result; a ValueError, LinAlgError or MemoryError is recorded as
    ``failed``."""
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

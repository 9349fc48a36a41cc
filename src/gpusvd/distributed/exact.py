"""The exact SVD over MPI ranks, one entry for its two methods: the polar method with a
block of A's rows per rank (:mod:`.polar`) and the Golub–Reinsch SVD with its
back-transformations shared out by columns (:mod:`.golub_reinsch`)."""

from .._core import tunables
from .._core.backend import eager_under_compile, simple_reductions
from .._core.memory import DENSE_HINT, hint_on_exhaustion
from .._core.validation import check_choice
from . import golub_reinsch, polar
from .comm import WHAT, given_or_own, received

METHODS = ("auto", "polar", "gr")


@eager_under_compile
@hint_on_exhaustion(DENSE_HINT)
@simple_reductions
def svd(a, full_matrices=True, compute_uv=True, *, comm=None, root=0, device="auto",
        check_finite=True, rows=False, method="auto"):
    """SVD over the ranks of ``comm``: by the polar method (QDWH on one block of A's rows
    per rank, then the eigendecomposition of H on ``root``) or by the Golub–Reinsch SVD
    (the reduction on root, the back-transformations shared out by columns).

    Call it on every rank. Each rank computes on one GPU (its rank within its node picks
    which) or, without GPUs, on the CPU; the polar method sums the ranks' n×n Gram
    products through NCCL or MPI (:mod:`gpusvd.distributed.polar`: what moves, and when),
    the Golub–Reinsch SVD sends stage 1's and stage 2's reflectors and a block of columns
    to every rank (:mod:`gpusvd.distributed.golub_reinsch`).

    Parameters
    ----------
    a : (M, N) array_like or None
        The matrix, on ``root`` only (NumPy, CuPy, anything with ``__dlpack__`` or
        ``__array__``); ignored on the other ranks. With ``rows=True``: this rank's rows.
    full_matrices, compute_uv, check_finite : bool, optional
        As in :func:`gpusvd.svd`.
    comm, root, device
        As in :func:`gpusvd.distributed.jacobi_svd`.
    rows : bool, optional
        A that is already spread over the ranks, none of them holding it whole: each rank
        passes its own consecutive rows (M_r × N, M_r ≥ 0, the blocks in rank order make
        A, the same N and dtype everywhere), and gets back its rows of U with S and Vh;
        no rank gathers A or U. A must be tall or square (M ≥ N), and with
        ``compute_uv`` and M > N, ``full_matrices=False`` (each rank's rows of the
        economy U). Only where U's columns come out of QDWH not orthonormal (A
        numerically rank deficient) are U's rows gathered on root once, made orthonormal
        there and sent back. The polar method only.
    method : {"auto", "polar", "gr"}, optional
        ``"polar"``: QDWH over the ranks in float64 (complex128), with the accuracy of
        ``gpusvd.svd(a, method="polar")``. ``"gr"``: the two-stage Golub–Reinsch SVD in
        A's own precision, with the accuracy of ``gpusvd.svd(a, method="gr")``; A on
        root. Without vectors both compute on root alone (the Golub–Reinsch SVD) or
        share QDWH (the polar method). ``"auto"`` (default): with ``rows=True`` the polar
        method; otherwise the method that ``gpusvd.svd`` takes on a GPU for A's size and
        dtype (the crossovers ``auto_*_gr_min_n_gpu*``: "gr" for float64 vectors from
        min(M, N) = 8192), chosen on root; BENCHMARKS.md, "Several GPUs", compares them.

    Returns
    -------
    On ``root``: SVDResult(U, S, Vh), or S alone when ``compute_uv`` is false, in the
    input's array type. None on the other ranks. With ``rows=True``, on every rank:
    SVDResult(U_r, S, Vh) with U_r this rank's rows of U (or S alone), in the type of
    the rank's own block.

    Raises
    ------
    ValueError
        Bad input (on every rank, whichever rank found it); with ``rows=True`` also
        blocks whose columns or dtypes differ between ranks, a wide A, and
        ``method="gr"``.

    Examples
    --------
    >>> import numpy as np
    >>> from gpusvd.distributed import svd
    >>> a = np.array([[3.0, 0.0], [4.0, 5.0]])
    >>> U, S, Vh = svd(a, device="cpu")        # also under mpiexec -n 2
    >>> bool(np.allclose(U @ np.diag(S) @ Vh, a)), np.round(S ** 2, 10).tolist()
    (True, [45.0, 5.0])
    >>> U, S, Vh = svd(a, device="cpu", method="gr")
    >>> bool(np.allclose(U @ np.diag(S) @ Vh, a)), np.round(S ** 2, 10).tolist()
    (True, [45.0, 5.0])
    """
    check_choice("method", method, METHODS)
    if rows and method not in ("auto", "polar"):
        raise ValueError("distributed svd(rows=True) takes A spread over the ranks by the "
                         f"polar method only, got method={method!r}: pass A on root for "
                         "the Golub–Reinsch SVD")
    with given_or_own(comm, device) as comm, comm.device_context():
        if method == "auto":
            a, method = _chosen(a, comm, root, compute_uv, check_finite, rows)
        if method == "gr":
            return golub_reinsch.svd(a, comm, root, full_matrices, compute_uv,
                                     check_finite)
        return polar.svd(a, comm, root, full_matrices, compute_uv, check_finite, rows)


def _chosen(a, comm, root, compute_uv, check_finite, rows):
    """``method="auto"``: root's input, received (on root; ``a`` elsewhere), and the
    method, the same on every rank (:func:`svd`'s ``method``)."""
    if rows:
        return a, "polar"
    method = None
    with comm.phase():
        if comm.rank == root:
            a = received(a, comm, check_finite, WHAT)
            _, m, n = a.stack.shape
            method = "gr" if tunables.gr_on_gpu(min(m, n), a.stack.dtype, compute_uv) \
                else "polar"
    return a, comm.bcast(method, root)

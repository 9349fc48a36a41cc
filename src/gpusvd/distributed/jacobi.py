"""Multi-GPU blocked Jacobi SVD and HSVD over MPI ranks (paper 003, §5).

SPMD: every rank calls the same function; the matrix is needed on ``root`` only and the
result comes back there (None on the other ranks). Root validates the input and
prepares it exactly as the single-process drivers do (:mod:`gpusvd.jacobi.driver`,
:mod:`gpusvd.jacobi.hyperbolic`): scaling by a power of two, the DGEJSV-like QR
preconditioning (SVD) or the row-sorted QR (HSVD); the one-sided Jacobi iteration on
the resulting factor runs over all ranks (:mod:`.outer`), and root assembles U, Σ, V.
So the results agree with the single-process ones to rounding, with the same accuracy.

Defaults differ from the single-process driver in one place: ``variant`` is
``"block-oriented"``, which the paper found keeps the GPUs balanced in the multi-GPU
algorithm (the full-block variant up to 35 % slower there, §5). The outer level's own
options (:class:`.outer.OuterOptions`) are ``pair_sweeps``, ``skip_orthogonal`` and
``pairs_per_rank``.
"""

from .._core import validation
from .._core.backend import eager_under_compile, simple_reductions
from .._core.results import HSVDResult, SVDResult
from ..jacobi.driver import DEFAULTS, MAX_SWEEPS, check_options, decompose
from ..jacobi import driver, hyperbolic
from . import outer
from .comm import given_or_own, received
from .outer import OuterOptions

VARIANT = "block-oriented"
OUTER = OuterOptions()


def _check_outer(pair_sweeps, skip_orthogonal, pairs_per_rank, what):
    """Validate the outer level's options; return them as :class:`.outer.OuterOptions`."""
    return OuterOptions(validation.check_count("pair_sweeps", pair_sweeps, what=what),
                        validation.check_flag("skip_orthogonal", skip_orthogonal, what=what),
                        validation.check_count("pairs_per_rank", pairs_per_rank, what=what,
                                               optional=True))


class _SVDJob:
    """Root's side of the SVD: ``driver.prepare`` gives the factor the ranks
    orthogonalize, ``driver.assemble`` the result."""

    def __init__(self, a, comm, full_matrices, compute_uv, options, check_finite):
        self.received = received(a, comm, check_finite, "distributed jacobi_svd")
        a = self.received.stack
        self.xp, self.full, self.compute_uv, self.options = comm.xp, full_matrices, \
            compute_uv, options
        _, m, n = a.shape
        self.wide = m < n
        self.a = a.conj().swapaxes(-1, -2) if self.wide else a
        self.trivial = min(m, n) == 0
        if not self.trivial:
            self.prep = driver.prepare(self.a, self.xp, full_matrices=full_matrices,
                                       compute_uv=compute_uv, options=options)
            self.x, self.signs, self.want_v = self.prep.x, self.prep.signs, self.prep.want_v

    def finish(self, res):
        """U, S, Vh from the orthogonalized columns."""
        received = self.received
        if self.trivial:
            u, s, vh = decompose(self.a, self.xp, full_matrices=self.full,
                                 compute_uv=self.compute_uv, options=self.options)
        else:
            u, s, vh = driver.assemble(self.prep, res, self.xp)
        if not self.compute_uv:
            return received.values(s)
        if self.wide:
            u, vh = vh.conj().swapaxes(-1, -2), u.conj().swapaxes(-1, -2)
        return SVDResult(received.vectors(u), received.values(s), received.vectors(vh))


class _HSVDJob:
    """Root's side of the HSVD: ``hyperbolic.prepare`` gives the factor the ranks
    orthogonalize, ``hyperbolic.assemble`` the result."""

    def __init__(self, g, signs, comm, options, check_finite):
        self.xp, self.options = comm.xp, options
        self.received = received(g, comm, check_finite, "distributed hsvd")
        g = self.received.stack
        signs = hyperbolic.check_factor(g.shape, signs, what="distributed hsvd")
        self.shape, self.dtype = g.shape, g.dtype
        self.trivial = g.shape[-1] == 0
        if not self.trivial:
            self.prep = hyperbolic.prepare(g, signs, self.xp, want_v=True)
            self.x, self.signs, self.want_v = self.prep.x, self.prep.signs, self.prep.want_v

    def finish(self, res):
        """U, S, V, J from the orthogonalized columns."""
        if self.trivial:
            batch, m, _ = self.shape
            u, s, v, j = hyperbolic.empty(batch, m, self.dtype, self.xp)
        else:
            u, s, v, j = hyperbolic.assemble(self.prep, res, self.xp)
        received = self.received
        return HSVDResult(received.vectors(u), received.values(s), received.vectors(v),
                          received.vectors(self.xp.asarray(j)))


def _run(comm, root, make_job):
    """Root makes the job (every rank raises if that fails), all ranks iterate, root
    assembles (again every rank raises if that fails). Returns root's result or None;
    ``comm.last_run`` is set to the outer iteration's :class:`.outer.OuterInfo`."""
    with comm.device_context():
        job = None
        comm.last_run = None
        with comm.phase():
            if comm.rank == root:
                job = make_job(comm)
        options, outer_options, trivial = comm.bcast(
            (job.options, job.outer, job.trivial) if comm.rank == root else None, root)
        res = None
        if not trivial:
            mine = job if comm.rank == root else None
            res, comm.last_run = outer.orthogonalize(
                comm, mine and mine.x[0], mine and mine.signs, want_v=mine and mine.want_v,
                options=options, outer=outer_options, root=root)
        result = None
        with comm.phase():
            if comm.rank == root:
                result = job.finish(res)
        return result


@eager_under_compile
@simple_reductions
def jacobi_svd(a, full_matrices=True, compute_uv=True, *, comm=None, root=0, device="auto",
               strategy=DEFAULTS.strategy, variant=VARIANT, shorten=DEFAULTS.shorten,
               vectors=DEFAULTS.vectors, tol=None, max_sweeps=MAX_SWEEPS, precondition=True,
               check_finite=True, pair_sweeps=OUTER.pair_sweeps,
               skip_orthogonal=OUTER.skip_orthogonal, pairs_per_rank=OUTER.pairs_per_rank):
    """SVD by the blocked one-sided Jacobi method over the ranks of ``comm`` (paper 003, §5).

    Call it on every rank. Each rank computes on one GPU (its rank within its node picks
    which) or, without GPUs, on the CPU; block-columns move by NCCL or MPI.

    Parameters
    ----------
    a : (M, N) array_like or None
        The matrix, on ``root`` only (NumPy, CuPy, anything with ``__dlpack__`` or
        ``__array__``); ignored on the other ranks.
    full_matrices, compute_uv : bool, optional
        As in :func:`gpusvd.svd`.
    comm : mpi4py.MPI.Comm or :class:`gpusvd.distributed.comm.Comm`, optional
        The ranks that take part (default ``MPI.COMM_WORLD``). A ``Comm`` made once
        (``Comm(world, device)``) is reused with its GPUs and NCCL communicator, and
        adds the seconds spent communicating to its ``comm_seconds``; ``device`` is
        then the one it was made with. Otherwise each call makes its own and closes it
        before returning (on GPUs, about a second of NCCL setup per call).
    root : int, optional
        The rank that holds ``a`` and receives the result.
    device : {"auto", "cpu", "gpu"}, optional
        ``"auto"``: GPUs when every rank has one, else the CPU on every rank.
    strategy, shorten, vectors, tol, max_sweeps, precondition, check_finite
        As in :func:`gpusvd.jacobi_svd`; ``max_sweeps`` counts outer block sweeps.
    variant : {"block-oriented", "full-block"}, optional
        The single-GPU Jacobi on each rank's shortened pair: ``pair_sweeps`` block
        sweeps (default, balanced over ranks) or to convergence (at most
        ``jacobi_inner_sweeps``).
    pair_sweeps : int, optional
        Block sweeps per shortened pair in the block-oriented variant (the paper: 1).
    skip_orthogonal : bool, optional
        End an outer step after the Gram matrix when the pair's columns are already
        orthogonal to u·√m (or ``tol``): no factorization, sweep or postmultiplication
        (default True; False runs every step, as the paper).
    pairs_per_rank : int, optional
        Pivot block-pairs per rank and outer step, c: 2·ranks·c block-columns (the
        paper: 1). Lowered to keep block-columns at least one inner block wide. Default:
        1 on CPU ranks; on GPUs the largest c that keeps pairs at least
        ``distributed_pair_width`` (4096) columns wide, so 2 at n = 16384 on 2 GPUs
        (the measurement: the tunable's comment and BENCHMARKS.md).

    Returns
    -------
    On ``root``: SVDResult(U, S, Vh), or S alone when ``compute_uv`` is false, in the
    input's array type. None on the other ranks.

    Raises
    ------
    ValueError
        Bad input or options (on every rank, whichever rank found it).
    gpusvd.LinAlgError
        No convergence within ``max_sweeps`` (on every rank).

    Examples
    --------
    >>> import numpy as np
    >>> from gpusvd.distributed import jacobi_svd
    >>> a = np.array([[3.0, 0.0], [4.0, 5.0]])
    >>> U, S, Vh = jacobi_svd(a, device="cpu")        # also under mpiexec -n 2
    >>> bool(np.allclose(U @ np.diag(S) @ Vh, a))
    True
    """
    def make_job(comm):
        options = check_options(strategy, variant, shorten, vectors, tol, max_sweeps,
                                precondition, what="distributed jacobi_svd")
        job = _SVDJob(a, comm, full_matrices, compute_uv, options, check_finite)
        job.outer = _check_outer(pair_sweeps, skip_orthogonal, pairs_per_rank,
                                 "distributed jacobi_svd")
        return job

    with given_or_own(comm, device) as comm:
        return _run(comm, root, make_job)


@eager_under_compile
@simple_reductions
def hsvd(g, signs, *, comm=None, root=0, device="auto", strategy=DEFAULTS.strategy,
         variant=VARIANT, shorten=DEFAULTS.shorten, tol=None, max_sweeps=MAX_SWEEPS,
         check_finite=True, pair_sweeps=OUTER.pair_sweeps,
         skip_orthogonal=OUTER.skip_orthogonal, pairs_per_rank=OUTER.pairs_per_rank):
    """Hyperbolic SVD ``G @ V = U @ diag(S)`` over the ranks of ``comm`` (paper 003, §5).

    The distributed form of :func:`gpusvd.hsvd`; call it on every rank.

    Parameters
    ----------
    g : (M, N) array_like or None, M >= N
        On ``root`` only.
    signs : (N,) array_like of +1 and -1 or None
        J = diag(signs), on ``root`` only.
    comm, root, device, variant, pair_sweeps, skip_orthogonal, pairs_per_rank
        As in :func:`jacobi_svd`.
    strategy, shorten, tol, max_sweeps, check_finite
        As in :func:`gpusvd.hsvd`.

    Returns
    -------
    On ``root``: HSVDResult(U, S, V, J) as :func:`gpusvd.hsvd`; None elsewhere.

    Examples
    --------
    >>> import numpy as np
    >>> from gpusvd.distributed import hsvd
    >>> g = np.array([[2.0, 1.0], [0.0, 1.0]])
    >>> U, S, V, J = hsvd(g, [1, -1], device="cpu")
    >>> bool(np.allclose(g @ V, U * S)), bool(np.allclose(V.T @ np.diag([1, -1]) @ V, np.diag(J)))
    (True, True)
    """
    def make_job(comm):
        options = check_options(strategy, variant, shorten, "accumulate", tol, max_sweeps,
                                True, what="distributed hsvd")
        job = _HSVDJob(g, signs, comm, options, check_finite)
        job.outer = _check_outer(pair_sweeps, skip_orthogonal, pairs_per_rank,
                                 "distributed hsvd")
        return job

    with given_or_own(comm, device) as comm:
        return _run(comm, root, make_job)

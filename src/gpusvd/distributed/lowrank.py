"""QUIC-SVD over MPI ranks: one row partition per rank, the bases merged (paper 001 §2.3).

The single-process driver (:mod:`gpusvd.quic.driver`) visits row partitions in turn and
grows one shared basis V̂. Here every rank holds one partition (its rows, sent by root)
and does, per round:

1. Growth: its cosine tree extends its copy of the basis until the Monte Carlo bound on
   ‖A_r − A_rV̂V̂ᵀ‖²_F is at most margin·eps·‖A_r‖²_F, with δ split evenly over the ranks
   (union bound), as the single driver splits it over its partitions.
2. Merge: root orthonormalizes the ranks' bases into one (``Basis.extend`` rank by rank,
   dropping vectors already in the span) and sends it to every rank. Each rank's basis
   lies in the merged span, so each rank's bound holds for it too. Steps 1 and 2
   alternate: the ranks add at most ``tunables.quic_merge_chunk`` vectors together (an
   equal share each) before a merge,
   and its next bound is taken against the merged basis, so that ranks do not all find
   their own copies of the same directions (which Gram–Schmidt keeps: they are close to
   each other's span, not in it).
3. Projection: P_r = A_rV̂ and the exact ‖A_r − P_rV̂ᵀ‖²_F, summed over the ranks. If the
   sum misses eps·‖A‖²_F, the ranks that miss their share grow again from the merged
   basis with four times the samples (as the single driver does, at most ``MAX_ROUNDS``
   rounds).

Root gathers the P_r and extracts U, S, Vh exactly as the single driver does
(``quic.extraction.extract``), so the error returned is computed, not only bounded.
Input is scaled by one power of two into the safe range (``safe_exponent``) on every rank.
"""

import os

import numpy as np

from .._core import tunables, validation
from .._core.backend import eager_under_compile, simple_reductions
from .._core.memory import LOWRANK_HINT, hint_on_exhaustion
from .._core.results import LowRankSVD
from .._core.scaling import safe_exponent, scale_values, times_power_of_two
from ..quic import monte_carlo
from ..quic.cosine_tree import row_norms2
from ..quic.driver import MAX_ROUNDS, MORE_SAMPLES, largest_entry, partition_bounds
from ..quic.extraction import extract, project
from ..quic.gram_schmidt import Basis
from ..quic.growth import PartitionTree
from ..quic.lowrank import WHAT, as_source
from ..quic.sources import open_source
from .comm import _mpi, given_or_own


def _distribute_rows(comm, source, root, bounds, n, dtype, path):
    """Rank r's rows ``bounds[r]`` of root's ``source``, as an array of the ranks' xp.

    A ``.npy`` ``path`` (given on root) is read by every rank itself, its own rows only;
    other sources are read by root and sent.
    """
    xp = comm.xp
    if path is not None:
        with comm.phase():
            r0, r1 = bounds[comm.rank]
            mine = xp.asarray(open_source(path).block(r0, r1)).astype(dtype, copy=False)
        return mine
    mine = None
    for r, (r0, r1) in enumerate(bounds):
        if comm.rank == root:
            block = xp.asarray(source.block(r0, r1)).astype(dtype, copy=False)
            if r == root:
                mine = block
            else:
                comm.exchange(block, r, None, dtype, None)
        elif comm.rank == r:
            mine = comm.exchange(None, None, (r1 - r0, n), dtype, root)
    return mine


def _merge(comm, basis, root, n, dtype, limit):
    """The ranks' bases orthonormalized into one Basis, the same on every rank."""
    xp = comm.xp
    counts = comm.world.allgather(basis.k)
    parts = comm.gather(basis.v, root, [(n, k) for k in counts], dtype)
    merged = None
    if comm.rank == root:
        merged = Basis(n, dtype, xp, limit)
        for part in parts:
            merged.extend(part)
    k = comm.bcast(merged.k if merged is not None else None, root)
    v = comm.broadcast(merged.v if merged is not None else None, root, (n, k), dtype)
    return merged if merged is not None else Basis.of(v, limit)


def _rng(seed, rank, size):
    """Each rank's generator: independent streams of one seed (SeedSequence.spawn)."""
    if seed is not None and not isinstance(seed, (int, np.integer)):
        raise ValueError(f"{WHAT}: seed must be an integer or None on several ranks "
                         f"(the same on every rank), got {type(seed).__name__}")
    return np.random.default_rng(np.random.SeedSequence(seed).spawn(size)[rank])


def _quic(comm, block, root, n, dtype, *, eps, delta, max_rank, rng, m):
    """Rounds of growth, merge and projection (module docstring); root extracts."""
    xp = comm.xp
    t = tunables.get()
    limit = min(m, n) if max_rank is None else min(m, n, 2 * max_rank)
    z = monte_carlo.z_score(delta / comm.size)
    tree = PartitionTree(row_norms2(block, xp)) if block.shape[0] else None
    basis = Basis(n, dtype, xp, limit)
    grow, passes = tree is not None, 0
    for round_ in range(MAX_ROUNDS):
        more = MORE_SAMPLES ** round_
        rule = (t.quic_global_samples[0] * more, t.quic_global_samples[1] * more)
        while True:  # growth in chunks, merged after each (step 2)
            capped = False
            with comm.phase():
                if grow:
                    if t.quic_merge_chunk > 0:
                        share = -(-t.quic_merge_chunk // comm.size)
                        basis.limit = min(limit, basis.k + share)
                    target = t.quic_growth_margin * eps * tree.mass
                    tree.grow(block, basis, target, z=z, rng=rng, xp=xp, global_rule=rule)
                    capped = basis.limit < limit and basis.full and tree.mc_bound > target
            basis = _merge(comm, basis, root, n, dtype, limit)  # growth goes on from it
            if not comm.world.allreduce(capped, op=_mpi().LOR) or basis.full:
                break
            grow = grow and capped
        v = basis.v
        passes += 1
        with comm.phase():
            p, res, mass_r = project(block, v, xp)
        residual, mass = (comm.world.allreduce(x) for x in (res, mass_r))
        passes += 1
        if residual <= eps * mass or basis.full:
            break
        grow = tree is not None and res > t.quic_growth_margin * eps * mass_r
    mc = tree.mc_bound / tree.mass * mass_r if tree is not None and tree.mass else 0.0
    mc = comm.world.allreduce(mc)
    steps = comm.world.allreduce(tree.steps if tree is not None else 0)
    rows = comm.world.allgather(p.shape[0])
    parts = comm.gather(p, root, [(r, v.shape[1]) for r in rows], dtype)
    out = {"basis_size": int(v.shape[1]), "mc_bound": mc / mass if mass > 0 else 0.0,
           "passes": passes, "steps": steps}
    if comm.rank == root:
        out["extracted"] = extract(xp.concatenate(parts), v, residual, mass, eps, max_rank,
                                   xp)
    return out


def _decompose(comm, a, eps, delta, root, max_rank, seed):
    """:func:`svd_lowrank` over the ranks of the :class:`Comm` ``comm``."""
    xp = comm.xp
    with comm.device_context():
        with comm.phase():
            eps = validation.check_eps(eps, what=WHAT)
            delta = validation.check_open_interval("delta", delta, what=WHAT)
            max_rank = validation.check_count("max_rank", max_rank, what=WHAT, optional=True)
            rng = _rng(seed, comm.rank, comm.size)
            header = restore = source = path = None
            if comm.rank == root:
                if isinstance(a, (str, os.PathLike)):
                    path = os.path.abspath(os.fspath(a))
                source, restore, _ = as_source(a, "cpu")
                m, n = source.shape
                if m == 0 or n == 0:
                    raise ValueError(f"{WHAT}: the matrix is empty (shape {source.shape}); "
                                     "a low-rank approximation needs at least one entry")
                dtype = validation.working_dtype(source.dtype, allow_complex=False, what=WHAT)
                header = (m, n, dtype.str, path)
        m, n, dtype, path = comm.bcast(header, root)
        dtype = np.dtype(dtype)
        bounds = partition_bounds(m, comm.size)
        bounds += [(m, m)] * (comm.size - len(bounds))  # ranks without rows
        block = _distribute_rows(comm, source, root, bounds, n, dtype, path)
        with comm.phase():
            largest = largest_entry(block, xp, WHAT) if block.shape[0] else 0.0
        largest = comm.world.allreduce(largest, op=_mpi().MAX)
        k = safe_exponent(largest, dtype)
        block = times_power_of_two(block, k, xp)
        out = _quic(comm, block, root, n, dtype, eps=eps, delta=delta, max_rank=max_rank,
                    rng=rng, m=m)
        if comm.rank != root:
            return None
        u, s, vh, error = out["extracted"]
        return LowRankSVD(restore(u), restore(scale_values(s, -k, xp)), restore(vh), error,
                          int(s.shape[0]), out["basis_size"], out["mc_bound"],
                          sum(1 for r0, r1 in bounds if r1 > r0), out["passes"], out["steps"])


@eager_under_compile
@hint_on_exhaustion(LOWRANK_HINT)
@simple_reductions
def svd_lowrank(a, eps=1e-6, delta=1e-6, *, comm=None, root=0, device="auto", max_rank=None,
                seed=None):
    """QUIC-SVD (:func:`gpusvd.svd_lowrank`) over the ranks of ``comm``, a partition each.

    Call it on every rank with the same arguments (``a`` only on root). Root reads the
    matrix by row blocks and sends each rank its rows; each rank grows a basis from its
    rows on its GPU (or CPU), root merges the bases, every rank projects its rows, and
    root extracts the result (module docstring). The guarantee is the single-process
    one: ‖A − U·diag(S)·Vh‖²_F ≤ eps·‖A‖²_F, with the error computed exactly at the end.

    Parameters
    ----------
    a : (M, N) array_like, ``.npy`` path or row-sliceable dataset, or None
        The matrix, on ``root`` only (as :func:`gpusvd.svd_lowrank` takes it); ignored on
        the other ranks. Each rank holds its ⌈M/ranks⌉ rows in memory. A ``.npy`` path
        is read by every rank, its own rows only (the file must be visible to all ranks);
        any other input is read by root and sent.
    eps, delta : float in (0, 1), optional
        Bound on the squared relative Frobenius error, and the confidence 1 − delta of the
        Monte Carlo stopping rule (split over the ranks).
    comm : mpi4py.MPI.Comm or :class:`gpusvd.distributed.comm.Comm`, optional
        The ranks that take part (default ``MPI.COMM_WORLD``), as in
        :func:`gpusvd.distributed.jacobi_svd`.
    root : int, optional
        The rank that holds ``a`` and receives the result.
    device : {"auto", "cpu", "gpu"}, optional
        ``"auto"``: GPUs when every rank has one, else the CPU on every rank.
    max_rank : int, optional
        Largest rank to return (the merged basis grows to at most twice this).
    seed : int, optional
        Seed of the sampling; each rank draws from its own stream of it. The same seed,
        input and number of ranks give the same result.

    Returns
    -------
    On ``root``: a LowRankSVD, which unpacks as ``U, S, Vh`` (in the input's array type,
    NumPy for out-of-core input), with the attributes of :func:`gpusvd.svd_lowrank`'s,
    ``partitions`` being the number of ranks with rows. None on the other ranks.

    Raises
    ------
    ValueError
        Bad input or options (on every rank, whichever rank found it).

    Examples
    --------
    >>> import numpy as np
    >>> from gpusvd.distributed import svd_lowrank
    >>> from gpusvd.testing import low_rank
    >>> a = low_rank(300, 80, 6, seed=1)
    >>> r = svd_lowrank(a, eps=1e-10, seed=0, device="cpu")    # also under mpiexec -n 2
    >>> r.rank, r.error_bound <= 1e-10
    (6, True)
    """
    with given_or_own(comm, device) as comm:
        return _decompose(comm, a, eps, delta, root, max_rank, seed)

"""The Golub–Reinsch SVD over MPI ranks (``method="gr"``): the reduction on root, the
back-transformations shared out by columns.

SPMD, as :mod:`.polar`: every rank calls :func:`gpusvd.distributed.svd`; A is needed on
``root`` only and the result comes back there (None on the other ranks). Root takes A
through the front end and runs the one-device two-stage SVD
(:func:`gpusvd.condensed.driver.two_stage_svd`: a wide A through Aᴴ, A scaled by a power
of two, a QR first for a tall one, dense → band, the bulge chase with its reflectors
recorded, the bidiagonal's SVD). Its last step, the back-transformations
U = Q₁·Q₂·D_L·U_B and V = P₁·P₂·D_R·V_B, acts on the columns of U_B and V_B one by one, so
root sends every rank stage 1's factors and T's, stage 2's reflectors and phases, and a
block of consecutive columns of U_B and of V_B; each rank applies the four
transformations to its columns (:func:`gpusvd.condensed.driver.left_vectors`,
:func:`~gpusvd.condensed.driver.right_vectors`), and root gathers U's and V's columns.

The reduction is root's alone: stage 1, the chase and the bidiagonal's SVD take the time
they take on one device. The back-transformations, at least 4n³ flops a side in GEMMs and
the largest phase of the two-stage SVD on one GPU at large n (BENCHMARKS.md), are divided
among the ranks. What moves: to each rank m·n + about 2n² entries (the reflectors) and its
share of U_B and V_B; back to root its columns of U and V.
"""

import numpy as np

from .._core import profile
from ..condensed.band import BandReduction
from ..condensed.bulge import Bidiagonal, ChaseReflectors
from ..condensed.driver import Reduced, left_vectors, right_vectors, two_stage_svd
from ..golub_reinsch.driver import svd as one_device
from .comm import WHAT, consecutive_blocks, delivered, received


# The arrays of a Reduced matrix that every rank needs for its columns, in the order
# they are sent: (name, where in Reduced).
_SENT = (("factors", lambda r: r.band.factors), ("t_left", lambda r: r.band.t_left),
         ("t_right", lambda r: r.band.t_right), ("d", lambda r: r.bidiagonal.d),
         ("e", lambda r: r.bidiagonal.e),
         ("phase_left", lambda r: r.bidiagonal.phase_left),
         ("phase_right", lambda r: r.bidiagonal.phase_right),
         ("v_left", lambda r: r.bidiagonal.reflectors.v_left),
         ("tau_left", lambda r: r.bidiagonal.reflectors.tau_left),
         ("v_right", lambda r: r.bidiagonal.reflectors.v_right),
         ("tau_right", lambda r: r.bidiagonal.reflectors.tau_right))


def _sendable(array, xp):
    """(a contiguous array to send, whether it is the transpose): an F-ordered array goes
    as its transpose, without a copy."""
    array = xp.asarray(array)
    if array.ndim == 2 and array.flags.f_contiguous and not array.flags.c_contiguous:
        return array.T, True
    return xp.ascontiguousarray(array), False


def _plan(reduced, m, count, xp):
    """(plan, arrays): what root tells every rank before the arrays (each array's name,
    shape, dtype and layout, the two bandwidths, U's rows ``m`` and columns ``count``,
    U_B's order n and dtype), and the arrays to send, in the order of :data:`_SENT`."""
    shapes, arrays = [], []
    for name, get in _SENT:
        array, transposed = _sendable(get(reduced), xp)
        shapes.append((name, array.shape, array.dtype.str, transposed))
        arrays.append(array)
    plan = {"arrays": shapes, "m": m, "count": count, "n": reduced.u_b.shape[0],
            "dtype": reduced.u_b.dtype.str,
            "bandwidths": (reduced.band.bandwidth, reduced.bidiagonal.reflectors.bandwidth)}
    return plan, arrays


def _reduced_from(comm, root, plan, sent):
    """Root's Reduced matrix on every rank (without U_B, V_B and S), from its arrays:
    ``sent`` on root, received elsewhere."""
    got = {}
    for k, (name, shape, dtype, transposed) in enumerate(plan["arrays"]):
        array = comm.broadcast(sent[k] if sent else None, root, shape, np.dtype(dtype))
        got[name] = array.T if transposed else array
    band_b, chase_b = plan["bandwidths"]
    band = BandReduction(got["factors"], got["t_left"], got["t_right"], band_b)
    reflectors = ChaseReflectors(got["v_left"], got["tau_left"], got["v_right"],
                                 got["tau_right"], chase_b)
    bidiagonal = Bidiagonal(got["d"], got["e"], got["phase_left"], got["phase_right"],
                            reflectors)
    return Reduced(band, bidiagonal, None, None, None)


def _columns(comm, root, plan, reduced):
    """Every rank's columns of U and V (:func:`left_vectors`, :func:`right_vectors`) from
    its share of U_B's and V_B's columns; (U, V) on root, None elsewhere."""
    xp, dtype, n, m = comm.xp, np.dtype(plan["dtype"]), plan["n"], plan["m"]
    u_blocks = consecutive_blocks(plan["count"], comm.size)
    v_blocks = consecutive_blocks(n, comm.size)
    u_b_blocks = [(min(c0, n), min(c1, n)) for c0, c1 in u_blocks]
    on_root = comm.rank == root
    u_b = comm.scatter([xp.ascontiguousarray(reduced.u_b[:, c0:c1]) for c0, c1 in u_b_blocks]
                       if on_root else None, root,
                       [(n, c1 - c0) for c0, c1 in u_b_blocks], dtype)
    v_b = comm.scatter([xp.ascontiguousarray(reduced.v_b[:, c0:c1]) for c0, c1 in v_blocks]
                       if on_root else None, root, [(n, c1 - c0) for c0, c1 in v_blocks], dtype)
    c0, c1 = u_blocks[comm.rank]
    u = v = None
    # Inside two_stage_svd's "svd_back_transform" on root, which adds the exchanges.
    with comm.phase(), profile.phase("svd_back_transform_columns", xp):
        # Sent as their transposes, C-ordered, and taken back as they are: F-ordered.
        u = xp.ascontiguousarray(left_vectors(reduced, u_b, m, c0, c1 - c0).T)
        v = xp.ascontiguousarray(right_vectors(reduced, v_b).T)
    u_parts = comm.gather(u, root, [(c1 - c0, m) for c0, c1 in u_blocks], dtype)
    v_parts = comm.gather(v, root, [(c1 - c0, n) for c0, c1 in v_blocks], dtype)
    if not on_root:
        return None
    return xp.concatenate(u_parts).T, xp.concatenate(v_parts).T


def _on_root(a, comm, root, full_matrices, compute_uv, check_finite):
    """Root's side: A through the front end, the two-stage SVD with its
    back-transformations shared out (or, without vectors or for an empty A, the
    one-device Golub–Reinsch SVD); the result in A's array type. Every other rank waits
    for the plan of its columns; root sends None where there are none to share."""
    planned = []

    def shared_out(reduced, rows, count):
        plan, arrays = _plan(reduced, rows, count, comm.xp)
        planned.append(comm.bcast(plan, root))
        _reduced_from(comm, root, plan, arrays)    # root's part: the sends
        return _columns(comm, root, plan, reduced)

    try:
        job = received(a, comm, check_finite, WHAT)
        xp, stack = job.xp, job.stack
        _, m, n = stack.shape
        if compute_uv and min(m, n):
            u, s, vh = two_stage_svd(stack[0], xp, full_matrices=full_matrices,
                                     vectors=shared_out)
        else:
            u, s, vh = one_device(stack[0], xp, full_matrices=full_matrices,
                                  compute_uv=compute_uv, overwrite_a=False)
    finally:
        if not planned:
            comm.bcast(None, root)
    return delivered(job, 0, compute_uv, u, s, vh)


def _helping(comm, root):
    """A rank other than root: its columns of the back-transformations, if root plans
    any."""
    plan = comm.bcast(None, root)
    if plan is not None:
        _columns(comm, root, plan, _reduced_from(comm, root, plan, None))


def svd(a, comm, root, full_matrices, compute_uv, check_finite):
    """:func:`gpusvd.distributed.svd` with ``method="gr"``, on this rank (the module
    docstring says how)."""
    result = None
    with comm.phase():
        if comm.rank == root:
            result = _on_root(a, comm, root, full_matrices, compute_uv, check_finite)
        else:
            _helping(comm, root)
    return result

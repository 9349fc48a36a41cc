"""Preconditioning of the Jacobi SVD like LAPACK's DGEJSV (paper 003, §2, eq. (1)).

For A (m×n, m >= n) the rows are presorted by descending norm, P_r·A, and factored by
the QR factorization with column pivoting, P_r·A·P_c = Q·R; the one-sided Jacobi then runs
on X = Rᴴ, whose columns (the rows of R) are graded and nearly orthogonal already, so it
converges in few sweeps and keeps the singular values relatively accurate for column-,
row- and two-sided-graded A (Demmel and Veselić 1992; Drmač and Veselić 2008). With
X·V = U_x·Σ (Jacobi), A = P_rᵀ·(Q·V)·Σ·(P_c·U_x)ᴴ.

Departures from the paper's (1)–(2), and why:

- No rank truncation and no second (LQ) factorization (2): the Jacobi method runs on the
  whole n×n factor; a rank deficiency leaves columns of G·V that are zero or of the
  size of the rounding errors, so the same singular values come out, at the cost of the
  few columns that (2) would have removed.
- On the GPU (CuPy has no QR with column pivoting, and a host QRCP of a large matrix
  costs more than the whole Jacobi method) the columns are presorted by descending norm
  and factored by an unpivoted Householder QR. For graded matrices, whose column norms
  decide the pivot order, this is the order QRCP picks; it is not rank revealing, which
  the Jacobi method does not need (first point). On the CPU the QR is LAPACK's dgeqp3.
- The GPU's unpivoted QR of a stack of small matrices (at most ``small_qr_cuda.MAX_ROWS``
  rows, fitting in a block's shared memory) is one launch of ``kernels/small_qr.cu``, one
  thread block per matrix; larger ones go to cuSOLVER through ``cupy.linalg.qr``, which
  factors a stack one matrix at a time (about 100 µs each: 2 s for 20000 of order 32).
"""

from typing import Any, NamedTuple

import numpy as np

from .norms import column_norms
from .small_qr_cuda import stack_qr


class Preconditioned(NamedTuple):
    q: Any        # (batch, m, m or n) or None: Q of the QR factorization
    r: Any        # (batch, n, n): the triangular factor R
    rows: Any     # (batch, m): the row permutation P_r (A[rows] is row-sorted)
    cols: Any     # (batch, n): the column permutation P_c


def _argsort_descending(xp, norms):
    return xp.argsort(-norms, axis=-1, kind="stable")


def _host_qrcp(a, xp, want_q, complete, rows):
    """LAPACK's dgeqp3 (SciPy) of each matrix, one at a time."""
    import scipy.linalg

    sp_mode = ("full" if complete else "economic") if want_q else "r"
    qs, rs, cols = [], [], []
    for one in a:
        out = scipy.linalg.qr(one, mode=sp_mode, pivoting=True, check_finite=False)
        if want_q:
            qs.append(out[0])
        rs.append(out[-2][: one.shape[1]])
        cols.append(out[-1])
    q = np.stack(qs) if want_q else None
    return Preconditioned(q, np.stack(rs), rows, np.stack(cols))


def _device_presorted_qr(a, xp, want_q, complete, rows):
    """Columns presorted by descending norm, then the unpivoted QR of the whole stack."""
    cols = _argsort_descending(xp, column_norms(a, xp))
    a = xp.take_along_axis(a, cols[..., None, :], axis=-1)
    m, n = a.shape[-2:]
    q, r = stack_qr(a, xp, (m if complete else n) if want_q else 0)
    return Preconditioned(q, r, rows, cols)


# The QR with column pivoting (or its GPU stand-in, the module docstring) of the row-sorted
# matrices, by the name of the array namespace.
_TWINS = {"numpy": _host_qrcp, "cupy": _device_presorted_qr}


def precondition(a, xp, *, want_q, complete):
    """Row presorting and QR with column pivoting of each matrix of ``a`` (batch, m, n).

    ``a[b][rows[b]][:, cols[b]] = q[b] @ r[b]``, with ``q`` complete (m×m) when
    ``complete``, economic (m×n) otherwise, and None unless ``want_q``.
    """
    rows = _argsort_descending(xp, column_norms(a.swapaxes(-1, -2), xp))
    a = xp.take_along_axis(a, rows[..., None], axis=-2)
    return _TWINS[xp.__name__](a, xp, want_q, complete, rows)


def inverse_permutation(xp, perm):
    """The inverse of each permutation of a stack (batch, k): its argsort."""
    return xp.argsort(perm, axis=-1)

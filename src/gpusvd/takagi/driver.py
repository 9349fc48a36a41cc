"""Takagi factorization A = U diag(S) Uᵀ by the Jacobi method (paper 002, Alg. 2).

Written once against the array namespace ``xp`` (NumPy or CuPy); only the step kernels
have two implementations (:mod:`.steps`, Numba; :mod:`.steps_cuda`, CUDA).

Alg. 2 of the paper, with its choices made explicit:

1. The input is scaled by a power of two (exact) so that its largest entry is about 1,
   and symmetrized, (A + Aᵀ)/2 (it is symmetric to the tolerance checked by the caller).
2. Sweeps until the off-diagonal Frobenius norm is at most ``tol``·‖A‖_F (a relative
   test: the paper sums the off-diagonal entries against a fixed threshold). This is the
   one host synchronization per sweep.
   Every sweep leaves alone the off-diagonal entries at most ε·‖A‖_F, the rounding level
   of the matrix, which a rotation would only stir (threshold Jacobi): without it a
   cluster of values near zero keeps taking rotations of any angle from its rounding
   noise, which move the entries between it and the other values around instead of
   reducing them, so that they fall only linearly (a 60×60 matrix of 35 zero and 25
   equal values: 53 sweeps to the tolerance instead of 23). The entries left are at most
   n·ε·‖A‖_F in all, within the tolerance.
   - Pointwise sweeps (the paper's method, n < ``takagi_blocked_min_n``; on the GPU only
     for 2b < n < ``takagi_blocked_min_n``): n − 1 parallel
     steps of the chess-tournament ordering (Alg. 1), each: the 2×2 rotations, all row
     updates, then all column and U updates, on the full matrix.
   - Blocked sweeps (beyond the paper): A is zero-padded to a multiple of 2b and split
     into blocks of b indices, paired by the same tournament. In each block step, every
     pair of blocks (I, J) gets the 2×2-step sweeps of its 2b×2b tile, accumulated into a
     unitary G_p (:func:`.steps.solve_block_pairs`, in shared memory on the GPU); then A ←
     Gᴴ A Ḡ and U ← U G with G = diag(G_p) are applied by batched GEMMs. A sweep is
     n/b − 1 such steps instead of the paper's n − 1 passes over A and U. The column
     update applies Ḡ on block columns directly, with the step's permutation in the
     GEMMs' output offsets (:mod:`.block_update`); A is stored permuted so that each
     step's pairs are adjacent (see :class:`_Blocked`).
     Padding stays exactly zero: a rotation with a zero off-diagonal entry is the
     identity.
   - One launch (GPU, n ≤ 2b): the matrix is one tile, and all of steps 1–3 run in one
     thread block: the scaling and symmetrization, every sweep of the inner solve with
     the tile rotated in place (not by GEMMs), the stopping test computed by the block
     before each sweep, the values ordered and the phases moved into U; a thread block
     per matrix of a stack (:func:`factorize_one_launch`,
     :func:`.steps_cuda.solve_one_tile`): one launch and one host synchronization for
     the whole stack.
3. The diagonal d is complex; its phases move into U (U_k ← U_k e^{i arg(d_k)/2}) so that
   S = |d| ≥ 0, then S is sorted descending with U's columns.
"""


from typing import Callable, NamedTuple

import numpy as np

from .._core import profile, progress, tunables
from .._core.backend import to_host
from .._core.errors import LinAlgError
from .._core.scaling import largest_entries, scale_values, times_power_of_two, unit_exponent
from . import block_update, block_update_cuda, steps, steps_cuda
from .ordering import chess_tournament

# Sweep limit: Hahn's TakagiFactor (physics/0607103) stops at 50; the paper reports
# convergence "in most cases within 30 sweeps".
MAX_SWEEPS = 50
# Default tolerance on ‖off(A)‖_F / ‖A‖_F in units of n·ε. Rounding leaves each of the
# n² off-diagonal entries of a converged matrix at about ε·‖A‖_F/n, so the floor is
# about ε·‖A‖_F; a rotation of two nearly equal diagonal entries (repeated Takagi
# values) can leave ε·|d| behind. 4·n·ε sits above that floor and adds at most 4 to the
# residual ‖A − U diag(S) Uᵀ‖_F / (‖A‖_F·n·ε).
TOL_FACTOR = 4


def default_tol(n, dtype):
    """The default ``tol`` of :func:`factorize` for order n and the working dtype."""
    return TOL_FACTOR * max(n, 1) * float(np.finfo(dtype).eps)


def _into(g, out):
    """``g``, or ``out`` holding a copy of it."""
    if out is None:
        return g
    out[...] = g
    return out


def _off_norm(a, xp):
    off = a.copy()
    xp.fill_diagonal(off, 0)
    return float(xp.linalg.norm(off))


def _host_solver(tiles, b, sweeps, width, floor):
    local = chess_tournament(width)
    return lambda a, out=None: _into(
        steps.solve_block_pairs(a, tiles, b, sweeps, local, floor), out)


def _cuda_solver(tiles, b, sweeps, width, floor):
    return lambda a, out=None: steps_cuda.solve_block_pairs(a, tiles, b, sweeps, out=out,
                                                            floor=floor)


class _Twins(NamedTuple):
    """The steps of the Takagi sweeps that differ between the devices."""

    sweep: Callable   # (a, u, ordering, floor): one pointwise sweep (steps / steps_cuda)
    solver: Callable  # (tiles, b, sweeps, width, floor) -> solve(a, out=None) of the pairs
    update: Callable  # (plan, a, ut, overlap): the strided block update


# The Numba (NumPy) or CUDA (CuPy) twin of each step, by the name of the array namespace.
_TWINS = {
    "numpy": _Twins(steps.jacobi_sweep, _host_solver,
                    lambda plan, a, ut, overlap: block_update.HostUpdate(plan, a, ut)),
    "cupy": _Twins(steps_cuda.jacobi_sweep, _cuda_solver, block_update_cuda.DeviceUpdate),
}


class _Pointwise:
    """The paper's sweeps: n − 1 parallel steps over the whole matrix."""

    def __init__(self, a, xp, floor):
        self.a, self._xp, self._floor = a, xp, floor
        self._u = xp.eye(a.shape[0], dtype=a.dtype)
        self._ordering = xp.asarray(chess_tournament(a.shape[0]))
        self._sweep = _TWINS[xp.__name__].sweep

    def sweep(self):
        with profile.phase("takagi_pointwise_sweep", self._xp):
            self._sweep(self.a, self._u, self._ordering, self._floor)

    def diagonal_and_vectors(self, n):
        return self.a.diagonal(), self._u


class _Blocked:
    """Sweeps over pairs of b-index blocks: inner solves, then batched GEMMs.

    A is kept permuted so that the pairs of the current step are adjacent: slot 2b·p …
    2b·p + 2b − 1 holds the tile of pair p, A_s = P_s A P_sᵀ; U is kept as Uᵀ, its rows
    in slot order, its columns in the coordinates of step 0's order. A sweep ends in step
    0's order again. The update (:mod:`.block_update`) folds the permutation to the
    next step's order into the output offsets of three batched GEMMs (rows, columns, U),
    one read and one write of each matrix per step; on the GPU the U update runs on a
    second stream (tunable ``takagi_update_overlap``). Gathers in its place, twice the
    passes, took 1.5× the time (BENCHMARKS.md, "The tunables' defaults").
    """

    def __init__(self, a, xp, floor):
        t = tunables.get()
        n = a.shape[0]
        # n ≤ 2b: one tile, b = ⌈n/2⌉; a sweep is then one launch of the inner solve (the
        # whole matrix in shared memory) and three GEMMs instead of 3(n − 1) launches.
        self._b = min(t.takagi_block_size, max(1, -(-n // 2)))
        self._xp, self._sweeps = xp, t.takagi_inner_sweeps
        width = 2 * self._b
        padded = -(-n // width) * width
        pairs = chess_tournament(padded // self._b)  # (steps, N, 2) block pairs
        offsets = np.arange(self._b)
        order = np.concatenate((pairs[..., :1] * self._b + offsets,
                                pairs[..., 1:] * self._b + offsets), axis=-1)
        order = order.reshape(len(pairs), padded)  # order[s][q]: the index in slot q
        self._order0 = order[0]
        self._tiles = xp.asarray(np.arange(padded // self._b, dtype=np.int32).reshape(-1, 2))
        self.a = xp.zeros((padded, padded), a.dtype)
        self.a[:n, :n] = a
        index0 = xp.asarray(self._order0)
        self.a = xp.ascontiguousarray(self.a[index0][:, index0])
        self._ut = xp.eye(padded, dtype=a.dtype)
        self._solve = _TWINS[xp.__name__].solver(self._tiles, self._b, self._sweeps, width,
                                                 floor)
        plan = block_update.Plan(padded, self._b, pairs)
        self._steps = len(plan.steps)
        self._update = _TWINS[xp.__name__].update(plan, self.a, self._ut,
                                                  t.takagi_update_overlap)

    def sweep(self):
        for s in range(self._steps):
            self._update.step(s, self._solve)

    def diagonal_and_vectors(self, n):
        xp = self._xp
        ut = self._update.vectors()
        keep = xp.asarray(np.flatnonzero(self._order0 < n))     # slots of real indices
        u = xp.zeros_like(ut)
        u[xp.asarray(self._order0)] = ut.T                      # coordinates to 0 … n − 1
        return self.a.diagonal()[keep], u[:n][:, keep]


def not_converged(max_sweeps, off, tol):
    """The :class:`~gpusvd.LinAlgError` of sweeps that ended at ``off``·‖A‖_F."""
    return LinAlgError(f"takagi: the Jacobi sweeps did not converge in {max_sweeps} sweeps: "
                       f"off-diagonal norm {off:.3g}·‖A‖_F, tolerance {tol:.3g}·‖A‖_F "
                       f"(raise max_sweeps or tol)")


def _sweeps(work, xp, tol, max_sweeps):
    """Sweeps on the scaled, symmetric ``work`` until ‖off(A)‖_F ≤ tol·‖A‖_F, one host
    synchronization each: the diagonal and U."""
    n = work.shape[0]
    t = tunables.get()
    blocked = n >= t.takagi_blocked_min_n or (xp is not np and n <= 2 * t.takagi_block_size)
    norm = float(xp.linalg.norm(work))
    floor = float(np.finfo(work.dtype).eps) * norm
    method = (_Blocked if blocked else _Pointwise)(work, xp, floor)
    for sweep in range(max_sweeps + 1):
        with profile.phase("takagi_check", xp):
            off = _off_norm(method.a, xp)
        if sweep:
            progress.report("takagi", sweep, max_sweeps, off=off / norm)  # norm > 0 here
        if off <= tol * norm:
            break
        if sweep == max_sweeps:
            raise not_converged(max_sweeps, off / norm, tol)
        method.sweep()
    return method.diagonal_and_vectors(n)


def _prepared(mats, xp):
    """Step 1 for each matrix of the stack ``mats``: (work, exponent), work = (A + Aᵀ)/2 of
    A·2^−exponent with its largest entry about 1 (C order, as the kernels take it) and
    exponent a host int array."""
    real = np.finfo(mats.dtype).dtype
    exponent = -np.array([unit_exponent(x) for x in largest_entries(mats, xp)], np.int64)
    work = times_power_of_two(mats, -exponent[:, None, None], xp)
    return xp.ascontiguousarray((work + work.transpose(0, 2, 1)) * real.type(0.5)), exponent


def factorize(a, xp, *, tol, max_sweeps):
    """Takagi values and vectors of one complex symmetric matrix.

    Parameters
    ----------
    a : (n, n) complex64 or complex128 array of ``xp``
        Symmetric within rounding; not modified.
    xp : module
        ``numpy`` or ``cupy``.
    tol : float
        Stop when ‖off(A)‖_F ≤ tol·‖A‖_F.
    max_sweeps : int
        Raise :class:`~gpusvd.LinAlgError` if not converged after this many sweeps.

    Returns
    -------
    (S, U)
        S real (n,) descending and non-negative, U (n, n) unitary, A ≈ U diag(S) Uᵀ.
    """
    n, dtype = a.shape[0], a.dtype
    real = np.finfo(dtype).dtype
    if n == 0:
        return xp.zeros(0, real), xp.zeros((0, 0), dtype)
    work, exponent = _prepared(a[None], xp)
    d, u = _sweeps(work[0], xp, tol, max_sweeps)
    exponent = int(exponent[0])
    s = xp.abs(d)
    u = u * xp.exp(0.5j * xp.angle(d)).astype(dtype)[None, :]
    order = xp.argsort(-s)
    return scale_values(s[order], exponent, xp), xp.ascontiguousarray(u[:, order])


def one_launch(n, xp):
    """Whether matrices of order n take :func:`factorize_one_launch`: on the GPU, 1 ≤ n ≤
    2·``takagi_block_size`` (one tile in shared memory)."""
    return xp is not np and 0 < n <= 2 * tunables.get().takagi_block_size


class Launched(NamedTuple):
    """What :func:`factorize_one_launch` found of each matrix, host arrays (batch,)."""

    converged: np.ndarray     # bool: the sweeps met the tolerance
    off: np.ndarray           # ‖off(A)‖_F / ‖A‖_F at the end
    asymmetry: np.ndarray     # ‖A − Aᵀ‖_F / ‖A‖_F of the input


def factorize_one_launch(mats, xp, *, tol, max_sweeps):
    """Takagi values and vectors of each matrix of the CuPy stack ``mats`` (batch, n, n),
    :func:`one_launch`, finite: every step of :func:`factorize` in one launch
    (:func:`.steps_cuda.solve_one_tile`: the scaling, (A + Aᵀ)/2, the sweeps with their
    stopping test, the order and the phases; a diagonal matrix its closed form) and one
    host synchronization for the stack. The asymmetry is measured, not checked: the
    caller decides. Returns stacks (S, U) and a :class:`Launched`."""
    s, u, status = steps_cuda.solve_one_tile(xp.ascontiguousarray(mats), tol, max_sweeps)
    sweeps, off2, norm2, asym2, input2 = to_host(status).T[:5]
    off = np.sqrt(off2 / np.where(norm2 > 0, norm2, 1))
    if sweeps.any():
        progress.report("takagi", int(sweeps.max()), max_sweeps, off=float(off.max()))
    found = Launched(off2 <= tol * tol * norm2, off,
                     np.sqrt(asym2 / np.where(input2 > 0, input2, 1)))
    return s, u, found


def factorize_stack(mats, xp, *, tol, max_sweeps):
    """Takagi values and vectors of each complex symmetric matrix of the stack ``mats``
    (batch, n, n), as :func:`factorize` gives them, matrix by matrix. Returns stacks
    (S, U)."""
    parts = [factorize(mat, xp, tol=tol, max_sweeps=max_sweeps) for mat in mats]
    return xp.stack([p[0] for p in parts]), xp.stack([p[1] for p in parts])
